#include "patch/executor.h"

#include "core/strings.h"
#include "patch/git.h"
#include "testing/patch_fixture.h"
#include "testing/test_util.h"

namespace hone::patch {
namespace {

using testing::Approve;
using testing::ExpectParallel;
using testing::Fixture;
using ::testing::HasSubstr;
using testing::ParallelDiff;
using testing::Sh;
using testing::WalkHash;

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto f = Fixture::Create();
    ASSERT_TRUE(f) << f.error().ToString();
    fx_ = std::move(*f);
    gate_ = testing::ShippedGate();
    ASSERT_NE(gate_, nullptr);
    live_walk_ = WalkHash(fx_.live);
    live_status_ = Sh(fx_.live, "git status --porcelain=v1 --untracked-files=all");
  }
  void TearDown() override {
    if (!fx_.dir) return;
    EXPECT_EQ(WalkHash(fx_.live), live_walk_) << "the live tree changed";
    EXPECT_EQ(Sh(fx_.live, "git status --porcelain=v1 --untracked-files=all"), live_status_);
    EXPECT_EQ(Sh(fx_.live, "git stash list"), "");
    EXPECT_EQ(Trim(Sh(fx_.live, "git branch --list --format='%(refname:short)' 'hone/p/*'")), "");
    EXPECT_EQ(Sh(fx_.live, "git worktree list --porcelain | grep -c '^worktree '"), "1\n");
  }
  std::unique_ptr<PatchExecutor> Executor(ExecutorOptions o) {
    auto ex = PatchExecutor::Create(std::move(o), *gate_);
    EXPECT_TRUE(ex) << ex.error().ToString();
    return ex ? std::move(*ex) : nullptr;
  }
  // A diff made by git in the live tree (edited with `sed -i expr`, then restored).
  std::string GitDiffOf(const std::string& sed_expr) {
    return Sh(fx_.live, "sed -i '" + sed_expr + "' common/common.h && git diff && git checkout -q -- common/common.h");
  }
  Proposal Make(const std::string& id, const std::string& diff) {
    return Proposal{.id = id, .title = "fewer default slots", .author = "specialist#1", .diff = diff};
  }

  Fixture fx_;
  std::unique_ptr<policy::Gate> gate_;
  std::string live_walk_;
  std::string live_status_;
};

TEST_F(ExecutorTest, KeepCommitsOnlyTheTouchedFilesOntoTheAcceptedLine) {
  auto ex = Executor(fx_.Options());
  ASSERT_NE(ex, nullptr);
  const std::string base = ex->accepted_commit();
  EXPECT_EQ(base, Trim(Sh(fx_.live, "git rev-parse HEAD")));
  Proposal p = Make("p1", ParallelDiff(2));
  ASSERT_OK_AND_ASSIGN(PatchRecord r, ex->Run(p, Approve(*gate_, p, "llama.cpp"), ExpectParallel(2)));
  EXPECT_EQ(r.verdict, PatchVerdict::kKept) << r.reason;
  EXPECT_EQ(r.stopped_by, "");
  EXPECT_EQ(r.measure_verdict, "keep");
  EXPECT_EQ(r.strip, 1);
  EXPECT_FALSE(r.three_way);
  EXPECT_GE(r.build_seconds, 0);
  EXPECT_EQ(r.diffstat, " 1 file changed, 1 insertion(+), 1 deletion(-)");
  EXPECT_EQ(r.base_commit, base);
  ASSERT_FALSE(r.commit.empty());
  EXPECT_EQ(ex->accepted_commit(), r.commit);
  EXPECT_EQ(Trim(Sh(fx_.live, "git rev-parse hone/accepted")), r.commit);
  EXPECT_EQ(Trim(Sh(fx_.live, "git rev-parse hone/accepted^")), base);
  EXPECT_EQ(Trim(Sh(fx_.live, "git diff --name-only hone/accepted^ hone/accepted")), "common/common.h");
  std::string msg = Sh(fx_.live, "git log -1 --format=%B hone/accepted");
  EXPECT_THAT(msg, HasSubstr("fewer default slots"));
  EXPECT_THAT(msg, HasSubstr("hone-critic: critic#1:approve"));
  EXPECT_THAT(msg, HasSubstr("hone-diff-sha256: " + r.diff_sha256));
  // The live checkout itself is still on main at the original commit.
  EXPECT_EQ(Trim(Sh(fx_.live, "git rev-parse main")), base);
}

