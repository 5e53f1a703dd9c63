// The patch lane end to end on a real git repository: user-listed diffs go through
// the policy gate and the worktree executor, are "built" by a tiny recipe, measured
// by the coordinator's paired protocol and kept or reverted.
#include "session/patch_lane.h"

#include <gtest/gtest.h>

#include <map>

#include "core/strings.h"
#include "session/coordinator.h"
#include "testing/fake_executor.h"
#include "sys/files.h"
#include "sys/process.h"
#include "testing/fake_clock.h"
#include "testing/test_util.h"

namespace hone::session {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string Git(const std::string& repo, std::vector<std::string> args) {
  args.insert(args.begin(), {"git", "-C", repo});
  auto out = sys::RunCommand({.argv = args}, 30s);
  EXPECT_TRUE(out && out->status.success()) << ShellJoin(args) << ": " << (out ? out->output : out.error().message);
  return out ? std::string(Trim(out->output)) : "";
}

std::string SpeedDiff(const std::string& from, const std::string& to) {
  return "diff --git a/common/speed.h b/common/speed.h\n--- a/common/speed.h\n+++ b/common/speed.h\n@@ -1 +1 @@\n"
         "-#define SPEED " + from + "\n+#define SPEED " + to + "\n";
}

// A coordinator session whose only work is the lane's patches; the fake trials read
// each build's speed from the built "server" file.
Result<SessionState> RunLaneSession(PatchLane& lane, const std::string& run_dir) {
  testing::FakeClock clock;
  FakeExecutor exec;
  exec.clock = &clock;
  exec.run_dir = run_dir;
  exec.noise = 0.002;
  ListProposer proposer({});
  SessionServices svc;
  svc.executor = &exec;
  svc.proposer = &proposer;
  svc.clock = &clock;
  svc.patches = &lane;
  spec::SessionSpec spec;
  spec.target.model.path = "/m.gguf";
  spec.budget.wall_s = 3600;
  Coordinator c(spec, svc, Coordinator::NewState(spec, run_dir, clock));
  return c.Run();
}

TEST(PatchLaneTest, UserPatchesAreGatedBuiltMeasuredAndKeptOrReverted) {
  auto dir = sys::TempDir::Create("hone-patchlane");
  ASSERT_TRUE(dir);
  fs::path root = (*dir)->path();
  std::string repo = (root / "repo").string();
  ASSERT_OK(sys::EnsureDir(root / "repo" / "common"));
  ASSERT_OK(sys::WriteFileAtomic(root / "repo" / "common" / "speed.h", "#define SPEED 1.00\n"));
  ASSERT_OK(sys::WriteFileAtomic(root / "repo" / "CMakeLists.txt", "project(x)\n"));
  Git(repo, {"init", "-q"});
  Git(repo, {"-c", "user.email=t@t", "-c", "user.name=t", "add", "."});
  Git(repo, {"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init"});
  std::string head = Git(repo, {"rev-parse", "HEAD"});
  ASSERT_OK(sys::WriteFileAtomic(root / "fast.diff", SpeedDiff("1.00", "1.30")));
  ASSERT_OK(sys::WriteFileAtomic(root / "slow.diff", SpeedDiff("1.30", "1.25")));
  ASSERT_OK(sys::WriteFileAtomic(root / "cmake.diff",
                                 "--- a/CMakeLists.txt\n+++ b/CMakeLists.txt\n@@ -1 +1 @@\n-project(x)\n+project(y)\n"));
  PatchLaneOptions po;
  po.diff_files = {(root / "fast.diff").string(), (root / "slow.diff").string(), (root / "cmake.diff").string()};
  po.repo = repo;
  po.run_dir = (root / "run").string();
  po.rules_path = (testing::SourceDir() / "data/policy/rules.yaml").string();
  po.recipe.name = "speed file";
  po.recipe.build = {{"sh", "-c", "mkdir -p {build}/bin && sed -n 's/#define SPEED //p' {src}/common/speed.h > "
                                  "{build}/bin/llama-server"}};
  po.recipe.artifacts = {"bin/llama-server"};
  ASSERT_OK_AND_ASSIGN(auto lane, ExecutorPatchLane::Create(po));

  ASSERT_OK_AND_ASSIGN(SessionState s, RunLaneSession(*lane, po.run_dir));
  ASSERT_EQ(s.candidates.size(), 3u);
  EXPECT_EQ(s.candidates[0].patch, "p1-fast");
  EXPECT_EQ(s.candidates[0].verdict, Verdict::kKeep);
  EXPECT_NEAR(s.candidates[0].gain, 0.30, 0.02);
  // The second patch applies on top of the first (the accepted line) and is slower.
  EXPECT_EQ(s.candidates[1].verdict, Verdict::kRevert);
  EXPECT_EQ(s.candidates[2].verdict, Verdict::kPatchRejected);
  EXPECT_NE(s.candidates[2].reason.find("patch.allowed_files"), std::string::npos) << s.candidates[2].reason;
  EXPECT_EQ(s.server_binary, po.run_dir + "/bin/llama-server-p1-fast");
  EXPECT_EQ(*sys::ReadFile(s.server_binary), "1.30\n");
  EXPECT_TRUE(s.validated);
  EXPECT_NEAR(s.validated_gain, 0.30, 0.02);
  // The live tree is untouched; the accepted line moved past it by one commit.
  EXPECT_EQ(Git(repo, {"rev-parse", "HEAD"}), head);
  EXPECT_EQ(Git(repo, {"status", "--porcelain"}), "");
  EXPECT_EQ(*sys::ReadFile(root / "repo" / "common" / "speed.h"), "#define SPEED 1.00\n");
  const std::string accepted = lane->executor().accepted_branch();
  EXPECT_EQ(accepted, BranchPrefix(po.run_dir) + "/accepted");
  EXPECT_EQ(Git(repo, {"rev-parse", accepted + "~1"}), head);
  EXPECT_EQ(lane->executor().records().size(), 3u);
  // The session's line is its own: a second session on the same checkout starts from
  // the checkout's HEAD, not from the first session's kept patch.
  PatchLaneOptions other = po;
  other.run_dir = (root / "run2").string();
  ASSERT_OK_AND_ASSIGN(auto second, ExecutorPatchLane::Create(other));
  EXPECT_NE(second->executor().accepted_branch(), accepted);
  EXPECT_EQ(second->executor().accepted_commit(), head);
  EXPECT_TRUE(BranchPrefix(po.run_dir).starts_with("hone-run-")) << BranchPrefix(po.run_dir);
}

// Writes scripted diffs (or fails) and reviews them as scripted; records what it was asked.
class ScriptedWriter final : public PatchWriter {
 public:
  struct Script {
    Result<std::string> diff;
    bool approve = true;
  };
  std::map<std::string, Script> scripts;
  std::vector<std::string> bases;     // the base commit of every Write
  std::vector<std::string> reviewed;  // the goal ids reviewed

