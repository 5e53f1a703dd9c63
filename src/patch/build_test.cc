#include "patch/build.h"

#include "core/strings.h"
#include "patch/git.h"
#include "testing/patch_fixture.h"
#include "testing/test_util.h"

namespace hone::patch {
namespace {

using ::testing::HasSubstr;
using testing::Sh;

BuildPaths PathsIn(const fs::path& root) {
  return BuildPaths{root / "src", root / "build", root, root / "build.log", 1};
}

TEST(RunBuildTest, ConfigureRunsOnceAndPlaceholdersExpand) {
  ASSERT_OK_AND_ASSIGN(auto dir, sys::TempDir::Create("hone-build"));
  BuildRecipe r;
  r.configure = {{"sh", "-c", "echo configured >> {build}/steps"}};
  r.build = {{"sh", "-c", "echo built {jobs} >> {build}/steps && touch {build}/out"}};
  r.artifacts = {"out"};
  BuildPaths p = PathsIn(dir->path());
  BuildResult first = RunBuild(r, p, std::chrono::seconds(30), sys::DefaultProcessRunner(), sys::DefaultClock());
  ASSERT_TRUE(first.ok) << first.message;
  EXPECT_TRUE(first.configured);
  BuildResult second = RunBuild(r, p, std::chrono::seconds(30), sys::DefaultProcessRunner(), sys::DefaultClock());
  ASSERT_TRUE(second.ok) << second.message;
  EXPECT_FALSE(second.configured);
  ASSERT_OK_AND_ASSIGN(std::string steps, sys::ReadFile(p.build / "steps"));
  EXPECT_EQ(steps, "configured\nbuilt 1\nbuilt 1\n");
  ASSERT_OK_AND_ASSIGN(std::string log, sys::ReadFile(p.log));
  EXPECT_THAT(log, HasSubstr("$ sh -c"));
}

TEST(RunBuildTest, FailureCarriesTheLogTail) {
  ASSERT_OK_AND_ASSIGN(auto dir, sys::TempDir::Create("hone-build"));
  BuildRecipe r;
  r.build = {{"sh", "-c", "echo 'x.cc:3: error: expected ;' >&2; exit 2"}};
  BuildResult b = RunBuild(r, PathsIn(dir->path()), std::chrono::seconds(30), sys::DefaultProcessRunner(), sys::DefaultClock());
  EXPECT_FALSE(b.ok);
  EXPECT_FALSE(b.timed_out);
  EXPECT_THAT(b.message, HasSubstr("exit 2"));
  EXPECT_THAT(b.log_tail, HasSubstr("error: expected ;"));
}

TEST(RunBuildTest, AHangingBuildIsKilledAtTheDeadline) {
  ASSERT_OK_AND_ASSIGN(auto dir, sys::TempDir::Create("hone-build"));
  BuildRecipe r;
  r.build = {{"sh", "-c", "sleep 300"}};
  BuildResult b = RunBuild(r, PathsIn(dir->path()), std::chrono::milliseconds(500), sys::DefaultProcessRunner(), sys::DefaultClock());
  EXPECT_FALSE(b.ok);
  EXPECT_TRUE(b.timed_out);
  EXPECT_THAT(b.message, HasSubstr("limit"));
}

TEST(RunBuildTest, MissingArtifactIsAFailure) {
  ASSERT_OK_AND_ASSIGN(auto dir, sys::TempDir::Create("hone-build"));
  BuildRecipe r;
  r.build = {{"true"}};
  r.artifacts = {"bin/llama-server"};
  BuildResult b = RunBuild(r, PathsIn(dir->path()), std::chrono::seconds(30), sys::DefaultProcessRunner(), sys::DefaultClock());
  EXPECT_FALSE(b.ok);
  EXPECT_THAT(b.message, HasSubstr("did not produce bin/llama-server"));
}

TEST(CMakeRecipeTest, UsesCcacheBaseDirAtTheSlot) {
  BuildRecipe r = CMakeRecipe("x", {"-DFOO=1"}, {"llama-server"}, {"bin/llama-server"});
  ASSERT_EQ(r.configure.size(), 1u);
  EXPECT_THAT(Join(r.configure[0], " "), HasSubstr("-S {src} -B {build} -G Ninja"));
  EXPECT_THAT(Join(r.configure[0], " "), HasSubstr("-DFOO=1"));
  EXPECT_THAT(Join(r.build[0], " "), HasSubstr("--target llama-server"));
  EXPECT_EQ(r.env.at("CCACHE_BASEDIR"), "{slot}");
  EXPECT_NE(r.Digest(), CMakeRecipe("x", {"-DFOO=2"}, {"llama-server"}, {}).Digest());
}

// A make-based project: each object records in build/log when it is rebuilt, so the
// test sees exactly which files an incremental build recompiled.
class IncrementalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-incremental");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    live_ = dir_->path() / "live";
    slot_ = dir_->path() / "slot";
    ASSERT_OK(sys::EnsureDir(live_));
    ASSERT_OK(sys::WriteFileAtomic(live_ / "a.c", "a1\n"));
    ASSERT_OK(sys::WriteFileAtomic(live_ / "b.c", "b1\n"));
    ASSERT_OK(sys::WriteFileAtomic(live_ / "Makefile",
                                   "all: $(B)/a.o $(B)/b.o\n"
                                   "$(B)/a.o: $(S)/a.c\n\tcp $< $@ && echo a >> $(B)/log\n"
                                   "$(B)/b.o: $(S)/b.c\n\tcp $< $@ && echo b >> $(B)/log\n"));
    Sh(live_, "git init -q -b main . && git add -A && git -c user.name=t -c user.email=t@t commit -qm c1");
    recipe_.build = {{"make", "-s", "-f", "{src}/Makefile", "S={src}", "B={build}"}};
  }
  std::string Head() { return std::string(Trim(Sh(live_, "git rev-parse HEAD"))); }
  // One proposal cycle: fresh worktree of `base`, optional edit, prepare, build.
  std::string Cycle(const std::string& base, const std::string& edit, const std::vector<std::string>& touched,
                    bool finish) {
    auto wt = Worktree::Create(live_, slot_ / "src", "hone/p/t", base);
    EXPECT_TRUE(wt);
    if (!wt) return "";
    auto left = PrepareIncremental((*wt)->path(), slot_ / "build", recipe_.Digest(), base, touched);
    EXPECT_TRUE(left);
    if (!edit.empty()) Sh((*wt)->path(), edit);
    (void)std::remove((slot_ / "build/log").c_str());
    BuildResult b = RunBuild(recipe_, BuildPaths{(*wt)->path(), slot_ / "build", slot_, slot_ / "log.txt", 1},
                             std::chrono::seconds(30), sys::DefaultProcessRunner(), sys::DefaultClock());
    EXPECT_TRUE(b.ok) << b.message << b.log_tail;
    if (finish) EXPECT_OK(FinishBuildState(slot_ / "build", recipe_.Digest(), base, touched));
    auto log = sys::ReadFile(slot_ / "build/log");
    return log ? ReplaceAll(*log, "\n", "") : "";
  }

