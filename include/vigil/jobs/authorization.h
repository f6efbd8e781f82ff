// Who may do what with index jobs (seed 000 section 9): table SHOW for job
// listings and details, table ALTER for CREATE / REPLACE / DROP / CANCEL / ACK
// and ordinary FORCE, global ADMIN for FORCE WITHOUT REFRESH and for jobs whose
// target table no longer resolves (orphans). A principal is an administrator
// (global ADMIN) or holds grants on objects: one table, one database, or every
// object ("*"). ADMIN on an object implies ALTER there, ALTER implies SHOW.
// The embedded shell runs as the local administrator.
// Thread safety: plain values; const methods are thread-safe.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace vigil::jobs {

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

}  // namespace vigil::jobs
