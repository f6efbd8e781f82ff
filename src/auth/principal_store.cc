// The one PrincipalStore implementation, on meta::Database. Every change is
// one write transaction that first locks the row it depends on (the user, or
// for Bootstrap the realm), so concurrent changes of one user serialize on
// PostgreSQL as they do on SQLite (BEGIN IMMEDIATE).
#include "vigil/auth/principal_store.h"

#include <algorithm>

#include "auth/schema.h"
#include "auth/token.h"
#include "vigil/common/ascii.h"
#include "vigil/common/names.h"

namespace vigil::auth {

namespace {

using meta::Connection;
using meta::Row;

// Token ids drawn before giving up on finding a free one (64 random bits: never needed twice).
constexpr int kTokenIdAttempts = 4;
// A user incarnation: 8 random bytes, 16 hex digits.
constexpr size_t kIncarnationBytes = 8;
// "catalog.db.table" with three identifiers of at most 64 characters.
constexpr size_t kMaxGrantObjectLength = 3 * kMaxIdentifierLength + 2;

Status AuthenticationFailed() { return Status::PermissionDenied(std::string(kAuthenticationFailed)); }

// Validates an identifier and returns it lower-case.
Result<std::string> NormalizeName(std::string_view name, std::string_view what) {
  VIGIL_RETURN_IF_ERROR(ValidateIdentifier(name, what));
  return AsciiLowered(name);
}

Result<std::string> RealmName(std::string_view realm) { return NormalizeName(realm, "realm name"); }
Result<std::string> UserName(std::string_view user) { return NormalizeName(user, "user name"); }

std::string Quoted(std::string_view s) {
  std::string out = "'";
  out.append(s).append("'");
  return out;
}

Status NoSuchRealm(const std::string& realm) { return Status::NotFound("realm " + Quoted(realm) + " does not exist"); }
Status NoSuchUser(const std::string& realm, const std::string& user) {
  return Status::NotFound("user " + Quoted(user) + " does not exist in realm " + Quoted(realm));
}

Status CheckLimit(int limit) {
  if (limit <= 0 || limit > kMaxListLimit) {
    return Status::InvalidArgument("list limit " + std::to_string(limit) + " is out of range; it must be 1.." +
                                   std::to_string(kMaxListLimit));
  }
  return Status::OK();
}

Result<bool> Flag(const Row& row, size_t col) {
  VIGIL_ASSIGN_OR_RETURN(int64_t v, row.Int(col));
  if (v != 0 && v != 1) return Status::Corruption("auth flag column holds " + std::to_string(v));
  return v == 1;
}

Result<UserInfo> ParseUser(const Row& row) {
  UserInfo u;
  VIGIL_ASSIGN_OR_RETURN(u.realm, row.Text(0));
  VIGIL_ASSIGN_OR_RETURN(u.name, row.Text(1));
  VIGIL_ASSIGN_OR_RETURN(u.admin, Flag(row, 2));
  VIGIL_ASSIGN_OR_RETURN(u.disabled, Flag(row, 3));
  VIGIL_ASSIGN_OR_RETURN(u.created_at_ms, row.Int(4));
  VIGIL_ASSIGN_OR_RETURN(u.updated_at_ms, row.Int(5));
  VIGIL_ASSIGN_OR_RETURN(u.incarnation, row.Text(6));
  return u;
}

Result<Privilege> ParseStoredPrivilege(const std::string& text) {
  std::optional<Privilege> p = ParsePrivilege(text);
  if (!p) return Status::Corruption("auth_grants holds an unknown privilege " + Quoted(text));
  return *p;
}

Result<GrantInfo> ParseGrant(const Row& row) {
  GrantInfo g;
  VIGIL_ASSIGN_OR_RETURN(g.realm, row.Text(0));
  VIGIL_ASSIGN_OR_RETURN(g.user, row.Text(1));
  VIGIL_ASSIGN_OR_RETURN(std::string privilege, row.Text(2));
  VIGIL_ASSIGN_OR_RETURN(g.privilege, ParseStoredPrivilege(privilege));
  VIGIL_ASSIGN_OR_RETURN(g.object, row.Text(3));
  VIGIL_ASSIGN_OR_RETURN(g.created_at_ms, row.Int(4));
  return g;
}

Result<TokenInfo> ParseToken(const Row& row) {
  TokenInfo t;
  VIGIL_ASSIGN_OR_RETURN(t.token_id, row.Text(0));
  VIGIL_ASSIGN_OR_RETURN(t.realm, row.Text(1));
  VIGIL_ASSIGN_OR_RETURN(t.user, row.Text(2));
  VIGIL_ASSIGN_OR_RETURN(t.key_id, row.Text(3));
  VIGIL_ASSIGN_OR_RETURN(t.created_at_ms, row.Int(4));
  VIGIL_ASSIGN_OR_RETURN(t.last_used_at_ms, row.OptInt(5));
  VIGIL_ASSIGN_OR_RETURN(t.revoked_at_ms, row.OptInt(6));
  return t;
}

// Each privilege adds the ones it implies.
std::set<Privilege> Closure(const std::set<Privilege>& held) {
  std::set<Privilege> out;
  for (Privilege h : held) {
    for (Privilege p : {Privilege::kShow, Privilege::kAlter, Privilege::kAdmin}) {
      if (Implies(h, p)) out.insert(p);
    }
  }
  return out;
}

class SqlPrincipalStore final : public PrincipalStore {
 public:
  SqlPrincipalStore(std::unique_ptr<meta::Database> db, const PrincipalStoreOptions& options, std::string dummy_hmac)
      : db_(std::move(db)),
        secret_(options.secret),
        key_id_(internal::ServerKeyId(options.secret)),
        env_(options.env),
        last_used_resolution_ms_(std::max<int64_t>(0, options.last_used_resolution_ms)),
        dummy_hmac_(std::move(dummy_hmac)) {}

