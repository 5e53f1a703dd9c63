#include "kb/schema.h"

#include <string>

namespace hone::kb {

namespace {

// v1: recipes with their identity, operating point, objective, baseline and
// provenance; the winning config, learnings and failures in child tables.
constexpr std::string_view kV1 = R"sql(
CREATE TABLE recipes (
  id INTEGER PRIMARY KEY,
  recipe_key TEXT NOT NULL UNIQUE,
  model TEXT NOT NULL,
  hardware TEXT NOT NULL,
  framework TEXT NOT NULL,
  model_type TEXT NOT NULL,
  architecture TEXT NOT NULL,
  framework_version TEXT NOT NULL,
  precision TEXT NOT NULL,
  workload_kind TEXT NOT NULL,
  concurrency INTEGER NOT NULL DEFAULT 0,
  isl INTEGER NOT NULL DEFAULT 0,
  osl INTEGER NOT NULL DEFAULT 0,
  trace_id TEXT NOT NULL DEFAULT '',
  objective_name TEXT NOT NULL,
  objective_value REAL NOT NULL,
  objective_ci_lo REAL NOT NULL,
  objective_ci_hi REAL NOT NULL,
  objective_unit TEXT NOT NULL DEFAULT '',
  higher_is_better INTEGER NOT NULL DEFAULT 1,
  objective_trials TEXT NOT NULL,
  baseline_value REAL NOT NULL,
  baseline_trials TEXT NOT NULL,
  hone_version TEXT NOT NULL DEFAULT '',
  session_id TEXT NOT NULL DEFAULT '',
  measured_at TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'demoted')),
  reproduce_count INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE recipe_config (
  recipe_id INTEGER NOT NULL REFERENCES recipes(id) ON DELETE CASCADE,
  knob TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (recipe_id, knob)
);
CREATE TABLE learnings (
  id INTEGER PRIMARY KEY,
  recipe_id INTEGER NOT NULL REFERENCES recipes(id) ON DELETE CASCADE,
  knob TEXT NOT NULL,
  value TEXT NOT NULL,
  effect REAL NOT NULL,
  effect_ci_lo REAL NOT NULL,
  effect_ci_hi REAL NOT NULL,
  trial_ids TEXT NOT NULL DEFAULT ''
);
CREATE INDEX learnings_by_recipe ON learnings(recipe_id);
CREATE TABLE failures (
  id INTEGER PRIMARY KEY,
  recipe_id INTEGER NOT NULL REFERENCES recipes(id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '',
  trial_ids TEXT NOT NULL DEFAULT ''
);
CREATE INDEX failures_by_recipe ON failures(recipe_id);
CREATE TABLE failure_config (
  failure_id INTEGER NOT NULL REFERENCES failures(id) ON DELETE CASCADE,
  knob TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (failure_id, knob)
);
)sql";

// v2: per-recipe history (admissions, updates, replays, demotions), the demotion
// reason, an update time, and an index over the never-relaxed match fields. Existing
// recipes get one "migrated" history event carrying their recorded numbers.
constexpr std::string_view kV2 = R"sql(
ALTER TABLE recipes ADD COLUMN demoted_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE recipes ADD COLUMN updated_at TEXT NOT NULL DEFAULT '';
UPDATE recipes SET updated_at = measured_at;
CREATE TABLE recipe_history (
  id INTEGER PRIMARY KEY,
  recipe_id INTEGER NOT NULL REFERENCES recipes(id) ON DELETE CASCADE,
  event TEXT NOT NULL,
  session_id TEXT NOT NULL DEFAULT '',
  hone_version TEXT NOT NULL DEFAULT '',
  date TEXT NOT NULL,
  objective_value REAL NOT NULL DEFAULT 0,
  baseline_value REAL NOT NULL DEFAULT 0,
  trial_ids TEXT NOT NULL DEFAULT '',
  detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX history_by_recipe ON recipe_history(recipe_id);
INSERT INTO recipe_history (recipe_id, event, session_id, hone_version, date, objective_value, baseline_value,
                            trial_ids, detail)
  SELECT id, 'migrated', session_id, hone_version, measured_at, objective_value, baseline_value, objective_trials,
         'recorded before schema v2'
  FROM recipes;
CREATE INDEX recipes_by_class ON recipes(framework, model_type, architecture, status);
)sql";

// The same steps in PostgreSQL: ids are BIGSERIAL (a sequence; the store reads the
// new id with lastval()), integers BIGINT, doubles DOUBLE PRECISION (PostgreSQL's
// REAL is 32-bit), and everything else as in SQLite.
constexpr std::string_view kV1Postgres = R"sql(
CREATE TABLE recipes (
  id BIGSERIAL PRIMARY KEY,
  recipe_key TEXT NOT NULL UNIQUE,
  model TEXT NOT NULL,
  hardware TEXT NOT NULL,
  framework TEXT NOT NULL,
  model_type TEXT NOT NULL,
  architecture TEXT NOT NULL,
  framework_version TEXT NOT NULL,
  precision TEXT NOT NULL,
  workload_kind TEXT NOT NULL,
  concurrency BIGINT NOT NULL DEFAULT 0,
  isl BIGINT NOT NULL DEFAULT 0,
  osl BIGINT NOT NULL DEFAULT 0,
  trace_id TEXT NOT NULL DEFAULT '',
  objective_name TEXT NOT NULL,
  objective_value DOUBLE PRECISION NOT NULL,
  objective_ci_lo DOUBLE PRECISION NOT NULL,
  objective_ci_hi DOUBLE PRECISION NOT NULL,
  objective_unit TEXT NOT NULL DEFAULT '',
  higher_is_better BIGINT NOT NULL DEFAULT 1,
  objective_trials TEXT NOT NULL,
  baseline_value DOUBLE PRECISION NOT NULL,
  baseline_trials TEXT NOT NULL,
  hone_version TEXT NOT NULL DEFAULT '',
  session_id TEXT NOT NULL DEFAULT '',
  measured_at TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'demoted')),
  reproduce_count BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE recipe_config (
  recipe_id BIGINT NOT NULL REFERENCES recipes(id) ON DELETE CASCADE,
  knob TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (recipe_id, knob)
);
CREATE TABLE learnings (
  id BIGSERIAL PRIMARY KEY,
  recipe_id BIGINT NOT NULL REFERENCES recipes(id) ON DELETE CASCADE,
  knob TEXT NOT NULL,
  value TEXT NOT NULL,
  effect DOUBLE PRECISION NOT NULL,
  effect_ci_lo DOUBLE PRECISION NOT NULL,
  effect_ci_hi DOUBLE PRECISION NOT NULL,
  trial_ids TEXT NOT NULL DEFAULT ''
);
CREATE INDEX learnings_by_recipe ON learnings(recipe_id);
CREATE TABLE failures (
  id BIGSERIAL PRIMARY KEY,
  recipe_id BIGINT NOT NULL REFERENCES recipes(id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '',
  trial_ids TEXT NOT NULL DEFAULT ''
);
CREATE INDEX failures_by_recipe ON failures(recipe_id);
CREATE TABLE failure_config (
  failure_id BIGINT NOT NULL REFERENCES failures(id) ON DELETE CASCADE,
  knob TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (failure_id, knob)
);
)sql";