TEST_F(ExecutorTest, MeasuredRevertResetsExactlyToTheAcceptedCommit) {
  auto ex = Executor(fx_.Options());
  ASSERT_NE(ex, nullptr);
  const std::string base = ex->accepted_commit();
  Proposal p = Make("p3", ParallelDiff(3));
  ASSERT_OK_AND_ASSIGN(PatchRecord r, ex->Run(p, Approve(*gate_, p, "llama.cpp"), ExpectParallel(2)));
  EXPECT_EQ(r.verdict, PatchVerdict::kReverted);
  EXPECT_EQ(r.stopped_by, "");  // the measurement, not a rule
  EXPECT_EQ(r.measure_verdict, "revert");
  EXPECT_THAT(r.reason, HasSubstr("n_parallel=3, not n_parallel=2"));
  EXPECT_TRUE(r.reset_verified);
  EXPECT_EQ(ex->accepted_commit(), base);
  EXPECT_EQ(Trim(Sh(fx_.live, "git rev-parse hone/accepted")), base);
}

TEST_F(ExecutorTest, InconclusiveAndMeasurementErrorsRevert) {
  auto ex = Executor(fx_.Options());
  ASSERT_NE(ex, nullptr);
  Proposal p = Make("p-inc", ParallelDiff(2));
  MeasureFn inconclusive = [](const BuiltTree&) -> Result<Measurement> {
    return Measurement{Verdict::kInconclusive, "CI spans zero"};
  };
  ASSERT_OK_AND_ASSIGN(PatchRecord a, ex->Run(p, Approve(*gate_, p, "llama.cpp"), inconclusive));
  EXPECT_EQ(a.verdict, PatchVerdict::kReverted);
  EXPECT_EQ(a.measure_verdict, "inconclusive");
  Proposal q = Make("p-err", ParallelDiff(2));
  MeasureFn broken = [](const BuiltTree&) -> Result<Measurement> { return Unavailable("server did not start"); };
  ASSERT_OK_AND_ASSIGN(PatchRecord b, ex->Run(q, Approve(*gate_, q, "llama.cpp"), broken));
  EXPECT_EQ(b.verdict, PatchVerdict::kReverted);
  EXPECT_EQ(b.measure_verdict, "error");
  EXPECT_THAT(b.reason, HasSubstr("server did not start"));
}

TEST_F(ExecutorTest, NoMergeWithoutCriticSignOffEvenOnKeep) {
  auto ex = Executor(fx_.Options());
  ASSERT_NE(ex, nullptr);
  Proposal p = Make("p-unsigned", ParallelDiff(2));
  ASSERT_OK_AND_ASSIGN(PatchRecord r,
                       ex->Run(p, Approve(*gate_, p, "llama.cpp", /*sign_off=*/false), ExpectParallel(2)));
  EXPECT_EQ(r.verdict, PatchVerdict::kReverted);
  EXPECT_EQ(r.measure_verdict, "keep");
  EXPECT_EQ(r.stopped_by, "patch.critic_signoff");
  EXPECT_THAT(r.reason, HasSubstr("gate denied the merge"));
  EXPECT_TRUE(r.reset_verified);
  EXPECT_TRUE(r.commit.empty());
}

TEST_F(ExecutorTest, DeniedForgedOrMismatchedApprovalsAreRejectedBeforeAnyWorktree) {
  auto ex = Executor(fx_.Options());
  ASSERT_NE(ex, nullptr);
  Proposal p = Make("p-forged", ParallelDiff(2));
  // A decision the gate never made.
  policy::PolicyDecision fake;
  fake.allowed = true;
  fake.kind = policy::ActionKind::kApplyPatch;
  fake.subject = p.id;
  fake.token = policy::ApprovalToken{"hone-approval v1\nkind=apply_patch\nsubject=p-forged", "00"};
  ASSERT_OK_AND_ASSIGN(PatchRecord forged, ex->Run(p, fake, ExpectParallel(2)));
  EXPECT_EQ(forged.verdict, PatchVerdict::kRejected);
  EXPECT_EQ(forged.stopped_by, "gate.token_invalid");
  // A real approval, then the diff is swapped after review.
  policy::PolicyDecision d = Approve(*gate_, p, "llama.cpp");
  Proposal swapped = p;
  swapped.diff = ParallelDiff(1);
  ASSERT_OK_AND_ASSIGN(PatchRecord sw, ex->Run(swapped, d, ExpectParallel(1)));
  EXPECT_EQ(sw.stopped_by, "gate.token_invalid");
  EXPECT_THAT(sw.reason, HasSubstr("different diff"));
  // A denial is recorded with the gate's rule.
  Proposal q = Make("p-denied", ParallelDiff(2));
  policy::Action a{.kind = policy::ActionKind::kApplyPatch, .role = "critic", .actor = "c", .subject = q.id};
  a.patch.diff_sha256 = sys::Sha256Hex(q.diff);
  ASSERT_OK_AND_ASSIGN(PatchRecord denied, ex->Run(q, gate_->Decide(a), ExpectParallel(2)));
  EXPECT_EQ(denied.stopped_by, "role.allowed_actions");
  EXPECT_EQ(denied.strip, -1);
  EXPECT_EQ(ex->records().size(), 3u);
}