  const std::string& key_id() const override { return key_id_; }

  Status CreateRealm(std::string_view realm_in) override {
    VIGIL_ASSIGN_OR_RETURN(std::string realm, RealmName(realm_in));
    const int64_t now = env_->NowMs();
    return db_->Write([&](Connection& conn) -> Status {
      VIGIL_ASSIGN_OR_RETURN(auto row, conn.QueryOptional(sql::kInsertRealm, {realm, now}));
      if (!row) return Status::AlreadyExists("realm " + Quoted(realm) + " already exists");
      return Status::OK();
    });
  }

  Result<std::vector<std::string>> ListRealms() override {
    VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, db_->Acquire());
    VIGIL_ASSIGN_OR_RETURN(std::vector<Row> rows, conn->Query(sql::kListRealms));
    std::vector<std::string> out;
    for (const Row& row : rows) {
      VIGIL_ASSIGN_OR_RETURN(std::string realm, row.Text(0));
      out.push_back(std::move(realm));
    }
    return out;
  }

  Result<IssuedToken> CreateUser(std::string_view realm_in, std::string_view name_in, bool admin) override {
    VIGIL_ASSIGN_OR_RETURN(std::string realm, RealmName(realm_in));
    VIGIL_ASSIGN_OR_RETURN(std::string name, UserName(name_in));
    const int64_t now = env_->NowMs();
    std::optional<IssuedToken> issued;
    VIGIL_RETURN_IF_ERROR(WithWrite([&](Connection& conn) -> Status {
      VIGIL_RETURN_IF_ERROR(RequireRealm(conn, realm, false));
      VIGIL_ASSIGN_OR_RETURN(std::string incarnation, internal::RandomHex(kIncarnationBytes));
      VIGIL_ASSIGN_OR_RETURN(auto row,
                             conn.QueryOptional(sql::kInsertUser, {realm, name, admin ? 1 : 0, now, incarnation}));
      if (!row) return Status::AlreadyExists("user " + Quoted(name) + " already exists in realm " + Quoted(realm));
      VIGIL_ASSIGN_OR_RETURN(issued, IssueToken(conn, realm, name, now));
      return Status::OK();
    }));
    return std::move(*issued);
  }

