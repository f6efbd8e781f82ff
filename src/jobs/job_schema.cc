#include "jobs/job_schema.h"

namespace vigil::jobs {

namespace {

// SQLite, version 1. Released: never edit; add version 2 instead.
constexpr std::string_view kSqliteV1 = R"sql(
CREATE TABLE vigil_catalogs (
  catalog_name TEXT PRIMARY KEY,
  catalog_incarnation TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL
);
CREATE TABLE vigil_tables (
  catalog_name TEXT NOT NULL REFERENCES vigil_catalogs (catalog_name),
  database_name TEXT NOT NULL,
  table_name TEXT NOT NULL,
  table_incarnation TEXT NOT NULL UNIQUE,
  locator TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (catalog_name, database_name, table_name)
);
CREATE TABLE index_jobs (
  job_id INTEGER PRIMARY KEY AUTOINCREMENT,
  revision INTEGER NOT NULL CHECK (revision >= 1),
  creator TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  finished_at INTEGER,
  catalog_name TEXT NOT NULL,
  database_name TEXT NOT NULL,
  table_name TEXT NOT NULL,
  catalog_incarnation TEXT NOT NULL,
  table_incarnation TEXT NOT NULL,
  locator TEXT NOT NULL,
  index_name TEXT NOT NULL,
  normalization_version INTEGER NOT NULL,
  normalized_name TEXT NOT NULL,
  provider TEXT NOT NULL CHECK (provider = 'DIRECTORY'),
  operation TEXT NOT NULL CHECK (operation IN ('CREATE', 'REPLACE', 'DROP', 'BUILD')),
  if_mode TEXT NOT NULL CHECK (if_mode IN ('NONE', 'IF_NOT_EXISTS', 'IF_EXISTS')),
  columns_json TEXT NOT NULL,
  sql_category TEXT CHECK (sql_category IN ('ANN', 'BTREE', 'BITMAP', 'FTS')),
  physical_type TEXT,
  properties_json TEXT NOT NULL,
  start_version INTEGER NOT NULL,
  schema_fingerprint TEXT NOT NULL,
  execution TEXT NOT NULL CHECK (execution IN ('PENDING', 'CANCELLING', 'RUNNING', 'TERMINAL')),
  outcome TEXT NOT NULL CHECK (outcome IN ('NONE', 'COMMITTED', 'NOT_COMMITTED', 'NOOP',
                                           'CANCELLED_BEFORE_DISPATCH', 'UNKNOWN')),
  refresh TEXT NOT NULL CHECK (refresh IN ('NOT_REQUIRED', 'REQUIRED', 'RUNNING', 'DONE',
                                           'RETRY_PENDING', 'SKIPPED_BY_FORCE')),
  reconcile TEXT NOT NULL CHECK (reconcile IN ('NONE', 'WATCHING', 'RETRY_PENDING', 'FINAL_READ_PENDING',
                                               'STOPPED_TERMINATION_PROVEN', 'STOPPED_BY_FORCE')),
  disposition TEXT NOT NULL CHECK (disposition IN ('NONE', 'ACK_REFRESH_PENDING', 'ACKNOWLEDGED',
                                                   'FORCE_REFRESH_PENDING', 'FORCE_RELEASED')),
  executor_node_id TEXT,
  node_epoch INTEGER,
  attempt_id TEXT,
  attempt_number INTEGER,
  dispatch_generation INTEGER,
  leader_epoch INTEGER,
  deadline_at INTEGER,
  invoked INTEGER NOT NULL DEFAULT 0 CHECK (invoked IN (0, 1)),
  termination_proven INTEGER NOT NULL DEFAULT 0 CHECK (termination_proven IN (0, 1)),
  error_code TEXT,
  error_message TEXT CHECK (length(error_message) <= 1024),
  committed_version INTEGER,
  last_observed_version INTEGER,
  last_observed_fingerprint TEXT,
  refresh_generation INTEGER NOT NULL DEFAULT 0,
  refresh_retries INTEGER NOT NULL DEFAULT 0,
  refresh_next_at INTEGER,
  refresh_last_error TEXT,
  reconcile_next_at INTEGER,
  reconcile_last_at INTEGER,
  reconcile_backoff_s INTEGER NOT NULL DEFAULT 0,
  resolution_id TEXT,
  progress_phase TEXT,
  progress_done INTEGER NOT NULL DEFAULT 0,
  progress_total INTEGER NOT NULL DEFAULT 0,
  archived_at INTEGER,
  tombstone INTEGER NOT NULL DEFAULT 0 CHECK (tombstone IN (0, 1))
);
CREATE INDEX idx_index_jobs_target ON index_jobs
  (catalog_name, database_name, table_name, outcome, job_id);
CREATE INDEX idx_index_jobs_unarchived ON index_jobs
  (catalog_name, database_name, table_name, job_id) WHERE archived_at IS NULL;
CREATE INDEX idx_index_jobs_retention ON index_jobs (finished_at)
  WHERE archived_at IS NULL AND execution = 'TERMINAL';
CREATE TABLE index_job_events (
  job_id INTEGER NOT NULL REFERENCES index_jobs (job_id),
  seq INTEGER NOT NULL,
  part INTEGER NOT NULL,
  at INTEGER NOT NULL,
  kind TEXT NOT NULL,
  actor TEXT NOT NULL,
  resolution_id TEXT,
  note TEXT CHECK (length(note) <= 1024),
  detail TEXT NOT NULL,
  PRIMARY KEY (job_id, seq, part)
);
CREATE INDEX idx_index_job_events_resolution ON index_job_events (resolution_id)
  WHERE resolution_id IS NOT NULL;
CREATE TRIGGER index_job_events_no_update BEFORE UPDATE ON index_job_events
BEGIN SELECT RAISE(ABORT, 'index_job_events is append-only'); END;
CREATE TRIGGER index_job_events_no_delete BEFORE DELETE ON index_job_events
BEGIN SELECT RAISE(ABORT, 'index_job_events is append-only'); END;
CREATE TABLE index_fences (
  catalog_incarnation TEXT NOT NULL,
  table_incarnation TEXT NOT NULL,
  normalization_version INTEGER NOT NULL,
  normalized_name TEXT NOT NULL,
  job_id INTEGER NOT NULL UNIQUE REFERENCES index_jobs (job_id),
  PRIMARY KEY (catalog_incarnation, table_incarnation, normalization_version, normalized_name)
);
CREATE TABLE index_target_guards (
  table_incarnation TEXT NOT NULL,
  job_id INTEGER NOT NULL UNIQUE REFERENCES index_jobs (job_id),
  PRIMARY KEY (table_incarnation, job_id)
);
CREATE TABLE leader_lease (
  lease_id INTEGER PRIMARY KEY CHECK (lease_id = 1),
  holder TEXT NOT NULL,
  epoch INTEGER NOT NULL,
  acquired_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
INSERT INTO leader_lease (lease_id, holder, epoch, acquired_at, expires_at) VALUES (1, '', 0, 0, 0);
CREATE TABLE cluster_nodes (
  node_id TEXT PRIMARY KEY,
  epoch INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  host TEXT NOT NULL
);
CREATE TABLE table_refresh_generations (
  table_incarnation TEXT PRIMARY KEY,
  generation INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
)sql";

// PostgreSQL, version 1. Released: never edit; add version 2 instead.
constexpr std::string_view kPostgresV1 = R"sql(
CREATE TABLE vigil_catalogs (
  catalog_name TEXT PRIMARY KEY,
  catalog_incarnation TEXT NOT NULL UNIQUE,
  created_at BIGINT NOT NULL
);
CREATE TABLE vigil_tables (
  catalog_name TEXT NOT NULL REFERENCES vigil_catalogs (catalog_name),
  database_name TEXT NOT NULL,
  table_name TEXT NOT NULL,
  table_incarnation TEXT NOT NULL UNIQUE,
  locator TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (catalog_name, database_name, table_name)
);
CREATE TABLE index_jobs (
  job_id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  revision BIGINT NOT NULL CHECK (revision >= 1),
  creator TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  started_at BIGINT,
  finished_at BIGINT,
  catalog_name TEXT NOT NULL,
  database_name TEXT NOT NULL,
  table_name TEXT NOT NULL,
  catalog_incarnation TEXT NOT NULL,
  table_incarnation TEXT NOT NULL,
  locator TEXT NOT NULL,
  index_name TEXT NOT NULL,
  normalization_version INTEGER NOT NULL,
  normalized_name TEXT NOT NULL,
  provider TEXT NOT NULL CHECK (provider = 'DIRECTORY'),
  operation TEXT NOT NULL CHECK (operation IN ('CREATE', 'REPLACE', 'DROP', 'BUILD')),
  if_mode TEXT NOT NULL CHECK (if_mode IN ('NONE', 'IF_NOT_EXISTS', 'IF_EXISTS')),
  columns_json TEXT NOT NULL,
  sql_category TEXT CHECK (sql_category IN ('ANN', 'BTREE', 'BITMAP', 'FTS')),
  physical_type TEXT,
  properties_json TEXT NOT NULL,
  start_version BIGINT NOT NULL,
  schema_fingerprint TEXT NOT NULL,
  execution TEXT NOT NULL CHECK (execution IN ('PENDING', 'CANCELLING', 'RUNNING', 'TERMINAL')),
  outcome TEXT NOT NULL CHECK (outcome IN ('NONE', 'COMMITTED', 'NOT_COMMITTED', 'NOOP',
                                           'CANCELLED_BEFORE_DISPATCH', 'UNKNOWN')),
  refresh TEXT NOT NULL CHECK (refresh IN ('NOT_REQUIRED', 'REQUIRED', 'RUNNING', 'DONE',
                                           'RETRY_PENDING', 'SKIPPED_BY_FORCE')),
  reconcile TEXT NOT NULL CHECK (reconcile IN ('NONE', 'WATCHING', 'RETRY_PENDING', 'FINAL_READ_PENDING',
                                               'STOPPED_TERMINATION_PROVEN', 'STOPPED_BY_FORCE')),
  disposition TEXT NOT NULL CHECK (disposition IN ('NONE', 'ACK_REFRESH_PENDING', 'ACKNOWLEDGED',
                                                   'FORCE_REFRESH_PENDING', 'FORCE_RELEASED')),
  executor_node_id TEXT,
  node_epoch BIGINT,
  attempt_id TEXT,
  attempt_number BIGINT,
  dispatch_generation BIGINT,
  leader_epoch BIGINT,
  deadline_at BIGINT,
  invoked INTEGER NOT NULL DEFAULT 0 CHECK (invoked IN (0, 1)),
  termination_proven INTEGER NOT NULL DEFAULT 0 CHECK (termination_proven IN (0, 1)),
  error_code TEXT,
  error_message TEXT CHECK (length(error_message) <= 1024),
  committed_version BIGINT,
  last_observed_version BIGINT,
  last_observed_fingerprint TEXT,
  refresh_generation BIGINT NOT NULL DEFAULT 0,
  refresh_retries BIGINT NOT NULL DEFAULT 0,
  refresh_next_at BIGINT,
  refresh_last_error TEXT,
  reconcile_next_at BIGINT,
  reconcile_last_at BIGINT,
  reconcile_backoff_s BIGINT NOT NULL DEFAULT 0,
  resolution_id TEXT,
  progress_phase TEXT,
  progress_done BIGINT NOT NULL DEFAULT 0,
  progress_total BIGINT NOT NULL DEFAULT 0,
  archived_at BIGINT,
  tombstone INTEGER NOT NULL DEFAULT 0 CHECK (tombstone IN (0, 1))
);
CREATE INDEX idx_index_jobs_target ON index_jobs
  (catalog_name, database_name, table_name, outcome, job_id);
CREATE INDEX idx_index_jobs_unarchived ON index_jobs
  (catalog_name, database_name, table_name, job_id) WHERE archived_at IS NULL;
CREATE INDEX idx_index_jobs_retention ON index_jobs (finished_at)
  WHERE archived_at IS NULL AND execution = 'TERMINAL';
CREATE TABLE index_job_events (
  job_id BIGINT NOT NULL REFERENCES index_jobs (job_id),
  seq BIGINT NOT NULL,
  part INTEGER NOT NULL,
  at BIGINT NOT NULL,
  kind TEXT NOT NULL,
  actor TEXT NOT NULL,
  resolution_id TEXT,
  note TEXT CHECK (length(note) <= 1024),
  detail TEXT NOT NULL,
  PRIMARY KEY (job_id, seq, part)
);
CREATE INDEX idx_index_job_events_resolution ON index_job_events (resolution_id)
  WHERE resolution_id IS NOT NULL;
CREATE FUNCTION index_job_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN RAISE EXCEPTION 'index_job_events is append-only'; END $fn$;
CREATE TRIGGER index_job_events_append_only BEFORE UPDATE OR DELETE ON index_job_events
  FOR EACH ROW EXECUTE FUNCTION index_job_events_append_only();
CREATE TABLE index_fences (
  catalog_incarnation TEXT NOT NULL,
  table_incarnation TEXT NOT NULL,
  normalization_version INTEGER NOT NULL,
  normalized_name TEXT NOT NULL,
  job_id BIGINT NOT NULL UNIQUE REFERENCES index_jobs (job_id),
  PRIMARY KEY (catalog_incarnation, table_incarnation, normalization_version, normalized_name)
);
CREATE TABLE index_target_guards (
  table_incarnation TEXT NOT NULL,
  job_id BIGINT NOT NULL UNIQUE REFERENCES index_jobs (job_id),
  PRIMARY KEY (table_incarnation, job_id)
);
CREATE TABLE leader_lease (
  lease_id INTEGER PRIMARY KEY CHECK (lease_id = 1),
  holder TEXT NOT NULL,
  epoch BIGINT NOT NULL,
  acquired_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
INSERT INTO leader_lease (lease_id, holder, epoch, acquired_at, expires_at) VALUES (1, '', 0, 0, 0);
CREATE TABLE cluster_nodes (
  node_id TEXT PRIMARY KEY,
  epoch BIGINT NOT NULL,
  started_at BIGINT NOT NULL,
  heartbeat_at BIGINT NOT NULL,
  pid BIGINT NOT NULL,
  host TEXT NOT NULL
);
CREATE TABLE table_refresh_generations (
  table_incarnation TEXT PRIMARY KEY,
  generation BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
)sql";

// The leader looks for due UNKNOWN jobs and pending refreshes on every pass.
constexpr char kV2ReconcileDue[] = R"sql(
CREATE INDEX idx_index_jobs_reconcile_due ON index_jobs (reconcile_next_at, job_id)
  WHERE outcome = 'UNKNOWN';
CREATE INDEX idx_index_jobs_refresh_pending ON index_jobs (job_id)
  WHERE refresh IN ('REQUIRED', 'RUNNING', 'RETRY_PENDING');
)sql";

// Listings page in job-id order by the unarchived jobs, the jobs a leader must act on,
// an index name or a creation time; FORCE_RELEASE audit records outlive their jobs (no
// reference to index_jobs) and are append-only.
#define VIGIL_V3_LISTING_INDEXES                                                               \
  "CREATE INDEX idx_index_jobs_listed ON index_jobs (job_id) WHERE archived_at IS NULL;\n"     \
  "CREATE INDEX idx_index_jobs_active ON index_jobs (job_id) WHERE execution <> 'TERMINAL';\n" \
  "CREATE INDEX idx_index_jobs_name ON index_jobs (normalized_name, job_id);\n"                \
  "CREATE INDEX idx_index_jobs_created ON index_jobs (created_at, job_id);\n"

constexpr char kSqliteV3[] = VIGIL_V3_LISTING_INDEXES R"sql(
CREATE TABLE index_job_audit (
  audit_id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  actor TEXT NOT NULL,
  action TEXT NOT NULL CHECK (action IN ('FORCE_RELEASE', 'FORCE_RELEASE WITHOUT REFRESH')),
  job_id INTEGER NOT NULL,
  resolution_id TEXT NOT NULL,
  catalog_name TEXT NOT NULL,
  database_name TEXT NOT NULL,
  table_name TEXT NOT NULL,
  table_incarnation TEXT NOT NULL,
  index_name TEXT NOT NULL,
  note TEXT NOT NULL CHECK (length(note) <= 1024),
  warnings_json TEXT NOT NULL
);
CREATE INDEX idx_index_job_audit_job ON index_job_audit (job_id);
CREATE TRIGGER index_job_audit_no_update BEFORE UPDATE ON index_job_audit
BEGIN SELECT RAISE(ABORT, 'index_job_audit is append-only'); END;
CREATE TRIGGER index_job_audit_no_delete BEFORE DELETE ON index_job_audit
BEGIN SELECT RAISE(ABORT, 'index_job_audit is append-only'); END;
)sql";

constexpr char kPostgresV3[] = VIGIL_V3_LISTING_INDEXES R"sql(
CREATE TABLE index_job_audit (
  audit_id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  at BIGINT NOT NULL,
  actor TEXT NOT NULL,
  action TEXT NOT NULL CHECK (action IN ('FORCE_RELEASE', 'FORCE_RELEASE WITHOUT REFRESH')),
  job_id BIGINT NOT NULL,
  resolution_id TEXT NOT NULL,
  catalog_name TEXT NOT NULL,
  database_name TEXT NOT NULL,
  table_name TEXT NOT NULL,
  table_incarnation TEXT NOT NULL,
  index_name TEXT NOT NULL,
  note TEXT NOT NULL CHECK (length(note) <= 1024),
  warnings_json TEXT NOT NULL
);
CREATE INDEX idx_index_job_audit_job ON index_job_audit (job_id);
CREATE FUNCTION index_job_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN RAISE EXCEPTION 'index_job_audit is append-only'; END $fn$;
CREATE TRIGGER index_job_audit_append_only BEFORE UPDATE OR DELETE ON index_job_audit
  FOR EACH ROW EXECUTE FUNCTION index_job_audit_append_only();
)sql";

#undef VIGIL_V3_LISTING_INDEXES

// Version 4: the API request (its idempotency token) that admitted a job, written in the
// admission's transaction, so a request whose server died can be settled from it.
constexpr std::string_view kSqliteV4 = R"sql(
CREATE TABLE index_job_requests (
  request_token TEXT PRIMARY KEY CHECK (length(request_token) <= 1024),
  job_id INTEGER NOT NULL UNIQUE REFERENCES index_jobs (job_id)
);
)sql";

