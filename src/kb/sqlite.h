// SqliteDb, SqliteStmt and Transaction: the kb layer's thin RAII wrapper over the
// SQLite C API.
//
// SqliteDb owns one connection (sqlite3*, closed by a unique_ptr deleter); SqliteStmt
// owns one prepared statement (finalized by its deleter) and must not outlive the
// SqliteDb it came from. Transaction is a BEGIN IMMEDIATE ... COMMIT scope that rolls
// back in its destructor unless Commit() succeeded, so an early return or an error
// never leaves half a write behind. SQLite result codes become Error values:
// SQLITE_BUSY/LOCKED -> kUnavailable ("locked by another writer"), CORRUPT/NOTADB ->
// kDataLoss, FULL -> kResourceExhausted, anything else kInternal; each names the
// database path. None of these types is thread-safe: one connection per thread (the
// RecipeStore above serializes its own calls).
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <concepts>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace hone::kb {

struct SqliteCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct SqliteFinalizer {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using SqlitePtr = std::unique_ptr<sqlite3, SqliteCloser>;
using SqliteStmtPtr = std::unique_ptr<sqlite3_stmt, SqliteFinalizer>;

class SqliteStmt {
 public:
  SqliteStmt(SqliteStmtPtr stmt, std::string db_path, std::chrono::milliseconds busy_timeout)
      : stmt_(std::move(stmt)), db_path_(std::move(db_path)), busy_timeout_(busy_timeout) {}

  // Binds the parameters ?1.. in order: integers, doubles, strings, or nullopt (NULL).
  template <class... Args>
  Status BindAll(const Args&... args) {
    int idx = 0;
    Status s = Ok();
    ((s = s ? BindOne(++idx, args) : s), ...);
    return s;
  }
  Status Bind(int idx, int64_t v);
  Status Bind(int idx, double v);
  Status Bind(int idx, std::string_view v);
  Status BindNull(int idx);

  // Advances: true when a row is available, false when the statement is done.
  Result<bool> Step();
  // Runs a statement that returns no rows.
  Status Run();
  // Resets the statement (and its bindings) for another execution.
  void Reset();

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_.get(), col); }
  double Double(int col) const { return sqlite3_column_double(stmt_.get(), col); }
  std::string Text(int col) const;
  bool IsNull(int col) const { return sqlite3_column_type(stmt_.get(), col) == SQLITE_NULL; }

 private:
  template <std::integral T>
  Status BindOne(int idx, T v) { return Bind(idx, static_cast<int64_t>(v)); }
  Status BindOne(int idx, double v) { return Bind(idx, v); }
  Status BindOne(int idx, const std::string& v) { return Bind(idx, std::string_view(v)); }
  Status BindOne(int idx, std::string_view v) { return Bind(idx, v); }
  Status BindOne(int idx, const char* v) { return Bind(idx, std::string_view(v)); }
  Status BindOne(int idx, std::nullopt_t) { return BindNull(idx); }
  Status BindStatus(int rc, int idx);

  SqliteStmtPtr stmt_;
  std::string db_path_;
  std::chrono::milliseconds busy_timeout_;
};

class SqliteDb {
 public:
  // Opens (creating if missing) the database file and sets the busy timeout: a
  // writer that finds the file locked waits up to `busy_timeout` before kUnavailable.
  static Result<SqliteDb> Open(const std::filesystem::path& path, std::chrono::milliseconds busy_timeout);

  SqliteDb(SqliteDb&&) = default;
  SqliteDb& operator=(SqliteDb&&) = default;

  // Runs one or more statements that return no rows.
  Status Exec(std::string_view sql);
  Result<SqliteStmt> Prepare(std::string_view sql);
  // The single integer the query returns (e.g. SELECT count(*)); nullopt for no row.
  Result<std::optional<int64_t>> QueryInt(std::string_view sql);
  int64_t LastInsertRowId() const { return sqlite3_last_insert_rowid(db_.get()); }
  int Changes() const { return sqlite3_changes(db_.get()); }
  const std::string& path() const { return path_; }
  std::chrono::milliseconds busy_timeout() const { return busy_timeout_; }
  sqlite3* raw() const { return db_.get(); }

  // Converts a SQLite result code into an Error naming `what` and this database.
  Error ErrorFrom(int rc, std::string_view what) const;

 private:
  SqliteDb(SqlitePtr db, std::string path, std::chrono::milliseconds busy_timeout)
      : db_(std::move(db)), path_(std::move(path)), busy_timeout_(busy_timeout) {}
  SqlitePtr db_;
  std::string path_;
  std::chrono::milliseconds busy_timeout_;
};

// Converts a SQLite result code (with the connection's message, when given) into an
// Error; shared by SqliteDb and SqliteStmt.
Error SqliteError(int rc, sqlite3* db, std::string_view what, const std::string& path,
                  std::chrono::milliseconds busy_timeout = {});

class Transaction {
 public:
  // BEGIN IMMEDIATE: takes the write lock now (waiting up to the busy timeout), so
  // two writers never deadlock upgrading read locks.
  static Result<Transaction> BeginImmediate(SqliteDb& db);
  ~Transaction();
  Transaction(Transaction&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;

  // Commits; afterwards the destructor does nothing. On failure the transaction is
  // rolled back by the destructor.
  Status Commit();

 private:
  explicit Transaction(SqliteDb* db) : db_(db) {}
  SqliteDb* db_;  // null once committed or moved from
};

}  // namespace hone::kb