  Status DropUser(std::string_view realm_in, std::string_view name_in) override {
    VIGIL_ASSIGN_OR_RETURN(std::string realm, RealmName(realm_in));
    VIGIL_ASSIGN_OR_RETURN(std::string name, UserName(name_in));
    return WithWrite([&](Connection& conn) -> Status {
      VIGIL_RETURN_IF_ERROR(LockUser(conn, realm, name).status());
      VIGIL_RETURN_IF_ERROR(conn.Execute(sql::kDeleteUserGrants, {realm, name}).status());
      VIGIL_RETURN_IF_ERROR(conn.Execute(sql::kDeleteUserTokens, {realm, name}).status());
      VIGIL_ASSIGN_OR_RETURN(int64_t deleted, conn.Execute(sql::kDeleteUser, {realm, name}));
      if (deleted != 1) return NoSuchUser(realm, name);
      return Status::OK();
    });
  }

  Status SetAdmin(std::string_view realm_in, std::string_view name_in, bool admin) override {
    return UpdateUser(realm_in, name_in, sql::kSetAdmin, admin);
  }

  Status SetDisabled(std::string_view realm_in, std::string_view name_in, bool disabled) override {
    return UpdateUser(realm_in, name_in, sql::kSetDisabled, disabled);
  }

  Result<std::optional<UserInfo>> GetUser(std::string_view realm_in, std::string_view name_in) override {
    VIGIL_ASSIGN_OR_RETURN(std::string realm, RealmName(realm_in));
    VIGIL_ASSIGN_OR_RETURN(std::string name, UserName(name_in));
    VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, db_->Acquire());
    VIGIL_ASSIGN_OR_RETURN(auto row, conn->QueryOptional(sql::kSelectUser, {realm, name}));
    if (!row) return std::optional<UserInfo>();
    VIGIL_ASSIGN_OR_RETURN(UserInfo user, ParseUser(*row));
    return std::optional<UserInfo>(std::move(user));
  }

  Result<std::vector<UserInfo>> ListUsers(std::string_view realm_in, const UserPage& page) override {
    VIGIL_ASSIGN_OR_RETURN(std::string realm, RealmName(realm_in));
    VIGIL_RETURN_IF_ERROR(CheckLimit(page.limit));
    std::string after;
    if (!page.after.empty()) {
      VIGIL_ASSIGN_OR_RETURN(after, NormalizeName(page.after, "user name to list after"));
    }
    VIGIL_ASSIGN_OR_RETURN(meta::Transaction txn, db_->Begin(meta::TxnMode::kRead));
    VIGIL_RETURN_IF_ERROR(RequireRealm(txn.conn(), realm, false));
    VIGIL_ASSIGN_OR_RETURN(std::vector<Row> rows, txn.conn().Query(sql::kListUsers, {realm, after, page.limit}));
    std::vector<UserInfo> out;
    for (const Row& row : rows) {
      VIGIL_ASSIGN_OR_RETURN(UserInfo user, ParseUser(row));
      out.push_back(std::move(user));
    }
    VIGIL_RETURN_IF_ERROR(txn.Commit());
    return out;
  }

  Result<IssuedToken> RotateToken(std::string_view realm_in, std::string_view name_in) override {
    VIGIL_ASSIGN_OR_RETURN(std::string realm, RealmName(realm_in));
    VIGIL_ASSIGN_OR_RETURN(std::string name, UserName(name_in));
    const int64_t now = env_->NowMs();
    std::optional<IssuedToken> issued;
    VIGIL_RETURN_IF_ERROR(WithWrite([&](Connection& conn) -> Status {
      VIGIL_RETURN_IF_ERROR(LockUser(conn, realm, name).status());
      VIGIL_ASSIGN_OR_RETURN(issued, ReplaceTokens(conn, realm, name, now));
      return Status::OK();
    }));
    return std::move(*issued);
  }

