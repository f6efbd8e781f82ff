// The principal store's per-database profile: its numbered schema migrations
// for each backend and the SQL statements it runs (the same text on both).
// Migrations are append-only: a released one is never edited (meta::
// ApplyMigrations detects an edit by checksum). Constants only.
#pragma once

#include <string_view>
#include <vector>

#include "vigil/meta/database.h"
#include "vigil/meta/migrations.h"

namespace vigil::auth {

// Component name in vigil_schema_migrations.
constexpr std::string_view kSchemaComponent = "auth";

// The migrations of `dialect`, version 1 first.
const std::vector<meta::Migration>& SchemaMigrations(meta::Dialect dialect);

// Every table the store keeps (tests scan them all for token secrets).
constexpr std::string_view kAuthTables[] = {"auth_realms", "auth_users", "auth_tokens", "auth_grants"};

namespace sql {

#define VIGIL_AUTH_USER_COLUMNS "realm, user_name, is_admin, disabled, created_at, updated_at, incarnation"
#define VIGIL_AUTH_GRANT_COLUMNS "realm, user_name, privilege, object, created_at"
#define VIGIL_AUTH_TOKEN_COLUMNS "token_id, realm, user_name, key_id, created_at, last_used_at, revoked_at"

// $1 realm, $2 now.
constexpr std::string_view kEnsureRealm =
    "INSERT INTO auth_realms (realm, created_at) VALUES ($1, $2) ON CONFLICT (realm) DO NOTHING";
// $1 realm, $2 now. No row when the realm exists.
constexpr std::string_view kInsertRealm =
    "INSERT INTO auth_realms (realm, created_at) VALUES ($1, $2) ON CONFLICT (realm) DO NOTHING"
    " RETURNING realm";
constexpr std::string_view kListRealms = "SELECT realm FROM auth_realms ORDER BY realm";
// $1 realm. Suffixed with the dialect's lock_rows inside write transactions.
constexpr std::string_view kSelectRealm = "SELECT realm FROM auth_realms WHERE realm = $1";

// $1 realm, $2 user, $3 is_admin, $4 now, $5 incarnation. No row when the user exists.
constexpr std::string_view kInsertUser =
    "INSERT INTO auth_users (realm, user_name, is_admin, disabled, created_at, updated_at, incarnation)"
    " VALUES ($1, $2, $3, 0, $4, $4, $5) ON CONFLICT (realm, user_name) DO NOTHING RETURNING user_name";
// $1 realm, $2 user. Suffixed with lock_rows inside write transactions.
constexpr std::string_view kSelectUser =
    "SELECT " VIGIL_AUTH_USER_COLUMNS " FROM auth_users WHERE realm = $1 AND user_name = $2";
// $1 realm, $2 after, $3 limit.
constexpr std::string_view kListUsers = "SELECT " VIGIL_AUTH_USER_COLUMNS
                                        " FROM auth_users WHERE realm = $1 AND user_name > $2"
                                        " ORDER BY user_name LIMIT $3";
// $1 realm, $2 user, $3 is_admin, $4 now.
constexpr std::string_view kSetAdmin =
    "UPDATE auth_users SET is_admin = $3, updated_at = $4 WHERE realm = $1 AND user_name = $2";
// $1 realm, $2 user, $3 disabled, $4 now.
constexpr std::string_view kSetDisabled =
    "UPDATE auth_users SET disabled = $3, updated_at = $4 WHERE realm = $1 AND user_name = $2";
// $1 realm, $2 user, $3 now.
constexpr std::string_view kTouchUser = "UPDATE auth_users SET updated_at = $3 WHERE realm = $1 AND user_name = $2";
// $1 realm, $2 user.
constexpr std::string_view kDeleteUser = "DELETE FROM auth_users WHERE realm = $1 AND user_name = $2";
// $1 realm. One row when the realm has an enabled administrator (flag or ADMIN on '*').
constexpr std::string_view kFindAdministrator =
    "SELECT u.user_name FROM auth_users u WHERE u.realm = $1 AND u.disabled = 0 AND (u.is_admin = 1"
    " OR EXISTS (SELECT 1 FROM auth_grants g WHERE g.realm = u.realm AND g.user_name = u.user_name"
    " AND g.privilege = 'ADMIN' AND g.object = '*'))"
    " ORDER BY u.user_name LIMIT 1";

// $1 token_id, $2 realm, $3 user, $4 secret_hmac, $5 key_id, $6 now. No row when the token id
// is taken (the caller draws another; an error would abort a PostgreSQL transaction).
constexpr std::string_view kInsertToken =
    "INSERT INTO auth_tokens (token_id, realm, user_name, secret_hmac, key_id, created_at)"
    " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (token_id) DO NOTHING RETURNING token_id";
// $1 realm, $2 user, $3 now.
constexpr std::string_view kRevokeTokens =
    "UPDATE auth_tokens SET revoked_at = $3"
    " WHERE realm = $1 AND user_name = $2 AND revoked_at IS NULL";
// $1 realm, $2 user, $3 how many revoked tokens to keep. Deletes the older revoked ones.
constexpr std::string_view kPruneRevokedTokens =
    "DELETE FROM auth_tokens WHERE realm = $1 AND user_name = $2 AND revoked_at IS NOT NULL"
    " AND token_id NOT IN (SELECT token_id FROM auth_tokens WHERE realm = $1 AND user_name = $2"
    " AND revoked_at IS NOT NULL ORDER BY revoked_at DESC, created_at DESC, token_id LIMIT $3)";
// $1 realm, $2 user.
constexpr std::string_view kDeleteUserTokens = "DELETE FROM auth_tokens WHERE realm = $1 AND user_name = $2";
// $1 realm, $2 user.
constexpr std::string_view kListTokens = "SELECT " VIGIL_AUTH_TOKEN_COLUMNS
                                         " FROM auth_tokens WHERE realm = $1 AND user_name = $2"
                                         " ORDER BY created_at DESC, token_id";
// $1 token_id. The token with what authentication needs of its user.
constexpr std::string_view kLookupToken =
    "SELECT t.realm, t.user_name, t.secret_hmac, t.key_id, t.revoked_at, t.last_used_at,"
    " u.is_admin, u.disabled, u.incarnation"
    " FROM auth_tokens t JOIN auth_users u ON u.realm = t.realm AND u.user_name = t.user_name"
    " WHERE t.token_id = $1";
// $1 token_id, $2 now, $3 written only when last_used_at is NULL or before this.
constexpr std::string_view kTouchToken =
    "UPDATE auth_tokens SET last_used_at = $2"
    " WHERE token_id = $1 AND revoked_at IS NULL AND (last_used_at IS NULL OR last_used_at < $3)";

// $1 realm, $2 user, $3 privilege, $4 object, $5 now. No row when the grant was already held.
constexpr std::string_view kInsertGrant =
    "INSERT INTO auth_grants (realm, user_name, privilege, object, created_at)"
    " VALUES ($1, $2, $3, $4, $5) ON CONFLICT (realm, user_name, privilege, object) DO NOTHING"
    " RETURNING object";
// $1 realm, $2 user.
constexpr std::string_view kCountUserGrants = "SELECT COUNT(*) FROM auth_grants WHERE realm = $1 AND user_name = $2";
// $1 realm, $2 user, $3 privilege, $4 object.
constexpr std::string_view kDeleteGrant =
    "DELETE FROM auth_grants WHERE realm = $1 AND user_name = $2 AND privilege = $3 AND object = $4";
// $1 realm, $2 user.
constexpr std::string_view kDeleteUserGrants = "DELETE FROM auth_grants WHERE realm = $1 AND user_name = $2";
// $1 realm, $2 user. Everything Authenticate folds into the principal.
constexpr std::string_view kUserGrants =
    "SELECT privilege, object FROM auth_grants WHERE realm = $1 AND user_name = $2";
// $1 realm, $2 after user, $3 after object, $4 after privilege, $5 limit.
constexpr std::string_view kListRealmGrants =
    "SELECT " VIGIL_AUTH_GRANT_COLUMNS
    " FROM auth_grants WHERE realm = $1"
    " AND (user_name > $2 OR (user_name = $2 AND (object > $3 OR (object = $3 AND privilege > $4))))"
    " ORDER BY user_name, object, privilege LIMIT $5";
// $1 realm, $2 user, $3 after object, $4 after privilege, $5 limit.
constexpr std::string_view kListUserGrants = "SELECT " VIGIL_AUTH_GRANT_COLUMNS
                                             " FROM auth_grants WHERE realm = $1 AND user_name = $2"
                                             " AND (object > $3 OR (object = $3 AND privilege > $4))"
                                             " ORDER BY object, privilege LIMIT $5";

#undef VIGIL_AUTH_USER_COLUMNS
#undef VIGIL_AUTH_GRANT_COLUMNS
#undef VIGIL_AUTH_TOKEN_COLUMNS

}  // namespace sql
}  // namespace vigil::auth
