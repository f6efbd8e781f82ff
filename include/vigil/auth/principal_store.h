// The durable store of principals (DESIGN.md sections 1, 2, 12; seed 000
// section 9): realms, users, their bearer tokens and their grants, on
// meta::Database (SQLite or PostgreSQL; one conformance suite runs on both).
// Nothing is cached: every node of a shared deployment sees every change at
// once.
//
// Tokens are "vgl_<token id>_<secret>": a 16-hex-digit id and 64 hex digits of
// RAND_bytes. A token is returned once, when it is issued; the store keeps only
// HMAC-SHA256 of the secret under the server secret (server_secret.h), compares
// with CRYPTO_memcmp, and fails every unusable token (malformed, unknown id,
// wrong secret, revoked, disabled user, another server secret) with the same
// PermissionDenied text, kAuthenticationFailed, so nothing says whether a user
// or a token id exists; a server answers it with 401.
//
// Names: realm and user names are identifiers (vigil/common/names.h) and are
// case-insensitive: they are stored and returned lower-case. Grant objects are
// "*" (global), "catalog.db.*" (a database) or "catalog.db.table" (a table),
// matched exactly as Principal::Has matches them.
//
// Thread safety: a PrincipalStore is thread-safe; it owns its connection pool.
// Concurrent processes on one database are safe (each change is one
// transaction).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/auth/principal.h"
#include "vigil/auth/server_secret.h"
#include "vigil/common/env.h"
#include "vigil/common/status.h"
#include "vigil/meta/database.h"

namespace vigil::auth {

constexpr std::string_view kDefaultRealm = "default";
// The administrator Bootstrap creates.
constexpr std::string_view kBootstrapUser = "admin";
// The one message of every failed Authenticate.
constexpr std::string_view kAuthenticationFailed = "authentication failed: the bearer token is not valid";
// The longest bearer token Authenticate looks at; longer input fails without any work.
constexpr size_t kMaxTokenLength = 256;
// List calls return at most this many rows per page.
constexpr int kMaxListLimit = 10'000;
constexpr int kDefaultListLimit = 1'000;
// Grants one user may hold; Grant beyond it is ResourceExhausted.
constexpr int kMaxGrantsPerUser = 4'096;
// Revoked tokens kept per user (for ListTokens); older revoked ones are deleted.
constexpr int kMaxRevokedTokensPerUser = 8;

// Checks a grant object: "*", or "catalog.db.*" / "catalog.db.table" whose catalog is an
// identifier, database a database name (ValidateDatabaseName) and table a table name.
// InvalidArgument naming the part that is wrong and the accepted forms.
Status ValidateGrantObject(std::string_view object);

// A freshly issued bearer token. `token` is shown to its holder once and is not recoverable.
struct IssuedToken {
  std::string realm;
  std::string user;
  std::string token_id;
  std::string token;
};

struct UserInfo {
  std::string realm;
  std::string name;
  bool admin = false;     // the administrator flag (global ADMIN)
  bool disabled = false;  // a disabled user's tokens do not authenticate
  int64_t created_at_ms = 0;
  int64_t updated_at_ms = 0;
  // Drawn when the user is created (16 hex digits), so a user dropped and created again under
  // its name is another incarnation; '' for users created before schema version 2.
  std::string incarnation;

  bool operator==(const UserInfo&) const = default;
};

struct GrantInfo {
  std::string realm;
  std::string user;
  Privilege privilege = Privilege::kShow;
  std::string object;
  int64_t created_at_ms = 0;

  bool operator==(const GrantInfo&) const = default;
};

// What is stored about a token (never its secret).
struct TokenInfo {
  std::string token_id;
  std::string realm;
  std::string user;
  std::string key_id;  // which server secret it was issued under (PrincipalStore::key_id())
  int64_t created_at_ms = 0;
  std::optional<int64_t> last_used_at_ms;
  std::optional<int64_t> revoked_at_ms;
};

// A successful Authenticate.
struct Authenticated {
  std::string realm;
  std::string token_id;
  std::string incarnation;  // the user's (UserInfo::incarnation)
  // name: the user; admin: the user's flag or an ADMIN grant on "*"; grants: the user's grants,
  // each object's set closed under implication (ADMIN adds ALTER and SHOW, ALTER adds SHOW).
  Principal principal;
};

// One page of a listing: rows after `after` (exclusive; empty: from the start), at most `limit`.
struct UserPage {
  std::string after;  // a user name
  int limit = kDefaultListLimit;
};
struct GrantKey {
  std::string user;
  std::string object;
  Privilege privilege = Privilege::kShow;
};
struct GrantPage {
  std::optional<GrantKey> after;
  int limit = kDefaultListLimit;
};

struct PrincipalStoreOptions {
  std::string uri;  // see meta::Database::Open
  meta::DatabaseOptions database;
  ServerSecret secret;        // required: LoadOrCreateServerSecret(root)
  Env* env = Env::Default();  // the clock of every timestamp
  // A token's last_used_at is written at most once per this interval (0: on every use).
  int64_t last_used_resolution_ms = 60'000;
};

class PrincipalStore {
 public:
  virtual ~PrincipalStore() = default;