  Result<int64_t> RevokeTokens(std::string_view realm_in, std::string_view name_in) override {
    VIGIL_ASSIGN_OR_RETURN(std::string realm, RealmName(realm_in));
    VIGIL_ASSIGN_OR_RETURN(std::string name, UserName(name_in));
    const int64_t now = env_->NowMs();
    int64_t revoked = 0;
    VIGIL_RETURN_IF_ERROR(WithWrite([&](Connection& conn) -> Status {
      VIGIL_RETURN_IF_ERROR(LockUser(conn, realm, name).status());
      VIGIL_ASSIGN_OR_RETURN(revoked, conn.Execute(sql::kRevokeTokens, {realm, name, now}));
      return conn.Execute(sql::kPruneRevokedTokens, {realm, name, kMaxRevokedTokensPerUser}).status();
    }));
    return revoked;
  }

  Result<std::vector<TokenInfo>> ListTokens(std::string_view realm_in, std::string_view name_in) override {
    VIGIL_ASSIGN_OR_RETURN(std::string realm, RealmName(realm_in));
    VIGIL_ASSIGN_OR_RETURN(std::string name, UserName(name_in));
    VIGIL_ASSIGN_OR_RETURN(meta::Transaction txn, db_->Begin(meta::TxnMode::kRead));
    VIGIL_ASSIGN_OR_RETURN(auto user, txn.conn().QueryOptional(sql::kSelectUser, {realm, name}));
    if (!user) return NoSuchUser(realm, name);
    VIGIL_ASSIGN_OR_RETURN(std::vector<Row> rows, txn.conn().Query(sql::kListTokens, {realm, name}));
    std::vector<TokenInfo> out;
    for (const Row& row : rows) {
      VIGIL_ASSIGN_OR_RETURN(TokenInfo token, ParseToken(row));
      out.push_back(std::move(token));
    }
    VIGIL_RETURN_IF_ERROR(txn.Commit());
    return out;
  }

  Result<bool> Grant(std::string_view realm_in, std::string_view user_in, Privilege privilege,
                     std::string_view object) override {
    VIGIL_ASSIGN_OR_RETURN(std::string realm, RealmName(realm_in));
    VIGIL_ASSIGN_OR_RETURN(std::string user, UserName(user_in));
    VIGIL_RETURN_IF_ERROR(ValidateGrantObject(object));
    const int64_t now = env_->NowMs();
    bool added = false;
    VIGIL_RETURN_IF_ERROR(WithWrite([&](Connection& conn) -> Status {
      VIGIL_RETURN_IF_ERROR(LockUser(conn, realm, user).status());
      VIGIL_ASSIGN_OR_RETURN(auto row, conn.QueryOptional(sql::kInsertGrant, {realm, user, PrivilegeName(privilege),
                                                                              std::string(object), now}));
      added = row.has_value();
      if (!added) return Status::OK();
      VIGIL_ASSIGN_OR_RETURN(auto count, conn.QueryOptional(sql::kCountUserGrants, {realm, user}));
      if (!count) return Status::Internal("COUNT(*) of grants returned no row");
      VIGIL_ASSIGN_OR_RETURN(int64_t held, count->Int(0));
      if (held > kMaxGrantsPerUser) {
        return Status::ResourceExhausted("user " + Quoted(user) + " in realm " + Quoted(realm) + " holds " +
                                         std::to_string(kMaxGrantsPerUser) +
                                         " grants, the most one user may hold; grant on a database or "
                                         "globally instead of table by table");
      }
      return Status::OK();
    }));
    return added;
  }

