#include "vigil/jobs/authorization.h"

namespace vigil::jobs {

namespace {

bool Grants(const std::set<Privilege>& held, Privilege wanted) {
  return held.count(wanted) > 0 || (wanted == Privilege::kShow && held.count(Privilege::kAlter) > 0);
}

}  // namespace

bool Principal::Has(Privilege p, const std::string& catalog, const std::string& db, const std::string& table) const {
  if (admin) return true;
  for (const std::string& object : {catalog + "." + db + "." + table, catalog + "." + db + ".*"}) {
    auto it = grants.find(object);
    if (it != grants.end() && Grants(it->second, p)) return true;
  }
  return false;
}

}  // namespace vigil::jobs