constexpr std::string_view kV2Postgres = R"sql(
ALTER TABLE recipes ADD COLUMN demoted_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE recipes ADD COLUMN updated_at TEXT NOT NULL DEFAULT '';
UPDATE recipes SET updated_at = measured_at;
CREATE TABLE recipe_history (
  id BIGSERIAL PRIMARY KEY,
  recipe_id BIGINT NOT NULL REFERENCES recipes(id) ON DELETE CASCADE,
  event TEXT NOT NULL,
  session_id TEXT NOT NULL DEFAULT '',
  hone_version TEXT NOT NULL DEFAULT '',
  date TEXT NOT NULL,
  objective_value DOUBLE PRECISION NOT NULL DEFAULT 0,
  baseline_value DOUBLE PRECISION NOT NULL DEFAULT 0,
  trial_ids TEXT NOT NULL DEFAULT '',
  detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX history_by_recipe ON recipe_history(recipe_id);
INSERT INTO recipe_history (recipe_id, event, session_id, hone_version, date, objective_value, baseline_value,
                            trial_ids, detail)
  SELECT id, 'migrated', session_id, hone_version, measured_at, objective_value, baseline_value, objective_trials,
         'recorded before schema v2'
  FROM recipes;
CREATE INDEX recipes_by_class ON recipes(framework, model_type, architecture, status);
)sql";

