// SqliteDb: the kb layer's SQLite backend of kb::Database, a thin RAII wrapper over
// the SQLite C API.
//
// SqliteDb owns one connection (sqlite3*, closed by a unique_ptr deleter); its
// statements (SqliteStmt, used through kb::Statement) own one prepared statement each
// (finalized by its deleter) and must not outlive it. A write transaction is BEGIN
// IMMEDIATE: it takes the file's write lock at once, so two writers never deadlock
// upgrading read locks. SQLite result codes become Error values: SQLITE_BUSY/LOCKED
// -> kUnavailable ("locked by another writer"), CORRUPT/NOTADB -> kDataLoss, FULL ->
// kResourceExhausted, anything else kInternal; each names the database path. Not
// thread-safe: one connection per thread (the RecipeStore serializes its own calls).
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"
#include "kb/db.h"

namespace hone::kb {

struct SqliteCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct SqliteFinalizer {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using SqlitePtr = std::unique_ptr<sqlite3, SqliteCloser>;
using SqliteStmtPtr = std::unique_ptr<sqlite3_stmt, SqliteFinalizer>;

class SqliteStmt final : public StatementImpl {
 public:
  SqliteStmt(SqliteStmtPtr stmt, std::string db_path, std::chrono::milliseconds busy_timeout)
      : stmt_(std::move(stmt)), db_path_(std::move(db_path)), busy_timeout_(busy_timeout) {}

  Status Bind(int idx, int64_t v) override;
  Status Bind(int idx, double v) override;
  Status Bind(int idx, std::string_view v) override;
  Status BindNull(int idx) override;
  Result<bool> Step() override;
  void Reset() override;
  int64_t Int(int col) const override { return sqlite3_column_int64(stmt_.get(), col); }
  double Double(int col) const override { return sqlite3_column_double(stmt_.get(), col); }
  std::string Text(int col) const override;
  bool IsNull(int col) const override { return sqlite3_column_type(stmt_.get(), col) == SQLITE_NULL; }

 private:
  Status BindStatus(int rc, int idx);

  SqliteStmtPtr stmt_;
  std::string db_path_;
  std::chrono::milliseconds busy_timeout_;
};

class SqliteDb final : public Database {
 public:
  // Opens (creating if missing) the database file and sets the busy timeout: a
  // writer that finds the file locked waits up to `busy_timeout` before kUnavailable.
  static Result<SqliteDb> Open(const std::filesystem::path& path, std::chrono::milliseconds busy_timeout);

  SqliteDb(SqliteDb&&) = default;
  SqliteDb& operator=(SqliteDb&&) = default;

  Dialect dialect() const override { return Dialect::kSqlite; }
  const std::string& path() const override { return path_; }
  Status Exec(std::string_view sql) override;
  Result<Statement> Prepare(std::string_view sql) override;
  Result<int64_t> LastInsertId() override { return sqlite3_last_insert_rowid(db_.get()); }
  Status BeginWrite() override { return Exec("BEGIN IMMEDIATE"); }
  Status BeginRead() override { return Exec("BEGIN"); }
  Result<bool> TableExists(std::string_view name) override;

  int Changes() const { return sqlite3_changes(db_.get()); }
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

}  // namespace hone::kb
