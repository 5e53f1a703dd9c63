// RecipeStore reads and priors on a real file: listing, and learnings/failures of
// every matching recipe weighted by its match confidence.
#include "kb/store.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "kb/jsonl.h"
#include "testing/kb_recipes.h"
#include "testing/test_util.h"

namespace hone::kb {
namespace {

using testing::RepoRules;
using testing::TestIdentity;
using testing::TestRecipe;
using testing::Validated;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-kb-store");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    auto s = RecipeStore::Open(dir_->path() / "sub" / "kb.sqlite", RepoRules());  // creates the directory
    ASSERT_TRUE(s) << s.error().ToString();
    store_ = std::move(*s);
  }
  int64_t AdmitOrDie(const Recipe& r) {
    auto a = store_->Admit(Validated(r));
    EXPECT_TRUE(a && a->admitted) << (a ? a->reason : a.error().ToString());
    return a ? a->recipe_id : 0;
  }
  std::unique_ptr<sys::TempDir> dir_;
  std::unique_ptr<RecipeStore> store_;
};

TEST_F(StoreTest, ListReturnsEveryRecipeInIdOrder) {
  Recipe a = TestRecipe();
  Recipe b = TestRecipe();
  b.identity.model = "llama-other";
  int64_t ia = AdmitOrDie(a);
  int64_t ib = AdmitOrDie(b);
  ASSERT_OK(store_->Demote(ia, "manual", "s-9"));
  ASSERT_OK_AND_ASSIGN(std::vector<Recipe> all, store_->List());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, ia);
  EXPECT_EQ(all[0].status, RecipeStatus::kDemoted);
  EXPECT_EQ(all[1].id, ib);
  EXPECT_EQ(all[1].identity.model, "llama-other");
}

TEST_F(StoreTest, PriorsComeFromEveryMatchingRecipeWithItsConfidence) {
  Recipe exact = TestRecipe();
  exact.learnings = {{"threads", "2", 0.15, 0.1, 0.2, {"t-3"}}};
  int64_t exact_id = AdmitOrDie(exact);

  Recipe other_hw = TestRecipe();
  other_hw.identity.hardware = "cpu-arm64-8c";  // 0.60: priors, never replay
  other_hw.learnings = {{"batch_size", "1024", 0.30, 0.2, 0.4, {"t-31"}}};
  other_hw.failures = {{Config{{"mlock", "on"}}, FailureKind::kOutOfMemory, "mlock limit", {"t-32"}}};
  int64_t hw_id = AdmitOrDie(other_hw);

  Recipe other_framework = TestRecipe();
  other_framework.identity.framework = "vllm";  // never relaxed: no priors
  other_framework.learnings = {{"max_num_seqs", "64", 0.5, 0.4, 0.6, {"t-41"}}};
  AdmitOrDie(other_framework);

  MatchQuery q{TestIdentity(), TestRecipe().workload};
  ASSERT_OK_AND_ASSIGN(std::vector<PriorLearning> learnings, store_->Learnings(q));
  ASSERT_EQ(learnings.size(), 2u);
  EXPECT_EQ(learnings[0].recipe_id, exact_id);
  EXPECT_EQ(learnings[0].confidence, 1.0);
  EXPECT_EQ(learnings[0].step, "exact");
  EXPECT_EQ(learnings[0].learning.knob, "threads");
  EXPECT_EQ(learnings[1].recipe_id, hw_id);
  EXPECT_NEAR(learnings[1].confidence, 0.60, 1e-12);
  EXPECT_EQ(learnings[1].step, "other_hardware");
  EXPECT_EQ(learnings[1].learning.knob, "batch_size");

  ASSERT_OK_AND_ASSIGN(std::vector<PriorFailure> failures, store_->Failures(q));
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_EQ(failures[0].recipe_id, exact_id);
  EXPECT_EQ(failures[0].failure.kind, FailureKind::kCrashed);
  EXPECT_EQ(failures[1].failure.kind, FailureKind::kOutOfMemory);
  EXPECT_EQ(failures[1].failure.config_delta, (Config{{"mlock", "on"}}));
  EXPECT_NEAR(failures[1].confidence, 0.60, 1e-12);
}