  Result<bool> Revoke(std::string_view realm_in, std::string_view user_in, Privilege privilege,
                      std::string_view object) override {
    VIGIL_ASSIGN_OR_RETURN(std::string realm, RealmName(realm_in));
    VIGIL_ASSIGN_OR_RETURN(std::string user, UserName(user_in));
    VIGIL_RETURN_IF_ERROR(ValidateGrantObject(object));
    int64_t removed = 0;
    VIGIL_RETURN_IF_ERROR(WithWrite([&](Connection& conn) -> Status {
      VIGIL_RETURN_IF_ERROR(LockUser(conn, realm, user).status());
      VIGIL_ASSIGN_OR_RETURN(
          removed, conn.Execute(sql::kDeleteGrant, {realm, user, PrivilegeName(privilege), std::string(object)}));
      return Status::OK();
    }));
    return removed > 0;
  }

  Result<std::vector<GrantInfo>> ListGrants(std::string_view realm_in, const std::optional<std::string>& user_in,
                                            const GrantPage& page) override {
    VIGIL_ASSIGN_OR_RETURN(std::string realm, RealmName(realm_in));
    VIGIL_RETURN_IF_ERROR(CheckLimit(page.limit));
    std::optional<std::string> user;
    if (user_in) {
      VIGIL_ASSIGN_OR_RETURN(user, UserName(*user_in));
    }
    // The cursor: every key sorts after ("", "", ""), so an absent one starts at the beginning.
    std::string after_user, after_object, after_privilege;
    if (page.after) {
      VIGIL_ASSIGN_OR_RETURN(after_user, NormalizeName(page.after->user, "user name to list after"));
      if (page.after->object.size() > kMaxGrantObjectLength) {
        return Status::InvalidArgument("grant object to list after is too long");
      }
      after_object = page.after->object;
      after_privilege = std::string(PrivilegeName(page.after->privilege));
    }
    VIGIL_ASSIGN_OR_RETURN(meta::Transaction txn, db_->Begin(meta::TxnMode::kRead));
    Connection& conn = txn.conn();
    VIGIL_RETURN_IF_ERROR(RequireRealm(conn, realm, false));
    std::vector<Row> rows;
    if (user) {
      VIGIL_ASSIGN_OR_RETURN(auto found, conn.QueryOptional(sql::kSelectUser, {realm, *user}));
      if (!found) return NoSuchUser(realm, *user);
      // A cursor of another user: before this user's grants, start at the beginning; after, none.
      if (page.after && after_user != *user) {
        if (after_user > *user) return std::vector<GrantInfo>{};
        after_object.clear();
        after_privilege.clear();
      }
      VIGIL_ASSIGN_OR_RETURN(
          rows, conn.Query(sql::kListUserGrants, {realm, *user, after_object, after_privilege, page.limit}));
    } else {
      VIGIL_ASSIGN_OR_RETURN(
          rows, conn.Query(sql::kListRealmGrants, {realm, after_user, after_object, after_privilege, page.limit}));
    }
    std::vector<GrantInfo> out;
    for (const Row& row : rows) {
      VIGIL_ASSIGN_OR_RETURN(GrantInfo grant, ParseGrant(row));
      out.push_back(std::move(grant));
    }
    VIGIL_RETURN_IF_ERROR(txn.Commit());
    return out;
  }

