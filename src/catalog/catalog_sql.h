// The SQL the table registry (catalog_store.cc) and the version catalogs
// (version_store.cc) run: the same text on SQLite and PostgreSQL, on the tables
// vigil_catalogs, vigil_tables and table_versions that the metadata schema's
// "jobs" component creates (jobs/job_schema.cc; migrations 1, 6 and 8). Append the
// dialect's row-lock suffix (meta::DialectProfile::lock_rows) where a statement
// says so. Constants only.
#pragma once

#include <string_view>

namespace vigil::catalog::sql {

// Registry. $1 catalog name. Append the lock suffix to lock the catalog row.
constexpr std::string_view kSelectCatalog = "SELECT catalog_incarnation FROM vigil_catalogs WHERE catalog_name = $1";
// $1 catalog name, $2 incarnation, $3 now.
constexpr std::string_view kInsertCatalog =
    "INSERT INTO vigil_catalogs (catalog_name, catalog_incarnation, created_at) VALUES ($1, $2, $3)"
    " ON CONFLICT (catalog_name) DO NOTHING";
#define VIGIL_TABLE_COLUMNS                                                                    \
  "t.catalog_name, t.database_name, t.table_name, c.catalog_incarnation, t.table_incarnation," \
  " t.locator, t.created_at, t.engine"
// $1 catalog, $2 database, $3 table. Append the lock suffix to lock the table row.
constexpr std::string_view kSelectTable =
    "SELECT " VIGIL_TABLE_COLUMNS
    " FROM vigil_tables t JOIN vigil_catalogs c ON c.catalog_name = t.catalog_name"
    " WHERE t.catalog_name = $1 AND t.database_name = $2 AND t.table_name = $3";
// $1 catalog, $2 database.
constexpr std::string_view kSelectTablesOfDatabase =
    "SELECT " VIGIL_TABLE_COLUMNS
    " FROM vigil_tables t JOIN vigil_catalogs c ON c.catalog_name = t.catalog_name"
    " WHERE t.catalog_name = $1 AND t.database_name = $2 ORDER BY t.table_name";
// $1 table incarnation. Append the lock suffix to lock the table row.
constexpr std::string_view kSelectTableByIncarnation =
    "SELECT " VIGIL_TABLE_COLUMNS
    " FROM vigil_tables t JOIN vigil_catalogs c ON c.catalog_name = t.catalog_name"
    " WHERE t.table_incarnation = $1";
// $1 catalog, $2 database, $3 table, $4 incarnation, $5 locator, $6 now, $7 engine.
constexpr std::string_view kInsertTable =
    "INSERT INTO vigil_tables (catalog_name, database_name, table_name, table_incarnation, locator,"
    " created_at, engine) VALUES ($1, $2, $3, $4, $5, $6, $7)";
// $1 table incarnation.
constexpr std::string_view kDeleteTable = "DELETE FROM vigil_tables WHERE table_incarnation = $1";
#undef VIGIL_TABLE_COLUMNS

// Table versions. $1 table incarnation.
constexpr std::string_view kSelectNewestVersion =
    "SELECT version, manifest FROM table_versions WHERE table_incarnation = $1 ORDER BY version DESC LIMIT 1";
// $1 table incarnation, $2 version, $3 manifest, $4 job id (or NULL), $5 attempt id (or NULL),
// $6 now.
constexpr std::string_view kInsertVersion =
    "INSERT INTO table_versions (table_incarnation, version, manifest, job_id, attempt_id, committed_at)"
    " VALUES ($1, $2, $3, $4, $5, $6)";
// $1 table incarnation, $2 attempt id: the versions that attempt committed (at most one).
constexpr std::string_view kSelectAttemptVersion =
    "SELECT version, manifest, job_id, attempt_id, committed_at FROM table_versions"
    " WHERE table_incarnation = $1 AND attempt_id = $2 ORDER BY version LIMIT 2";

}  // namespace vigil::catalog::sql
