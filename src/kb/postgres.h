// PgDb: the kb layer's PostgreSQL backend of kb::Database, over libpq (Debian's
// libpq-dev, the C client: no exceptions to wrap, the same RAII shape as SQLite's).
//
// One PgDb owns one connection (PGconn*, closed by a unique_ptr deleter). Statements
// run through PQexecParams with text parameters: the store's ?N placeholders are
// rewritten to $N once, at Prepare. A write transaction is BEGIN plus a
// transaction-scoped advisory lock (pg_advisory_xact_lock on one key per database),
// so every writer of a knowledge base — on any host — runs alone, exactly as SQLite's
// BEGIN IMMEDIATE makes them on one host; the wait is bounded by lock_timeout (the
// store's busy timeout), then kUnavailable. Readers never take it (MVCC snapshots).
// A connection that dies, or a writer killed mid-transaction, leaves nothing
// behind: the server rolls the transaction back and releases the lock.
//
// Errors map SQLSTATE to codes: connection failures (08xxx), lock timeouts (55P03),
// serialization failures and deadlocks -> kUnavailable; a missing database (3D000)
// -> kNotFound; authentication (28xxx) and privileges (42501) -> kPermissionDenied;
// disk or memory (53xxx) -> kResourceExhausted; anything else kInternal. Messages name
// the URL without its password. Not thread-safe: one connection per thread.
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "core/error.h"
#include "kb/db.h"

namespace hone::kb {

struct PgConnCloser {
  void operator()(PGconn* c) const { PQfinish(c); }
};
using PgConnPtr = std::unique_ptr<PGconn, PgConnCloser>;

class PgDb final : public Database {
 public:
  // Connects to a postgresql:// (or postgres://) URL; `busy_timeout` bounds the wait
  // for the writer lock and the connection attempt.
  static Result<std::unique_ptr<PgDb>> Connect(const std::string& url, std::chrono::milliseconds busy_timeout);

  Dialect dialect() const override { return Dialect::kPostgres; }
  const std::string& path() const override { return display_; }
  Status Exec(std::string_view sql) override;
  Result<Statement> Prepare(std::string_view sql) override;
  Result<int64_t> LastInsertId() override;
  Status BeginWrite() override;
  Status BeginRead() override { return Exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); }
  Result<bool> TableExists(std::string_view name) override;

  PGconn* raw() const { return conn_.get(); }

 private:
  PgDb(PgConnPtr conn, std::string display, std::chrono::milliseconds busy_timeout)
      : conn_(std::move(conn)), display_(std::move(display)), busy_timeout_(busy_timeout) {}
  PgConnPtr conn_;
  std::string display_;
  std::chrono::milliseconds busy_timeout_;
};

// True for the URLs this backend serves (postgresql://, postgres://).
bool IsPostgresUrl(std::string_view location);
// The URL with its password replaced by "***" (for messages and listings).
std::string RedactUrl(std::string_view url);
// The store's "?1, ?2" placeholders as PostgreSQL's "$1, $2" (outside quoted text).
std::string PostgresPlaceholders(std::string_view sql);

}  // namespace hone::kb