// The critic's learnings are notes on the recipe: kept with it, not repeated when the
// same lesson comes again with a re-admission, and offered to a matching session.
TEST_F(StoreTest, CriticNotesAreKeptOnceAndOfferedToMatchingSessions) {
  Recipe r = TestRecipe("s-1");
  const int64_t id = AdmitOrDie(r);
  Recipe again = TestRecipe("s-2");
  again.notes.push_back({"critic", "c005 ubatch_size=512 KEEP", "batching the prompt helps at ISL 512", "s-2"});
  ASSERT_EQ(AdmitOrDie(again), id);  // the same key: an update
  ASSERT_OK_AND_ASSIGN(Recipe stored, store_->Get(id));
  ASSERT_EQ(stored.notes.size(), 2u);
  EXPECT_EQ(stored.notes[0], r.notes[0]);  // the repeated lesson is stored once, from its first session
  EXPECT_EQ(stored.notes[1].text, "batching the prompt helps at ISL 512");
  ASSERT_OK_AND_ASSIGN(std::vector<PriorNote> notes, store_->Notes({TestIdentity(), TestRecipe().workload}));
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].recipe_id, id);
  EXPECT_EQ(notes[0].confidence, 1.0);
  EXPECT_EQ(notes[0].note.subject, "c003 threads=4 REVERT");
  // Another framework's recipe is never a prior: no notes.
  MatchQuery other{TestIdentity(), TestRecipe().workload};
  other.identity.framework = "vllm";
  ASSERT_OK_AND_ASSIGN(notes, store_->Notes(other));
  EXPECT_TRUE(notes.empty());
}

// A session that admits no recipe (its stock won, its best was not re-validated) keeps
// what it learned as the stock's record: no config, demoted, never matched or replayed,
// its failures and notes offered to later sessions; a later session merges what is new
// into the same record, and the record travels through export and import like any
// recipe.
TEST_F(StoreTest, TheStocksRecordKeepsFailuresAndIsNeverReplayed) {
  Recipe stock = TestRecipe("s-1");
  stock.config = Config{};
  stock.objective = {.name = "output_tok_per_s", .value = 100, .ci_lo = 95, .ci_hi = 104, .trial_ids = {"t-1", "t-2"}};
  stock.learnings.clear();
  ASSERT_OK_AND_ASSIGN(Admission first, store_->KeepStockRecord(stock, "the stock configuration won"));
  EXPECT_FALSE(first.admitted);
  EXPECT_EQ(first.reason, "new stock record #" + std::to_string(first.recipe_id) + " (1 failure(s))");
  ASSERT_OK_AND_ASSIGN(Recipe kept, store_->Get(first.recipe_id));
  EXPECT_TRUE(kept.IsStockRecord());
  EXPECT_EQ(kept.demoted_reason, kStockRecordReason);
  ASSERT_EQ(kept.history.size(), 1u);
  EXPECT_EQ(kept.history[0].event, "stock_record");
  EXPECT_EQ(kept.history[0].detail, "the stock configuration won; 1 failure(s) kept");

  MatchQuery q{TestIdentity(), stock.workload};
  ASSERT_OK_AND_ASSIGN(MatchResult m, store_->Match(q));
  EXPECT_FALSE(m.recipe);  // nothing to replay
  ASSERT_OK_AND_ASSIGN(std::vector<PriorFailure> failures, store_->Failures(q));
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].recipe_id, first.recipe_id);
  EXPECT_EQ(failures[0].failure.config_delta, (Config{{"cache_type_v", "q4_0"}}));
  ASSERT_OK_AND_ASSIGN(std::vector<PriorNote> notes, store_->Notes(q));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].note.subject, "c003 threads=4 REVERT");
  ASSERT_OK_AND_ASSIGN(std::vector<PriorLearning> learnings, store_->Learnings(q));
  EXPECT_TRUE(learnings.empty());

  // The next stock win at the same point: one new failure, the known one not repeated.
  Recipe again = stock;
  again.provenance = {.hone_version = "0.1.0", .session_id = "s-2", .date = "2026-01-03T00:00:00Z"};
  again.failures.push_back({Config{{"weights", "q4_0"}}, FailureKind::kAccuracyFailed, "agreement 50%", {"t-11"}});
  ASSERT_OK_AND_ASSIGN(Admission second,
                       store_->KeepStockRecord(again, "the best configuration was not re-validated at close"));
  EXPECT_EQ(second.recipe_id, first.recipe_id);
  EXPECT_EQ(second.reason, "stock record #" + std::to_string(first.recipe_id) + " updated (2 failure(s) from this session)");
  ASSERT_OK_AND_ASSIGN(kept, store_->Get(first.recipe_id));
  ASSERT_EQ(kept.failures.size(), 2u);
  EXPECT_EQ(kept.failures[0].trial_ids, std::vector<std::string>{"s-1/t-4"});  // each trial names its session
  EXPECT_EQ(kept.failures[1].kind, FailureKind::kAccuracyFailed);
  EXPECT_EQ(kept.failures[1].trial_ids, std::vector<std::string>{"s-2/t-11"});
  EXPECT_EQ(kept.history.back().event, "stock_record");
  EXPECT_TRUE(kept.history.back().detail.starts_with("the best configuration was not re-validated at close; merged: "))
      << kept.history.back().detail;
  EXPECT_EQ(kept.provenance.session_id, "s-2");

  // Through export and import into another store, as it was.
  ASSERT_OK_AND_ASSIGN(std::string lines, store_->ExportJsonl());
  ASSERT_OK_AND_ASSIGN(auto other, RecipeStore::Open(dir_->path() / "other.sqlite", RepoRules()));
  ASSERT_OK_AND_ASSIGN(ImportStats stats, other->ImportJsonl(lines, "kb.jsonl"));
  EXPECT_EQ(stats.added, 1);
  ASSERT_OK_AND_ASSIGN(std::vector<Recipe> all, other->List());
  ASSERT_EQ(all.size(), 1u);
  EXPECT_TRUE(all[0].IsStockRecord());
  EXPECT_EQ(all[0].failures, kept.failures);

  // An empty config is never admitted as a recipe to replay.
  ASSERT_OK_AND_ASSIGN(Admission admitted, store_->Admit(Validated(stock)));
  EXPECT_FALSE(admitted.admitted);
  EXPECT_EQ(admitted.reason, "the winning config is empty (stock): nothing to replay");
}