TEST_F(ExecutorTest, StaleDiffAppliesWithTheThreeWayFallback) {
  // Both diffs are made by git against the initial tree (so they carry blob ids).
  std::string slots = GitDiffOf("s/return 4;/return 2;/");
  std::string batch = GitDiffOf("s/return 2048;/return 1024;/");
  auto ex = Executor(fx_.Options());
  ASSERT_NE(ex, nullptr);
  Proposal first = Make("batch", batch);
  MeasureFn keep = [](const BuiltTree&) -> Result<Measurement> { return Measurement{Verdict::kKeep, "ok"}; };
  ASSERT_OK_AND_ASSIGN(PatchRecord k, ex->Run(first, Approve(*gate_, first, "llama.cpp"), keep));
  ASSERT_EQ(k.verdict, PatchVerdict::kKept) << k.reason;
  // The accepted line moved on under the second diff: its context no longer matches.
  Proposal p = Make("slots", slots);
  ASSERT_OK_AND_ASSIGN(PatchRecord r, ex->Run(p, Approve(*gate_, p, "llama.cpp"), ExpectParallel(2)));
  EXPECT_EQ(r.verdict, PatchVerdict::kKept) << r.reason;
  EXPECT_TRUE(r.three_way);
  ASSERT_OK_AND_ASSIGN(std::string content, GitOut(fx_.live, {"show", "hone/accepted:common/common.h"}));
  EXPECT_THAT(content, HasSubstr("return 2;"));
  EXPECT_THAT(content, HasSubstr("return 1024;"));
}

TEST_F(ExecutorTest, StripLevelIsDetected) {
  auto ex = Executor(fx_.Options());
  ASSERT_NE(ex, nullptr);
  std::string p0 = ReplaceAll(ReplaceAll(ParallelDiff(2), "a/common", "common"), "b/common", "common");
  p0 = p0.substr(p0.find("--- "));  // a plain diff -u without the git header
  Proposal p = Make("p0", p0);
  ASSERT_OK_AND_ASSIGN(PatchRecord r, ex->Run(p, Approve(*gate_, p, "llama.cpp"), ExpectParallel(2)));
  EXPECT_EQ(r.verdict, PatchVerdict::kKept) << r.reason;
  EXPECT_EQ(r.strip, 0);
  std::string p2 = ReplaceAll(ReplaceAll(ParallelDiff(3), "a/common", "x/y/common"), "b/common", "x/y/common");
  p2 = ReplaceAll(p2, "return 4;", "return 2;");
  Proposal q = Make("p2", p2);
  ASSERT_OK_AND_ASSIGN(PatchRecord r2, ex->Run(q, Approve(*gate_, q, "llama.cpp"), ExpectParallel(3)));
  EXPECT_EQ(r2.verdict, PatchVerdict::kKept) << r2.reason;
  EXPECT_EQ(r2.strip, 2);
}

