// The recipe database's schema and its migrations.
//
// The schema is versioned by the single row of the schema_version table. Migrations
// are ordered SQL steps; step i (1-based) moves a database from version i-1 to i.
// Migrate() applies the missing steps inside one BEGIN IMMEDIATE transaction, so two
// processes opening a fresh or old file at once migrate it exactly once, and a crash
// mid-migration leaves the previous version intact. A file whose version is newer
// than this build knows is refused (kFailedPrecondition), never downgraded.
// Steps are append-only: never edit a released step, add a new one.
#pragma once

#include <string_view>
#include <vector>

#include "core/error.h"
#include "kb/sqlite.h"

namespace hone::kb {

struct Migration {
  int version;           // the version this step produces
  std::string_view what; // one line for logs
  std::string_view sql;
};

// All steps, in order; kSchemaVersion == Migrations().back().version.
const std::vector<Migration>& Migrations();
inline constexpr int kSchemaVersion = 2;

// The file's schema version (0 for a fresh file).
Result<int> SchemaVersion(SqliteDb& db);
// Brings the file to kSchemaVersion; returns the version it found.
Result<int> Migrate(SqliteDb& db);

}  // namespace hone::kb