  Result<Authenticated> Authenticate(std::string_view token) override {
    if (token.size() > kMaxTokenLength) return AuthenticationFailed();
    std::optional<internal::ParsedToken> parsed = internal::ParseToken(token);
    if (!parsed) return AuthenticationFailed();
    const std::string presented = internal::TokenSecretHmac(secret_, parsed->token_id, parsed->secret_hex);

    VIGIL_ASSIGN_OR_RETURN(meta::Transaction txn, db_->Begin(meta::TxnMode::kRead));
    Connection& conn = txn.conn();
    VIGIL_ASSIGN_OR_RETURN(std::optional<Row> row, conn.QueryOptional(sql::kLookupToken, {parsed->token_id}));
    // An unknown id is compared against a random value, so both failures cost the same.
    std::string stored = dummy_hmac_;
    if (row) {
      VIGIL_ASSIGN_OR_RETURN(stored, row->Text(2));
    }
    const bool secret_matches = internal::ConstantTimeEquals(presented, stored);
    if (!row || !secret_matches) return AuthenticationFailed();

    Authenticated out;
    out.token_id = parsed->token_id;
    VIGIL_ASSIGN_OR_RETURN(out.realm, row->Text(0));
    VIGIL_ASSIGN_OR_RETURN(std::string user, row->Text(1));
    VIGIL_ASSIGN_OR_RETURN(std::optional<int64_t> revoked_at, row->OptInt(4));
    VIGIL_ASSIGN_OR_RETURN(std::optional<int64_t> last_used_at, row->OptInt(5));
    VIGIL_ASSIGN_OR_RETURN(bool is_admin, Flag(*row, 6));
    VIGIL_ASSIGN_OR_RETURN(bool disabled, Flag(*row, 7));
    if (revoked_at || disabled) return AuthenticationFailed();
    VIGIL_ASSIGN_OR_RETURN(out.incarnation, row->Text(8));

    VIGIL_ASSIGN_OR_RETURN(std::vector<Row> grant_rows, conn.Query(sql::kUserGrants, {out.realm, user}));
    VIGIL_RETURN_IF_ERROR(txn.Commit());
    out.principal.name = user;
    for (const Row& g : grant_rows) {
      VIGIL_ASSIGN_OR_RETURN(std::string privilege, g.Text(0));
      VIGIL_ASSIGN_OR_RETURN(Privilege p, ParseStoredPrivilege(privilege));
      VIGIL_ASSIGN_OR_RETURN(std::string object, g.Text(1));
      out.principal.grants[object].insert(p);
    }
    for (auto& [object, held] : out.principal.grants) held = Closure(held);
    out.principal.admin = is_admin || out.principal.HasGlobal(Privilege::kAdmin);

    TouchToken(parsed->token_id, last_used_at);
    return out;
  }

  Result<IssuedToken> Bootstrap(std::string_view realm_in) override {
    VIGIL_ASSIGN_OR_RETURN(std::string realm, RealmName(realm_in));
    const std::string name(kBootstrapUser);
    const int64_t now = env_->NowMs();
    std::optional<IssuedToken> issued;
    VIGIL_RETURN_IF_ERROR(WithWrite([&](Connection& conn) -> Status {
      // Locking the realm row serializes concurrent bootstraps of one realm.
      VIGIL_RETURN_IF_ERROR(RequireRealm(conn, realm, true));
      VIGIL_ASSIGN_OR_RETURN(auto admin, conn.QueryOptional(sql::kFindAdministrator, {realm}));
      if (admin) {
        return Status::AlreadyExists("realm " + Quoted(realm) +
                                     " already has an administrator; rotate an administrator's token instead");
      }
      VIGIL_ASSIGN_OR_RETURN(auto existing, LockUserIfAny(conn, realm, name));
      if (!existing) {
        VIGIL_ASSIGN_OR_RETURN(std::string incarnation, internal::RandomHex(kIncarnationBytes));
        VIGIL_ASSIGN_OR_RETURN(auto row, conn.QueryOptional(sql::kInsertUser, {realm, name, 1, now, incarnation}));
        if (!row) return Status::Internal("user " + Quoted(name) + " appeared under a lock");
        VIGIL_ASSIGN_OR_RETURN(issued, IssueToken(conn, realm, name, now));
        return Status::OK();
      }
      VIGIL_RETURN_IF_ERROR(conn.Execute(sql::kSetAdmin, {realm, name, 1, now}).status());
      VIGIL_RETURN_IF_ERROR(conn.Execute(sql::kSetDisabled, {realm, name, 0, now}).status());
      VIGIL_ASSIGN_OR_RETURN(issued, ReplaceTokens(conn, realm, name, now));
      return Status::OK();
    }));
    return std::move(*issued);
  }

