// Users, tokens and grants: CREATE / DROP / ALTER USER, GRANT, REVOKE, SHOW USERS
// and SHOW GRANTS on the realm "default" of the root's principal store
// (auth/root_auth.h), which the session opens on the first such statement.
// Every statement requires global ADMIN, except SHOW GRANTS FOR the caller
// itself; the check comes before the store is touched, so a denial says nothing
// about which users exist. A token's secret appears only in the result of
// CREATE USER and ALTER USER ... ROTATE TOKEN, the one time it is issued.

#include "sql/exec/exec_internal.h"
#include "vigil/auth/root_auth.h"
#include "vigil/common/ascii.h"

namespace vigil::sql {

namespace {

using auth::Privilege;

constexpr std::string_view kRealm = auth::kDefaultRealm;
constexpr std::string_view kShownOnce = "shown only this once: store it now";

ResultSet Message(std::string text) {
  ResultSet r;
  r.message = std::move(text);
  return r;
}

// A user name as the store keeps it (lower case), for messages and comparisons.
std::string StoredName(std::string_view name) { return AsciiLowered(name); }

std::string YesNo(bool b) { return b ? "YES" : "NO"; }

// The root's principal store, opened on first use.
Result<auth::PrincipalStore*> Principals(ExecContext& ctx) {
  if (!ctx.principals) {
    Result<std::unique_ptr<auth::PrincipalStore>> store = auth::OpenRootPrincipalStore(ctx.root);
    if (!store.ok()) return store.status().WithContext("cannot open the principal store of " + ctx.root.path());
    ctx.principals = std::move(*store);
  }
  return ctx.principals.get();
}

// The one row of a freshly issued token. The shell prints it whole: a cut token is lost.
ResultSet TokenResult(const auth::IssuedToken& issued, std::string message) {
  ResultSet r;
  r.columns = {"User", "Token"};
  r.rows.push_back({Value(issued.user), Value(issued.token)});
  r.message = std::move(message);
  r.holds_secret = true;
  return r;
}

// "*", "catalog.db.*" or "catalog.db.table"; an omitted catalog is the session's.
Result<std::string> StoredObject(const ExecContext& ctx, const GrantObject& object) {
  if (object.global) return std::string(auth::kGlobalObject);
  const std::string& own = ctx.root.marker().catalog;
  const std::string catalog = object.catalog.empty() ? own : object.catalog;
  if (catalog != own) {
    return Status::InvalidArgument("catalog '" + catalog + "' is not this root's catalog '" + own + "'");
  }
  return catalog + "." + object.database + "." + (object.table.empty() ? "*" : object.table);
}

Result<ResultSet> RotateToken(auth::PrincipalStore& store, const std::string& name) {
  VIGIL_ASSIGN_OR_RETURN(auth::IssuedToken issued, store.RotateToken(kRealm, name));
  return TokenResult(issued, "new token for user " + issued.user + ", its older tokens revoked; the token is " +
                                 std::string(kShownOnce));
}

Result<ResultSet> UnsetAdmin(auth::PrincipalStore& store, const std::string& name) {
  VIGIL_RETURN_IF_ERROR(store.SetAdmin(kRealm, name, false));
  ResultSet r = Message("user " + name + " is no longer an administrator");
  VIGIL_ASSIGN_OR_RETURN(std::vector<auth::GrantInfo> grants, store.ListGrants(kRealm, name));
  for (const auth::GrantInfo& g : grants) {
    if (g.privilege == Privilege::kAdmin && g.object == auth::kGlobalObject) {
      r.warnings.push_back("user " + name +
                           " still holds ADMIN ON *, which makes it an administrator: REVOKE ADMIN "
                           "ON * FROM " +
                           name);
    }
  }
  return r;
}

// Every grant (of `user` only, when given), page after page.
Result<std::vector<auth::GrantInfo>> AllGrants(auth::PrincipalStore& store, const std::optional<std::string>& user) {
  std::vector<auth::GrantInfo> out;
  auth::GrantPage page;
  page.limit = auth::kMaxListLimit;
  for (;;) {
    VIGIL_ASSIGN_OR_RETURN(std::vector<auth::GrantInfo> rows, store.ListGrants(kRealm, user, page));
    out.insert(out.end(), rows.begin(), rows.end());
    if (rows.size() < static_cast<size_t>(page.limit)) return out;
    page.after = auth::GrantKey{rows.back().user, rows.back().object, rows.back().privilege};
  }
}

}  // namespace

Status RequireGlobalAdmin(const ExecContext& ctx, std::string_view what) {
  if (ctx.options.principal.IsAdmin()) return Status::OK();
  return Status::PermissionDenied(std::string(what) + " requires ADMIN");
}

Result<ResultSet> ExecCreateUser(ExecContext& ctx, const CreateUserStatement& s) {
  VIGIL_RETURN_IF_ERROR(RequireGlobalAdmin(ctx, "CREATE USER"));
  VIGIL_ASSIGN_OR_RETURN(auth::PrincipalStore * store, Principals(ctx));
  VIGIL_ASSIGN_OR_RETURN(auth::IssuedToken issued, store->CreateUser(kRealm, s.name, s.admin));
  return TokenResult(issued, "user " + issued.user + (s.admin ? " (administrator)" : "") + " created; its token is " +
                                 std::string(kShownOnce) + " (ALTER USER " + issued.user +
                                 " ROTATE TOKEN issues a new one)");
}

Result<ResultSet> ExecDropUser(ExecContext& ctx, const DropUserStatement& s) {
  VIGIL_RETURN_IF_ERROR(RequireGlobalAdmin(ctx, "DROP USER"));
  VIGIL_ASSIGN_OR_RETURN(auth::PrincipalStore * store, Principals(ctx));
  const std::string name = StoredName(s.name);
  Status st = store->DropUser(kRealm, s.name);
  if (st.Is(StatusCode::kNotFound) && s.if_exists) return Message("user " + name + " does not exist; nothing changed");
  VIGIL_RETURN_IF_ERROR(st);
  return Message("user " + name + " dropped with its tokens and grants");
}

Result<ResultSet> ExecAlterUser(ExecContext& ctx, const AlterUserStatement& s) {
  VIGIL_RETURN_IF_ERROR(RequireGlobalAdmin(ctx, "ALTER USER"));
  VIGIL_ASSIGN_OR_RETURN(auth::PrincipalStore * store, Principals(ctx));
  const std::string name = StoredName(s.name);
  switch (s.action) {
    case AlterUserAction::kRotateToken:
      return RotateToken(*store, s.name);
    case AlterUserAction::kDisable:
      VIGIL_RETURN_IF_ERROR(store->SetDisabled(kRealm, s.name, true));
      return Message("user " + name + " disabled: none of its tokens authenticates until ALTER USER " + name +
                     " ENABLE");
    case AlterUserAction::kEnable:
      VIGIL_RETURN_IF_ERROR(store->SetDisabled(kRealm, s.name, false));
      return Message("user " + name + " enabled");
    case AlterUserAction::kSetAdmin:
      VIGIL_RETURN_IF_ERROR(store->SetAdmin(kRealm, s.name, true));
      return Message("user " + name + " is an administrator");
    case AlterUserAction::kUnsetAdmin:
      return UnsetAdmin(*store, s.name);
  }
  return Status::Internal("unknown ALTER USER action");
}

Result<ResultSet> ExecGrant(ExecContext& ctx, const GrantStatement& s) {
  VIGIL_RETURN_IF_ERROR(RequireGlobalAdmin(ctx, s.revoke ? "REVOKE" : "GRANT"));
  VIGIL_ASSIGN_OR_RETURN(std::string object, StoredObject(ctx, s.object));
  VIGIL_ASSIGN_OR_RETURN(auth::PrincipalStore * store, Principals(ctx));
  const std::string name = StoredName(s.user);
  const std::string what = std::string(auth::PrivilegeName(s.privilege)) + " ON " + object;
  if (s.revoke) {
    VIGIL_ASSIGN_OR_RETURN(bool removed, store->Revoke(kRealm, s.user, s.privilege, object));
    if (!removed) return Message("user " + name + " does not hold " + what + "; nothing changed");
    return Message("revoked " + what + " FROM " + name);
  }
  VIGIL_ASSIGN_OR_RETURN(bool added, store->Grant(kRealm, s.user, s.privilege, object));
  if (!added) return Message("user " + name + " already holds " + what + "; nothing changed");
  return Message("granted " + what + " TO " + name);
}

Result<ResultSet> ExecShowUsers(ExecContext& ctx, const ShowUsersStatement&) {
  VIGIL_RETURN_IF_ERROR(RequireGlobalAdmin(ctx, "SHOW USERS"));
  VIGIL_ASSIGN_OR_RETURN(auth::PrincipalStore * store, Principals(ctx));
  ResultSet r;
  r.columns = {"User", "Admin", "Disabled", "CreatedAt"};
  auth::UserPage page;
  page.limit = auth::kMaxListLimit;
  for (;;) {
    VIGIL_ASSIGN_OR_RETURN(std::vector<auth::UserInfo> users, store->ListUsers(kRealm, page));
    for (const auth::UserInfo& u : users) {
      r.rows.push_back(
          {Value(u.name), Value(YesNo(u.admin)), Value(YesNo(u.disabled)), Value(FormatTimeMs(u.created_at_ms))});
    }
    if (users.size() < static_cast<size_t>(page.limit)) return r;
    page.after = users.back().name;
  }
}

Result<ResultSet> ExecShowGrants(ExecContext& ctx, const ShowGrantsStatement& s) {
  const auth::Principal& who = ctx.options.principal;
  if (!s.user) {
    if (!who.IsAdmin()) {
      return Status::PermissionDenied("SHOW GRANTS requires ADMIN; SHOW GRANTS FOR " + who.name +
                                      " lists your own grants");
    }
  } else if (StoredName(*s.user) != StoredName(who.name)) {
    VIGIL_RETURN_IF_ERROR(RequireGlobalAdmin(ctx, "SHOW GRANTS FOR another user"));
  }
  VIGIL_ASSIGN_OR_RETURN(auth::PrincipalStore * store, Principals(ctx));
  VIGIL_ASSIGN_OR_RETURN(std::vector<auth::GrantInfo> grants, AllGrants(*store, s.user));
  ResultSet r;
  r.columns = {"User", "Privilege", "Object", "CreatedAt"};
  for (const auth::GrantInfo& g : grants) {
    r.rows.push_back({Value(g.user), Value(std::string(auth::PrivilegeName(g.privilege))), Value(g.object),
                      Value(FormatTimeMs(g.created_at_ms))});
  }
  return r;
}

}  // namespace vigil::sql
