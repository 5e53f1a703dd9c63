#include "policy/gate.h"

#include <thread>

#include "core/strings.h"
#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::policy {
namespace {

class GateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto g = Gate::Load((testing::SourceDir() / "data/policy/rules.yaml").string());
    ASSERT_TRUE(g) << g.error().ToString();
    gate_ = std::move(*g);
  }

  static Action Patch(ActionKind kind, const std::string& role, const std::string& actor,
                      const std::string& diff_text) {
    Action a;
    a.kind = kind;
    a.role = role;
    a.actor = actor;
    a.subject = "p1";
    a.patch.target = "llama.cpp";
    a.patch.diff_sha256 = sys::Sha256Hex(diff_text);
    a.patch.files = {"tools/server/server.cpp"};
    a.patch.diff_bytes = diff_text.size();
    a.patch.lines_added = 1;
    a.patch.lines_removed = 1;
    return a;
  }
  CriticReview Review(const std::string& diff_text, CriticVerdict v, const std::string& reviewer = "critic#1") {
    return CriticReview{"p1", sys::Sha256Hex(diff_text), reviewer, v, "looks right"};
  }

  std::unique_ptr<Gate> gate_;
};

TEST_F(GateTest, UnknownRoleIsRejectedWithRuleAndHint) {
  Action a{.kind = ActionKind::kLaunchTrial, .role = "wizard", .actor = "w", .subject = "t1"};
  PolicyDecision d = gate_->Decide(a);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.rule_id, "role.unknown");
  EXPECT_FALSE(d.hint.empty());
  EXPECT_TRUE(d.token.empty());
  EXPECT_THAT(d.ToString(), ::testing::HasSubstr("[rule role.unknown; hint: "));
}

TEST_F(GateTest, RolesMayOnlyAskForTheirActions) {
  Action merge = Patch(ActionKind::kMergePatch, "specialist", "specialist#1", "diff");
  EXPECT_EQ(gate_->Decide(merge).rule_id, "role.allowed_actions");
  Action knob{
      .kind = ActionKind::kChangeKnob, .role = "critic", .actor = "critic#1", .subject = "threads", .value = "4"};
  EXPECT_EQ(gate_->Decide(knob).rule_id, "role.allowed_actions");
  knob.role = "coordinator";
  EXPECT_TRUE(gate_->Decide(knob).allowed);
}

TEST_F(GateTest, WorkloadContractKnobsAreProtected) {
  Action a{
      .kind = ActionKind::kChangeKnob, .role = "coordinator", .actor = "c", .subject = "model", .value = "other.gguf"};
  PolicyDecision d = gate_->Decide(a);
  EXPECT_EQ(d.rule_id, "knob.workload_contract");
  EXPECT_THAT(d.message, ::testing::HasSubstr("'model'"));
}

TEST_F(GateTest, OnlyTheCoordinatorWritesCoreState) {
  Action a{
      .kind = ActionKind::kWriteState, .role = "robustness", .actor = "r", .subject = "baseline.tput", .value = "1"};
  EXPECT_EQ(gate_->Decide(a).rule_id, "state.core_writers");
  a.subject = "crash_count";
  EXPECT_TRUE(gate_->Decide(a).allowed);
  a.role = "coordinator";
  a.subject = "baseline.tput";
  EXPECT_TRUE(gate_->Decide(a).allowed);
  a.subject = "made_up_field";
  EXPECT_EQ(gate_->Decide(a).rule_id, "state.unknown_field");
}

TEST_F(GateTest, ResourceLimitsPerProposal) {
  Action a{.kind = ActionKind::kLaunchTrial, .role = "coordinator", .actor = "c", .subject = "t1", .gpus = 16};
  PolicyDecision d = gate_->Decide(a);
  EXPECT_EQ(d.rule_id, "budget.gpus_per_proposal");
  EXPECT_THAT(d.message, ::testing::HasSubstr("16 GPUs (limit 8)"));
  a.gpus = 1;
  a.seconds = 7200;
  EXPECT_EQ(gate_->Decide(a).rule_id, "budget.seconds_per_proposal");
  a.seconds = 600;
  EXPECT_TRUE(gate_->Decide(a).allowed);
}