  meta::Database& database() override { return *db_; }

 private:
  Status WithWrite(const std::function<Status(Connection&)>& fn) {
    VIGIL_ASSIGN_OR_RETURN(meta::Transaction txn, db_->Begin(meta::TxnMode::kWrite));
    VIGIL_RETURN_IF_ERROR(fn(txn.conn()));
    return txn.Commit();
  }

  std::string Locked(std::string_view query, bool lock) const {
    std::string out(query);
    if (lock) out += db_->profile().lock_rows;
    return out;
  }

  Status RequireRealm(Connection& conn, const std::string& realm, bool lock) {
    VIGIL_ASSIGN_OR_RETURN(auto row, conn.QueryOptional(Locked(sql::kSelectRealm, lock), {realm}));
    if (!row) return NoSuchRealm(realm);
    return Status::OK();
  }

  Result<std::optional<UserInfo>> LockUserIfAny(Connection& conn, const std::string& realm, const std::string& name) {
    VIGIL_ASSIGN_OR_RETURN(auto row, conn.QueryOptional(Locked(sql::kSelectUser, true), {realm, name}));
    if (!row) return std::optional<UserInfo>();
    VIGIL_ASSIGN_OR_RETURN(UserInfo user, ParseUser(*row));
    return std::optional<UserInfo>(std::move(user));
  }

  // The user's row, locked until the transaction ends; NotFound naming the realm or the user.
  Result<UserInfo> LockUser(Connection& conn, const std::string& realm, const std::string& name) {
    VIGIL_ASSIGN_OR_RETURN(auto user, LockUserIfAny(conn, realm, name));
    if (user) return std::move(*user);
    VIGIL_RETURN_IF_ERROR(RequireRealm(conn, realm, false));
    return NoSuchUser(realm, name);
  }

  Status UpdateUser(std::string_view realm_in, std::string_view name_in, std::string_view statement, bool value) {
    VIGIL_ASSIGN_OR_RETURN(std::string realm, RealmName(realm_in));
    VIGIL_ASSIGN_OR_RETURN(std::string name, UserName(name_in));
    const int64_t now = env_->NowMs();
    return WithWrite([&](Connection& conn) -> Status {
      VIGIL_RETURN_IF_ERROR(LockUser(conn, realm, name).status());
      return conn.Execute(statement, {realm, name, value ? 1 : 0, now}).status();
    });
  }

  // A new token for the user, stored as its HMAC only.
  Result<IssuedToken> IssueToken(Connection& conn, const std::string& realm, const std::string& name, int64_t now) {
    for (int attempt = 0; attempt < kTokenIdAttempts; ++attempt) {
      VIGIL_ASSIGN_OR_RETURN(std::string token_id, internal::RandomHex(internal::kTokenIdBytes));
      VIGIL_ASSIGN_OR_RETURN(std::string secret_hex, internal::RandomHex(internal::kTokenSecretBytes));
      const std::string mac = internal::TokenSecretHmac(secret_, token_id, secret_hex);
      VIGIL_ASSIGN_OR_RETURN(auto row,
                             conn.QueryOptional(sql::kInsertToken, {token_id, realm, name, mac, key_id_, now}));
      if (!row) continue;  // the id is taken: draw another
      return IssuedToken{realm, name, token_id, internal::FormatToken(token_id, secret_hex)};
    }
    return Status::Internal("no free token id after " + std::to_string(kTokenIdAttempts) + " random draws");
  }