// v3: notes on a recipe: what a reviewer (the critic) learned from its session's
// decisions, in words, for the next session's orchestrator.
constexpr std::string_view kV3 = R"sql(
CREATE TABLE recipe_notes (
  id INTEGER PRIMARY KEY,
  recipe_id INTEGER NOT NULL REFERENCES recipes(id) ON DELETE CASCADE,
  source TEXT NOT NULL,
  subject TEXT NOT NULL DEFAULT '',
  text TEXT NOT NULL,
  session_id TEXT NOT NULL DEFAULT ''
);
CREATE INDEX notes_by_recipe ON recipe_notes(recipe_id);
)sql";

constexpr std::string_view kV3Postgres = R"sql(
CREATE TABLE recipe_notes (
  id BIGSERIAL PRIMARY KEY,
  recipe_id BIGINT NOT NULL REFERENCES recipes(id) ON DELETE CASCADE,
  source TEXT NOT NULL,
  subject TEXT NOT NULL DEFAULT '',
  text TEXT NOT NULL,
  session_id TEXT NOT NULL DEFAULT ''
);
CREATE INDEX notes_by_recipe ON recipe_notes(recipe_id);
)sql";

}  // namespace

const std::vector<Migration>& Migrations() {
  static const std::vector<Migration> kSteps = {
      {1, "recipes, configs, learnings, failures", kV1, kV1Postgres},
      {2, "history, demotion reason, match index", kV2, kV2Postgres},
      {3, "notes (the critic's learnings)", kV3, kV3Postgres},
  };
  return kSteps;
}

Result<int> SchemaVersion(Database& db) {
  HONE_ASSIGN_OR_RETURN(bool has_table, db.TableExists("schema_version"));
  if (!has_table) return 0;
  HONE_ASSIGN_OR_RETURN(std::optional<int64_t> v, db.QueryInt("SELECT max(version) FROM schema_version"));
  return v ? static_cast<int>(*v) : 0;
}

Result<int> Migrate(Database& db) {
  static_assert(kSchemaVersion == 3, "update kSchemaVersion together with Migrations()");
  // Cheap check first: an up-to-date file needs no write lock.
  HONE_ASSIGN_OR_RETURN(int found, SchemaVersion(db));
  if (found == kSchemaVersion) return found;
  HONE_ASSIGN_OR_RETURN(Transaction txn, Transaction::BeginImmediate(db));
  // Re-read under the write lock: another process may have migrated meanwhile.
  HONE_ASSIGN_OR_RETURN(found, SchemaVersion(db));
  if (found > kSchemaVersion) {
    return Fail(Error{ErrorCode::kFailedPrecondition,
                      "kb " + db.path() + " has schema v" + std::to_string(found) + ", newer than this hone (v" +
                          std::to_string(kSchemaVersion) + "); upgrade hone or use another --kb",
                      {{"path", db.path()}}});
  }
  HONE_TRY(db.Exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"));
  for (const Migration& m : Migrations()) {
    if (m.version <= found) continue;
    auto applied = db.Exec(m.Sql(db.dialect()));
    if (!applied) {
      return Fail(std::move(applied).error().Wrap("migrating kb to v" + std::to_string(m.version) + " (" +
                                                  std::string(m.what) + ")"));
    }
  }
  HONE_TRY(db.Exec("DELETE FROM schema_version"));
  HONE_ASSIGN_OR_RETURN(Statement set, db.Prepare("INSERT INTO schema_version (version) VALUES (?1)"));
  HONE_TRY(set.BindAll(kSchemaVersion));
  HONE_TRY(set.Run());
  HONE_TRY(txn.Commit());
  return found;
}

}  // namespace hone::kb