TEST_F(GateTest, KernelBackendsAndKbWrites) {
  Action k{.kind = ActionKind::kRunKernelBackend, .role = "kernel_agent", .actor = "k", .subject = "mystery"};
  EXPECT_EQ(gate_->Decide(k).rule_id, "kernel.backends");
  k.subject = "triton";
  EXPECT_TRUE(gate_->Decide(k).allowed);
  Action kb{.kind = ActionKind::kWriteKb, .role = "coordinator", .actor = "c", .subject = "recipes"};
  EXPECT_EQ(gate_->Decide(kb).rule_id, "kb.requires_evidence");
  kb.evidence = "trial-0007";
  EXPECT_TRUE(gate_->Decide(kb).allowed);
}

TEST_F(GateTest, PatchContentIsCheckedAtTheGate) {
  Action a = Patch(ActionKind::kApplyPatch, "specialist", "s#1", "d");
  a.patch.files = {"tools/server/../../etc/passwd"};
  EXPECT_EQ(gate_->Decide(a).rule_id, "patch.path_escape");
  a.patch.files = {".git/hooks/post-checkout"};
  EXPECT_EQ(gate_->Decide(a).rule_id, "patch.git_dir");
  a.patch.files = {"tools/server/CMakeLists.txt"};
  EXPECT_EQ(gate_->Decide(a).rule_id, "patch.allowed_files.llama_cpp");
  a.patch.files = {"tools/server/server.cpp"};
  a.patch.binary = true;
  EXPECT_EQ(gate_->Decide(a).rule_id, "patch.binary");
  a.patch.binary = false;
  a.patch.mode_change = true;
  EXPECT_EQ(gate_->Decide(a).rule_id, "patch.mode");
  a.patch.mode_change = false;
  a.patch.diff_bytes = 10 << 20;
  EXPECT_EQ(gate_->Decide(a).rule_id, "patch.size");
  a.patch.diff_bytes = 100;
  a.patch.diff_sha256 = "not-a-hash";
  EXPECT_EQ(gate_->Decide(a).rule_id, "action.malformed");
}

TEST_F(GateTest, NoMergeWithoutACriticSignOffOfTheExactDiff) {
  const std::string diff = "the diff";
  Action apply = Patch(ActionKind::kApplyPatch, "specialist", "specialist#1", diff);
  ASSERT_TRUE(gate_->Decide(apply).allowed);
  Action merge = Patch(ActionKind::kMergePatch, "coordinator", "patch-executor", diff);
  PolicyDecision no_review = gate_->Decide(merge);
  EXPECT_EQ(no_review.rule_id, "patch.critic_signoff");
  EXPECT_THAT(no_review.message, ::testing::HasSubstr("no critic has signed off"));

  // A review needs a proposal the gate let through; the author cannot review itself;
  // a specialist cannot sign off at all.
  CriticReview orphan = Review(diff, CriticVerdict::kApprove);
  orphan.proposal_id = "never-proposed";
  EXPECT_EQ(gate_->RecordReview("critic", orphan).rule_id, "action.malformed");
  EXPECT_EQ(gate_->RecordReview("critic", Review(diff, CriticVerdict::kApprove, "specialist#1")).rule_id,
            "patch.no_self_review");
  EXPECT_EQ(gate_->RecordReview("specialist", Review(diff, CriticVerdict::kApprove, "specialist#2")).rule_id,
            "role.allowed_actions");
  EXPECT_EQ(gate_->Decide(merge).rule_id, "patch.critic_signoff");

  // A reject is recorded but signs nothing off.
  ASSERT_TRUE(gate_->RecordReview("critic", Review(diff, CriticVerdict::kReject)).allowed);
  EXPECT_THAT(gate_->Decide(merge).message, ::testing::HasSubstr("said reject"));

  // Approval of a different diff does not count.
  ASSERT_TRUE(gate_->RecordReview("critic", Review("another diff", CriticVerdict::kApprove)).allowed);
  EXPECT_THAT(gate_->Decide(merge).message, ::testing::HasSubstr("reviewed a different diff"));

  ASSERT_TRUE(gate_->RecordReview("critic", Review(diff, CriticVerdict::kApprove)).allowed);
  PolicyDecision ok = gate_->Decide(merge);
  ASSERT_TRUE(ok.allowed) << ok.ToString();
  EXPECT_THAT(ok.token.claims, ::testing::HasSubstr("signoff=critic#1:approve"));
  EXPECT_OK(gate_->Verify(ok.token, ActionKind::kMergePatch, "p1", sys::Sha256Hex(diff)));
}