  // Revokes the user's live tokens, issues a new one and prunes old revoked ones.
  Result<IssuedToken> ReplaceTokens(Connection& conn, const std::string& realm, const std::string& name, int64_t now) {
    VIGIL_RETURN_IF_ERROR(conn.Execute(sql::kRevokeTokens, {realm, name, now}).status());
    VIGIL_ASSIGN_OR_RETURN(IssuedToken issued, IssueToken(conn, realm, name, now));
    VIGIL_RETURN_IF_ERROR(conn.Execute(sql::kPruneRevokedTokens, {realm, name, kMaxRevokedTokensPerUser}).status());
    return issued;
  }

  // Records the use at most once per last_used_resolution_ms_. Best effort: the token already
  // authenticated, and a busy store must not turn a valid request away.
  void TouchToken(const std::string& token_id, std::optional<int64_t> last_used_at) {
    const int64_t now = env_->NowMs();
    if (last_used_at && last_used_resolution_ms_ > 0 && *last_used_at >= now - last_used_resolution_ms_) return;
    const int64_t before = last_used_resolution_ms_ > 0 ? now - last_used_resolution_ms_ : now + 1;
    (void)db_->Write(
        [&](Connection& conn) -> Status {
          return conn.Execute(sql::kTouchToken, {token_id, now, before}).status();
        },
        meta::WriteScope::kPerStatement);
  }

  const std::unique_ptr<meta::Database> db_;
  const ServerSecret secret_;
  const std::string key_id_;
  Env* const env_;
  const int64_t last_used_resolution_ms_;
  const std::string dummy_hmac_;
};

}  // namespace

Status ValidateGrantObject(std::string_view object) {
  constexpr std::string_view kForms = "; a grant object is '*', 'catalog.db.*' or 'catalog.db.table'";
  if (object == kGlobalObject) return Status::OK();
  if (object.empty()) return Status::InvalidArgument("grant object is empty" + std::string(kForms));
  if (object.size() > kMaxGrantObjectLength) {
    return Status::InvalidArgument("grant object is " + std::to_string(object.size()) +
                                   " characters long; the limit is " + std::to_string(kMaxGrantObjectLength));
  }
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t dot = object.find('.', start);
    parts.push_back(object.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (parts.size() != 3) {
    return Status::InvalidArgument("grant object has " + std::to_string(parts.size()) + " part(s)" +
                                   std::string(kForms));
  }
  auto in_object = [&](const Status& st) {
    return Status::InvalidArgument("grant object: " + st.message() + std::string(kForms));
  };
  if (Status st = ValidateIdentifier(parts[0], "catalog name"); !st.ok()) return in_object(st);
  if (Status st = ValidateDatabaseName(parts[1]); !st.ok()) return in_object(st);
  if (parts[2] == "*") return Status::OK();
  if (Status st = ValidateTableName(parts[2]); !st.ok()) return in_object(st);
  return Status::OK();
}

Status PrincipalStore::MigrateSchema(meta::Database& db, int64_t now_ms) {
  return meta::ApplyMigrations(db, kSchemaComponent, SchemaMigrations(db.profile().dialect), now_ms).status();
}

Result<std::unique_ptr<PrincipalStore>> PrincipalStore::Open(const PrincipalStoreOptions& options) {
  if (!options.secret.is_set()) {
    return Status::InvalidArgument("principal store: the server secret is not set (LoadOrCreateServerSecret)");
  }
  const int64_t now = options.env->NowMs();
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<meta::Database> db, meta::Database::Open(options.uri, options.database));
  VIGIL_RETURN_IF_ERROR(MigrateSchema(*db, now).WithContext("auth schema"));
  VIGIL_RETURN_IF_ERROR(db->Write([&](Connection& conn) {
    return conn.Execute(sql::kEnsureRealm, {std::string(kDefaultRealm), now}).status();
  }));
  VIGIL_ASSIGN_OR_RETURN(std::string dummy, internal::RandomHex(32));
  return std::unique_ptr<PrincipalStore>(new SqlPrincipalStore(std::move(db), options, std::move(dummy)));
}

}  // namespace vigil::auth
