#include "kb/postgres.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

namespace hone::kb {

namespace {

struct PgResultClear {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResultPtr = std::unique_ptr<PGresult, PgResultClear>;

// One key for the knowledge base's writer lock. Advisory locks are per database, so
// two knowledge bases on one server never wait for each other.
constexpr int64_t kWriterLockKey = 0x686f6e656b62;  // "honekb"

std::string Trimmed(const char* msg) {
  std::string s = msg != nullptr ? msg : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

Error PgError(const PGresult* res, PGconn* conn, std::string_view what, const std::string& where,
              std::chrono::milliseconds busy_timeout) {
  std::string state;
  std::string detail;
  if (res != nullptr) {
    if (const char* s = PQresultErrorField(res, PG_DIAG_SQLSTATE)) state = s;
    detail = Trimmed(PQresultErrorMessage(res));
  }
  if (detail.empty()) detail = Trimmed(PQerrorMessage(conn));
  ErrorCode code = ErrorCode::kInternal;
  std::string message = "kb " + where + ": " + std::string(what) + ": " + detail;
  if (state == "55P03") {
    code = ErrorCode::kUnavailable;
    message = "kb " + where + ": " + std::string(what) + ": locked by another writer (waited " +
              std::to_string(busy_timeout.count()) + " ms)";
  } else if (state.starts_with("08") || state == "40001" || state == "40P01" || state == "57P01" ||
             (conn != nullptr && PQstatus(conn) == CONNECTION_BAD)) {
    code = ErrorCode::kUnavailable;
  } else if (state == "3D000") {
    code = ErrorCode::kNotFound;
  } else if (state.starts_with("28") || state == "42501") {
    code = ErrorCode::kPermissionDenied;
  } else if (state.starts_with("53")) {
    code = ErrorCode::kResourceExhausted;
  }
  Error e{code, std::move(message), {{"path", where}}};
  if (!state.empty()) e.With("sqlstate", state);
  return e;
}

class PgStmt final : public StatementImpl {
 public:
  PgStmt(PGconn* conn, std::string sql, const std::string* where, std::chrono::milliseconds busy_timeout)
      : conn_(conn), sql_(std::move(sql)), where_(where), busy_timeout_(busy_timeout) {}

  Status Bind(int idx, int64_t v) override { return Set(idx, std::to_string(v)); }
  Status Bind(int idx, double v) override {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);  // round-trips every double
    return Set(idx, buf);
  }
  Status Bind(int idx, std::string_view v) override { return Set(idx, std::string(v)); }
  Status BindNull(int idx) override { return Set(idx, std::nullopt); }

  Result<bool> Step() override {
    if (!result_) {
      std::vector<const char*> values;
      for (const auto& p : params_) values.push_back(p ? p->c_str() : nullptr);
      result_.reset(PQexecParams(conn_, sql_.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                                 nullptr, nullptr, 0));
      ExecStatusType st = result_ ? PQresultStatus(result_.get()) : PGRES_FATAL_ERROR;
      if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        Error e = PgError(result_.get(), conn_, "running '" + sql_.substr(0, 60) + "'", *where_, busy_timeout_);
        result_.reset();
        return Fail(std::move(e));
      }
      row_ = -1;
    }
    ++row_;
    return row_ < PQntuples(result_.get());
  }
  void Reset() override {
    result_.reset();
    params_.clear();
    row_ = -1;
  }
  int64_t Int(int col) const override { return std::strtoll(Value(col), nullptr, 10); }
  double Double(int col) const override { return std::strtod(Value(col), nullptr); }
  std::string Text(int col) const override {
    return std::string(Value(col), static_cast<size_t>(PQgetlength(result_.get(), row_, col)));
  }
  bool IsNull(int col) const override { return PQgetisnull(result_.get(), row_, col) != 0; }

 private:
  Status Set(int idx, std::optional<std::string> v) {
    if (idx < 1) return Internal("kb: parameter index " + std::to_string(idx));
    if (params_.size() < static_cast<size_t>(idx)) params_.resize(static_cast<size_t>(idx));
    params_[static_cast<size_t>(idx - 1)] = std::move(v);
    return Ok();
  }
  const char* Value(int col) const { return PQgetvalue(result_.get(), row_, col); }

