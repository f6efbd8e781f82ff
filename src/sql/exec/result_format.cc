#include "vigil/sql/result_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <nlohmann/json.hpp>

#include "vigil/common/hex.h"

namespace vigil::sql {

namespace {

std::string Real(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Inf" : "-Inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d);
  std::string s(buf, res.ptr);
  // SQLite shows a real with a decimal point even when it is integral.
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// A separator, quote or control character (NUL, tab, line ends, ...) needs quotes;
// the bytes themselves are kept, so a reader gets the value back exactly.
bool NeedsQuotes(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    unsigned char u = static_cast<unsigned char>(c);
    return c == ',' || c == '"' || u < 0x20 || u == 0x7F;
  });
}

std::string CsvField(const Value& v) {
  if (std::holds_alternative<std::monostate>(v)) return "";
  std::string s = std::holds_alternative<Blob>(v) ? LowerHex(std::get<Blob>(v).bytes) : CellText(v);
  if (!NeedsQuotes(s)) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

std::string CsvName(const std::string& name) { return CsvField(Value(name)); }

}  // namespace

std::string CellText(const Value& v) {
  if (std::holds_alternative<std::monostate>(v)) return "NULL";
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return Real(*d);
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  const std::string& bytes = std::get<Blob>(v).bytes;
  std::string out;
  out.reserve(bytes.size() * 2 + 3);
  AppendBlobText(out, bytes);
  return out;
}

void AppendBlobText(std::string& out, const std::string& bytes) {
  out += "x'";
  AppendLowerHex(out, bytes);
  out += '\'';
}

std::string FormatCsv(const ResultSet& r) {
  if (r.columns.empty()) return "";
  std::string out;
  for (size_t i = 0; i < r.columns.size(); ++i) out += (i ? "," : "") + CsvName(r.columns[i]);
  out += '\n';
  for (const auto& row : r.rows) {
    for (size_t i = 0; i < row.size(); ++i) out += (i ? "," : "") + CsvField(row[i]);
    out += '\n';
  }
  return out;
}

std::string FormatJson(const ResultSet& r) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const auto& row : r.rows) {
    nlohmann::ordered_json obj = nlohmann::ordered_json::object();
    for (size_t i = 0; i < row.size() && i < r.columns.size(); ++i) {
      const Value& v = row[i];
      if (std::holds_alternative<std::monostate>(v)) {
        obj[r.columns[i]] = nullptr;
      } else if (const auto* n = std::get_if<int64_t>(&v)) {
        obj[r.columns[i]] = *n;
      } else if (const auto* d = std::get_if<double>(&v)) {
        obj[r.columns[i]] = std::isfinite(*d) ? nlohmann::ordered_json(*d) : nlohmann::ordered_json(nullptr);
      } else if (const auto* s = std::get_if<std::string>(&v)) {
        obj[r.columns[i]] = *s;
      } else {
        obj[r.columns[i]] = LowerHex(std::get<Blob>(v).bytes);
      }
    }
    arr.push_back(std::move(obj));
  }
  // Invalid UTF-8 in text is replaced rather than thrown on.
  return arr.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace vigil::sql
