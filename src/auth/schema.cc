#include "auth/schema.h"

namespace vigil::auth {

namespace {

// SQLite, version 1. Released: never edit; add version 2 instead.
constexpr std::string_view kSqliteV1 = R"sql(
CREATE TABLE auth_realms (
  realm TEXT PRIMARY KEY,
  created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE auth_users (
  realm TEXT NOT NULL REFERENCES auth_realms (realm),
  user_name TEXT NOT NULL,
  is_admin INTEGER NOT NULL CHECK (is_admin IN (0, 1)),
  disabled INTEGER NOT NULL CHECK (disabled IN (0, 1)),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (realm, user_name)
) WITHOUT ROWID;
CREATE TABLE auth_tokens (
  token_id TEXT PRIMARY KEY CHECK (length(token_id) = 16),
  realm TEXT NOT NULL,
  user_name TEXT NOT NULL,
  secret_hmac TEXT NOT NULL CHECK (length(secret_hmac) = 64),
  key_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  last_used_at INTEGER,
  revoked_at INTEGER,
  FOREIGN KEY (realm, user_name) REFERENCES auth_users (realm, user_name)
) WITHOUT ROWID;
CREATE INDEX idx_auth_tokens_user ON auth_tokens (realm, user_name);
CREATE TABLE auth_grants (
  realm TEXT NOT NULL,
  user_name TEXT NOT NULL,
  privilege TEXT NOT NULL CHECK (privilege IN ('SHOW', 'ALTER', 'ADMIN')),
  object TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (realm, user_name, privilege, object),
  FOREIGN KEY (realm, user_name) REFERENCES auth_users (realm, user_name)
) WITHOUT ROWID;
CREATE INDEX idx_auth_grants_object ON auth_grants (realm, user_name, object, privilege);
)sql";

// PostgreSQL, version 1. Released: never edit; add version 2 instead. Text keys use the "C"
// collation, so listings page in byte order as on SQLite.
constexpr std::string_view kPostgresV1 = R"sql(
CREATE TABLE auth_realms (
  realm TEXT COLLATE "C" PRIMARY KEY,
  created_at BIGINT NOT NULL
);
CREATE TABLE auth_users (
  realm TEXT COLLATE "C" NOT NULL REFERENCES auth_realms (realm),
  user_name TEXT COLLATE "C" NOT NULL,
  is_admin INTEGER NOT NULL CHECK (is_admin IN (0, 1)),
  disabled INTEGER NOT NULL CHECK (disabled IN (0, 1)),
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (realm, user_name)
);
CREATE TABLE auth_tokens (
  token_id TEXT COLLATE "C" PRIMARY KEY CHECK (length(token_id) = 16),
  realm TEXT COLLATE "C" NOT NULL,
  user_name TEXT COLLATE "C" NOT NULL,
  secret_hmac TEXT NOT NULL CHECK (length(secret_hmac) = 64),
  key_id TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  last_used_at BIGINT,
  revoked_at BIGINT,
  FOREIGN KEY (realm, user_name) REFERENCES auth_users (realm, user_name)
);
CREATE INDEX idx_auth_tokens_user ON auth_tokens (realm, user_name);
CREATE TABLE auth_grants (
  realm TEXT COLLATE "C" NOT NULL,
  user_name TEXT COLLATE "C" NOT NULL,
  privilege TEXT COLLATE "C" NOT NULL CHECK (privilege IN ('SHOW', 'ALTER', 'ADMIN')),
  object TEXT COLLATE "C" NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (realm, user_name, privilege, object),
  FOREIGN KEY (realm, user_name) REFERENCES auth_users (realm, user_name)
);
CREATE INDEX idx_auth_grants_object ON auth_grants (realm, user_name, object, privilege);
)sql";

// Both backends, version 2: each user gets an incarnation, drawn when it is created, so a user
// dropped and created again under its name is told apart from the old one (the server keeps
// idempotency keys per incarnation). Users of version 1 keep '' as theirs.
constexpr std::string_view kV2 = "ALTER TABLE auth_users ADD COLUMN incarnation TEXT NOT NULL DEFAULT ''";

}  // namespace

const std::vector<meta::Migration>& SchemaMigrations(meta::Dialect dialect) {
  static const std::vector<meta::Migration> kSqlite = {
      {1, "create auth_realms, auth_users, auth_tokens, auth_grants", kSqliteV1},
      {2, "add auth_users.incarnation", kV2},
  };
  static const std::vector<meta::Migration> kPostgres = {
      {1, "create auth_realms, auth_users, auth_tokens, auth_grants", kPostgresV1},
      {2, "add auth_users.incarnation", kV2},
  };
  return dialect == meta::Dialect::kSqlite ? kSqlite : kPostgres;
}

}  // namespace vigil::auth
