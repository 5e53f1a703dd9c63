#include "sys/files.h"

#include <gtest/gtest.h>

namespace hone::sys {
namespace {

class FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("hone-files");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
  }
  std::unique_ptr<TempDir> dir_;
};

TEST_F(FilesTest, AtomicWriteReplacesContentAndLeavesNoTemp) {
  auto p = dir_->path() / "state.json";
  ASSERT_TRUE(WriteFileAtomic(p, "one"));
  ASSERT_TRUE(WriteFileAtomic(p, "two"));
  EXPECT_EQ(*ReadFile(p), "two");
  int entries = 0;
  for (auto& e : fs::directory_iterator(dir_->path())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
}

TEST_F(FilesTest, ReadMissingFileIsNotFound) {
  auto r = ReadFile(dir_->path() / "nope");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_NE(r.error().message.find("nope"), std::string::npos);
}

TEST_F(FilesTest, AppendLineAddsNewline) {
  auto p = dir_->path() / "events.jsonl";
  ASSERT_TRUE(AppendLineSync(p, "{\"a\":1}"));
  ASSERT_TRUE(AppendLineSync(p, "{\"b\":2}\n"));
  EXPECT_EQ(*ReadFile(p), "{\"a\":1}\n{\"b\":2}\n");
}

TEST_F(FilesTest, LockIsExclusive) {
  auto p = dir_->path() / "x.lock";
  auto first = FileLock::TryAcquire(p);
  ASSERT_TRUE(first);
  auto second = FileLock::TryAcquire(p);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::kUnavailable);
  first->reset();
  EXPECT_TRUE(FileLock::TryAcquire(p));
}

TEST_F(FilesTest, Sha256) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  auto p = dir_->path() / "f";
  ASSERT_TRUE(WriteFileAtomic(p, "abc"));
  EXPECT_EQ(*Sha256File(p), Sha256Hex("abc"));
}

TEST_F(FilesTest, TempDirRemovesItselfUnlessReleased) {
  fs::path kept, removed;
  {
    auto a = TempDir::Create("hone-a");
    auto b = TempDir::Create("hone-b");
    removed = (*a)->path();
    kept = (*b)->path();
    (*b)->Release();
  }
  EXPECT_FALSE(fs::exists(removed));
  EXPECT_TRUE(fs::exists(kept));
  fs::remove_all(kept);
}

}  // namespace
}  // namespace hone::sys
