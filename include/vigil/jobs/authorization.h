// Who may do what with index jobs (seed 000 section 9): table SHOW for job
// listings and details, table ALTER for CREATE / REPLACE / DROP / CANCEL / ACK
// and ordinary FORCE, global ADMIN for FORCE WITHOUT REFRESH and for jobs whose
// target table no longer resolves (orphans). Roles are simple: a principal is
// an administrator or holds per-table (or per-database) grants. The embedded
// shell runs as the local administrator.
// Thread safety: plain values; const methods are thread-safe.
#pragma once

#include <map>
#include <set>
#include <string>

namespace vigil::jobs {

enum class Privilege { kShow, kAlter };

struct Principal {
  std::string name;
  bool admin = false;
  // Grants by object: "catalog.db.table" for one table or "catalog.db.*" for a database.
  std::map<std::string, std::set<Privilege>> grants;

  // ADMIN implies every privilege; ALTER implies SHOW.
  bool Has(Privilege p, const std::string& catalog, const std::string& db, const std::string& table) const;

  static Principal LocalAdmin() { return Principal{"local_admin", true, {}}; }
};

}  // namespace vigil::jobs