// A user drops a stale failure (a value recorded as regressed under an old session's
// noise): only the failures about exactly that delta go, the rest stay, later sessions'
// priors no longer hold it, and the history says what was dropped and why.
TEST_F(StoreTest, AForgottenFailureLeavesThePriorsAndStaysInTheHistory) {
  Recipe r = TestRecipe();
  r.failures.push_back({Config{{"flash_attn", "on"}}, FailureKind::kRegressed, "gain +0.31%", {"t-8"}});
  r.failures.push_back({Config{{"flash_attn", "on"}, {"threads", "1"}}, FailureKind::kCrashed, "", {"t-9"}});
  int64_t id = AdmitOrDie(r);
  MatchQuery q{TestIdentity(), r.workload};
  ASSERT_OK_AND_ASSIGN(std::vector<PriorFailure> before, store_->Failures(q));
  ASSERT_EQ(before.size(), 3u);

  ASSERT_OK_AND_ASSIGN(std::vector<Failure> dropped,
                       store_->ForgetFailures(id, Config{{"flash_attn", "on"}}, "measured under a 4.9% floor"));
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].kind, FailureKind::kRegressed);
  ASSERT_OK_AND_ASSIGN(Recipe kept, store_->Get(id));
  ASSERT_EQ(kept.failures.size(), 2u);
  EXPECT_EQ(kept.failures[0].config_delta, (Config{{"cache_type_v", "q4_0"}}));
  EXPECT_EQ(kept.failures[1].config_delta, (Config{{"flash_attn", "on"}, {"threads", "1"}}));
  EXPECT_EQ(kept.history.back().event, "forgotten");
  EXPECT_EQ(kept.history.back().detail, "regressed flash_attn=on (gain +0.31%): measured under a 4.9% floor");
  ASSERT_OK_AND_ASSIGN(std::vector<PriorFailure> after, store_->Failures(q));
  ASSERT_EQ(after.size(), 2u);
  for (const PriorFailure& p : after) EXPECT_NE(p.failure.config_delta, (Config{{"flash_attn", "on"}}));

  // Nothing about that delta any more: NotFound, naming what the recipe holds.
  auto again = store_->ForgetFailures(id, Config{{"flash_attn", "on"}}, "");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::kNotFound);
  EXPECT_NE(again.error().message.find("has no failure about flash_attn=on (it has: crashed cache_type_v=q4_0, "
                                       "crashed flash_attn=on threads=1)"),
            std::string::npos)
      << again.error().message;
  EXPECT_FALSE(store_->ForgetFailures(id + 100, Config{{"flash_attn", "on"}}, ""));
}