  Result<WrittenPatch> Write(const PatchGoal& goal, const std::string&, const std::string& base_commit) override {
    bases.push_back(base_commit);
    const Script& s = scripts.at(goal.id);
    if (!s.diff) return Fail(s.diff.error());
    return WrittenPatch{*s.diff, "specialist#" + std::to_string(bases.size()), goal.title, "summary"};
  }
  Result<policy::CriticReview> Review(const PatchGoal& goal, const WrittenPatch& p) override {
    reviewed.push_back(goal.id);
    const bool approve = scripts.at(goal.id).approve;
    return policy::CriticReview{goal.id, sys::Sha256Hex(p.diff), "critic#" + std::to_string(reviewed.size()),
                                approve ? policy::CriticVerdict::kApprove : policy::CriticVerdict::kReject,
                                approve ? "fine" : "too risky"};
  }
};

TEST(PatchLaneTest, WrittenDiffsBuildOnTheAcceptedLineAndARefusalOrNoDiffIsARecordedRejection) {
  auto dir = sys::TempDir::Create("hone-patchlane-goals");
  ASSERT_TRUE(dir);
  fs::path root = (*dir)->path();
  std::string repo = (root / "repo").string();
  ASSERT_OK(sys::EnsureDir(root / "repo" / "common"));
  ASSERT_OK(sys::WriteFileAtomic(root / "repo" / "common" / "speed.h", "#define SPEED 1.00\n"));
  Git(repo, {"init", "-q"});
  Git(repo, {"-c", "user.email=t@t", "-c", "user.name=t", "add", "."});
  Git(repo, {"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init"});
  std::string head = Git(repo, {"rev-parse", "HEAD"});
  ScriptedWriter writer;
  writer.scripts["g1"] = {SpeedDiff("1.00", "1.30"), true};
  writer.scripts["g2"] = {SpeedDiff("1.30", "1.60"), false};  // applies, but the reviewer refuses it
  writer.scripts["g3"] = {Result<std::string>(NotFound("specialist g3 made no change")), true};
  PatchLaneOptions po;
  po.goals = {{"g1", "faster", "raise SPEED", {}}, {"g2", "even faster", "raise SPEED more", {}},
              {"g3", "nothing", "no change", {}}};
  po.repo = repo;
  po.run_dir = (root / "run").string();
  po.rules_path = (testing::SourceDir() / "data/policy/rules.yaml").string();
  po.recipe.name = "speed file";
  po.recipe.build = {{"sh", "-c", "mkdir -p {build}/bin && sed -n 's/#define SPEED //p' {src}/common/speed.h > "
                                  "{build}/bin/llama-server"}};
  po.recipe.artifacts = {"bin/llama-server"};
  std::vector<std::string> progress;
  po.progress = [&progress](const std::string& l) { progress.push_back(l); };
  // Goals need a writer.
  EXPECT_FALSE(ExecutorPatchLane::Create(po));
  po.writer = &writer;
  ASSERT_OK_AND_ASSIGN(auto lane, ExecutorPatchLane::Create(po));

  ASSERT_OK_AND_ASSIGN(SessionState s, RunLaneSession(*lane, po.run_dir));
  ASSERT_EQ(s.candidates.size(), 3u);
  EXPECT_EQ(s.candidates[0].patch, "g1");
  EXPECT_EQ(s.candidates[0].verdict, Verdict::kKeep) << s.candidates[0].reason;
  EXPECT_NEAR(s.candidates[0].gain, 0.30, 0.02);
  EXPECT_EQ(s.candidates[1].patch, "g2");
  EXPECT_EQ(s.candidates[1].verdict, Verdict::kPatchRejected);
  EXPECT_EQ(s.candidates[1].reason, "the reviewer refused the diff: too risky [patch.critic_signoff]");
  EXPECT_TRUE(s.candidates[1].candidate_trials.empty());
  EXPECT_EQ(s.candidates[2].verdict, Verdict::kPatchRejected);
  EXPECT_EQ(s.candidates[2].reason, "the writer produced no usable diff: specialist g3 made no change [writer]");
  // The first was written on the live HEAD, the second on the accepted line past it.
  ASSERT_EQ(writer.bases.size(), 3u);
  EXPECT_EQ(writer.bases[0], head);
  const std::string accepted = lane->executor().accepted_branch();
  EXPECT_EQ(Git(repo, {"rev-parse", accepted + "~1"}), head);
  EXPECT_EQ(writer.bases[1], Git(repo, {"rev-parse", accepted}));
  EXPECT_EQ(writer.reviewed, (std::vector<std::string>{"g1", "g2"}));
  // Only the signed-off diff reached the executor; the refused one was never built.
  EXPECT_EQ(lane->executor().records().size(), 1u);
  EXPECT_EQ(s.server_binary, po.run_dir + "/bin/llama-server-g1");
  EXPECT_EQ(Git(repo, {"status", "--porcelain"}), "");
  // Every stage says so as it starts (a real rebuild takes minutes); the refused diff
  // and the missing one never reach the build.
  ASSERT_EQ(progress.size(), 8u) << Join(progress, "\n");
  EXPECT_EQ(progress[0], "g1: the writer works on 'faster'");
  EXPECT_EQ(progress[1], "g1: the reviewer reads the diff (1 file(s), +1/-1)");
  EXPECT_EQ(progress[2], "g1: signed off: fine");
  EXPECT_EQ(progress[3], "g1: building speed file (log " + po.run_dir + "/patch/logs/g1.build.log)");
  EXPECT_TRUE(progress[4].starts_with("g1: built in ")) << progress[4];
  EXPECT_TRUE(progress[4].ends_with(" s; measuring it against the current best")) << progress[4];
  EXPECT_EQ(progress[5], "g2: the writer works on 'even faster'");
  EXPECT_EQ(progress[6], "g2: the reviewer reads the diff (1 file(s), +1/-1)");
  EXPECT_EQ(progress[7], "g3: the writer works on 'nothing'");
  EXPECT_TRUE(sys::FileExists(po.run_dir + "/patch/logs/g1.build.log"));
}

}  // namespace
}  // namespace hone::session
