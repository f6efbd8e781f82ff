// The job store's per-database profile: its numbered schema migrations of
// component "jobs" for each backend and the SQL statements it runs (the same
// text on both backends; `{lock}` marks where the dialect's row-lock suffix
// goes). Migrations are append-only: a released one is never edited
// (meta::ApplyMigrations detects an edit by checksum). Constants only.
#pragma once

#include <string_view>
#include <vector>

#include "vigil/meta/database.h"
#include "vigil/meta/migrations.h"

namespace vigil::jobs {

// Component name in vigil_schema_migrations.
constexpr std::string_view kSchemaComponent = "jobs";

// The migrations of `dialect`, version 1 first.
const std::vector<meta::Migration>& SchemaMigrations(meta::Dialect dialect);

namespace sql {

// Column order is the one ParseJob (job_rows.h) reads.
#define VIGIL_JOB_COLUMNS                                                                            \
  "job_id, revision, creator, created_at, started_at, finished_at, catalog_name, database_name,"     \
  " table_name, catalog_incarnation, table_incarnation, locator, index_name, normalization_version," \
  " normalized_name, provider, operation, if_mode, columns_json, sql_category, physical_type,"       \
  " properties_json, start_version, schema_fingerprint, execution, outcome, refresh, reconcile,"     \
  " disposition, executor_node_id, node_epoch, attempt_id, attempt_number, dispatch_generation,"     \
  " leader_epoch, deadline_at, invoked, termination_proven, error_code, error_message,"              \
  " committed_version, last_observed_version, last_observed_fingerprint, refresh_generation,"        \
  " refresh_retries, refresh_next_at, refresh_last_error, reconcile_next_at, reconcile_last_at,"     \
  " reconcile_backoff_s, resolution_id, progress_phase, progress_done, progress_total, archived_at," \
  " tombstone, engine"

constexpr std::string_view kJobColumns = VIGIL_JOB_COLUMNS;

// $1 job id. Append the dialect's lock suffix to lock the row in a write transaction.
constexpr std::string_view kSelectJob = "SELECT " VIGIL_JOB_COLUMNS " FROM index_jobs WHERE job_id = $1";

// $1..$27 as in job_rows.cc AdmissionParams. Returns the new job id.
constexpr std::string_view kInsertJob =
    "INSERT INTO index_jobs (revision, creator, created_at, catalog_name, database_name, table_name,"
    " catalog_incarnation, table_incarnation, locator, index_name, normalization_version,"
    " normalized_name, provider, operation, if_mode, columns_json, sql_category, physical_type,"
    " properties_json, start_version, schema_fingerprint, execution, outcome, refresh, reconcile,"
    " disposition, engine) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,"
    " $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27) RETURNING job_id";

// $1 job id, $2 expected revision, $3..$35 as in job_rows.cc MutableParams.
// Progress is advisory: it moves neither the revision nor any state.
constexpr std::string_view kUpdateProgress =
    "UPDATE index_jobs SET progress_phase = $1, progress_done = $2, progress_total = $3"
    " WHERE job_id = $4 AND attempt_id = $5 AND execution = 'RUNNING'";
constexpr std::string_view kUpdateJob =
    "UPDATE index_jobs SET revision = $3, started_at = $4, finished_at = $5, execution = $6,"
    " outcome = $7, refresh = $8, reconcile = $9, disposition = $10, executor_node_id = $11,"
    " node_epoch = $12, attempt_id = $13, attempt_number = $14, dispatch_generation = $15,"
    " leader_epoch = $16, deadline_at = $17, invoked = $18, termination_proven = $19,"
    " error_code = $20, error_message = $21, committed_version = $22, last_observed_version = $23,"
    " last_observed_fingerprint = $24, refresh_generation = $25, refresh_retries = $26,"
    " refresh_next_at = $27, refresh_last_error = $28, reconcile_next_at = $29,"
    " reconcile_last_at = $30, reconcile_backoff_s = $31, resolution_id = $32, progress_phase = $33,"
    " progress_done = $34, progress_total = $35"
    " WHERE job_id = $1 AND revision = $2";

#define VIGIL_EVENT_COLUMNS "job_id, seq, part, at, kind, actor, resolution_id, note, detail"

constexpr std::string_view kInsertEvent =
    "INSERT INTO index_job_events (" VIGIL_EVENT_COLUMNS ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
constexpr std::string_view kSelectEvents =
    "SELECT " VIGIL_EVENT_COLUMNS " FROM index_job_events WHERE job_id = $1 ORDER BY seq, part";
// $1 resolution id: the request event of a resolution.
constexpr std::string_view kSelectResolutionRequest =
    "SELECT " VIGIL_EVENT_COLUMNS " FROM index_job_events WHERE resolution_id = $1 ORDER BY seq, part LIMIT 1";

// $1 catalog incarnation, $2 table incarnation, $3 normalization version, $4 normalized name.
constexpr std::string_view kSelectFence =
    "SELECT f.job_id, j.index_name FROM index_fences f JOIN index_jobs j ON j.job_id = f.job_id"
    " WHERE f.catalog_incarnation = $1 AND f.table_incarnation = $2 AND f.normalization_version = $3"
    " AND f.normalized_name = $4";
// $1..$4 the fence key, $5 job id.
constexpr std::string_view kInsertFence =
    "INSERT INTO index_fences (catalog_incarnation, table_incarnation, normalization_version,"
    " normalized_name, job_id) VALUES ($1, $2, $3, $4, $5)";
constexpr std::string_view kDeleteFence = "DELETE FROM index_fences WHERE job_id = $1";
constexpr std::string_view kSelectFenceOfJob = "SELECT 1 FROM index_fences WHERE job_id = $1";

// $1 table incarnation, $2 job id.
constexpr std::string_view kInsertGuard = "INSERT INTO index_target_guards (table_incarnation, job_id) VALUES ($1, $2)";
constexpr std::string_view kDeleteGuard = "DELETE FROM index_target_guards WHERE job_id = $1";
// $1 request token, $2 job id.
constexpr std::string_view kInsertJobRequest = "INSERT INTO index_job_requests (request_token, job_id) VALUES ($1, $2)";
// $1 request token.
constexpr std::string_view kSelectJobOfRequest = "SELECT job_id FROM index_job_requests WHERE request_token = $1";
// $1 table incarnation; the guarding jobs, oldest first, with their derived-state columns.
constexpr std::string_view kSelectGuards =
    "SELECT g.job_id, j.execution, j.outcome, j.refresh FROM index_target_guards g"
    " JOIN index_jobs j ON j.job_id = g.job_id WHERE g.table_incarnation = $1 ORDER BY g.job_id";

// Leader lease (one row, lease_id 1). Append the lock suffix in a write transaction.
constexpr std::string_view kSelectLease =
    "SELECT holder, epoch, acquired_at, expires_at FROM leader_lease WHERE lease_id = 1";
// $1 holder, $2 epoch, $3 acquired_at, $4 expires_at.
constexpr std::string_view kUpdateLease =
    "UPDATE leader_lease SET holder = $1, epoch = $2, acquired_at = $3, expires_at = $4 WHERE lease_id = 1";

// Nodes. $1 node id, $2 now, $3 pid, $4 host. Returns the new epoch.
constexpr std::string_view kRegisterNode =
    "INSERT INTO cluster_nodes (node_id, epoch, started_at, heartbeat_at, pid, host, capacity)"
    " VALUES ($1, 1, $2, $2, $3, $4, $5) ON CONFLICT (node_id) DO UPDATE SET"
    " epoch = cluster_nodes.epoch + 1, started_at = excluded.started_at,"
    " heartbeat_at = excluded.heartbeat_at, pid = excluded.pid, host = excluded.host,"
    " capacity = excluded.capacity RETURNING epoch";
// $1 node id, $2 epoch, $3 now.
constexpr std::string_view kHeartbeatNode =
    "UPDATE cluster_nodes SET heartbeat_at = $3 WHERE node_id = $1 AND epoch = $2";
// $1 limit.
constexpr std::string_view kSelectNodes =
    "SELECT node_id, epoch, started_at, heartbeat_at, pid, host, draining, capacity FROM cluster_nodes"
    " ORDER BY node_id LIMIT $1";
constexpr std::string_view kSelectNode =
    "SELECT node_id, epoch, started_at, heartbeat_at, pid, host, draining, capacity FROM cluster_nodes"
    " WHERE node_id = $1";
// $1 node id, $2 draining (0 or 1).
constexpr std::string_view kSetNodeDraining = "UPDATE cluster_nodes SET draining = $2 WHERE node_id = $1";

// Refresh generations. $1 table incarnation, $2 now. Returns the new generation.
constexpr std::string_view kBumpRefreshGeneration =
    "INSERT INTO table_refresh_generations (table_incarnation, generation, updated_at)"
    " VALUES ($1, 1, $2) ON CONFLICT (table_incarnation) DO UPDATE SET"
    " generation = table_refresh_generations.generation + 1, updated_at = excluded.updated_at"
    " RETURNING generation";
constexpr std::string_view kSelectRefreshGeneration =
    "SELECT generation FROM table_refresh_generations WHERE table_incarnation = $1";

// Retention. $1 now, $2 finished before. Terminal jobs whose fence is released are archived.
constexpr std::string_view kArchiveReleased =
    "UPDATE index_jobs SET archived_at = $1 WHERE archived_at IS NULL AND execution = 'TERMINAL'"
    " AND finished_at < $2 AND NOT EXISTS (SELECT 1 FROM index_fences f WHERE f.job_id = index_jobs.job_id)";
// UNKNOWN jobs still holding their fence become tombstones (never deleted).
constexpr std::string_view kTombstoneUnknown =
    "UPDATE index_jobs SET archived_at = $1, tombstone = 1, progress_phase = NULL, progress_done = 0,"
    " progress_total = 0 WHERE archived_at IS NULL AND execution = 'TERMINAL' AND outcome = 'UNKNOWN'"
    " AND finished_at < $2 AND EXISTS (SELECT 1 FROM index_fences f WHERE f.job_id = index_jobs.job_id)";

// Reconciliation. $1 due by (ms), $2 limit. UNKNOWN jobs whose watcher, final read or
// attribution is due, the earliest first (tombstones included: they still hold their fence).
constexpr std::string_view kSelectReconcileDue =
    "SELECT " VIGIL_JOB_COLUMNS
    " FROM index_jobs WHERE outcome = 'UNKNOWN' AND reconcile IN"
    " ('WATCHING', 'RETRY_PENDING', 'FINAL_READ_PENDING', 'STOPPED_TERMINATION_PROVEN')"
    " AND (reconcile_next_at IS NULL OR reconcile_next_at <= $1)"
    " ORDER BY COALESCE(reconcile_next_at, 0), job_id LIMIT $2";

// Refreshes. $1 due by (ms), $2 limit. Jobs whose refresh is REQUIRED, RUNNING (left by a
// dead leader: replayed) or RETRY_PENDING and due, oldest job first, archived ones included.
// The predicate matches the partial index idx_index_jobs_refresh_pending (migration 2).
constexpr std::string_view kSelectRefreshDue =
    "SELECT " VIGIL_JOB_COLUMNS
    " FROM index_jobs WHERE refresh IN ('REQUIRED', 'RUNNING', 'RETRY_PENDING')"
    " AND (refresh <> 'RETRY_PENDING' OR refresh_next_at IS NULL OR refresh_next_at <= $1)"
    " ORDER BY job_id LIMIT $2";

// Audit (migration 3). $1..$12 as in job_rows.cc AuditParams.
#define VIGIL_AUDIT_COLUMNS                                                                      \
  "audit_id, at, actor, action, job_id, resolution_id, catalog_name, database_name, table_name," \
  " table_incarnation, index_name, note, warnings_json"
constexpr std::string_view kInsertAudit =
    "INSERT INTO index_job_audit (at, actor, action, job_id, resolution_id, catalog_name, database_name,"
    " table_name, table_incarnation, index_name, note, warnings_json)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)";
// $1 after audit id, $2 limit; ParseAudit reads the rows.
constexpr std::string_view kSelectAudit =
    "SELECT " VIGIL_AUDIT_COLUMNS " FROM index_job_audit WHERE audit_id > $1 ORDER BY audit_id LIMIT $2";

#undef VIGIL_AUDIT_COLUMNS
#undef VIGIL_EVENT_COLUMNS
#undef VIGIL_JOB_COLUMNS

}  // namespace sql
}  // namespace vigil::jobs