TEST_F(ExecutorTest, BackportFromAFormatPatchFileGoesThroughTheSamePath) {
  auto ex = Executor(fx_.Options());
  ASSERT_NE(ex, nullptr);
  fs::path file = fx_.dir->path() / "0001-server-fewer-slots.patch";
  ASSERT_OK(sys::WriteFileAtomic(file,
                                 "From 0123 Mon Sep 17 00:00:00 2001\nFrom: Upstream <u@example.com>\n"
                                 "Subject: [PATCH] server: default to two slots\n\n---\n" +
                                     ParallelDiff(2) + "-- \n2.39.5\n"));
  ASSERT_OK_AND_ASSIGN(Proposal p, LoadBackport(file, "bp1", "upstream"));
  EXPECT_EQ(p.origin, "backport:0001-server-fewer-slots.patch");
  EXPECT_EQ(p.title, "backport: server: default to two slots");
  ASSERT_OK_AND_ASSIGN(PatchRecord r, ex->Run(p, Approve(*gate_, p, "llama.cpp"), ExpectParallel(2)));
  EXPECT_EQ(r.verdict, PatchVerdict::kKept) << r.reason;
  EXPECT_EQ(r.origin, "backport:0001-server-fewer-slots.patch");
}

TEST_F(ExecutorTest, UncommittedLiveChangesAreSnapshottedNotTouched) {
  Sh(fx_.live, "echo 'int user_edit = 1;' >> src/llama.cpp");
  live_walk_ = WalkHash(fx_.live);
  live_status_ = Sh(fx_.live, "git status --porcelain=v1 --untracked-files=all");
  auto ex = Executor(fx_.Options());
  ASSERT_NE(ex, nullptr);
  ASSERT_FALSE(ex->live_snapshot().empty());
  EXPECT_EQ(ex->accepted_commit(), ex->live_snapshot());
  EXPECT_EQ(Trim(Sh(fx_.live, "git rev-parse " + ex->live_snapshot() + "^")), Trim(Sh(fx_.live, "git rev-parse HEAD")));
  Proposal p = Make("on-dirty", ParallelDiff(2));
  ASSERT_OK_AND_ASSIGN(PatchRecord r, ex->Run(p, Approve(*gate_, p, "llama.cpp"), ExpectParallel(2)));
  EXPECT_EQ(r.verdict, PatchVerdict::kKept) << r.reason;
  ASSERT_OK_AND_ASSIGN(std::string llama, GitOut(fx_.live, {"show", "hone/accepted:src/llama.cpp"}));
  EXPECT_THAT(llama, HasSubstr("user_edit"));  // built on what the user has
  ASSERT_OK_AND_ASSIGN(std::string common, GitOut(fx_.live, {"show", "hone/accepted:common/common.h"}));
  EXPECT_THAT(common, HasSubstr("return 2;"));
}

TEST_F(ExecutorTest, ResumesOnAnExistingAcceptedLineAndLocksTheWorkRoot) {
  std::string kept;
  {
    auto ex = Executor(fx_.Options());
    ASSERT_NE(ex, nullptr);
    auto second = PatchExecutor::Create(fx_.Options(), *gate_);
    ASSERT_FALSE(second);
    EXPECT_EQ(second.error().code, ErrorCode::kUnavailable);
    Proposal p = Make("r1", ParallelDiff(2));
    ASSERT_OK_AND_ASSIGN(PatchRecord r, ex->Run(p, Approve(*gate_, p, "llama.cpp"), ExpectParallel(2)));
    kept = r.commit;
  }
  auto again = Executor(fx_.Options());
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->accepted_commit(), kept);
}

TEST_F(ExecutorTest, WorkRootInsideTheLiveTreeIsRefused) {
  ExecutorOptions o = fx_.Options();
  o.work_root = fx_.live / "work";
  auto ex = PatchExecutor::Create(o, *gate_);
  ASSERT_FALSE(ex);
  EXPECT_THAT(ex.error().message, HasSubstr("lies inside the live tree"));
  std::error_code ec;
  fs::remove_all(fx_.live / "work", ec);
}

TEST_F(ExecutorTest, IncrementalBuildStateIsReusedAcrossProposals) {
  auto ex = Executor(fx_.Options());
  ASSERT_NE(ex, nullptr);
  Proposal a = Make("i1", ParallelDiff(3));
  ASSERT_OK_AND_ASSIGN(PatchRecord first, ex->Run(a, Approve(*gate_, a, "llama.cpp"), ExpectParallel(2)));
  EXPECT_FALSE(first.incremental);  // first build in this slot
  Proposal b = Make("i2", ParallelDiff(2));
  ASSERT_OK_AND_ASSIGN(PatchRecord second, ex->Run(b, Approve(*gate_, b, "llama.cpp"), ExpectParallel(2)));
  EXPECT_TRUE(second.incremental);
  EXPECT_EQ(second.verdict, PatchVerdict::kKept) << second.reason;
}

}  // namespace
}  // namespace hone::patch