  PGconn* conn_;
  std::string sql_;
  const std::string* where_;  // the owning PgDb's display name (outlives the statement)
  std::chrono::milliseconds busy_timeout_;
  std::vector<std::optional<std::string>> params_;
  PgResultPtr result_;
  int row_ = -1;
};

void IgnoreNotice(void*, const char*) {}  // "relation already exists, skipping" and the like

}  // namespace

bool IsPostgresUrl(std::string_view location) {
  return location.starts_with("postgresql://") || location.starts_with("postgres://");
}

std::string RedactUrl(std::string_view url) {
  // scheme://user:password@host... -> scheme://user:***@host...
  size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);
  size_t start = scheme + 3;
  size_t at = url.find('@', start);
  size_t slash = url.find('/', start);
  if (at == std::string_view::npos || (slash != std::string_view::npos && at > slash)) return std::string(url);
  size_t colon = url.find(':', start);
  if (colon == std::string_view::npos || colon > at) return std::string(url);
  return std::string(url.substr(0, colon + 1)) + "***" + std::string(url.substr(at));
}

std::string PostgresPlaceholders(std::string_view sql) {
  std::string out;
  out.reserve(sql.size());
  char quote = 0;
  for (size_t i = 0; i < sql.size(); ++i) {
    char c = sql[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '?' && i + 1 < sql.size() && sql[i + 1] >= '0' && sql[i + 1] <= '9') {
      c = '$';
    }
    out += c;
  }
  return out;
}

Result<std::unique_ptr<PgDb>> PgDb::Connect(const std::string& url, std::chrono::milliseconds busy_timeout) {
  std::string display = RedactUrl(url);
  std::string connect_s = std::to_string(std::max<int64_t>(2, busy_timeout.count() / 1000));
  // expand_dbname: the URL fills every field; the keys after it add what it lacks.
  const char* keys[] = {"dbname", "connect_timeout", "application_name", nullptr};
  const char* values[] = {url.c_str(), connect_s.c_str(), "hone", nullptr};
  PgConnPtr conn(PQconnectdbParams(keys, values, 1));
  if (!conn) return ResourceExhausted("kb " + display + ": out of memory connecting");
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    std::string msg = Trimmed(PQerrorMessage(conn.get()));
    ErrorCode code = msg.find("does not exist") != std::string::npos ? ErrorCode::kNotFound
                     : msg.find("authentication") != std::string::npos ? ErrorCode::kPermissionDenied
                                                                        : ErrorCode::kUnavailable;
    return Fail(Error{code, "kb " + display + ": cannot connect: " + msg, {{"path", display}}});
  }
  PQsetNoticeProcessor(conn.get(), IgnoreNotice, nullptr);
  auto db = std::unique_ptr<PgDb>(new PgDb(std::move(conn), display, busy_timeout));
  // Bounds the wait for the writer lock (and any row lock) like SQLite's busy timeout.
  HONE_TRY(db->Exec("SET lock_timeout = " + std::to_string(std::max<int64_t>(1, busy_timeout.count()))));
  return db;
}

Status PgDb::Exec(std::string_view sql) {
  std::string text(sql);
  PgResultPtr res(PQexec(conn_.get(), text.c_str()));
  ExecStatusType st = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_EMPTY_QUERY) {
    return Fail(PgError(res.get(), conn_.get(), "running '" + text.substr(0, 60) + "'", display_, busy_timeout_));
  }
  // A COMMIT of a transaction the server already aborted answers ROLLBACK, not an error.
  if (text == "COMMIT" && std::string_view(PQcmdStatus(res.get())) == "ROLLBACK") {
    return Fail(Error{ErrorCode::kUnavailable, "kb " + display_ + ": the transaction was rolled back by the server",
                      {{"path", display_}}});
  }
  return Ok();
}

Result<Statement> PgDb::Prepare(std::string_view sql) {
  return Statement(std::make_unique<PgStmt>(conn_.get(), PostgresPlaceholders(sql), &display_, busy_timeout_));
}

Result<int64_t> PgDb::LastInsertId() {
  HONE_ASSIGN_OR_RETURN(std::optional<int64_t> id, QueryInt("SELECT lastval()"));
  if (!id) return Internal("kb " + display_ + ": no id for the inserted row");
  return *id;
}

Status PgDb::BeginWrite() {
  HONE_TRY(Exec("BEGIN"));
  auto locked = Exec("SELECT pg_advisory_xact_lock(" + std::to_string(kWriterLockKey) + ")");
  if (!locked) {
    (void)Exec("ROLLBACK");  // the transaction is aborted; leave the connection usable
    return locked;
  }
  return Ok();
}

Result<bool> PgDb::TableExists(std::string_view name) {
  HONE_ASSIGN_OR_RETURN(Statement s, Prepare("SELECT count(*) FROM pg_catalog.pg_tables "
                                             "WHERE schemaname = current_schema() AND tablename = ?1"));
  HONE_TRY(s.BindAll(name));
  HONE_ASSIGN_OR_RETURN(bool row, s.Step());
  return row && s.Int(0) > 0;
}

}  // namespace hone::kb
