// Database, Statement and Transaction: the SQL the recipe store runs, over either
// backend — SQLite (one file per host, kb/sqlite.h) or PostgreSQL (one server shared
// by every host of a cluster, kb/postgres.h).
//
// The store writes its SQL once, in the dialect both accept: parameters are ?1, ?2,
// ... (the PostgreSQL backend rewrites them to $1, $2, ...), values are integers,
// doubles and text, and a new row's id comes from LastInsertId() right after its
// INSERT. What differs lives behind this interface: how a write transaction takes
// the one writer lock (SQLite's BEGIN IMMEDIATE; PostgreSQL's transaction-scoped
// advisory lock), how a reader gets a consistent snapshot, the catalog query for a
// table, and the schema text of each migration (kb/schema.h).
//
// Ownership: a Database owns its connection; a Statement owns its prepared form and
// must not outlive the Database it came from. None of these types is thread-safe:
// one connection per thread (RecipeStore serializes its own calls).
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace hone::kb {

enum class Dialect { kSqlite, kPostgres };
std::string_view DialectName(Dialect d);

// One backend's prepared statement; use it through Statement.
class StatementImpl {
 public:
  virtual ~StatementImpl() = default;
  virtual Status Bind(int idx, int64_t v) = 0;
  virtual Status Bind(int idx, double v) = 0;
  virtual Status Bind(int idx, std::string_view v) = 0;
  virtual Status BindNull(int idx) = 0;
  virtual Result<bool> Step() = 0;
  virtual void Reset() = 0;
  virtual int64_t Int(int col) const = 0;
  virtual double Double(int col) const = 0;
  virtual std::string Text(int col) const = 0;
  virtual bool IsNull(int col) const = 0;
};

class Statement {
 public:
  explicit Statement(std::unique_ptr<StatementImpl> impl) : impl_(std::move(impl)) {}

  // Binds the parameters ?1.. in order: integers, doubles, strings, or nullopt (NULL).
  template <class... Args>
  Status BindAll(const Args&... args) {
    int idx = 0;
    Status s = Ok();
    ((s = s ? BindOne(++idx, args) : s), ...);
    return s;
  }
  Status Bind(int idx, int64_t v) { return impl_->Bind(idx, v); }
  Status Bind(int idx, double v) { return impl_->Bind(idx, v); }
  Status Bind(int idx, std::string_view v) { return impl_->Bind(idx, v); }
  Status BindNull(int idx) { return impl_->BindNull(idx); }

  // Advances: true when a row is available, false when the statement is done.
  Result<bool> Step() { return impl_->Step(); }
  // Runs a statement that returns no rows.
  Status Run();
  // Resets the statement (and its bindings) for another execution.
  void Reset() { impl_->Reset(); }

  int64_t Int(int col) const { return impl_->Int(col); }
  double Double(int col) const { return impl_->Double(col); }
  std::string Text(int col) const { return impl_->Text(col); }
  bool IsNull(int col) const { return impl_->IsNull(col); }

 private:
  template <std::integral T>
  Status BindOne(int idx, T v) { return Bind(idx, static_cast<int64_t>(v)); }
  Status BindOne(int idx, double v) { return Bind(idx, v); }
  Status BindOne(int idx, const std::string& v) { return Bind(idx, std::string_view(v)); }
  Status BindOne(int idx, std::string_view v) { return Bind(idx, v); }
  Status BindOne(int idx, const char* v) { return Bind(idx, std::string_view(v)); }
  Status BindOne(int idx, std::nullopt_t) { return BindNull(idx); }

  std::unique_ptr<StatementImpl> impl_;
};

class Database {
 public:
  virtual ~Database() = default;

  virtual Dialect dialect() const = 0;
  // Where the data lives, for messages: a file path, or a URL without its password.
  virtual const std::string& path() const = 0;

  // Runs one or more statements that return no rows.
  virtual Status Exec(std::string_view sql) = 0;
  virtual Result<Statement> Prepare(std::string_view sql) = 0;
  // The id of the row the last INSERT on this connection created.
  virtual Result<int64_t> LastInsertId() = 0;
  // Starts a write transaction holding the database's one writer lock, waiting for
  // it up to the busy timeout (then kUnavailable): writers never interleave, so a
  // read-then-write inside one (find the key, then insert or update) is atomic.
  virtual Status BeginWrite() = 0;
  // Starts a read-only transaction that sees one consistent snapshot.
  virtual Status BeginRead() = 0;
  virtual Result<bool> TableExists(std::string_view name) = 0;

  // The single integer the query returns (e.g. SELECT count(*)); nullopt for no row.
  Result<std::optional<int64_t>> QueryInt(std::string_view sql);
};

class Transaction {
 public:
  // A write transaction (Database::BeginWrite): takes the writer lock now.
  static Result<Transaction> BeginImmediate(Database& db);
  ~Transaction();
  Transaction(Transaction&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;

  // Commits; afterwards the destructor does nothing. On failure the transaction is
  // rolled back by the destructor.
  Status Commit();

 private:
  explicit Transaction(Database* db) : db_(db) {}
  Database* db_;  // null once committed or moved from
};

}  // namespace hone::kb