  std::unique_ptr<sys::TempDir> dir_;
  fs::path live_;
  fs::path slot_;
  BuildRecipe recipe_;
};

TEST_F(IncrementalTest, OnlyChangedFilesAreRebuiltAcrossFreshWorktrees) {
  std::string c1 = Head();
  EXPECT_EQ(Cycle(c1, "", {}, true), "ab");  // no state yet: full build
  EXPECT_EQ(Cycle(c1, "", {}, true), "");    // same tree: nothing to do
  Sh(live_, "echo b2 > b.c && git -c user.name=t -c user.email=t@t commit -qam c2");
  std::string c2 = Head();
  EXPECT_EQ(Cycle(c2, "", {}, true), "b");  // the base moved: b.c only
  // A proposal edits a.c (the build uses the edit) ...
  EXPECT_EQ(Cycle(c2, "echo a-patched > a.c", {"a.c"}, true), "a");
  // ... and is reverted: a.o must be rebuilt from the accepted a.c.
  EXPECT_EQ(Cycle(c2, "", {}, true), "a");
  ASSERT_OK_AND_ASSIGN(std::string a_obj, sys::ReadFile(slot_ / "build/a.o"));
  EXPECT_EQ(a_obj, "a1\n");
}

TEST_F(IncrementalTest, ABuildThatDiedKeepsItsFilesDirty) {
  std::string c1 = Head();
  EXPECT_EQ(Cycle(c1, "", {}, true), "ab");
  // Patched a.c built, but the run never finished (no FinishBuildState: e.g. killed).
  EXPECT_EQ(Cycle(c1, "echo a-patched > a.c", {"a.c"}, false), "a");
  // The next proposal touches b.c only; a.c is still dirty from the dead run.
  EXPECT_EQ(Cycle(c1, "echo b-patched > b.c", {"b.c"}, true), "ab");
  ASSERT_OK_AND_ASSIGN(std::string a_obj, sys::ReadFile(slot_ / "build/a.o"));
  EXPECT_EQ(a_obj, "a1\n");
}

TEST_F(IncrementalTest, ADifferentRecipeMeansAFullBuild) {
  std::string c1 = Head();
  EXPECT_EQ(Cycle(c1, "", {}, true), "ab");
  recipe_.build[0].push_back("-j1");
  EXPECT_EQ(Cycle(c1, "", {}, true), "ab");
}

}  // namespace
}  // namespace hone::patch
