// The recipe database's schema and its migrations.
//
// The schema is versioned by the single row of the schema_version table. Migrations
// are ordered SQL steps; step i (1-based) moves a database from version i-1 to i.
// Both backends have the same steps, tables, columns and indexes; each step carries
// its text in SQLite's and PostgreSQL's dialect (they differ in the id column type,
// 64-bit floats and integers). Migrate() applies the missing steps inside one write
// transaction (the backend's writer lock), so two processes opening a fresh or old
// database at once migrate it exactly once, and a crash mid-migration leaves the
// previous version intact (both backends have transactional DDL). A file whose version is newer
// than this build knows is refused (kFailedPrecondition), never downgraded.
// Steps are append-only: never edit a released step, add a new one.
#pragma once

#include <string_view>
#include <vector>

#include "core/error.h"
#include "kb/db.h"

namespace hone::kb {

struct Migration {
  int version;                // the version this step produces
  std::string_view what;      // one line for logs
  std::string_view sql;       // SQLite
  std::string_view postgres;  // the same step in PostgreSQL

  std::string_view Sql(Dialect d) const { return d == Dialect::kSqlite ? sql : postgres; }
};

// All steps, in order; kSchemaVersion == Migrations().back().version.
const std::vector<Migration>& Migrations();
inline constexpr int kSchemaVersion = 3;

// The database's schema version (0 for a fresh one).
Result<int> SchemaVersion(Database& db);
// Brings the database to kSchemaVersion; returns the version it found.
Result<int> Migrate(Database& db);

}  // namespace hone::kb
