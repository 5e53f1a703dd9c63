#include "patch/git.h"

#include "core/strings.h"
#include "testing/patch_fixture.h"
#include "testing/test_util.h"

namespace hone::patch {
namespace {

using testing::Fixture;
using ::testing::HasSubstr;
using testing::Sh;

TEST(GitTest, GitOutReportsFailuresWithTheCommand) {
  ASSERT_OK_AND_ASSIGN(Fixture f, Fixture::Create());
  auto r = GitOut(f.live, {"rev-parse", "--verify", "no-such-ref"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(r.error().message, HasSubstr("git rev-parse --verify failed"));
}

TEST(GitTest, HooksInTheRepositoryNeverRun) {
  ASSERT_OK_AND_ASSIGN(Fixture f, Fixture::Create());
  fs::path marker = f.dir->path() / "hook-ran";
  Sh(f.live, "printf '#!/bin/sh\\ntouch " + marker.string() +
                 "\\n' > .git/hooks/post-checkout && "
                 "chmod +x .git/hooks/post-checkout");
  ASSERT_OK_AND_ASSIGN(auto wt, Worktree::Create(f.live, f.dir->path() / "wt", "hone/p/x", "HEAD"));
  EXPECT_FALSE(fs::exists(marker));
}

TEST(WorktreeTest, CreateCheckoutAndDestructorRemovesBoth) {
  ASSERT_OK_AND_ASSIGN(Fixture f, Fixture::Create());
  fs::path path = f.dir->path() / "slot/src";
  {
    ASSERT_OK_AND_ASSIGN(auto wt, Worktree::Create(f.live, path, "hone/p/one", "main"));
    EXPECT_TRUE(fs::exists(path / "common/common.h"));
    EXPECT_EQ(Trim(Sh(f.live, "git branch --list --format='%(refname:short)' 'hone/p/*'")), "hone/p/one");
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(Trim(Sh(f.live, "git branch --list --format='%(refname:short)' 'hone/p/*'")), "");
  EXPECT_EQ(Split(std::string(Trim(Sh(f.live, "git worktree list --porcelain | grep '^worktree '"))), '\n').size(), 1u);
}

TEST(WorktreeTest, ReleaseKeepsTheCheckoutForPostMortems) {
  ASSERT_OK_AND_ASSIGN(Fixture f, Fixture::Create());
  fs::path path = f.dir->path() / "kept";
  {
    ASSERT_OK_AND_ASSIGN(auto wt, Worktree::Create(f.live, path, "hone/p/kept", "main"));
    wt->Release();
  }
  EXPECT_TRUE(fs::exists(path / "common/common.h"));
  EXPECT_THAT(Sh(f.live, "git branch --list --format='%(refname:short)' 'hone/p/*'"), HasSubstr("hone/p/kept"));
}

TEST(WorktreeTest, StaleCheckoutFromACrashIsReplaced) {
  ASSERT_OK_AND_ASSIGN(Fixture f, Fixture::Create());
  fs::path path = f.dir->path() / "slot/src";
  {
    ASSERT_OK_AND_ASSIGN(auto wt, Worktree::Create(f.live, path, "hone/p/a", "main"));
    wt->Release();  // as if hone had been killed
    ASSERT_OK(sys::WriteFileAtomic(path / "common/common.h", "garbage"));
  }
  ASSERT_OK_AND_ASSIGN(auto wt, Worktree::Create(f.live, path, "hone/p/a", "main"));
  ASSERT_OK_AND_ASSIGN(std::string content, sys::ReadFile(path / "common/common.h"));
  EXPECT_THAT(content, HasSubstr("DefaultParallel"));
  EXPECT_OK(wt->Remove());
  EXPECT_OK(wt->Remove());  // idempotent
}

TEST(WorktreeTest, RegisteredButDeletedCheckoutIsTakenOver) {
  ASSERT_OK_AND_ASSIGN(Fixture f, Fixture::Create());
  fs::path path = f.dir->path() / "slot/src";
  {
    ASSERT_OK_AND_ASSIGN(auto wt, Worktree::Create(f.live, path, "hone/p/b", "main"));
    wt->Release();
  }
  fs::remove_all(path);  // e.g. a cleaner deleted the work root, git still lists it
  ASSERT_OK_AND_ASSIGN(auto wt, Worktree::Create(f.live, path, "hone/p/b", "main"));
  EXPECT_TRUE(fs::exists(path / "common/common.h"));
  EXPECT_OK(wt->Remove());
  EXPECT_EQ(Trim(Sh(f.live, "git worktree list --porcelain | grep -c '^worktree '")), "1");
}

TEST(TreeFingerprintTest, ChangesWithEveryVisibleChangeAndOnlyThen) {
  ASSERT_OK_AND_ASSIGN(Fixture f, Fixture::Create());
  ASSERT_OK_AND_ASSIGN(std::string a, TreeFingerprint(f.live));
  ASSERT_OK_AND_ASSIGN(std::string again, TreeFingerprint(f.live));
  EXPECT_EQ(a, again);
  // Creating a worktree and a branch elsewhere is not a change of the live tree.
  {
    ASSERT_OK_AND_ASSIGN(auto wt, Worktree::Create(f.live, f.dir->path() / "wt", "hone/p/z", "main"));
    ASSERT_OK_AND_ASSIGN(std::string with_wt, TreeFingerprint(f.live));
    EXPECT_EQ(a, with_wt);
  }
  std::vector<std::string> seen = {a};
  auto changed = [&](const std::string& script) {
    Sh(f.live, script);
    auto fp = TreeFingerprint(f.live);
    ASSERT_TRUE(fp);
    for (const std::string& s : seen) EXPECT_NE(*fp, s) << script;
    seen.push_back(*fp);
  };
  changed("echo x >> src/llama.cpp");                             // content
  changed("chmod +x src/llama.cpp");                              // mode
  changed("echo new > untracked.h");                              // untracked file
  changed("git add untracked.h");                                 // index
  changed("git stash -q");                                        // stash list (and the files)
  changed("ln -sf /tmp common/escape.h");                         // symlink target
  changed("git -c user.name=a -c user.email=a@b commit -qam c");  // HEAD
}

}  // namespace
}  // namespace hone::patch
