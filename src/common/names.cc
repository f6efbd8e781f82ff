#include "vigil/common/names.h"

#include <string>

namespace vigil {

namespace {
bool IsStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool IsPart(char c) { return IsStart(c) || (c >= '0' && c <= '9'); }

std::string Printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 80)) {
    unsigned char u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7f) ? c : '?';
  }
  if (s.size() > 80) out += "...";
  return out;
}
}  // namespace

Status ValidateIdentifier(std::string_view name, std::string_view what) {
  if (name.empty()) return Status::InvalidArgument(std::string(what) + " is empty");
  if (name.size() > kMaxIdentifierLength) {
    return Status::InvalidArgument(std::string(what) + " '" + Printable(name) + "' is " + std::to_string(name.size()) +
                                   " characters long; the limit is 64");
  }
  if (!IsStart(name[0])) {
    return Status::InvalidArgument(std::string(what) + " '" + Printable(name) + "' must start with a letter or '_'");
  }
  for (size_t i = 1; i < name.size(); ++i) {
    if (!IsPart(name[i])) {
      return Status::InvalidArgument(std::string(what) + " '" + Printable(name) +
                                     "' has an invalid character at position " + std::to_string(i + 1) +
                                     "; allowed: letters, digits, '_'");
    }
  }
  return Status::OK();
}

Status ValidateDatabaseName(std::string_view name) {
  VIGIL_RETURN_IF_ERROR(ValidateIdentifier(name, "database name"));
  if (name[0] == '_') {
    return Status::InvalidArgument("database name '" + std::string(name) +
                                   "' is reserved: names that start with '_' belong to Vigil");
  }
  return Status::OK();
}

Status ValidateTableName(std::string_view name) { return ValidateIdentifier(name, "table name"); }

}  // namespace vigil