  // Opens its own pool on options.uri, applies the migrations and makes sure the realm
  // "default" exists. InvalidArgument when options.secret is unset; Corruption when an applied
  // migration was edited; FailedPrecondition on a newer schema.
  static Result<std::unique_ptr<PrincipalStore>> Open(const PrincipalStoreOptions& options);
  // Applies the store's migrations to `db`. Idempotent.
  static Status MigrateSchema(meta::Database& db, int64_t now_ms);

  // 16 hex digits identifying the server secret (an HMAC of a constant, not the secret).
  virtual const std::string& key_id() const = 0;

  // Creates a realm; AlreadyExists when it exists.
  virtual Status CreateRealm(std::string_view realm) = 0;
  // Every realm, sorted.
  virtual Result<std::vector<std::string>> ListRealms() = 0;

  // Creates user `name` in `realm` (an administrator when `admin`) with one token, returned.
  // NotFound for an unknown realm; AlreadyExists when the user exists.
  virtual Result<IssuedToken> CreateUser(std::string_view realm, std::string_view name, bool admin) = 0;
  // Deletes the user with its tokens and grants. NotFound when there is no such user.
  virtual Status DropUser(std::string_view realm, std::string_view name) = 0;
  // Sets the administrator flag. NotFound when there is no such user.
  virtual Status SetAdmin(std::string_view realm, std::string_view name, bool admin) = 0;
  // Disables (no token authenticates) or enables the user. NotFound when there is no such user.
  virtual Status SetDisabled(std::string_view realm, std::string_view name, bool disabled) = 0;
  // The user, or nullopt.
  virtual Result<std::optional<UserInfo>> GetUser(std::string_view realm, std::string_view name) = 0;
  // Users of `realm` by name. NotFound for an unknown realm.
  virtual Result<std::vector<UserInfo>> ListUsers(std::string_view realm, const UserPage& page = {}) = 0;

  // Issues a new token for the user and revokes every older one, in one transaction.
  // NotFound when there is no such user.
  virtual Result<IssuedToken> RotateToken(std::string_view realm, std::string_view name) = 0;
  // Revokes every live token of the user; returns how many. NotFound when there is no such user.
  virtual Result<int64_t> RevokeTokens(std::string_view realm, std::string_view name) = 0;
  // The user's tokens (live and recently revoked), newest first. NotFound when no such user.
  virtual Result<std::vector<TokenInfo>> ListTokens(std::string_view realm, std::string_view name) = 0;

  // Grants `privilege` on `object` (ValidateGrantObject). True when added, false when already
  // held exactly so. NotFound when there is no such user; ResourceExhausted past kMaxGrantsPerUser.
  virtual Result<bool> Grant(std::string_view realm, std::string_view user, Privilege privilege,
                             std::string_view object) = 0;
  // Removes exactly that grant (a broader privilege held on the object stays). True when removed,
  // false when it was not held. NotFound when there is no such user.
  virtual Result<bool> Revoke(std::string_view realm, std::string_view user, Privilege privilege,
                              std::string_view object) = 0;
  // Grants in `realm` (of `user` only, when given), ordered by user, object, privilege name.
  // NotFound for an unknown realm or user.
  virtual Result<std::vector<GrantInfo>> ListGrants(std::string_view realm,
                                                    const std::optional<std::string>& user = std::nullopt,
                                                    const GrantPage& page = {}) = 0;

  // The principal a bearer token stands for. Every unusable token is PermissionDenied with the
  // message kAuthenticationFailed; other codes are store failures (IOError, Busy...).
  virtual Result<Authenticated> Authenticate(std::string_view token) = 0;

  // When `realm` has no enabled administrator (by flag or ADMIN on "*"), makes user "admin" one
  // (creating it, or enabling and flagging an existing "admin") and returns its new token,
  // revoking older ones. AlreadyExists when the realm has an enabled administrator: rotate that
  // one's token with RotateToken instead. NotFound for an unknown realm.
  virtual Result<IssuedToken> Bootstrap(std::string_view realm) = 0;

  // The database of this store's own pool.
  virtual meta::Database& database() = 0;
};

}  // namespace vigil::auth
