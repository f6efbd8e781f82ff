// The [meta] settings of vigil.toml: where the metadata store is, and the check
// that its URL is one Vigil can use and holds no password.
#include "common/config_settings.h"

#include <algorithm>

#include "vigil/common/ascii.h"

namespace vigil {

namespace config_detail {

std::vector<Setting> MetaSettings() {
  return {
      {"meta", "url", Kind::kDatabaseUrl, 0, 0,
       "The metadata store every process of this root shares: jobs, leases, nodes,\n"
       "users and idempotency records. Empty: `_meta/vigil.db` (SQLite) in the root.\n"
       "\"postgresql://user@host:port/db\" lets several `vigil serve` nodes on one data\n"
       "directory share it; the password comes from ~/.pgpass or PGPASSWORD, never\n"
       "from this file.",
       VIGIL_STR_(meta, url)},
  };
}

}  // namespace config_detail

Status CheckMetaUrl(std::string_view url) {
  if (url.empty()) return Status::OK();
  if (url.size() > 1024) return Status::InvalidArgument("is longer than 1024 bytes");
  const bool postgres = url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0;
  if (!postgres) {
    return Status::InvalidArgument("must be empty or start with postgresql:// (got \"" +
                                   std::string(url.substr(0, std::min<size_t>(url.find(':'), 32))) + ":...\")");
  }
  for (char ch : url) {
    if (static_cast<unsigned char>(ch) <= 0x20 || ch == 0x7f) {
      return Status::InvalidArgument("holds a space or control character");
    }
  }
  const std::string_view rest = url.substr(url.find("//") + 2);
  const std::string_view authority = rest.substr(0, std::min(rest.find('/'), rest.find('?')));
  const size_t at = authority.rfind('@');
  if (at != std::string_view::npos && authority.substr(0, at).find(':') != std::string_view::npos) {
    return Status::InvalidArgument("holds a password; put it in ~/.pgpass or PGPASSWORD instead");
  }
  const std::string lower = AsciiLowered(url);
  if (lower.find("password=") != std::string::npos) {
    return Status::InvalidArgument("holds a password; put it in ~/.pgpass or PGPASSWORD instead");
  }
  return Status::OK();
}

}  // namespace vigil