constexpr std::string_view kPostgresV4 = R"sql(
CREATE TABLE index_job_requests (
  request_token TEXT PRIMARY KEY CHECK (length(request_token) <= 1024),
  job_id BIGINT NOT NULL UNIQUE REFERENCES index_jobs (job_id)
);
)sql";

// Version 5: a node an operator drains (DRAIN NODE, `vigil serve --drain`) finishes its
// attempts, hands over the leader lease and takes no new work until RESUME NODE.
constexpr std::string_view kV5NodeDrain = "ALTER TABLE cluster_nodes ADD COLUMN draining INTEGER NOT NULL DEFAULT 0;";

// Version 6: table versions committed through the store (catalog/version_store.h), the commit
// point of every dataset whose writers use it.
constexpr std::string_view kSqliteV6 = R"sql(
CREATE TABLE table_versions (
  table_incarnation TEXT NOT NULL,
  version INTEGER NOT NULL CHECK (version > 0),
  manifest TEXT NOT NULL CHECK (length(manifest) <= 1024),
  job_id INTEGER,
  attempt_id TEXT CHECK (length(attempt_id) <= 1024),
  committed_at INTEGER NOT NULL,
  PRIMARY KEY (table_incarnation, version)
);
)sql";

constexpr std::string_view kPostgresV6 = R"sql(
CREATE TABLE table_versions (
  table_incarnation TEXT NOT NULL,
  version BIGINT NOT NULL CHECK (version > 0),
  manifest TEXT NOT NULL CHECK (length(manifest) <= 1024),
  job_id BIGINT,
  attempt_id TEXT CHECK (length(attempt_id) <= 1024),
  committed_at BIGINT NOT NULL,
  PRIMARY KEY (table_incarnation, version)
);
)sql";

