// Factories of the two Database backends, used by Database::Open. Internal to meta/.
#pragma once

#include <memory>
#include <string>

#include "vigil/meta/database.h"

namespace vigil::meta {

// A SQLite database file at `path` (created if missing), in WAL mode with synchronous=FULL.
std::unique_ptr<Database> NewSqliteDatabase(const std::string& path, const DialectProfile* profile,
                                            const DatabaseOptions& options);
// A PostgreSQL database reached through the libpq `conninfo` (URI or key=value form).
std::unique_ptr<Database> NewPostgresDatabase(const std::string& conninfo, const DialectProfile* profile,
                                              const DatabaseOptions& options);

}  // namespace vigil::meta

namespace vigil::meta {
// The dialect profiles, defined beside their backends.
const DialectProfile& SqliteProfile();
const DialectProfile& PostgresProfile();
}  // namespace vigil::meta
