#include "patch/validate.h"

#include <unistd.h>

#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::patch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ValidateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = policy::Rules::Load((testing::SourceDir() / "data/policy/rules.yaml").string());
    ASSERT_TRUE(r) << r.error().ToString();
    rules_ = *r;
  }
  std::string RuleFor(const std::string& text) {
    auto d = ParseDiff(text);
    if (!d) return ParseViolation(d.error(), rules_).rule_id;
    auto v = CheckDiff(*d, rules_);
    return v ? v->rule_id : "ok";
  }
  policy::Rules rules_;
};

TEST_F(ValidateTest, RawPathsAreCheckedBeforeAnyStrip) {
  // -p2 would turn a/.git/config into "config"; the raw name is what is judged.
  EXPECT_EQ(RuleFor("--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-a\n+b\n"), "patch.git_dir");
  EXPECT_EQ(RuleFor("--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n"), "patch.absolute_path");
  EXPECT_EQ(RuleFor("--- a/x/../../y\n+++ b/x/../../y\n@@ -1 +1 @@\n-a\n+b\n"), "patch.path_escape");
  EXPECT_EQ(RuleFor("diff --git a/x b/y\nrename from x\nrename to ../y\n"), "patch.path_escape");
  EXPECT_EQ(RuleFor("diff --git a/x b/y\ncopy from /etc/shadow\ncopy to y\n"), "patch.absolute_path");
}

TEST_F(ValidateTest, ModesSymlinksSubmodulesAndBinary) {
  EXPECT_EQ(RuleFor("diff --git a/x.h b/x.h\nold mode 100644\nnew mode 100755\n"), "patch.mode");
  EXPECT_EQ(RuleFor("diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+/etc\n"),
            "patch.symlink_escape");
  EXPECT_EQ(
      RuleFor(
          "diff --git a/m b/m\nnew file mode 160000\n--- /dev/null\n+++ b/m\n@@ -0,0 +1 @@\n+Subproject commit 1\n"),
      "patch.mode");
  EXPECT_EQ(RuleFor("diff --git a/y.bin b/y.bin\nBinary files a/y.bin and b/y.bin differ\n"), "patch.binary");
  EXPECT_EQ(RuleFor(std::string("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+\0\n", 34)), "patch.binary");
  EXPECT_EQ(RuleFor("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"), "ok");
  EXPECT_EQ(RuleFor("not a diff"), "patch.not_a_diff");
}

TEST_F(ValidateTest, SizeLimits) {
  std::string many;
  for (int i = 0; i < 30; ++i)
    many += "--- a/f" + std::to_string(i) + "\n+++ b/f" + std::to_string(i) + "\n@@ -1 +1 @@\n-a\n+b\n";
  EXPECT_EQ(RuleFor(many), "patch.size");
  auto v = CheckDiffSize(10u << 20, rules_);
  ASSERT_TRUE(v);
  EXPECT_THAT(v->message, HasSubstr("10.0 MiB"));
}

TEST_F(ValidateTest, TouchedPathsPerStripLevel) {
  ASSERT_OK_AND_ASSIGN(Diff d, ParseDiff("diff --git a/src/x.c b/src/y.c\nrename from src/x.c\nrename to src/y.c\n"
                                         "--- a/src/x.c\n+++ b/src/y.c\n@@ -1 +1 @@\n-a\n+b\n"));
  ASSERT_OK_AND_ASSIGN(auto p1, TouchedPaths(d, 1));
  EXPECT_THAT(p1, ElementsAre("src/x.c", "src/y.c"));
  ASSERT_OK_AND_ASSIGN(auto p0, TouchedPaths(d, 0));
  EXPECT_THAT(p0, ElementsAre("a/src/x.c", "b/src/y.c", "src/x.c", "src/y.c"));
  EXPECT_FALSE(TouchedPaths(d, 3));
  EXPECT_EQ(GuessStrip(d), 1);
}

TEST_F(ValidateTest, AllowedFilesForTheTarget) {
  EXPECT_EQ(CheckFiles({"tools/server/server.cpp", "common/arg.h"}, rules_, "llama.cpp"), std::nullopt);
  auto v = CheckFiles({"tools/server/server.cpp", "scripts/x.sh"}, rules_, "llama.cpp");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rule_id, "patch.allowed_files.llama_cpp");
  EXPECT_EQ(CheckFiles({"x"}, rules_, "nope")->rule_id, "patch.unknown_target");
}

TEST_F(ValidateTest, SymlinksInTheTreeAreNeverFollowed) {
  ASSERT_OK_AND_ASSIGN(auto dir, sys::TempDir::Create("hone-validate"));
  std::filesystem::path root = dir->path() / "tree";
  ASSERT_OK(sys::EnsureDir(root / "common"));
  ASSERT_OK(sys::WriteFileAtomic(root / "common/ok.h", "x"));
  ASSERT_EQ(symlink("/etc/hostname", (root / "common/link.h").c_str()), 0);
  ASSERT_EQ(symlink("../..", (root / "common/up").c_str()), 0);
  EXPECT_EQ(CheckTree(root, {"common/ok.h", "common/new.h", "newdir/x.h"}), std::nullopt);
  auto file = CheckTree(root, {"common/link.h"});
  ASSERT_TRUE(file);
  EXPECT_EQ(file->rule_id, "patch.symlink_escape");
  EXPECT_THAT(file->message, HasSubstr("-> /etc/hostname"));
  auto through = CheckTree(root, {"common/up/etc/passwd"});
  ASSERT_TRUE(through);
  EXPECT_THAT(through->message, HasSubstr("goes through the symbolic link 'common/up'"));
}

TEST_F(ValidateTest, SummarizeGivesTheGateItsFacts) {
  std::string text =
      "diff --git a/tools/server/server.cpp b/tools/server/server.cpp\n"
      "--- a/tools/server/server.cpp\n+++ b/tools/server/server.cpp\n@@ -1 +1 @@\n-a\n+b\n";
  ASSERT_OK_AND_ASSIGN(policy::PatchFacts f, Summarize(text, "llama.cpp"));
  EXPECT_EQ(f.target, "llama.cpp");
  EXPECT_EQ(f.diff_sha256, sys::Sha256Hex(text));
  EXPECT_THAT(f.files, ElementsAre("tools/server/server.cpp"));
  EXPECT_EQ(f.lines_added, 1);
  EXPECT_FALSE(f.binary);
}

}  // namespace
}  // namespace hone::patch
