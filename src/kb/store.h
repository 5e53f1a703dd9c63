// RecipeStore: the recipe knowledge base, either one SQLite file shared by every
// session on a machine (default <cache>/kb.sqlite), or one PostgreSQL database shared
// by every session of a cluster (kb: {url: postgresql://...}). Both hold the same
// schema, migrated on open (kb/schema.h), and behave the same (kb/db.h).
//
// A SQLite file runs in WAL mode with synchronous=FULL and a busy timeout. Every write
// is one transaction holding the knowledge base's single writer lock (SQLite's BEGIN
// IMMEDIATE, PostgreSQL's advisory lock): several processes, on one host or many, may
// read and write at once, a writer waits for another (up to the busy timeout, then
// kUnavailable), and a process killed mid-write leaves no partial recipe (the
// transaction never committed).
//
// Admit() takes only validated results (kb/admission.h) and never duplicates: the same
// identity + workload + config updates the stored recipe and appends to its history.
// A recipe that fails to reproduce is demoted, never deleted. Match() finds the best
// active recipe along the data-driven fallback order (kb/rules.h, kb/match.h);
// Learnings()/Failures() return every matching recipe's experience, weighted by its
// match confidence, for the search to use as priors and penalties.
//
// Ownership: the store owns its connection. Thread-safety: calls are serialized by an
// internal mutex, so one store may be shared between threads.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "kb/admission.h"
#include "kb/match.h"
#include "kb/recipe.h"
#include "kb/rules.h"
#include "kb/db.h"
#include "kb/sqlite.h"
#include "sys/clock.h"

namespace hone::kb {

struct StoreOptions {
  std::chrono::milliseconds busy_timeout{10000};
  sys::Clock* clock = nullptr;  // dates of events; sys::DefaultClock() when null
  // Test seam: runs inside every write transaction just before COMMIT (to kill a
  // process mid-write in tests). Never set in production.
  std::function<void()> before_commit;
};

struct ImportStats {
  int64_t added = 0;
  int64_t merged = 0;     // the key existed; new history/learnings/failures were merged
  int64_t unchanged = 0;  // the key existed with nothing new
};

class RecipeStore {
 public:
  // Opens or creates the file (and its directory), switches it to WAL and migrates
  // the schema. kDataLoss for a file that is not a database, kFailedPrecondition for
  // a schema newer than this build.
  static Result<std::unique_ptr<RecipeStore>> Open(const std::filesystem::path& path, KbRules rules,
                                                   StoreOptions options = {});
  // Opens the knowledge base at `location`: a postgresql:// (or postgres://) URL, or
  // a SQLite file path (optionally "sqlite:PATH"). kUnavailable when the server cannot
  // be reached, kInvalidArgument for another URL scheme.
  static Result<std::unique_ptr<RecipeStore>> OpenAt(const std::string& location, KbRules rules,
                                                     StoreOptions options = {});
  // Migrates and wraps an open database (either backend).
  static Result<std::unique_ptr<RecipeStore>> OpenDatabase(std::unique_ptr<Database> db, KbRules rules,
                                                           StoreOptions options = {});
  RecipeStore(const RecipeStore&) = delete;
  RecipeStore& operator=(const RecipeStore&) = delete;

  // The file path, or the URL without its password.
  const std::string& path() const { return db_->path(); }
  Dialect dialect() const { return db_->dialect(); }
  const KbRules& rules() const { return rules_; }
  // The schema version the file had before this open migrated it (0: new file).
  int opened_at_version() const { return opened_at_version_; }

  // Admits a validated result, or says why not (Admission::admitted == false). The
  // learnings' and failures' trial ids are qualified by the session ("s-2/t0012"): a
  // later session's update adds its own to the same recipe.
  Result<Admission> Admit(const AdmissionRequest& req);
  // Keeps what a session that admitted no recipe learned (`r`'s failures and notes; its
  // objective and baseline are the stock's) as the stock's record (kStockRecordReason): a
  // new demoted recipe with an empty config, or new failures merged into the one already
  // kept for this identity and workload; `why` (the session's reason no recipe was
  // admitted) goes into its history ("stock_record"). Trial ids are qualified as
  // Admit's are. Admission::admitted is false; reason names the record.
  Result<Admission> KeepStockRecord(const Recipe& r, std::string_view why);
  // One recipe with its config, learnings, failures and history; kNotFound if absent.
  Result<Recipe> Get(int64_t id);
  // Every recipe (active and demoted), by id.
  Result<std::vector<Recipe>> List();
  Result<int64_t> Count();

