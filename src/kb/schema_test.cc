// Schema versioning and migrations on real files: a fresh file, a v1 file written by
// an older hone, a file from a newer hone, and two opens of the same file.
#include "kb/schema.h"

#include <gtest/gtest.h>

#include "testing/kb_recipes.h"
#include "kb/store.h"
#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::kb {
namespace {

using namespace std::chrono_literals;

class SchemaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-kb-schema");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    path_ = (dir_->path() / "kb.sqlite").string();
  }
  std::unique_ptr<sys::TempDir> dir_;
  std::string path_;
};

TEST_F(SchemaTest, MigrationsAreOrderedAndEndAtTheCurrentVersion) {
  const auto& steps = Migrations();
  ASSERT_FALSE(steps.empty());
  for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i].version, static_cast<int>(i + 1));
  EXPECT_EQ(steps.back().version, kSchemaVersion);
}

TEST_F(SchemaTest, FreshFileIsCreatedAtTheCurrentVersion) {
  ASSERT_OK_AND_ASSIGN(auto store, RecipeStore::Open(path_, testing::RepoRules()));
  EXPECT_EQ(store->opened_at_version(), 0);
  ASSERT_OK_AND_ASSIGN(SqliteDb db, SqliteDb::Open(path_, 1000ms));
  ASSERT_OK_AND_ASSIGN(int v, SchemaVersion(db));
  EXPECT_EQ(v, kSchemaVersion);
  ASSERT_OK_AND_ASSIGN(auto mode, db.Prepare("PRAGMA journal_mode"));
  ASSERT_OK_AND_ASSIGN(bool row, mode.Step());
  ASSERT_TRUE(row);
  EXPECT_EQ(mode.Text(0), "wal");
  // Re-opening migrates nothing.
  store.reset();
  ASSERT_OK_AND_ASSIGN(store, RecipeStore::Open(path_, testing::RepoRules()));
  EXPECT_EQ(store->opened_at_version(), kSchemaVersion);
}

TEST_F(SchemaTest, V1FileMigratesToCurrentKeepingItsRecipes) {
  {
    // A file as hone with schema v1 left it: the v1 step and one recipe row.
    ASSERT_OK_AND_ASSIGN(SqliteDb db, SqliteDb::Open(path_, 1000ms));
    ASSERT_OK(db.Exec(Migrations()[0].sql));
    ASSERT_OK(db.Exec("CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (1);"));
    ASSERT_OK(db.Exec(R"sql(
      INSERT INTO recipes (id, recipe_key, model, hardware, framework, model_type, architecture, framework_version,
        precision, workload_kind, concurrency, isl, osl, objective_name, objective_value, objective_ci_lo,
        objective_ci_hi, objective_unit, objective_trials, baseline_value, baseline_trials, hone_version, session_id,
        measured_at, status, reproduce_count)
      VALUES (5, 'k-old', 'llama-tiny', 'cpu-x86_64-2c', 'llama.cpp', 'llama', 'LlamaForCausalLM', '0.4.2', 'q8_0',
        'fixed', 4, 512, 128, 'output_tok_per_s', 130, 120, 140, 'tok/s', 't-7,t-9', 100, 't-1', '0.0.9', 's-old',
        '2025-11-01T00:00:00Z', 'active', 2);
      INSERT INTO recipe_config VALUES (5, 'threads', '2');
      INSERT INTO learnings (recipe_id, knob, value, effect, effect_ci_lo, effect_ci_hi, trial_ids)
        VALUES (5, 'threads', '2', 0.3, 0.2, 0.4, 't-3');
      INSERT INTO failures (id, recipe_id, kind, detail, trial_ids) VALUES (1, 5, 'out_of_memory', 'ctx 128k', 't-4');
      INSERT INTO failure_config VALUES (1, 'ctx_size', '131072');
    )sql"));
  }
  ASSERT_OK_AND_ASSIGN(auto store, RecipeStore::Open(path_, testing::RepoRules()));
  EXPECT_EQ(store->opened_at_version(), 1);
  ASSERT_OK_AND_ASSIGN(Recipe r, store->Get(5));
  EXPECT_EQ(r.identity, testing::TestIdentity());
  EXPECT_EQ(r.config, (Config{{"threads", "2"}}));
  EXPECT_EQ(r.objective.value, 130);
  EXPECT_EQ(r.objective.trial_ids, (std::vector<std::string>{"t-7", "t-9"}));
  EXPECT_EQ(r.reproduce_count, 2);
  EXPECT_EQ(r.status, RecipeStatus::kActive);
  EXPECT_EQ(r.demoted_reason, "");  // a v2 column, defaulted
  ASSERT_EQ(r.learnings.size(), 1u);
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0].kind, FailureKind::kOutOfMemory);
  EXPECT_EQ(r.failures[0].config_delta, (Config{{"ctx_size", "131072"}}));
  // v2 backfilled one history event from the recorded numbers.
  ASSERT_EQ(r.history.size(), 1u);
  EXPECT_EQ(r.history[0].event, "migrated");
  EXPECT_EQ(r.history[0].session_id, "s-old");
  EXPECT_EQ(r.history[0].objective_value, 130);
  EXPECT_EQ(r.history[0].trial_ids, (std::vector<std::string>{"t-7", "t-9"}));
  // The migrated store is fully usable: demote writes the v2 columns.
  ASSERT_OK(store->Demote(5, "stale", "s-now"));
  ASSERT_OK_AND_ASSIGN(r, store->Get(5));
  EXPECT_EQ(r.status, RecipeStatus::kDemoted);
  EXPECT_EQ(r.demoted_reason, "stale");
}

TEST_F(SchemaTest, NewerSchemaIsRefusedNotDowngraded) {
  {
    ASSERT_OK_AND_ASSIGN(auto store, RecipeStore::Open(path_, testing::RepoRules()));
  }
  {
    ASSERT_OK_AND_ASSIGN(SqliteDb db, SqliteDb::Open(path_, 1000ms));
    ASSERT_OK(db.Exec("UPDATE schema_version SET version = 99"));
  }
  auto store = RecipeStore::Open(path_, testing::RepoRules());
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(store.error().message.find("has schema v99, newer than this hone (v" + std::to_string(kSchemaVersion) + ")"), std::string::npos)
      << store.error().ToString();
  ASSERT_OK_AND_ASSIGN(SqliteDb db, SqliteDb::Open(path_, 1000ms));
  ASSERT_OK_AND_ASSIGN(int v, SchemaVersion(db));
  EXPECT_EQ(v, 99);
}

TEST_F(SchemaTest, NotADatabaseIsDataLoss) {
  ASSERT_OK(sys::WriteFileAtomic(path_, "this is a text file, not a recipe database\n" + std::string(2000, '.')));
  auto store = RecipeStore::Open(path_, testing::RepoRules());
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, ErrorCode::kDataLoss) << store.error().ToString();
}

}  // namespace
}  // namespace hone::kb