// A forgotten failure stays forgotten across machines: an export made before the forget
// does not bring it back (the same trials), while a later session's failure of the same
// value does come in (new trials); and an export made after it drops the failure from a
// store that still held it.
TEST_F(StoreTest, AForgottenFailureStaysForgottenThroughImports) {
  Recipe r = TestRecipe();
  r.failures.push_back({Config{{"flash_attn", "on"}}, FailureKind::kRegressed, "gain +0.31%", {"t-8"}});
  int64_t id = AdmitOrDie(r);
  ASSERT_OK_AND_ASSIGN(std::string before, store_->ExportJsonl());
  ASSERT_OK_AND_ASSIGN(auto other, RecipeStore::Open(dir_->path() / "other.sqlite", RepoRules()));
  ASSERT_OK(other->ImportJsonl(before, "before.jsonl"));
  auto holds = [](const Recipe& x) {
    return std::any_of(x.failures.begin(), x.failures.end(),
                       [](const Failure& f) { return f.config_delta == Config{{"flash_attn", "on"}}; });
  };

  ASSERT_OK(store_->ForgetFailures(id, Config{{"flash_attn", "on"}}, "stale"));
  ASSERT_OK_AND_ASSIGN(Recipe forgot, store_->Get(id));
  ASSERT_EQ(forgot.history.back().event, "forgotten");
  ASSERT_EQ(forgot.history.back().trial_ids.size(), 1u);  // the dropped failure's trials, qualified
  EXPECT_TRUE(forgot.history.back().trial_ids[0].ends_with("/t-8")) << forgot.history.back().trial_ids[0];

  // The export from before: nothing new, the failure stays out.
  ASSERT_OK_AND_ASSIGN(ImportStats again, store_->ImportJsonl(before, "before.jsonl"));
  EXPECT_EQ(again.unchanged, 1);
  EXPECT_EQ(again.merged, 0);
  ASSERT_OK_AND_ASSIGN(Recipe after_import, store_->Get(id));
  EXPECT_FALSE(holds(after_import));
  EXPECT_EQ(after_import.failures.size(), forgot.failures.size());

  // The export from after, into the store that still held it: dropped there too.
  ASSERT_OK_AND_ASSIGN(Recipe held, other->Get(1));
  ASSERT_TRUE(holds(held));
  ASSERT_OK_AND_ASSIGN(std::string after, store_->ExportJsonl());
  ASSERT_OK_AND_ASSIGN(ImportStats spread, other->ImportJsonl(after, "after.jsonl"));
  EXPECT_EQ(spread.merged, 1);
  ASSERT_OK_AND_ASSIGN(Recipe dropped, other->Get(1));
  EXPECT_FALSE(holds(dropped));
  EXPECT_EQ(dropped.failures.size(), held.failures.size() - 1);
  EXPECT_NE(dropped.history.back().detail.find("1 failure(s) forgotten there"), std::string::npos)
      << dropped.history.back().detail;
  ASSERT_OK_AND_ASSIGN(ImportStats twice, other->ImportJsonl(after, "after.jsonl"));
  EXPECT_EQ(twice.unchanged, 1);

  // A later session measured the value again and it regressed again: new evidence.
  Recipe later = forgot;
  later.failures.push_back({Config{{"flash_attn", "on"}}, FailureKind::kRegressed, "gain -4.1%", {"s-9/t-3"}});
  ASSERT_OK_AND_ASSIGN(ImportStats fresh, store_->ImportJsonl(RecipeToJsonLine(later) + "\n", "later.jsonl"));
  EXPECT_EQ(fresh.merged, 1);
  ASSERT_OK_AND_ASSIGN(Recipe back, store_->Get(id));
  EXPECT_TRUE(holds(back));
}

TEST_F(StoreTest, PriorsBelowTheirThresholdAreLeftOut) {
  Recipe trace = TestRecipe();
  trace.identity.hardware = "cpu-arm64-8c";  // 0.60 ...
  trace.workload = {.kind = "trace", .trace_id = "agentic-1"};
  AdmitOrDie(trace);
  // ... x 0.5 for another workload kind = 0.30 < priors_min_confidence 0.50.
  ASSERT_OK_AND_ASSIGN(auto learnings, store_->Learnings({TestIdentity(), TestRecipe().workload}));
  EXPECT_TRUE(learnings.empty());
  // Without a workload in the query the operating point is not compared: 0.60.
  ASSERT_OK_AND_ASSIGN(learnings, store_->Learnings({TestIdentity(), {}}));
  EXPECT_EQ(learnings.size(), 2u);
}

TEST_F(StoreTest, LockedDatabaseIsUnavailableNotAHang) {
  AdmitOrDie(TestRecipe());
  StoreOptions impatient;
  impatient.busy_timeout = std::chrono::milliseconds(50);
  ASSERT_OK_AND_ASSIGN(auto other, RecipeStore::Open(store_->path(), RepoRules(), impatient));
  // Hold the write lock from a third connection.
  ASSERT_OK_AND_ASSIGN(SqliteDb holder, SqliteDb::Open(store_->path(), std::chrono::milliseconds(1000)));
  ASSERT_OK_AND_ASSIGN(Transaction txn, Transaction::BeginImmediate(holder));
  Recipe r = TestRecipe();
  r.config.Set("threads", "3");
  auto a = other->Admit(Validated(r));
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, ErrorCode::kUnavailable);
  // Reads still work while the writer holds the lock (WAL).
  ASSERT_OK_AND_ASSIGN(MatchResult m, other->Match({TestIdentity(), {}}));
  EXPECT_TRUE(m.recipe.has_value());
}

}  // namespace
}  // namespace hone::kb
