#include "vigil/common/excerpt.h"

#include <algorithm>

namespace vigil {

namespace {

void AppendEscaped(std::string* out, std::string_view bytes) {
  static const char kHex[] = "0123456789abcdef";
  for (char c : bytes) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\') {
      out->push_back(c);
    } else {
      out->append("\\x");
      out->push_back(kHex[u >> 4]);
      out->push_back(kHex[u & 15]);
    }
  }
}

}  // namespace

std::string Excerpt(std::string_view bytes, size_t max_bytes) {
  const size_t n = std::min({bytes.size(), max_bytes, kExcerptBytes});
  std::string out = "'";
  AppendEscaped(&out, bytes.substr(0, n));
  if (n < bytes.size()) out += "...";
  return out + "'";
}

std::string ExcerptEnd(std::string_view bytes) {
  std::string out = "'";
  if (bytes.size() > kExcerptBytes) {
    out += "...";
    bytes.remove_prefix(bytes.size() - kExcerptBytes);
  }
  AppendEscaped(&out, bytes);
  return out + "'";
}

}  // namespace vigil
