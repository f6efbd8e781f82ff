// The idempotency store's per-database profile: its numbered schema
// migrations for each backend and the SQL statements it runs (the same text
// on both backends). Migrations are append-only: a released one is never
// edited (meta::ApplyMigrations detects an edit by checksum). Constants only.
#pragma once

#include <string_view>
#include <vector>

#include "vigil/meta/database.h"
#include "vigil/meta/migrations.h"

namespace vigil::idempotency {

// Component name in vigil_schema_migrations.
constexpr std::string_view kSchemaComponent = "idempotency";

// The migrations of `dialect`, version 1 first.
const std::vector<meta::Migration>& SchemaMigrations(meta::Dialect dialect);

namespace sql {

#define VIGIL_IDEMPOTENCY_COLUMNS                                                             \
  "realm_id, idempotency_key, operation_type, resource_id, request_fingerprint, executor_id," \
  " http_status, error_subtype, response_summary, response_headers, created_at, updated_at,"  \
  " heartbeat_at, finalized_at, expires_at"

// $1 realm, $2 key, $3 operation, $4 resource, $5 fingerprint, $6 executor, $7 now,
// $8 expires_at. Inserts, or takes over a finished record that expired by now; returns the
// new record, or no row when an existing record stays (a duplicate).
constexpr std::string_view kReserve =
    "INSERT INTO idempotency_records (realm_id, idempotency_key, operation_type, resource_id,"
    " request_fingerprint, executor_id, created_at, updated_at, heartbeat_at, expires_at)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $7, $8)"
    " ON CONFLICT (realm_id, idempotency_key) DO UPDATE SET"
    " operation_type = excluded.operation_type, resource_id = excluded.resource_id,"
    " request_fingerprint = excluded.request_fingerprint, executor_id = excluded.executor_id,"
    " http_status = NULL, error_subtype = NULL, response_summary = NULL, response_headers = NULL,"
    " created_at = excluded.created_at, updated_at = excluded.updated_at,"
    " heartbeat_at = excluded.heartbeat_at, finalized_at = NULL, expires_at = excluded.expires_at"
    " WHERE idempotency_records.http_status IS NOT NULL AND idempotency_records.expires_at <= $7"
    " RETURNING " VIGIL_IDEMPOTENCY_COLUMNS;

// $1 realm, $2 key.
constexpr std::string_view kLoad = "SELECT " VIGIL_IDEMPOTENCY_COLUMNS
                                   " FROM idempotency_records"
                                   " WHERE realm_id = $1 AND idempotency_key = $2";

// $1 realm, $2 key, $3 executor, $4 now. Touches heartbeat_at only for the owner of an
// in-progress record, and returns the row as it stands, so the outcome is read atomically.
constexpr std::string_view kHeartbeat =
    "UPDATE idempotency_records SET"
    " heartbeat_at = CASE WHEN executor_id = $3 AND http_status IS NULL THEN $4"
    " ELSE heartbeat_at END,"
    " updated_at = CASE WHEN executor_id = $3 AND http_status IS NULL THEN $4 ELSE updated_at END"
    " WHERE realm_id = $1 AND idempotency_key = $2"
    " RETURNING " VIGIL_IDEMPOTENCY_COLUMNS;

// $1 realm, $2 key, $3 executor.
constexpr std::string_view kCancel =
    "DELETE FROM idempotency_records"
    " WHERE realm_id = $1 AND idempotency_key = $2 AND executor_id = $3 AND http_status IS NULL";

// $1 realm, $2 key, $3 executor, $4 heartbeat_before.
constexpr std::string_view kReleaseStale =
    "DELETE FROM idempotency_records"
    " WHERE realm_id = $1 AND idempotency_key = $2 AND executor_id = $3 AND http_status IS NULL"
    " AND heartbeat_at < $4";

// $1 realm, $2 key, $3 executor, $4 created_at, $5 now. On PostgreSQL the update holds the
// row's lock until the caller's transaction ends, so a concurrent kReleaseStale waits for it
// and then sees the renewed heartbeat.
constexpr std::string_view kConfirmOwner =
    "UPDATE idempotency_records SET heartbeat_at = $5, updated_at = $5"
    " WHERE realm_id = $1 AND idempotency_key = $2 AND executor_id = $3 AND created_at = $4"
    " AND http_status IS NULL";

// $1 realm, $2 key, $3 executor, $4 http_status, $5 error_subtype, $6 response_summary,
// $7 response_headers, $8 now. Returns the finished record, or no row when not the owner's
// in-progress record.
constexpr std::string_view kFinalize =
    "UPDATE idempotency_records SET http_status = $4, error_subtype = $5, response_summary = $6,"
    " response_headers = $7, updated_at = $8, finalized_at = $8"
    " WHERE realm_id = $1 AND idempotency_key = $2 AND executor_id = $3 AND http_status IS NULL"
    " RETURNING " VIGIL_IDEMPOTENCY_COLUMNS;

// $1 realm, $2 before. Served by idx_idempotency_realm_expires.
constexpr std::string_view kPurgeExpired =
    "DELETE FROM idempotency_records"
    " WHERE realm_id = $1 AND expires_at < $2 AND http_status IS NOT NULL";

// $1 realm, $2 heartbeat_before, $3 limit. Served by the partial index idx_idempotency_stale.
constexpr std::string_view kListStale = "SELECT " VIGIL_IDEMPOTENCY_COLUMNS
                                        " FROM idempotency_records"
                                        " WHERE realm_id = $1 AND http_status IS NULL AND heartbeat_at < $2"
                                        " ORDER BY heartbeat_at, idempotency_key LIMIT $3";

// $1 after, $2 limit: the distinct realm ids after $1, one primary-key probe each (a loose
// index scan, on SQLite and PostgreSQL alike) instead of a scan of every record.
constexpr std::string_view kListRealms =
    "WITH RECURSIVE realms(realm_id, n) AS ("
    " SELECT (SELECT min(realm_id) FROM idempotency_records WHERE realm_id > $1), 1"
    " UNION ALL"
    " SELECT (SELECT min(r.realm_id) FROM idempotency_records r WHERE r.realm_id > realms.realm_id), n + 1"
    " FROM realms WHERE realms.realm_id IS NOT NULL AND n < $2)"
    " SELECT realm_id FROM realms WHERE realm_id IS NOT NULL ORDER BY realm_id";

#undef VIGIL_IDEMPOTENCY_COLUMNS

}  // namespace sql
}  // namespace vigil::idempotency
