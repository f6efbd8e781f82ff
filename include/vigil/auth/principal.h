// Principals and privileges (seed 000 section 9): who may do what with tables and
// index jobs. Table SHOW covers job listings and details, table ALTER covers
// CREATE / REPLACE / DROP / CANCEL / ACK and ordinary FORCE, global ADMIN covers
// FORCE WITHOUT REFRESH and jobs whose target table no longer resolves (orphans).
// A principal is an administrator (global ADMIN) or holds grants on objects: one
// table, one database, or every object ("*"). ADMIN on an object implies ALTER
// there, ALTER implies SHOW. The embedded shell runs as the local administrator.
//
// Layering: these are plain values with pure matching, in their own library
// (vigil_auth_principal, src/auth/principal/) that links nothing of Vigil. The
// rest of auth/ (the principal store: users, tokens, grants) sits above jobs/,
// while jobs/ (the authorization checks of the job commands), sql/parser
// (GRANT and REVOKE statements), sql/ and server/ all name a principal: they link
// this library alone, so the parser needs no job store to name a privilege.
//
// Thread safety: plain values; const methods are thread-safe.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace vigil::auth {

enum class Privilege { kShow, kAlter, kAdmin };

// The grant object meaning every catalog, database and table.
constexpr std::string_view kGlobalObject = "*";

// "SHOW", "ALTER" or "ADMIN".
std::string_view PrivilegeName(Privilege p);
// The privilege named `name` (upper case, as PrivilegeName writes it); nullopt otherwise.
std::optional<Privilege> ParsePrivilege(std::string_view name);
// Whether holding `held` grants `wanted` on the same object (ADMIN > ALTER > SHOW).
bool Implies(Privilege held, Privilege wanted);

struct Principal {
  std::string name;
  // Global ADMIN: every privilege on every object, orphaned jobs and emergency paths included.
  bool admin = false;
  // Grants by object: "catalog.db.table" for one table, "catalog.db.*" for a database,
  // "*" (kGlobalObject) for every object.
  std::map<std::string, std::set<Privilege>> grants;

  // Whether `p` is held on the table (or, with table "*", on the database as a whole):
  // `admin`, or a grant implying `p` on the table, its database or "*".
  bool Has(Privilege p, const std::string& catalog, const std::string& db, const std::string& table) const;
  // Whether `p` is held on every object: `admin`, or a "*" grant implying `p`.
  bool HasGlobal(Privilege p) const;
  // Global ADMIN, by the flag or by an ADMIN grant on "*".
  bool IsAdmin() const { return HasGlobal(Privilege::kAdmin); }

  static Principal LocalAdmin() { return Principal{"local_admin", true, {}}; }
};

}  // namespace vigil::auth
