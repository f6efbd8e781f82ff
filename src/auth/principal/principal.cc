#include "vigil/auth/principal.h"

namespace vigil::auth {

namespace {

bool Grants(const std::set<Privilege>& held, Privilege wanted) {
  for (Privilege h : held) {
    if (Implies(h, wanted)) return true;
  }
  return false;
}

int Rank(Privilege p) {
  switch (p) {
    case Privilege::kShow:
      return 0;
    case Privilege::kAlter:
      return 1;
    case Privilege::kAdmin:
      return 2;
  }
  return -1;
}

}  // namespace

std::string_view PrivilegeName(Privilege p) {
  switch (p) {
    case Privilege::kShow:
      return "SHOW";
    case Privilege::kAlter:
      return "ALTER";
    case Privilege::kAdmin:
      return "ADMIN";
  }
  return "UNKNOWN";
}

std::optional<Privilege> ParsePrivilege(std::string_view name) {
  for (Privilege p : {Privilege::kShow, Privilege::kAlter, Privilege::kAdmin}) {
    if (name == PrivilegeName(p)) return p;
  }
  return std::nullopt;
}

bool Implies(Privilege held, Privilege wanted) { return Rank(held) >= Rank(wanted) && Rank(wanted) >= 0; }

bool Principal::Has(Privilege p, const std::string& catalog, const std::string& db, const std::string& table) const {
  if (HasGlobal(p)) return true;
  for (const std::string& object : {catalog + "." + db + "." + table, catalog + "." + db + ".*"}) {
    auto it = grants.find(object);
    if (it != grants.end() && Grants(it->second, p)) return true;
  }
  return false;
}

bool Principal::HasGlobal(Privilege p) const {
  if (admin) return true;
  auto it = grants.find(std::string(kGlobalObject));
  return it != grants.end() && Grants(it->second, p);
}

}  // namespace vigil::auth
