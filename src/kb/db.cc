#include "kb/db.h"

namespace hone::kb {

std::string_view DialectName(Dialect d) { return d == Dialect::kSqlite ? "sqlite" : "postgresql"; }

Status Statement::Run() {
  HONE_ASSIGN_OR_RETURN(bool row, Step());
  (void)row;  // a write that returns a row (RETURNING) is not used here
  return Ok();
}

Result<std::optional<int64_t>> Database::QueryInt(std::string_view sql) {
  HONE_ASSIGN_OR_RETURN(Statement stmt, Prepare(sql));
  HONE_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row || stmt.IsNull(0)) return std::optional<int64_t>();
  return std::optional<int64_t>(stmt.Int(0));
}

Result<Transaction> Transaction::BeginImmediate(Database& db) {
  HONE_TRY(db.BeginWrite());
  return Transaction(&db);
}

Status Transaction::Commit() {
  if (db_ == nullptr) return FailedPrecondition("kb: commit of a finished transaction");
  HONE_TRY(db_->Exec("COMMIT"));
  db_ = nullptr;
  return Ok();
}

Transaction::~Transaction() {
  if (db_ != nullptr) (void)db_->Exec("ROLLBACK");  // nothing more to do if this fails: the connection closes
}

}  // namespace hone::kb
