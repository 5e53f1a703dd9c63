#include "kb/store.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "core/strings.h"
#include "kb/jsonl.h"
#include "kb/postgres.h"
#include "kb/schema.h"
#include "sys/files.h"

namespace hone::kb {

namespace {

constexpr std::string_view kRecipeColumns =
    "id, model, hardware, framework, model_type, architecture, framework_version, precision, workload_kind, "
    "concurrency, isl, osl, trace_id, objective_name, objective_value, objective_ci_lo, objective_ci_hi, "
    "objective_unit, higher_is_better, objective_trials, baseline_value, baseline_trials, hone_version, session_id, "
    "measured_at, status, reproduce_count, demoted_reason, updated_at";

Recipe RowToRecipe(const Statement& s) {
  Recipe r;
  r.id = s.Int(0);
  int col = 1;
  for (MatchField f : kMatchFields) r.identity.Mutable(f) = s.Text(col++);
  r.workload.kind = s.Text(8);
  r.workload.concurrency = s.Int(9);
  r.workload.isl = s.Int(10);
  r.workload.osl = s.Int(11);
  r.workload.trace_id = s.Text(12);
  r.objective.name = s.Text(13);
  r.objective.value = s.Double(14);
  r.objective.ci_lo = s.Double(15);
  r.objective.ci_hi = s.Double(16);
  r.objective.unit = s.Text(17);
  r.objective.higher_is_better = s.Int(18) != 0;
  r.objective.trial_ids = SplitTrialIds(s.Text(19));
  r.baseline.value = s.Double(20);
  r.baseline.trial_ids = SplitTrialIds(s.Text(21));
  r.provenance.hone_version = s.Text(22);
  r.provenance.session_id = s.Text(23);
  r.provenance.date = s.Text(24);
  r.status = s.Text(25) == "demoted" ? RecipeStatus::kDemoted : RecipeStatus::kActive;
  r.reproduce_count = s.Int(26);
  r.demoted_reason = s.Text(27);
  return r;
}

bool SameHistory(const HistoryEvent& a, const HistoryEvent& b) {
  return a.event == b.event && a.date == b.date && a.session_id == b.session_id && a.trial_ids == b.trial_ids;
}

// How a "forgotten" history event names the failure it dropped: its kind and delta,
// then the classifier's detail in parentheses and the user's reason.
std::string ForgottenSubject(const Failure& f) {
  return std::string(FailureKindName(f.kind)) + " " + f.config_delta.ToString();
}

// Whether `e` records that `f` itself was forgotten: the same kind and delta, and the
// same trials (qualified by their session, so a later session's failure of the same
// value is new evidence, never this one). A failure without trial ids matches nothing.
bool Forgets(const HistoryEvent& e, const Failure& f) {
  if (e.event != "forgotten" || f.trial_ids.empty() || e.trial_ids != f.trial_ids) return false;
  const std::string subject = ForgottenSubject(f);
  return e.detail.compare(0, subject.size(), subject) == 0 &&
         (e.detail.size() == subject.size() || e.detail[subject.size()] == ' ' || e.detail[subject.size()] == ':');
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

struct RecipeStore::Candidate {
  int64_t id = 0;
  Identity identity;
  Workload workload;
  RecipeStatus status = RecipeStatus::kActive;
  std::string updated_at;
  std::optional<CandidateScore> score;
  std::string why_not;
};

Result<std::unique_ptr<RecipeStore>> RecipeStore::Open(const std::filesystem::path& path, KbRules rules,
                                                       StoreOptions options) {
  if (path.has_parent_path()) HONE_TRY(sys::EnsureDir(path.parent_path()));
  HONE_ASSIGN_OR_RETURN(SqliteDb db, SqliteDb::Open(path, options.busy_timeout));
  sys::Clock& clock = options.clock != nullptr ? *options.clock : sys::DefaultClock();
  // Switching a fresh file to WAL needs a moment of exclusive access; another process
  // opening the same fresh file at the same time makes it busy, so retry until the
  // busy timeout.
  int64_t deadline_ns = clock.MonoNanos() + options.busy_timeout.count() * 1'000'000;
  std::string mode;
  while (true) {
    HONE_ASSIGN_OR_RETURN(Statement pragma, db.Prepare("PRAGMA journal_mode=WAL"));
    auto row = pragma.Step();
    if (row) {
      mode = *row ? ToLower(pragma.Text(0)) : "";
      break;
    }
    if (row.error().code != ErrorCode::kUnavailable || clock.MonoNanos() > deadline_ns) {
      return Fail(std::move(row).error());
    }
    clock.SleepFor(std::chrono::milliseconds(10));
  }
  if (mode != "wal") {
    return FailedPrecondition("kb " + path.string() + ": the file system does not support WAL (journal_mode is '" +
                              mode + "')");
  }
  // FULL: a committed recipe survives power loss, not only a process crash.
  HONE_TRY(db.Exec("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;"));
  return OpenDatabase(std::make_unique<SqliteDb>(std::move(db)), std::move(rules), std::move(options));
}

Result<std::unique_ptr<RecipeStore>> RecipeStore::OpenAt(const std::string& location, KbRules rules,
                                                         StoreOptions options) {
  if (IsPostgresUrl(location)) {
    HONE_ASSIGN_OR_RETURN(std::unique_ptr<PgDb> db, PgDb::Connect(location, options.busy_timeout));
    return OpenDatabase(std::move(db), std::move(rules), std::move(options));
  }
  if (location.find("://") != std::string::npos) {
    return InvalidArgument("kb " + RedactUrl(location) +
                           ": unknown database URL (a file path, or postgresql://user@host:port/database)");
  }
  std::string path = location.starts_with("sqlite:") ? location.substr(7) : location;
  return Open(path, std::move(rules), std::move(options));
}

Result<std::unique_ptr<RecipeStore>> RecipeStore::OpenDatabase(std::unique_ptr<Database> db, KbRules rules,
                                                               StoreOptions options) {
  HONE_ASSIGN_OR_RETURN(int found, Migrate(*db));
  auto store = std::unique_ptr<RecipeStore>(new RecipeStore(std::move(db), std::move(rules), std::move(options)));
  store->opened_at_version_ = found;
  return store;
}

std::string RecipeStore::Now() {
  sys::Clock& clock = options_.clock != nullptr ? *options_.clock : sys::DefaultClock();
  return sys::FormatUtc(clock.WallMicros());
}

Status RecipeStore::CommitWrite(Transaction& txn) {
  if (options_.before_commit) options_.before_commit();
  return txn.Commit();
}

// ---- reading ----

Result<std::optional<int64_t>> RecipeStore::FindByKey(const std::string& key) {
  HONE_ASSIGN_OR_RETURN(Statement s, db_->Prepare("SELECT id FROM recipes WHERE recipe_key = ?1"));
  HONE_TRY(s.BindAll(key));
  HONE_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return std::optional<int64_t>();
  return std::optional<int64_t>(s.Int(0));
}

Result<Recipe> RecipeStore::LoadLocked(int64_t id) {
  HONE_ASSIGN_OR_RETURN(Statement s,
                        db_->Prepare("SELECT " + std::string(kRecipeColumns) + " FROM recipes WHERE id = ?1"));
  HONE_TRY(s.BindAll(id));
  HONE_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return NotFound("kb " + db_->path() + ": no recipe #" + std::to_string(id));
  Recipe r = RowToRecipe(s);

  HONE_ASSIGN_OR_RETURN(Statement c, db_->Prepare("SELECT knob, value FROM recipe_config WHERE recipe_id = ?1"));
  HONE_TRY(c.BindAll(id));
  while (true) {
    HONE_ASSIGN_OR_RETURN(bool more, c.Step());
    if (!more) break;
    r.config.Set(c.Text(0), c.Text(1));
  }
  HONE_ASSIGN_OR_RETURN(
      Statement l,
      db_->Prepare("SELECT knob, value, effect, effect_ci_lo, effect_ci_hi, trial_ids FROM learnings "
                  "WHERE recipe_id = ?1 ORDER BY id"));
  HONE_TRY(l.BindAll(id));
  while (true) {
    HONE_ASSIGN_OR_RETURN(bool more, l.Step());
    if (!more) break;
    r.learnings.push_back({l.Text(0), l.Text(1), l.Double(2), l.Double(3), l.Double(4), SplitTrialIds(l.Text(5))});
  }
  HONE_ASSIGN_OR_RETURN(
      Statement n, db_->Prepare("SELECT source, subject, text, session_id FROM recipe_notes WHERE recipe_id = ?1 ORDER BY id"));
  HONE_TRY(n.BindAll(id));
  while (true) {
    HONE_ASSIGN_OR_RETURN(bool more, n.Step());
    if (!more) break;
    r.notes.push_back({n.Text(0), n.Text(1), n.Text(2), n.Text(3)});
  }
  HONE_ASSIGN_OR_RETURN(Statement f,
                        db_->Prepare("SELECT id, kind, detail, trial_ids FROM failures WHERE recipe_id = ?1 ORDER BY id"));
  HONE_ASSIGN_OR_RETURN(Statement fc, db_->Prepare("SELECT knob, value FROM failure_config WHERE failure_id = ?1"));
  HONE_TRY(f.BindAll(id));
  while (true) {
    HONE_ASSIGN_OR_RETURN(bool more, f.Step());
    if (!more) break;
    Failure x;
    auto kind = ParseFailureKind(f.Text(1));
    if (!kind) return Fail(std::move(kind).error().Wrap("kb " + db_->path() + ": recipe #" + std::to_string(id)));
    x.kind = *kind;
    x.detail = f.Text(2);
    x.trial_ids = SplitTrialIds(f.Text(3));
    fc.Reset();
    HONE_TRY(fc.BindAll(f.Int(0)));
    while (true) {
      HONE_ASSIGN_OR_RETURN(bool kv, fc.Step());
      if (!kv) break;
      x.config_delta.Set(fc.Text(0), fc.Text(1));
    }
    r.failures.push_back(std::move(x));
  }
  HONE_ASSIGN_OR_RETURN(
      Statement h,
      db_->Prepare("SELECT event, session_id, hone_version, date, objective_value, baseline_value, trial_ids, detail "
                  "FROM recipe_history WHERE recipe_id = ?1 ORDER BY id"));
  HONE_TRY(h.BindAll(id));
  while (true) {
    HONE_ASSIGN_OR_RETURN(bool more, h.Step());
    if (!more) break;
    r.history.push_back({h.Text(0), h.Text(1), h.Text(2), h.Text(3), h.Double(4), h.Double(5),
                         SplitTrialIds(h.Text(6)), h.Text(7)});
  }
  return r;
}

Result<Recipe> RecipeStore::Get(int64_t id) {
  std::lock_guard lock(mu_);
  return LoadLocked(id);
}

Result<std::vector<Recipe>> RecipeStore::List() {
  std::lock_guard lock(mu_);
  // Read the ids and the recipes in one read transaction: a consistent snapshot.
  HONE_TRY(db_->BeginRead());
  auto list = [&]() -> Result<std::vector<Recipe>> {
    HONE_ASSIGN_OR_RETURN(Statement s, db_->Prepare("SELECT id FROM recipes ORDER BY id"));
    std::vector<int64_t> ids;
    while (true) {
      HONE_ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) break;
      ids.push_back(s.Int(0));
    }
    std::vector<Recipe> out;
    for (int64_t id : ids) {
      HONE_ASSIGN_OR_RETURN(Recipe r, LoadLocked(id));
      out.push_back(std::move(r));
    }
    return out;
  }();
  (void)db_->Exec("COMMIT");  // read-only: nothing to lose
  return list;
}

Result<int64_t> RecipeStore::Count() {
  std::lock_guard lock(mu_);
  HONE_ASSIGN_OR_RETURN(std::optional<int64_t> n, db_->QueryInt("SELECT count(*) FROM recipes"));
  return n.value_or(0);
}

// ---- writing ----

Result<int> RecipeStore::InsertNotes(int64_t id, const std::vector<Note>& notes) {
  HONE_ASSIGN_OR_RETURN(Statement known, db_->Prepare("SELECT count(*) FROM recipe_notes WHERE recipe_id = ?1 AND "
                                                      "source = ?2 AND text = ?3"));
  HONE_ASSIGN_OR_RETURN(Statement ins, db_->Prepare("INSERT INTO recipe_notes (recipe_id, source, subject, text, "
                                                    "session_id) VALUES (?1, ?2, ?3, ?4, ?5)"));
  int added = 0;
  for (const Note& x : notes) {
    known.Reset();
    HONE_TRY(known.BindAll(id, x.source, x.text));
    HONE_ASSIGN_OR_RETURN(bool row, known.Step());
    if (row && known.Int(0) > 0) continue;
    ins.Reset();
    HONE_TRY(ins.BindAll(id, x.source, x.subject, x.text, x.session_id));
    HONE_TRY(ins.Run());
    ++added;
  }
  return added;
}

Status RecipeStore::InsertChildren(int64_t id, const std::vector<Learning>& learnings,
                                   const std::vector<Failure>& failures) {
  HONE_ASSIGN_OR_RETURN(Statement l, db_->Prepare("INSERT INTO learnings (recipe_id, knob, value, effect, effect_ci_lo, "
                                                  "effect_ci_hi, trial_ids) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
  for (const Learning& x : learnings) {
    l.Reset();
    HONE_TRY(l.BindAll(id, x.knob, x.value, x.effect, x.effect_ci_lo, x.effect_ci_hi, JoinTrialIds(x.trial_ids)));
    HONE_TRY(l.Run());
  }
  HONE_ASSIGN_OR_RETURN(Statement f, db_->Prepare("INSERT INTO failures (recipe_id, kind, detail, trial_ids) "
                                                  "VALUES (?1, ?2, ?3, ?4)"));
  HONE_ASSIGN_OR_RETURN(Statement fc,
                        db_->Prepare("INSERT INTO failure_config (failure_id, knob, value) VALUES (?1, ?2, ?3)"));
  for (const Failure& x : failures) {
    f.Reset();
    HONE_TRY(f.BindAll(id, FailureKindName(x.kind), x.detail, JoinTrialIds(x.trial_ids)));
    HONE_TRY(f.Run());
    HONE_ASSIGN_OR_RETURN(int64_t failure_id, db_->LastInsertId());
    for (const auto& [k, v] : x.config_delta.values()) {
      fc.Reset();
      HONE_TRY(fc.BindAll(failure_id, k, v));
      HONE_TRY(fc.Run());
    }
  }
  return Ok();
}

Result<std::vector<int64_t>> RecipeStore::FailureRowsLocked(int64_t id) {
  HONE_ASSIGN_OR_RETURN(Statement ids, db_->Prepare("SELECT id FROM failures WHERE recipe_id = ?1 ORDER BY id"));
  HONE_TRY(ids.BindAll(id));
  std::vector<int64_t> rows;
  while (true) {
    HONE_ASSIGN_OR_RETURN(bool row, ids.Step());
    if (!row) break;
    rows.push_back(ids.Int(0));
  }
  return rows;
}

Result<std::vector<Failure>> RecipeStore::DropFailuresLocked(int64_t id, const std::vector<Failure>& held,
                                                             const std::function<bool(const Failure&)>& drop) {
  std::vector<Failure> dropped;
  if (std::none_of(held.begin(), held.end(), drop)) return dropped;
  HONE_ASSIGN_OR_RETURN(std::vector<int64_t> rows, FailureRowsLocked(id));
  HONE_ASSIGN_OR_RETURN(Statement df, db_->Prepare("DELETE FROM failures WHERE id = ?1"));
  for (size_t i = 0; i < held.size() && i < rows.size(); ++i) {
    if (!drop(held[i])) continue;
    df.Reset();
    HONE_TRY(df.BindAll(rows[i]));
    HONE_TRY(df.Run());
    dropped.push_back(held[i]);
  }
  return dropped;
}

Status RecipeStore::AddHistory(int64_t id, const HistoryEvent& e) {
  HONE_ASSIGN_OR_RETURN(Statement s,
                        db_->Prepare("INSERT INTO recipe_history (recipe_id, event, session_id, hone_version, date, "
                                    "objective_value, baseline_value, trial_ids, detail) "
                                    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"));
  HONE_TRY(s.BindAll(id, e.event, e.session_id, e.hone_version, e.date, e.objective_value, e.baseline_value,
                     JoinTrialIds(e.trial_ids), e.detail));
  return s.Run();
}

Result<int64_t> RecipeStore::InsertLocked(const Recipe& r, const std::string& now) {
  HONE_ASSIGN_OR_RETURN(
      Statement s,
      db_->Prepare("INSERT INTO recipes (recipe_key, model, hardware, framework, model_type, architecture, "
                  "framework_version, precision, workload_kind, concurrency, isl, osl, trace_id, objective_name, "
                  "objective_value, objective_ci_lo, objective_ci_hi, objective_unit, higher_is_better, "
                  "objective_trials, baseline_value, baseline_trials, hone_version, session_id, measured_at, status, "
                  "reproduce_count, demoted_reason, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
                  "?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29)"));
  const Identity& i = r.identity;
  HONE_TRY(s.BindAll(r.Key(), i.model, i.hardware, i.framework, i.model_type, i.architecture, i.framework_version,
                     i.precision, r.workload.kind, r.workload.concurrency, r.workload.isl, r.workload.osl,
                     r.workload.trace_id, r.objective.name, r.objective.value, r.objective.ci_lo, r.objective.ci_hi,
                     r.objective.unit, r.objective.higher_is_better ? 1 : 0, JoinTrialIds(r.objective.trial_ids),
                     r.baseline.value, JoinTrialIds(r.baseline.trial_ids), r.provenance.hone_version,
                     r.provenance.session_id, r.provenance.date, RecipeStatusName(r.status), r.reproduce_count,
                     r.demoted_reason, now));
  HONE_TRY(s.Run());
  HONE_ASSIGN_OR_RETURN(int64_t id, db_->LastInsertId());
  HONE_ASSIGN_OR_RETURN(Statement c,
                        db_->Prepare("INSERT INTO recipe_config (recipe_id, knob, value) VALUES (?1, ?2, ?3)"));
  for (const auto& [k, v] : r.config.values()) {
    c.Reset();
    HONE_TRY(c.BindAll(id, k, v));
    HONE_TRY(c.Run());
  }
  HONE_TRY(InsertChildren(id, r.learnings, r.failures));
  HONE_TRY(InsertNotes(id, r.notes));
  return id;
}

Result<Admission> RecipeStore::UpdateLocked(int64_t id, const Recipe& r, const std::string& now) {
  HONE_ASSIGN_OR_RETURN(Recipe old, LoadLocked(id));
  HONE_ASSIGN_OR_RETURN(
      Statement s,
      db_->Prepare("UPDATE recipes SET objective_name = ?2, objective_value = ?3, objective_ci_lo = ?4, "
                  "objective_ci_hi = ?5, objective_unit = ?6, higher_is_better = ?7, objective_trials = ?8, "
                  "baseline_value = ?9, baseline_trials = ?10, hone_version = ?11, session_id = ?12, measured_at = ?13, "
                  "status = 'active', demoted_reason = '', reproduce_count = reproduce_count + 1, updated_at = ?14 "
                  "WHERE id = ?1"));
  HONE_TRY(s.BindAll(id, r.objective.name, r.objective.value, r.objective.ci_lo, r.objective.ci_hi, r.objective.unit,
                     r.objective.higher_is_better ? 1 : 0, JoinTrialIds(r.objective.trial_ids), r.baseline.value,
                     JoinTrialIds(r.baseline.trial_ids), r.provenance.hone_version, r.provenance.session_id,
                     r.provenance.date, now));
  HONE_TRY(s.Run());
  // Newer learnings/failures replace older ones about the same knob value / config.
  HONE_ASSIGN_OR_RETURN(Statement dl,
                        db_->Prepare("DELETE FROM learnings WHERE recipe_id = ?1 AND knob = ?2 AND value = ?3"));
  for (const Learning& l : r.learnings) {
    dl.Reset();
    HONE_TRY(dl.BindAll(id, l.knob, l.value));
    HONE_TRY(dl.Run());
  }
  HONE_ASSIGN_OR_RETURN(std::vector<int64_t> failure_ids, FailureRowsLocked(id));
  HONE_ASSIGN_OR_RETURN(Statement df, db_->Prepare("DELETE FROM failures WHERE id = ?1"));
  for (size_t i = 0; i < old.failures.size() && i < failure_ids.size(); ++i) {
    for (const Failure& f : r.failures) {
      if (f.kind == old.failures[i].kind && f.config_delta == old.failures[i].config_delta) {
        df.Reset();
        HONE_TRY(df.BindAll(failure_ids[i]));
        HONE_TRY(df.Run());
        break;
      }
    }
  }
  HONE_TRY(InsertChildren(id, r.learnings, r.failures));
  HONE_TRY(InsertNotes(id, r.notes));
  Admission a;
  a.admitted = true;
  a.updated_existing = true;
  a.reactivated = old.status == RecipeStatus::kDemoted;
  a.recipe_id = id;
  std::string detail = "re-admitted; previous objective " + Num(old.objective.value) + " (session " +
                       old.provenance.session_id + ")";
  if (a.reactivated) detail += "; re-activated (was demoted: " + old.demoted_reason + ")";
  HONE_TRY(AddHistory(id, {"updated", r.provenance.session_id, r.provenance.hone_version, r.provenance.date,
                           r.objective.value, r.baseline.value, r.objective.trial_ids, detail}));
  a.reason = "updated recipe #" + std::to_string(id) + (a.reactivated ? " (re-activated)" : "");
  return a;
}

namespace {

// A recipe's learnings and failures gather the trials of many sessions (a later session
// updates the recipe, the stock's record merges every no-recipe session): each trial id
// a session writes names its session ("s-2/t0012"). The objective's and baseline's stay
// plain: the provenance names their session.
void QualifyTrialIds(Recipe& r) {
  if (r.provenance.session_id.empty()) return;
  auto qualify = [&](std::vector<std::string>& ids) {
    for (std::string& t : ids) {
      if (t.find('/') == std::string::npos) t = r.provenance.session_id + "/" + t;
    }
  };
  for (Learning& l : r.learnings) qualify(l.trial_ids);
  for (Failure& f : r.failures) qualify(f.trial_ids);
}

}  // namespace

Result<Admission> RecipeStore::KeepStockRecord(const Recipe& in, std::string_view why) {
  Recipe r = in;
  r.id = 0;
  r.config = Config{};
  r.learnings.clear();  // a learning is an admitted KEEP's
  r.status = RecipeStatus::kDemoted;
  r.demoted_reason = std::string(kStockRecordReason);
  r.reproduce_count = 0;
  r.history.clear();
  QualifyTrialIds(r);
  HONE_TRY(CheckRecipeShape(r));
  std::lock_guard lock(mu_);
  std::string now = Now();
  if (r.provenance.date.empty()) r.provenance.date = now;
  HONE_ASSIGN_OR_RETURN(Transaction txn, Transaction::BeginImmediate(*db_));
  HONE_ASSIGN_OR_RETURN(std::optional<int64_t> existing, FindByKey(r.Key()));
  Admission a;
  const std::string failures = std::to_string(r.failures.size()) + " failure(s)";
  if (existing) {
    a.recipe_id = *existing;
    a.updated_existing = true;
    HONE_ASSIGN_OR_RETURN(bool changed, MergeLocked(*existing, r, now, "stock_record", std::string(why)));
    a.reason = "stock record #" + std::to_string(a.recipe_id) + (changed ? " updated" : " unchanged") + " (" +
               failures + " from this session)";
  } else {
    HONE_ASSIGN_OR_RETURN(a.recipe_id, InsertLocked(r, now));
    HONE_TRY(AddHistory(a.recipe_id, {"stock_record", r.provenance.session_id, r.provenance.hone_version,
                                      r.provenance.date, r.objective.value, r.baseline.value, r.objective.trial_ids,
                                      std::string(why) + "; " + failures + " kept"}));
    a.reason = "new stock record #" + std::to_string(a.recipe_id) + " (" + failures + ")";
  }
  HONE_TRY(CommitWrite(txn));
  return a;
}

Result<Admission> RecipeStore::Admit(const AdmissionRequest& req) {
  Admission a;
  a.reason = AdmissionRejection(req, rules_.admission);
  if (!a.reason.empty()) return a;
  std::lock_guard lock(mu_);
  std::string now = Now();
  Recipe r = req.recipe;
  r.id = 0;
  r.status = RecipeStatus::kActive;
  r.demoted_reason.clear();
  r.reproduce_count = 0;
  r.history.clear();
  QualifyTrialIds(r);
  if (r.provenance.date.empty()) r.provenance.date = now;
  HONE_ASSIGN_OR_RETURN(Transaction txn, Transaction::BeginImmediate(*db_));
  HONE_ASSIGN_OR_RETURN(std::optional<int64_t> existing, FindByKey(r.Key()));
  if (existing) {
    HONE_ASSIGN_OR_RETURN(a, UpdateLocked(*existing, r, now));
  } else {
    HONE_ASSIGN_OR_RETURN(a.recipe_id, InsertLocked(r, now));
    HONE_TRY(AddHistory(a.recipe_id, {"admitted", r.provenance.session_id, r.provenance.hone_version,
                                      r.provenance.date, r.objective.value, r.baseline.value, r.objective.trial_ids,
                                      "gain " + Num(r.GainFraction() * 100) + "% over baseline"}));
    a.admitted = true;
    a.reason = "new recipe #" + std::to_string(a.recipe_id);
  }
  HONE_TRY(CommitWrite(txn));
  return a;
}

Result<ReplayVerdict> RecipeStore::RecordReplay(int64_t id, const ReplayOutcome& outcome) {
  std::lock_guard lock(mu_);
  HONE_ASSIGN_OR_RETURN(Transaction txn, Transaction::BeginImmediate(*db_));
  HONE_ASSIGN_OR_RETURN(Recipe r, LoadLocked(id));
  ReplayVerdict v = JudgeReplay(r, outcome, rules_.admission);
  std::string now = Now();
  HistoryEvent e{"", outcome.session_id, outcome.hone_version, now, outcome.objective_value, outcome.baseline_value,
                 outcome.trial_ids, v.reason};
  if (v.reproduced) {
    e.event = v.same_point ? "reproduced" : "transferred";
    if (!v.same_point) e.detail += " at " + outcome.identity.CanonicalId() + " " + outcome.workload.ToString();
    if (v.same_point) {
      HONE_ASSIGN_OR_RETURN(Statement s, db_->Prepare("UPDATE recipes SET reproduce_count = reproduce_count + 1, "
                                                      "updated_at = ?2 WHERE id = ?1"));
      HONE_TRY(s.BindAll(id, now));
      HONE_TRY(s.Run());
    }
  } else if (v.same_point && !v.demoted) {
    e.event = "inconclusive";
    e.detail += "; kept active: " + std::to_string(v.inconclusive_in_row) + " of " +
                std::to_string(rules_.admission.inconclusive_replays_to_demote) +
                " inconclusive replays in a row that demote it";
  } else if (v.same_point) {
    e.event = "not_reproduced";
    if (v.inconclusive_in_row > 0) {
      e.detail += "; " + std::to_string(v.inconclusive_in_row) + " inconclusive replays in a row";
      v.reason += " (" + std::to_string(v.inconclusive_in_row) + " replays in a row)";
    }
    HONE_ASSIGN_OR_RETURN(Statement s, db_->Prepare("UPDATE recipes SET status = 'demoted', demoted_reason = ?2, "
                                                    "updated_at = ?3 WHERE id = ?1"));
    HONE_TRY(s.BindAll(id, "not reproduced in session " + outcome.session_id + ": " + v.reason, now));
    HONE_TRY(s.Run());
  } else {
    e.event = "not_transferred";
    e.detail += " at " + outcome.identity.CanonicalId() + " " + outcome.workload.ToString() +
                "; kept active (measured elsewhere)";
  }
  HONE_TRY(AddHistory(id, e));
  HONE_TRY(CommitWrite(txn));
  return v;
}

Status RecipeStore::Demote(int64_t id, const std::string& reason, const std::string& session_id) {
  std::lock_guard lock(mu_);
  HONE_ASSIGN_OR_RETURN(Transaction txn, Transaction::BeginImmediate(*db_));
  HONE_ASSIGN_OR_RETURN(Recipe r, LoadLocked(id));
  std::string now = Now();
  HONE_ASSIGN_OR_RETURN(Statement s, db_->Prepare("UPDATE recipes SET status = 'demoted', demoted_reason = ?2, "
                                                  "updated_at = ?3 WHERE id = ?1"));
  HONE_TRY(s.BindAll(id, reason, now));
  HONE_TRY(s.Run());
  HONE_TRY(AddHistory(id, {"demoted", session_id, "", now, r.objective.value, r.baseline.value, {}, reason}));
  return CommitWrite(txn);
}

Result<std::vector<Failure>> RecipeStore::ForgetFailures(int64_t id, const Config& delta, const std::string& why) {
  std::lock_guard lock(mu_);
  HONE_ASSIGN_OR_RETURN(Transaction txn, Transaction::BeginImmediate(*db_));
  HONE_ASSIGN_OR_RETURN(Recipe r, LoadLocked(id));
  HONE_ASSIGN_OR_RETURN(std::vector<Failure> dropped,
                        DropFailuresLocked(id, r.failures, [&](const Failure& f) { return f.config_delta == delta; }));
  if (dropped.empty()) {
    std::string held;
    for (const Failure& f : r.failures) {
      held += (held.empty() ? "" : ", ") + std::string(FailureKindName(f.kind)) + " " + f.config_delta.ToString();
    }
    return NotFound("recipe #" + std::to_string(id) + " has no failure about " + delta.ToString() +
                    (held.empty() ? " (it has none)" : " (it has: " + held + ")"));
  }
  std::string now = Now();
  HONE_ASSIGN_OR_RETURN(Statement u, db_->Prepare("UPDATE recipes SET updated_at = ?2 WHERE id = ?1"));
  HONE_TRY(u.BindAll(id, now));
  HONE_TRY(u.Run());
  // One event per failure, with its trials: an import of an export made before this
  // (MergeLocked) recognises the failure and leaves it out instead of bringing it back.
  for (const Failure& f : dropped) {
    HONE_TRY(AddHistory(id, {"forgotten", "", "", now, r.objective.value, r.baseline.value, f.trial_ids,
                             ForgottenSubject(f) + (f.detail.empty() ? "" : " (" + f.detail + ")") +
                                 (why.empty() ? "" : ": " + why)}));
  }
  HONE_TRY(CommitWrite(txn));
  return dropped;
}

// ---- matching ----

Result<std::vector<RecipeStore::Candidate>> RecipeStore::Candidates(const MatchQuery& query, bool include_demoted) {
  // Fields that no step relaxes must be equal: filter on them in SQL (indexed), and
  // score the rest in C++.
  std::string sql = "SELECT id, model, hardware, framework, model_type, architecture, framework_version, precision, "
                    "workload_kind, concurrency, isl, osl, trace_id, status, updated_at FROM recipes WHERE 1 = 1";
  std::vector<std::string> binds;
  for (MatchField f : kMatchFields) {
    bool relaxed_somewhere = false;
    for (const FallbackStep& s : rules_.fallback.steps) relaxed_somewhere = relaxed_somewhere || s.Relaxes(f);
    if (relaxed_somewhere || query.identity.Get(f).empty()) continue;
    binds.push_back(query.identity.Get(f));
    sql += " AND " + std::string(MatchFieldName(f)) + " = ?" + std::to_string(binds.size());
  }
  if (!include_demoted) sql += " AND status = 'active'";
  sql += " ORDER BY id";
  HONE_ASSIGN_OR_RETURN(Statement s, db_->Prepare(sql));
  for (size_t i = 0; i < binds.size(); ++i) HONE_TRY(s.Bind(static_cast<int>(i + 1), binds[i]));
  std::vector<Candidate> out;
  while (true) {
    HONE_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    Candidate c;
    c.id = s.Int(0);
    int col = 1;
    for (MatchField f : kMatchFields) c.identity.Mutable(f) = s.Text(col++);
    c.workload = {s.Text(8), s.Int(9), s.Int(10), s.Int(11), s.Text(12)};
    c.status = s.Text(13) == "demoted" ? RecipeStatus::kDemoted : RecipeStatus::kActive;
    c.updated_at = s.Text(14);
    c.score = ScoreCandidate(query, c.identity, c.workload, rules_.fallback, &c.why_not);
    out.push_back(std::move(c));
  }
  return out;
}

Result<MatchResult> RecipeStore::Match(const MatchQuery& query) {
  std::lock_guard lock(mu_);
  HONE_ASSIGN_OR_RETURN(std::vector<Candidate> cands, Candidates(query, /*include_demoted=*/false));
  const Candidate* best = nullptr;
  for (const Candidate& c : cands) {
    if (!c.score) continue;
    // Highest confidence; ties go to the most recently updated, then the newest id.
    if (best == nullptr || c.score->confidence > best->score->confidence ||
        (c.score->confidence == best->score->confidence &&
         std::tie(c.updated_at, c.id) > std::tie(best->updated_at, best->id))) {
      best = &c;
    }
  }
  MatchResult m;
  const FallbackPolicy& policy = rules_.fallback;
  if (best == nullptr) {
    std::vector<std::string> fixed;
    for (MatchField f : policy.never_relaxed) {
      if (!query.identity.Get(f).empty()) {
        fixed.push_back(std::string(MatchFieldName(f)) + "=" + query.identity.Get(f));
      }
    }
    if (cands.empty()) {
      m.explanation.push_back("miss: no active recipe" +
                              (fixed.empty() ? std::string() : " with " + Join(fixed, ", ") + " (never relaxed)"));
    } else {
      m.explanation.push_back("miss: " + std::to_string(cands.size()) + " active recipe(s) share " +
                              (fixed.empty() ? std::string("the never-relaxed fields") : Join(fixed, ", ")) +
                              ", but no fallback step admits them:");
      for (size_t i = 0; i < cands.size() && i < 5; ++i) {
        m.explanation.push_back("  #" + std::to_string(cands[i].id) + " " + cands[i].identity.CanonicalId() + ": " +
                                cands[i].why_not);
      }
    }
    return m;
  }
  HONE_ASSIGN_OR_RETURN(Recipe r, LoadLocked(best->id));
  const CandidateScore& s = *best->score;
  m.step = s.step->name;
  m.step_confidence = s.step_confidence;
  m.operating_point_factor = s.operating_point_factor;
  m.confidence = s.confidence;
  m.replay = s.confidence >= policy.replay_min_confidence;
  m.fields = s.fields;
  for (const FieldMatch& f : s.fields) {
    if (f.state == FieldState::kMatched) m.matched.push_back(f.field);
    if (f.state == FieldState::kRelaxed) m.relaxed.push_back(f.field);
    if (f.state == FieldState::kNotGiven) m.not_given.push_back(f.field);
  }
  m.explanation.push_back("recipe #" + std::to_string(r.id) + " " + r.identity.CanonicalId() + " at " +
                          r.workload.ToString() + ": " + r.config.ToString());
  for (const std::string& line : s.explanation) m.explanation.push_back(line);
  char buf[160];
  std::snprintf(buf, sizeof buf, "confidence %.3f %s replay threshold %.2f: %s", m.confidence,
                m.replay ? ">=" : "<", policy.replay_min_confidence,
                m.replay ? "replay" : "no replay (priors only)");
  m.explanation.push_back(buf);
  m.recipe = std::move(r);
  return m;
}

Result<std::vector<PriorLearning>> RecipeStore::Learnings(const MatchQuery& query) {
  std::lock_guard lock(mu_);
  HONE_ASSIGN_OR_RETURN(std::vector<Candidate> cands, Candidates(query, /*include_demoted=*/false));
  std::vector<PriorLearning> out;
  for (const Candidate& c : cands) {
    if (!c.score || c.score->confidence < rules_.fallback.priors_min_confidence) continue;
    HONE_ASSIGN_OR_RETURN(Recipe r, LoadLocked(c.id));
    for (Learning& l : r.learnings) out.push_back({std::move(l), c.score->confidence, c.id, c.score->step->name});
  }
  std::stable_sort(out.begin(), out.end(), [](const PriorLearning& a, const PriorLearning& b) {
    return a.confidence != b.confidence ? a.confidence > b.confidence
                                        : std::fabs(a.learning.effect) > std::fabs(b.learning.effect);
  });
  return out;
}

Result<std::vector<PriorFailure>> RecipeStore::Failures(const MatchQuery& query) {
  std::lock_guard lock(mu_);
  HONE_ASSIGN_OR_RETURN(std::vector<Candidate> cands, Candidates(query, /*include_demoted=*/true));
  std::vector<PriorFailure> out;
  for (const Candidate& c : cands) {
    if (!c.score || c.score->confidence < rules_.fallback.priors_min_confidence) continue;
    HONE_ASSIGN_OR_RETURN(Recipe r, LoadLocked(c.id));
    for (Failure& f : r.failures) out.push_back({std::move(f), c.score->confidence, c.id, c.score->step->name});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const PriorFailure& a, const PriorFailure& b) { return a.confidence > b.confidence; });
  return out;
}

Result<std::vector<PriorNote>> RecipeStore::Notes(const MatchQuery& query) {
  std::lock_guard lock(mu_);
  // Active recipes' notes, and the stock records' (demoted only in that they are never replayed).
  HONE_ASSIGN_OR_RETURN(std::vector<Candidate> cands, Candidates(query, /*include_demoted=*/true));
  std::vector<PriorNote> out;
  for (const Candidate& c : cands) {
    if (!c.score || c.score->confidence < rules_.fallback.priors_min_confidence) continue;
    HONE_ASSIGN_OR_RETURN(Recipe r, LoadLocked(c.id));
    if (r.status == RecipeStatus::kDemoted && !r.IsStockRecord()) continue;
    for (Note& n : r.notes) out.push_back({std::move(n), c.score->confidence, c.id});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const PriorNote& a, const PriorNote& b) { return a.confidence > b.confidence; });
  return out;
}

// ---- export / import ----

Result<std::string> RecipeStore::ExportJsonl() {
  HONE_ASSIGN_OR_RETURN(std::vector<Recipe> all, List());
  std::string out;
  for (const Recipe& r : all) out += RecipeToJsonLine(r) + "\n";
  return out;
}

Result<bool> RecipeStore::MergeLocked(int64_t id, const Recipe& in, const std::string& now, std::string_view event,
                                      const std::string& why) {
  HONE_ASSIGN_OR_RETURN(Recipe local, LoadLocked(id));
  std::vector<std::string> what;
  if (in.provenance.date > local.provenance.date) {
    HONE_ASSIGN_OR_RETURN(
        Statement s,
        db_->Prepare("UPDATE recipes SET objective_name = ?2, objective_value = ?3, objective_ci_lo = ?4, "
                    "objective_ci_hi = ?5, objective_unit = ?6, higher_is_better = ?7, objective_trials = ?8, "
                    "baseline_value = ?9, baseline_trials = ?10, hone_version = ?11, session_id = ?12, "
                    "measured_at = ?13 WHERE id = ?1"));
    HONE_TRY(s.BindAll(id, in.objective.name, in.objective.value, in.objective.ci_lo, in.objective.ci_hi,
                       in.objective.unit, in.objective.higher_is_better ? 1 : 0, JoinTrialIds(in.objective.trial_ids),
                       in.baseline.value, JoinTrialIds(in.baseline.trial_ids), in.provenance.hone_version,
                       in.provenance.session_id, in.provenance.date));
    HONE_TRY(s.Run());
    what.push_back("newer measurement");
  }
  std::vector<Learning> new_learnings;
  for (const Learning& l : in.learnings) {
    bool known = std::any_of(local.learnings.begin(), local.learnings.end(),
                             [&](const Learning& x) { return x.knob == l.knob && x.value == l.value; });
    if (!known) new_learnings.push_back(l);
  }
  // A failure a user forgot (`hone kb forget`) on either side stays forgotten: one this
  // store forgot does not come back with an export made before, and one the incoming
  // recipe's history forgot leaves this store too.
  auto forgotten = [&](const Failure& f) {
    auto by = [&](const HistoryEvent& e) { return Forgets(e, f); };
    return std::any_of(local.history.begin(), local.history.end(), by) ||
           std::any_of(in.history.begin(), in.history.end(), by);
  };
  std::vector<Failure> new_failures;
  for (const Failure& f : in.failures) {
    bool known = std::any_of(local.failures.begin(), local.failures.end(), [&](const Failure& x) {
      return x.kind == f.kind && x.config_delta == f.config_delta;
    });
    if (!known && !forgotten(f)) new_failures.push_back(f);
  }
  HONE_ASSIGN_OR_RETURN(std::vector<Failure> dropped, DropFailuresLocked(id, local.failures, [&](const Failure& f) {
                          return std::any_of(in.history.begin(), in.history.end(),
                                             [&](const HistoryEvent& e) { return Forgets(e, f); });
                        }));
  if (!new_learnings.empty()) what.push_back(std::to_string(new_learnings.size()) + " learning(s)");
  if (!new_failures.empty()) what.push_back(std::to_string(new_failures.size()) + " failure(s)");
  if (!dropped.empty()) what.push_back(std::to_string(dropped.size()) + " failure(s) forgotten there");
  HONE_TRY(InsertChildren(id, new_learnings, new_failures));
  HONE_ASSIGN_OR_RETURN(int new_notes, InsertNotes(id, in.notes));
  if (new_notes > 0) what.push_back(std::to_string(new_notes) + " note(s)");
  int64_t new_events = 0;
  for (const HistoryEvent& e : in.history) {
    bool known = std::any_of(local.history.begin(), local.history.end(),
                             [&](const HistoryEvent& x) { return SameHistory(x, e); });
    if (known || e.event == "imported") continue;
    HONE_TRY(AddHistory(id, e));
    ++new_events;
  }
  if (new_events > 0) what.push_back(std::to_string(new_events) + " history event(s)");
  if (in.reproduce_count > local.reproduce_count) {
    HONE_ASSIGN_OR_RETURN(Statement s, db_->Prepare("UPDATE recipes SET reproduce_count = ?2 WHERE id = ?1"));
    HONE_TRY(s.BindAll(id, in.reproduce_count));
    HONE_TRY(s.Run());
    what.push_back("reproduce count " + std::to_string(in.reproduce_count));
  }
  // Conservative: another machine that saw it fail to reproduce demotes it here too.
  if (in.status == RecipeStatus::kDemoted && local.status == RecipeStatus::kActive) {
    HONE_ASSIGN_OR_RETURN(Statement s,
                          db_->Prepare("UPDATE recipes SET status = 'demoted', demoted_reason = ?2 WHERE id = ?1"));
    HONE_TRY(s.BindAll(id, "imported: " + in.demoted_reason));
    HONE_TRY(s.Run());
    what.push_back("demoted");
  }
  if (what.empty()) return false;
  HONE_ASSIGN_OR_RETURN(Statement u, db_->Prepare("UPDATE recipes SET updated_at = ?2 WHERE id = ?1"));
  HONE_TRY(u.BindAll(id, now));
  HONE_TRY(u.Run());
  HONE_TRY(AddHistory(id, {std::string(event), in.provenance.session_id, in.provenance.hone_version, now,
                           in.objective.value, in.baseline.value, {},
                           (why.empty() ? "" : why + "; ") + "merged: " + Join(what, ", ")}));
  return true;
}

Result<ImportStats> RecipeStore::ImportJsonl(std::string_view text, std::string_view source_name) {
  HONE_ASSIGN_OR_RETURN(std::vector<Recipe> recipes, ParseJsonLines(text, source_name));
  for (size_t i = 0; i < recipes.size(); ++i) {
    auto shape = CheckRecipeShape(recipes[i], 1, 1);
    if (!shape) {
      return Fail(std::move(shape).error().Wrap(std::string(source_name) + ": recipe " + std::to_string(i + 1)));
    }
  }
  return ImportRecipes(recipes, "imported from " + std::string(source_name), /*record_import=*/true);
}

Result<ImportStats> RecipeStore::CopyFrom(RecipeStore& source) {
  HONE_ASSIGN_OR_RETURN(std::vector<Recipe> recipes, source.List());
  return ImportRecipes(recipes, "migrated from " + source.path(), /*record_import=*/false);
}

Result<ImportStats> RecipeStore::ImportRecipes(const std::vector<Recipe>& recipes, const std::string& what,
                                               bool record_import) {
  std::lock_guard lock(mu_);
  std::string now = Now();
  ImportStats stats;
  HONE_ASSIGN_OR_RETURN(Transaction txn, Transaction::BeginImmediate(*db_));
  for (const Recipe& r : recipes) {
    HONE_ASSIGN_OR_RETURN(std::optional<int64_t> existing, FindByKey(r.Key()));
    if (existing) {
      HONE_ASSIGN_OR_RETURN(bool changed, MergeLocked(*existing, r, now));
      ++(changed ? stats.merged : stats.unchanged);
      continue;
    }
    // A new recipe keeps its own status, counts and history; an import adds one
    // event saying where it came from, a migration copies it as it was.
    HONE_ASSIGN_OR_RETURN(int64_t id, InsertLocked(r, now));
    for (const HistoryEvent& e : r.history) HONE_TRY(AddHistory(id, e));
    if (record_import) {
      HONE_TRY(AddHistory(id, {"imported", r.provenance.session_id, r.provenance.hone_version, now, r.objective.value,
                               r.baseline.value, {}, what}));
    }
    ++stats.added;
  }
  HONE_TRY(CommitWrite(txn));
  return stats;
}

}  // namespace hone::kb
