#include "idempotency/schema.h"

namespace vigil::idempotency {

namespace {

// SQLite, version 1. Released: never edit; add version 2 instead.
constexpr std::string_view kSqliteV1 = R"sql(
CREATE TABLE idempotency_records (
  realm_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  operation_type TEXT NOT NULL,
  resource_id TEXT NOT NULL,
  request_fingerprint TEXT NOT NULL,
  executor_id TEXT NOT NULL,
  http_status INTEGER CHECK (http_status IS NULL OR http_status BETWEEN 100 AND 599),
  error_subtype TEXT,
  response_summary TEXT,
  response_headers TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL,
  finalized_at INTEGER,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (realm_id, idempotency_key)
) WITHOUT ROWID;
CREATE INDEX idx_idempotency_realm_expires ON idempotency_records (realm_id, expires_at);
CREATE INDEX idx_idempotency_stale ON idempotency_records (realm_id, heartbeat_at)
  WHERE http_status IS NULL;
)sql";

// PostgreSQL, version 1. Released: never edit; add version 2 instead.
constexpr std::string_view kPostgresV1 = R"sql(
CREATE TABLE idempotency_records (
  realm_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  operation_type TEXT NOT NULL,
  resource_id TEXT NOT NULL,
  request_fingerprint TEXT NOT NULL,
  executor_id TEXT NOT NULL,
  http_status INTEGER CHECK (http_status IS NULL OR http_status BETWEEN 100 AND 599),
  error_subtype TEXT,
  response_summary TEXT,
  response_headers TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  heartbeat_at BIGINT NOT NULL,
  finalized_at BIGINT,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (realm_id, idempotency_key)
);
CREATE INDEX idx_idempotency_realm_expires ON idempotency_records (realm_id, expires_at);
CREATE INDEX idx_idempotency_stale ON idempotency_records (realm_id, heartbeat_at)
  WHERE http_status IS NULL;
)sql";

}  // namespace

const std::vector<meta::Migration>& SchemaMigrations(meta::Dialect dialect) {
  static const std::vector<meta::Migration> kSqlite = {
      {1, "create idempotency_records", kSqliteV1},
  };
  static const std::vector<meta::Migration> kPostgres = {
      {1, "create idempotency_records", kPostgresV1},
  };
  return dialect == meta::Dialect::kSqlite ? kSqlite : kPostgres;
}

}  // namespace vigil::idempotency