  // The best active recipe for the query along the fallback order, with the fields
  // that matched, those relaxed and why; MatchResult::recipe is empty on a miss.
  Result<MatchResult> Match(const MatchQuery& query);
  // Learnings of every active recipe matching at >= priors_min_confidence, strongest first.
  Result<std::vector<PriorLearning>> Learnings(const MatchQuery& query);
  // Failures of every recipe (demoted ones too) matching at >= priors_min_confidence.
  Result<std::vector<PriorFailure>> Failures(const MatchQuery& query);
  // Notes of every active recipe and stock record matching at >= priors_min_confidence,
  // best match first.
  Result<std::vector<PriorNote>> Notes(const MatchQuery& query);

  // Records a warm replay. Reproduced: history + reproduce_count (at the recipe's own
  // point). Not reproduced at its own identity and workload: demoted with the reason,
  // unless the replay was only INCONCLUSIVE (history "inconclusive", still active) and
  // fewer than admission.inconclusive_replays_to_demote replays in a row were.
  // Not reproduced elsewhere: recorded only (the recipe still holds where it was measured).
  Result<ReplayVerdict> RecordReplay(int64_t id, const ReplayOutcome& outcome);
  // Demotes a recipe explicitly (kept, never replayed again until re-admitted).
  Status Demote(int64_t id, const std::string& reason, const std::string& session_id);
  // Drops the recipe's failures about exactly `delta` (every kind), e.g. a value recorded
  // as regressed under a noise floor that later sessions no longer have, so later sessions
  // may measure it again; the history keeps what was dropped and `why` ("forgotten").
  // Returns the failures dropped; kNotFound (naming the recipe's failures) when none is
  // about `delta`, or when the recipe is absent.
  Result<std::vector<Failure>> ForgetFailures(int64_t id, const Config& delta, const std::string& why);

  // All recipes as JSON lines (kb/jsonl.h), by id.
  Result<std::string> ExportJsonl();
  // Imports JSON lines in one transaction (all or nothing); existing keys are merged.
  Result<ImportStats> ImportJsonl(std::string_view text, std::string_view source_name);
  // Copies every recipe of `source` (another backend, or another file) into this
  // store in one transaction (`hone kb migrate`): a new key is copied as it was (its
  // status, counts and whole history); an existing key is merged as an import merges.
  // Running it twice adds nothing.
  Result<ImportStats> CopyFrom(RecipeStore& source);

 private:
  struct Candidate;
  RecipeStore(std::unique_ptr<Database> db, KbRules rules, StoreOptions options)
      : db_(std::move(db)), rules_(std::move(rules)), options_(std::move(options)) {}

  std::string Now();
  Status CommitWrite(Transaction& txn);
  Result<std::vector<Candidate>> Candidates(const MatchQuery& query, bool include_demoted);
  Result<Recipe> LoadLocked(int64_t id);
  // The row ids of the recipe's failures, in the order LoadLocked reads them.
  Result<std::vector<int64_t>> FailureRowsLocked(int64_t id);
  // Deletes the recipe's failures that `drop` picks among `held` (the recipe's failures
  // as LoadLocked read them) and returns them; reads the rows only when one is picked.
  Result<std::vector<Failure>> DropFailuresLocked(int64_t id, const std::vector<Failure>& held,
                                                  const std::function<bool(const Failure&)>& drop);
  Result<std::optional<int64_t>> FindByKey(const std::string& key);
  Result<int64_t> InsertLocked(const Recipe& r, const std::string& now);
  Status InsertChildren(int64_t id, const std::vector<Learning>& learnings, const std::vector<Failure>& failures);
  // Adds the notes the recipe does not hold yet (same source and text); returns how many.
  Result<int> InsertNotes(int64_t id, const std::vector<Note>& notes);
  Status AddHistory(int64_t id, const HistoryEvent& e);
  Result<Admission> UpdateLocked(int64_t id, const Recipe& r, const std::string& now);
  // `event`: the history event recording the merge ("imported"; "stock_record"), `why`
  // what led to it (said before what was merged).
  Result<bool> MergeLocked(int64_t id, const Recipe& incoming, const std::string& now,
                           std::string_view event = "imported", const std::string& why = "");
  Result<ImportStats> ImportRecipes(const std::vector<Recipe>& recipes, const std::string& what, bool record_import);

  std::mutex mu_;
  std::unique_ptr<Database> db_;  // GUARDED_BY(mu_)
  KbRules rules_;
  StoreOptions options_;
  int opened_at_version_ = 0;
};

}  // namespace hone::kb
