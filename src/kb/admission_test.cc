// Admission rules (pure) and their effect on a real store: only validated results
// enter, duplicates update, failed reproductions demote but never delete.
#include "kb/admission.h"

#include <gtest/gtest.h>

#include "testing/kb_recipes.h"
#include "kb/store.h"
#include "testing/test_util.h"

namespace hone::kb {
namespace {

using testing::RepoRules;
using testing::SessionQualified;
using testing::TestIdentity;
using testing::TestRecipe;
using testing::Validated;

TEST(AdmissionRulesTest, RepositoryThresholdsLoad) {
  AdmissionRules r = RepoRules().admission;
  EXPECT_GE(r.min_objective_trials, 1);
  EXPECT_GT(r.reproduce_min_fraction, 0);
  EXPECT_LE(r.reproduce_min_fraction, 1);
  EXPECT_EQ(r.inconclusive_replays_to_demote, 2);
}

TEST(AdmissionRulesTest, EachRuleRejectsWithAReason) {
  AdmissionRules rules = RepoRules().admission;
  ASSERT_EQ(AdmissionRejection(Validated(TestRecipe()), rules), "");

  struct Case {
    const char* name;
    std::function<void(AdmissionRequest&)> spoil;
    const char* reason;
  } cases[] = {
      {"verdict", [](AdmissionRequest& q) { q.verdict_keep = false; }, "verdict is not KEEP"},
      {"accuracy", [](AdmissionRequest& q) { q.accuracy_passed = false; }, "accuracy gate did not pass"},
      {"close", [](AdmissionRequest& q) { q.remeasured_at_close = false; }, "not re-measured at close"},
      {"identity", [](AdmissionRequest& q) { q.recipe.identity.precision = ""; }, "identity field 'precision' is empty"},
      {"config", [](AdmissionRequest& q) { q.recipe.config = Config(); }, "the winning config is empty"},
      {"objective trials", [](AdmissionRequest& q) { q.recipe.objective.trial_ids.clear(); },
       "objective has 0 trial id(s), needs at least 1"},
      {"baseline trials", [](AdmissionRequest& q) { q.recipe.baseline.trial_ids.clear(); },
       "baseline has 0 trial id(s), needs at least 1"},
      {"bad trial id", [](AdmissionRequest& q) { q.recipe.objective.trial_ids = {"t 1"}; }, "malformed trial id 't 1'"},
      {"ci", [](AdmissionRequest& q) { q.recipe.objective.ci_hi = 119; }, "does not contain its value"},
      {"no gain",
       [](AdmissionRequest& q) {
         q.recipe.objective.value = 100.5;
         q.recipe.objective.ci_lo = 100.2;
       },
       "gain 0.5% over the baseline is below the admission minimum 1.0%"},
      {"ci overlaps baseline", [](AdmissionRequest& q) { q.recipe.objective.ci_lo = 99; },
       "objective CI [99, 125] does not exclude the baseline 100"},
      {"worse latency",
       [](AdmissionRequest& q) {
         q.recipe.objective.higher_is_better = false;  // 120 ms vs a 100 ms baseline is a regression
       },
       "gain -20.0%"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    AdmissionRequest req = Validated(TestRecipe());
    c.spoil(req);
    EXPECT_NE(AdmissionRejection(req, rules).find(c.reason), std::string::npos) << AdmissionRejection(req, rules);
  }
}

TEST(AdmissionRulesTest, LowerIsBetterObjectivesAreJudgedInTheirDirection) {
  AdmissionRequest req = Validated(TestRecipe());
  req.recipe.objective = {.name = "ttft_p99_ms", .value = 80, .ci_lo = 75, .ci_hi = 85, .unit = "ms",
                          .higher_is_better = false, .trial_ids = {"t-8"}};
  EXPECT_EQ(AdmissionRejection(req, RepoRules().admission), "");
  EXPECT_NEAR(req.recipe.GainFraction(), 0.2, 1e-12);
}

class AdmissionStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-kb-admit");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    auto s = RecipeStore::Open(dir_->path() / "kb.sqlite", RepoRules());
    ASSERT_TRUE(s) << s.error().ToString();
    store_ = std::move(*s);
  }
  std::unique_ptr<sys::TempDir> dir_;
  std::unique_ptr<RecipeStore> store_;
};

TEST_F(AdmissionStoreTest, RejectedResultsAreNotStored) {
  AdmissionRequest req = Validated(TestRecipe());
  req.accuracy_passed = false;
  ASSERT_OK_AND_ASSIGN(Admission a, store_->Admit(req));
  EXPECT_FALSE(a.admitted);
  EXPECT_EQ(a.reason, "accuracy gate did not pass");
  ASSERT_OK_AND_ASSIGN(int64_t n, store_->Count());
  EXPECT_EQ(n, 0);
}

TEST_F(AdmissionStoreTest, AdmittedRecipeReadsBackWhole) {
  ASSERT_OK_AND_ASSIGN(Admission a, store_->Admit(Validated(TestRecipe())));
  ASSERT_TRUE(a.admitted);
  EXPECT_FALSE(a.updated_existing);
  ASSERT_OK_AND_ASSIGN(Recipe r, store_->Get(a.recipe_id));
  Recipe want = SessionQualified(TestRecipe());
  EXPECT_EQ(r.learnings[0].trial_ids, std::vector<std::string>{"s-1/t-3"});  // each names its session
  EXPECT_EQ(r.identity, want.identity);
  EXPECT_EQ(r.workload, want.workload);
  EXPECT_EQ(r.config, want.config);
  EXPECT_EQ(r.objective, want.objective);
  EXPECT_EQ(r.baseline, want.baseline);
  EXPECT_EQ(r.learnings, want.learnings);
  EXPECT_EQ(r.failures, want.failures);
  EXPECT_EQ(r.provenance, want.provenance);
  EXPECT_EQ(r.status, RecipeStatus::kActive);
  EXPECT_EQ(r.reproduce_count, 0);
  ASSERT_EQ(r.history.size(), 1u);
  EXPECT_EQ(r.history[0].event, "admitted");
  EXPECT_EQ(r.history[0].trial_ids, want.objective.trial_ids);
  auto missing = store_->Get(a.recipe_id + 100);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST_F(AdmissionStoreTest, SameIdentityWorkloadAndConfigUpdatesKeepingHistory) {
  ASSERT_OK_AND_ASSIGN(Admission first, store_->Admit(Validated(TestRecipe("s-1"))));
  Recipe again = TestRecipe("s-2");
  again.objective.value = 124;
  again.objective.trial_ids = {"t-21"};
  again.provenance.date = "2026-02-01T00:00:00Z";
  again.learnings = {{"threads", "2", 0.2, 0.15, 0.25, {"t-22"}}};  // replaces the older threads=2 learning
  ASSERT_OK_AND_ASSIGN(Admission second, store_->Admit(Validated(again)));
  EXPECT_TRUE(second.admitted);
  EXPECT_TRUE(second.updated_existing);
  EXPECT_EQ(second.recipe_id, first.recipe_id);
  ASSERT_OK_AND_ASSIGN(int64_t n, store_->Count());
  EXPECT_EQ(n, 1);
  ASSERT_OK_AND_ASSIGN(Recipe r, store_->Get(first.recipe_id));
  EXPECT_EQ(r.objective.value, 124);
  EXPECT_EQ(r.provenance.session_id, "s-2");
  EXPECT_EQ(r.reproduce_count, 1);
  ASSERT_EQ(r.learnings.size(), 2u);
  EXPECT_EQ(r.learnings[0].knob, "flash_attn");
  EXPECT_EQ(r.learnings[1].trial_ids, std::vector<std::string>{"s-2/t-22"});
  EXPECT_EQ(r.failures.size(), 1u);  // same failure again: not duplicated
  ASSERT_EQ(r.history.size(), 2u);
  EXPECT_EQ(r.history[0].objective_value, 120);
  EXPECT_EQ(r.history[1].event, "updated");
  EXPECT_EQ(r.history[1].objective_value, 124);
  EXPECT_NE(r.history[1].detail.find("previous objective 120 (session s-1)"), std::string::npos);

  // Another config at the same point is another recipe.
  Recipe other = TestRecipe("s-3");
  other.config.Set("threads", "1");
  ASSERT_OK_AND_ASSIGN(Admission third, store_->Admit(Validated(other)));
  EXPECT_FALSE(third.updated_existing);
  ASSERT_OK_AND_ASSIGN(n, store_->Count());
  EXPECT_EQ(n, 2);
}

ReplayOutcome ReplayAt(const Recipe& r, double objective, double baseline, bool accuracy = true) {
  return {.identity = r.identity, .workload = r.workload, .objective_value = objective, .baseline_value = baseline,
          .accuracy_passed = accuracy, .trial_ids = {"t-r1"}, .session_id = "s-replay", .hone_version = "0.1.0"};
}

TEST_F(AdmissionStoreTest, ReplayThatReproducesCountsUp) {
  ASSERT_OK_AND_ASSIGN(Admission a, store_->Admit(Validated(TestRecipe())));  // recorded gain 20%
  // 17% of 20% recorded gain = 85% >= 80%.
  ASSERT_OK_AND_ASSIGN(ReplayVerdict v, store_->RecordReplay(a.recipe_id, ReplayAt(TestRecipe(), 117, 100)));
  EXPECT_TRUE(v.reproduced);
  EXPECT_TRUE(v.same_point);
  EXPECT_NEAR(v.required_gain, 0.16, 1e-12);
  ASSERT_OK_AND_ASSIGN(Recipe r, store_->Get(a.recipe_id));
  EXPECT_EQ(r.reproduce_count, 1);
  EXPECT_EQ(r.history.back().event, "reproduced");
}

TEST_F(AdmissionStoreTest, ReplayThatFailsToReproduceDemotesButKeeps) {
  ASSERT_OK_AND_ASSIGN(Admission a, store_->Admit(Validated(TestRecipe())));
  ASSERT_OK_AND_ASSIGN(ReplayVerdict v, store_->RecordReplay(a.recipe_id, ReplayAt(TestRecipe(), 110, 100)));
  EXPECT_FALSE(v.reproduced);
  EXPECT_TRUE(v.demoted);
  EXPECT_EQ(v.reason, "re-measured gain 10.0% is below 16.0% (80.0% of the recorded 20.0%)");
  ASSERT_OK_AND_ASSIGN(Recipe r, store_->Get(a.recipe_id));
  EXPECT_EQ(r.status, RecipeStatus::kDemoted);
  EXPECT_NE(r.demoted_reason.find("not reproduced in session s-replay"), std::string::npos);
  EXPECT_EQ(r.history.back().event, "not_reproduced");
  ASSERT_OK_AND_ASSIGN(int64_t n, store_->Count());
  EXPECT_EQ(n, 1);  // never deleted
  // Demoted: not replayed, but its failures still count as penalties.
  ASSERT_OK_AND_ASSIGN(MatchResult m, store_->Match({TestIdentity(), {}}));
  EXPECT_FALSE(m.recipe.has_value());
  ASSERT_OK_AND_ASSIGN(auto failures, store_->Failures({TestIdentity(), {}}));
  EXPECT_EQ(failures.size(), 1u);
  ASSERT_OK_AND_ASSIGN(auto learnings, store_->Learnings({TestIdentity(), {}}));
  EXPECT_TRUE(learnings.empty());
  // A new validated result for the same key re-activates it.
  ASSERT_OK_AND_ASSIGN(Admission again, store_->Admit(Validated(TestRecipe("s-4"))));
  EXPECT_TRUE(again.reactivated);
  ASSERT_OK_AND_ASSIGN(r, store_->Get(a.recipe_id));
  EXPECT_EQ(r.status, RecipeStatus::kActive);
}

// Only a statistically kept replay reproduces: an undecided one with a large point
// estimate does not count up. The session's own bar overrides the rules' fraction.
TEST_F(AdmissionStoreTest, ReplayReproducesOnlyWhenKeptAndAtTheSessionsBar) {
  ASSERT_OK_AND_ASSIGN(Admission a, store_->Admit(Validated(TestRecipe())));  // recorded gain 20%
  ReplayOutcome undecided = ReplayAt(TestRecipe(), 125, 100);
  undecided.verdict = Verdict::kInconclusive;
  ASSERT_OK_AND_ASSIGN(ReplayVerdict v, store_->RecordReplay(a.recipe_id, undecided));
  EXPECT_FALSE(v.reproduced);
  EXPECT_EQ(v.reason, "the replay's verdict is INCONCLUSIVE (re-measured gain 25.0%), not a KEEP");
  EXPECT_FALSE(v.demoted);  // undecided, the first time
  ASSERT_OK_AND_ASSIGN(Admission b, store_->Admit(Validated(TestRecipe("s-5"))));  // the same key, updated
  ReplayOutcome lower_bar = ReplayAt(TestRecipe(), 111, 100);  // 11%: below the rules' 80%, above a 50% bar
  lower_bar.reproduce_fraction = 0.5;
  ASSERT_OK_AND_ASSIGN(v, store_->RecordReplay(b.recipe_id, lower_bar));
  EXPECT_TRUE(v.reproduced) << v.reason;
  EXPECT_EQ(v.reason, "re-measured gain 11.0% reaches 10.0% (50.0% of the recorded 20.0%)");
}

// An INCONCLUSIVE replay is no evidence against the recipe: it stays active (and is
// replayed next time) until two replays in a row at its own point decided nothing. A
// decided replay in between starts the count again; a REVERT demotes at once.
TEST_F(AdmissionStoreTest, AnInconclusiveReplayDemotesOnlyTheSecondInARow) {
  ASSERT_OK_AND_ASSIGN(Admission a, store_->Admit(Validated(TestRecipe())));  // recorded gain 20%
  ReplayOutcome undecided = ReplayAt(TestRecipe(), 112, 100);
  undecided.verdict = Verdict::kInconclusive;
  ASSERT_OK_AND_ASSIGN(ReplayVerdict v, store_->RecordReplay(a.recipe_id, undecided));
  EXPECT_FALSE(v.reproduced);
  EXPECT_FALSE(v.demoted);
  EXPECT_EQ(v.inconclusive_in_row, 1);
  ASSERT_OK_AND_ASSIGN(Recipe r, store_->Get(a.recipe_id));
  EXPECT_EQ(r.status, RecipeStatus::kActive);
  EXPECT_EQ(r.history.back().event, "inconclusive");
  EXPECT_NE(r.history.back().detail.find("kept active: 1 of 2 inconclusive replays in a row"), std::string::npos)
      << r.history.back().detail;
  ASSERT_OK_AND_ASSIGN(MatchResult m, store_->Match({TestIdentity(), {}}));
  EXPECT_TRUE(m.recipe.has_value());  // replayed again by the next session

  // A reproduced replay in between: the count starts again.
  ReplayOutcome kept = ReplayAt(TestRecipe(), 119, 100);
  ASSERT_OK_AND_ASSIGN(v, store_->RecordReplay(a.recipe_id, kept));
  EXPECT_TRUE(v.reproduced) << v.reason;
  ASSERT_OK_AND_ASSIGN(v, store_->RecordReplay(a.recipe_id, undecided));
  EXPECT_EQ(v.inconclusive_in_row, 1);
  EXPECT_FALSE(v.demoted);

  // The second in a row demotes, saying so.
  ASSERT_OK_AND_ASSIGN(v, store_->RecordReplay(a.recipe_id, undecided));
  EXPECT_EQ(v.inconclusive_in_row, 2);
  EXPECT_TRUE(v.demoted);
  ASSERT_OK_AND_ASSIGN(r, store_->Get(a.recipe_id));
  EXPECT_EQ(r.status, RecipeStatus::kDemoted);
  EXPECT_EQ(r.history.back().event, "not_reproduced");
  EXPECT_NE(r.demoted_reason.find("not a KEEP (2 replays in a row)"), std::string::npos) << r.demoted_reason;

  // A REVERT (the pairs exclude the gain) demotes at once.
  Recipe other = TestRecipe("s-9");
  other.config.Set("threads", "1");
  ASSERT_OK_AND_ASSIGN(Admission b, store_->Admit(Validated(other)));
  ReplayOutcome reverted = ReplayAt(other, 99, 100);
  reverted.verdict = Verdict::kRevert;
  ASSERT_OK_AND_ASSIGN(v, store_->RecordReplay(b.recipe_id, reverted));
  EXPECT_TRUE(v.demoted);
  EXPECT_EQ(v.inconclusive_in_row, 0);
}

TEST_F(AdmissionStoreTest, ReplayFailingAccuracyDemotes) {
  ASSERT_OK_AND_ASSIGN(Admission a, store_->Admit(Validated(TestRecipe())));
  ASSERT_OK_AND_ASSIGN(ReplayVerdict v,
                       store_->RecordReplay(a.recipe_id, ReplayAt(TestRecipe(), 130, 100, /*accuracy=*/false)));
  EXPECT_FALSE(v.reproduced);
  EXPECT_TRUE(v.demoted);
  EXPECT_EQ(v.reason, "accuracy gate failed on replay");
}

TEST_F(AdmissionStoreTest, ReplayElsewhereThatDoesNotTransferKeepsTheRecipeActive) {
  ASSERT_OK_AND_ASSIGN(Admission a, store_->Admit(Validated(TestRecipe())));
  Recipe elsewhere = TestRecipe();
  elsewhere.identity.precision = "q4_0";
  ASSERT_OK_AND_ASSIGN(ReplayVerdict v, store_->RecordReplay(a.recipe_id, ReplayAt(elsewhere, 101, 100)));
  EXPECT_FALSE(v.reproduced);
  EXPECT_FALSE(v.same_point);
  EXPECT_FALSE(v.demoted);
  ASSERT_OK_AND_ASSIGN(Recipe r, store_->Get(a.recipe_id));
  EXPECT_EQ(r.status, RecipeStatus::kActive);
  EXPECT_EQ(r.history.back().event, "not_transferred");
  EXPECT_NE(r.history.back().detail.find(":q4_0"), std::string::npos) << r.history.back().detail;
}

}  // namespace
}  // namespace hone::kb