TEST_F(GateTest, TokensAreBoundToKindSubjectAndDiff) {
  const std::string diff = "d1";
  PolicyDecision apply = gate_->Decide(Patch(ActionKind::kApplyPatch, "specialist", "s#1", diff));
  ASSERT_TRUE(apply.allowed);
  std::string sha = sys::Sha256Hex(diff);
  EXPECT_OK(gate_->Verify(apply.token, ActionKind::kApplyPatch, "p1", sha));
  auto wrong_kind = gate_->Verify(apply.token, ActionKind::kMergePatch, "p1", sha);
  ASSERT_FALSE(wrong_kind);
  EXPECT_EQ(wrong_kind.error().Get("rule"), "gate.token_invalid");
  EXPECT_FALSE(gate_->Verify(apply.token, ActionKind::kApplyPatch, "p2", sha));
  EXPECT_FALSE(gate_->Verify(apply.token, ActionKind::kApplyPatch, "p1", sys::Sha256Hex("d2")));
  EXPECT_FALSE(gate_->Verify(ApprovalToken{}, ActionKind::kApplyPatch, "p1", sha));
}

TEST_F(GateTest, ForgedOrAlteredTokensFail) {
  const std::string diff = "d1";
  PolicyDecision apply = gate_->Decide(Patch(ActionKind::kApplyPatch, "specialist", "s#1", diff));
  ASSERT_TRUE(apply.allowed);
  // Claim a sign-off and a merge the gate never granted: the MAC no longer matches.
  ApprovalToken forged = apply.token;
  forged.claims = ReplaceAll(forged.claims, "kind=apply_patch", "kind=merge_patch");
  forged.claims = ReplaceAll(forged.claims, "signoff=-", "signoff=critic#1:approve");
  auto v = gate_->Verify(forged, ActionKind::kMergePatch, "p1", sys::Sha256Hex(diff));
  ASSERT_FALSE(v);
  EXPECT_THAT(v.error().message, ::testing::HasSubstr("signature does not match"));
  // A second gate (another key) does not accept the first gate's tokens.
  ASSERT_OK_AND_ASSIGN(auto other, Gate::Create(gate_->rules()));
  EXPECT_FALSE(other->Verify(apply.token, ActionKind::kApplyPatch, "p1", sys::Sha256Hex(diff)));
}

TEST_F(GateTest, ControlCharactersAreMalformed) {
  Action a{.kind = ActionKind::kLaunchTrial, .role = "coordinator", .actor = "c", .subject = "t1\nkind=merge_patch"};
  EXPECT_EQ(gate_->Decide(a).rule_id, "action.malformed");
}

TEST_F(GateTest, DecisionsAreRecordedInOrderWithDenialStreak) {
  Action bad{.kind = ActionKind::kLaunchTrial, .role = "nobody", .actor = "x", .subject = "t"};
  gate_->Decide(bad);
  gate_->Decide(bad);
  EXPECT_EQ(gate_->consecutive_denials(), 2);
  Action good{.kind = ActionKind::kLaunchTrial, .role = "coordinator", .actor = "c", .subject = "t"};
  gate_->Decide(good);
  EXPECT_EQ(gate_->consecutive_denials(), 0);
  auto all = gate_->decisions();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].seq, 1);
  EXPECT_EQ(all[2].seq, 3);
  EXPECT_TRUE(all[2].allowed);
}

TEST_F(GateTest, ConcurrentDecisionsAreAllRecorded) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        gate_->Decide(Action{.kind = ActionKind::kLaunchTrial, .role = "coordinator", .actor = "c", .subject = "t"});
      }
    });
  }
  for (auto& th : threads) th.join();
  auto all = gate_->decisions();
  ASSERT_EQ(all.size(), 200u);
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].seq, static_cast<int64_t>(i + 1));
}

}  // namespace
}  // namespace hone::policy
