#include "kb/sqlite.h"

#include <string>

namespace hone::kb {

Error SqliteError(int rc, sqlite3* db, std::string_view what, const std::string& path,
                  std::chrono::milliseconds busy_timeout) {
  int primary = rc & 0xff;
  std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  ErrorCode code = ErrorCode::kInternal;
  std::string message = "kb " + path + ": " + std::string(what) + ": " + detail;
  switch (primary) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      code = ErrorCode::kUnavailable;
      message = "kb " + path + ": " + std::string(what) + ": locked by another writer (waited " +
                std::to_string(busy_timeout.count()) + " ms)";
      break;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      code = ErrorCode::kDataLoss;
      message = "kb " + path + ": " + std::string(what) + ": not a valid database (" + detail + ")";
      break;
    case SQLITE_FULL: code = ErrorCode::kResourceExhausted; break;
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY: code = ErrorCode::kPermissionDenied; break;
    default: break;
  }
  return Error{code, std::move(message), {{"path", path}, {"sqlite_code", std::to_string(rc)}}};
}

// ---- SqliteStmt ----

Status SqliteStmt::BindStatus(int rc, int idx) {
  if (rc == SQLITE_OK) return Ok();
  return Fail(SqliteError(rc, sqlite3_db_handle(stmt_.get()), "binding parameter " + std::to_string(idx), db_path_));
}

Status SqliteStmt::Bind(int idx, int64_t v) { return BindStatus(sqlite3_bind_int64(stmt_.get(), idx, v), idx); }
Status SqliteStmt::Bind(int idx, double v) { return BindStatus(sqlite3_bind_double(stmt_.get(), idx, v), idx); }
Status SqliteStmt::Bind(int idx, std::string_view v) {
  return BindStatus(sqlite3_bind_text(stmt_.get(), idx, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT), idx);
}
Status SqliteStmt::BindNull(int idx) { return BindStatus(sqlite3_bind_null(stmt_.get(), idx), idx); }

Result<bool> SqliteStmt::Step() {
  int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3* db = sqlite3_db_handle(stmt_.get());
  std::string sql = sqlite3_sql(stmt_.get()) ? sqlite3_sql(stmt_.get()) : "";
  return Fail(SqliteError(sqlite3_extended_errcode(db), db, "running '" + sql.substr(0, 60) + "'", db_path_,
                          busy_timeout_));
}

void SqliteStmt::Reset() {
  sqlite3_reset(stmt_.get());
  sqlite3_clear_bindings(stmt_.get());
}

std::string SqliteStmt::Text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_.get(), col);
  if (p == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_.get(), col)));
}

// ---- SqliteDb ----

Result<SqliteDb> SqliteDb::Open(const std::filesystem::path& path, std::chrono::milliseconds busy_timeout) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  SqlitePtr db(raw);  // owns the handle even when open failed
  if (rc != SQLITE_OK) return Fail(SqliteError(rc, db.get(), "cannot open", path.string()));
  sqlite3_extended_result_codes(db.get(), 1);
  sqlite3_busy_timeout(db.get(), static_cast<int>(busy_timeout.count()));
  return SqliteDb(std::move(db), path.string(), busy_timeout);
}

Error SqliteDb::ErrorFrom(int rc, std::string_view what) const {
  return SqliteError(rc, db_.get(), what, path_, busy_timeout_);
}

Status SqliteDb::Exec(std::string_view sql) {
  std::string text(sql);
  char* msg = nullptr;
  int rc = sqlite3_exec(db_.get(), text.c_str(), nullptr, nullptr, &msg);
  sqlite3_free(msg);  // the connection's errmsg carries the same text
  if (rc != SQLITE_OK) return Fail(ErrorFrom(rc, "running '" + text.substr(0, 60) + "'"));
  return Ok();
}

Result<Statement> SqliteDb::Prepare(std::string_view sql) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db_.get(), sql.data(), static_cast<int>(sql.size()), &raw, nullptr);
  SqliteStmtPtr stmt(raw);
  if (rc != SQLITE_OK) return Fail(ErrorFrom(rc, "preparing '" + std::string(sql.substr(0, 60)) + "'"));
  return Statement(std::make_unique<SqliteStmt>(std::move(stmt), path_, busy_timeout_));
}

Result<bool> SqliteDb::TableExists(std::string_view name) {
  HONE_ASSIGN_OR_RETURN(Statement s, Prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1"));
  HONE_TRY(s.BindAll(name));
  HONE_ASSIGN_OR_RETURN(bool row, s.Step());
  return row && s.Int(0) > 0;
}

}  // namespace hone::kb