// Version 7: how many attempts a node runs for any leader (jobs.concurrency_per_node of a
// `vigil serve` node; 0: it runs only what its own leader dispatches).
constexpr std::string_view kV7NodeCapacity =
    "ALTER TABLE cluster_nodes ADD COLUMN capacity INTEGER NOT NULL DEFAULT 0;";

// Version 8: external Lance tables (DESIGN.md section 13). A table's engine says who owns
// its dataset; a job's engine says which provider runs it (copied from its table at admission).
constexpr std::string_view kV8TableEngine =
    "ALTER TABLE vigil_tables ADD COLUMN engine TEXT NOT NULL DEFAULT 'VIGIL' CHECK (engine IN ('VIGIL', 'LANCE'));\n"
    "ALTER TABLE index_jobs ADD COLUMN engine TEXT NOT NULL DEFAULT 'VIGIL' CHECK (engine IN ('VIGIL', 'LANCE'));\n";

}  // namespace

const std::vector<meta::Migration>& SchemaMigrations(meta::Dialect dialect) {
  static const std::vector<meta::Migration> kSqlite = {
      {1, "create the job store", kSqliteV1},
      {2, "index due reconciliations and pending refreshes", kV2ReconcileDue},
      {3, "index paged job listings; the FORCE_RELEASE audit", kSqliteV3},
      {4, "the API request that admitted a job", kSqliteV4},
      {5, "drain a node", kV5NodeDrain},
      {6, "table versions committed through the store", kSqliteV6},
      {7, "attempts a node runs for any leader", kV7NodeCapacity},
      {8, "external Lance tables", kV8TableEngine},
  };
  static const std::vector<meta::Migration> kPostgres = {
      {1, "create the job store", kPostgresV1},
      {2, "index due reconciliations and pending refreshes", kV2ReconcileDue},
      {3, "index paged job listings; the FORCE_RELEASE audit", kPostgresV3},
      {4, "the API request that admitted a job", kPostgresV4},
      {5, "drain a node", kV5NodeDrain},
      {6, "table versions committed through the store", kPostgresV6},
      {7, "attempts a node runs for any leader", kV7NodeCapacity},
      {8, "external Lance tables", kV8TableEngine},
  };
  return dialect == meta::Dialect::kSqlite ? kSqlite : kPostgres;
}

}  // namespace vigil::jobs
