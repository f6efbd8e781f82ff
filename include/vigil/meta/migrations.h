// Numbered schema migrations per component (e.g. "idempotency", "jobs").
// Applied versions are recorded in `vigil_schema_migrations` with a checksum of
// their SQL; a released migration is never edited, and an edited one is
// detected when the database is opened. Thread-safe: concurrent runs against
// one database (threads or processes) serialize inside a write transaction.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/meta/database.h"

namespace vigil::meta {

struct Migration {
  int version;            // 1, 2, 3, ... without gaps
  std::string_view name;  // short description, e.g. "create idempotency_records"
  std::string_view sql;   // one or more ';'-separated statements in the backend's dialect
};

struct AppliedMigration {
  int version;
  std::string name;
  std::string checksum;  // 16 hex digits of XXH3-64 of the SQL text
  int64_t applied_at_ms;
};

// Hex checksum recorded for a migration's SQL.
std::string MigrationChecksum(std::string_view sql);

// Brings `component`'s schema up to the last of `migrations` in one write transaction.
// Corruption when an applied migration's checksum differs from its SQL now (it was edited) or
// an applied version is missing from the list; FailedPrecondition when the database holds a
// newer version than this build knows (a downgrade); InvalidArgument when versions are not 1..n.
// Returns the number of migrations applied by this call.
Result<int> ApplyMigrations(Database& db, std::string_view component, const std::vector<Migration>& migrations,
                            int64_t now_ms);

// The migrations recorded for `component`, by version; empty when none (or no table yet).
Result<std::vector<AppliedMigration>> ListAppliedMigrations(Database& db, std::string_view component);

}  // namespace vigil::meta
