#include "vigil/sql/result_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>

#include <nlohmann/json.hpp>

#include "vigil/common/hex.h"

namespace vigil::sql {

namespace {

// How the table shows a value that is not finite.
std::string_view NonFiniteText(double d) { return std::isnan(d) ? "NaN" : d > 0 ? "Inf" : "-Inf"; }

std::string Real(double d) {
  if (!std::isfinite(d)) return std::string(NonFiniteText(d));
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d);
  std::string s(buf, res.ptr);
  // SQLite shows a real with a decimal point even when it is integral.
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// Whether `f`'s shortest digits, read as a double (as JSON readers and Vigil's own vector
// text do) and rounded to FLOAT32, give `f` back. Checked over every FLOAT32: all but
// one magnitude do; 7.038531e-26 reads as the midpoint to its neighbour, which rounds
// to the even one. That one is written with nine digits, which always read back.
bool ShortestDigitsReadBack(float f) {
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  return (bits & 0x7fffffffu) != 0x15ae43fdu;
}

// Room for a written element: the longest is 15 characters ("-1.17549435e-38").
constexpr size_t kMaxFloatText = 23;

// Writes `f` at `out` in its shortest form that reads back exactly, as std::to_chars
// chooses it ("0.5", "3", "1e-07", "1.5e+20"); returns the end. `out` has kMaxFloatText.
char* WriteFloat(char* out, float f) {
  if (ShortestDigitsReadBack(f)) return std::to_chars(out, out + kMaxFloatText, f).ptr;
  return std::to_chars(out, out + kMaxFloatText, f, std::chars_format::general, 9).ptr;
}

// "[1,0.5]"; a non-finite element as `non_finite` names it ("null", "NaN", "-Inf").
// Written in place, in room for the longest text of every element and its comma.
template <typename NonFinite>
void AppendVector(std::string& out, const FloatVector& v, NonFinite non_finite) {
  constexpr size_t kMaxElement = kMaxFloatText + 1;
  const size_t start = out.size();
  out.resize(start + v.values.size() * kMaxElement + 2);
  char* p = out.data() + start;
  *p++ = '[';
  for (size_t i = 0; i < v.values.size(); ++i) {
    if (i > 0) *p++ = ',';
    const float f = v.values[i];
    if (std::isfinite(f)) {
      p = WriteFloat(p, f);
    } else {
      const std::string_view name = non_finite(f);
      p = std::copy(name.begin(), name.end(), p);
    }
  }
  *p++ = ']';
  out.resize(static_cast<size_t>(p - out.data()));
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
  if (const auto* f = std::get_if<FloatVector>(&v)) {
    std::string out;
    AppendVector(out, *f, [](float x) { return NonFiniteText(x); });
    return out;
  }
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

void AppendJsonString(std::string& out, std::string_view s) {
  const bool plain = std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x80 && c != '"' && c != '\\';
  });
  if (plain) {
    out += '"';
    out += s;
    out += '"';
    return;
  }
  out += nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void AppendJsonValue(std::string& out, const Value& v) {
  if (std::holds_alternative<std::monostate>(v)) {
    out += "null";
  } else if (const auto* i = std::get_if<int64_t>(&v)) {
    char buf[24];
    out.append(buf, std::to_chars(buf, buf + sizeof buf, *i).ptr);
  } else if (const auto* d = std::get_if<double>(&v)) {
    if (!std::isfinite(*d)) {
      out += "null";
    } else {
      char buf[64];
      out.append(buf, nlohmann::detail::to_chars(buf, buf + sizeof buf, *d));
    }
  } else if (const auto* s = std::get_if<std::string>(&v)) {
    AppendJsonString(out, *s);
  } else if (const auto* f = std::get_if<FloatVector>(&v)) {
    AppendVectorJson(out, *f);
  } else {
    out += '"';
    AppendBlobText(out, std::get<Blob>(v).bytes);
    out += '"';
  }
}

void AppendVectorJson(std::string& out, const FloatVector& v) {
  AppendVector(out, v, [](float) { return std::string_view("null"); });
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
  // Each row object keeps its columns in order; a repeated name sits where it first
  // appears and holds its last value.
  std::vector<size_t> order;
  std::vector<size_t> source;
  for (size_t i = 0; i < r.columns.size(); ++i) {
    const auto first = std::find(r.columns.begin(), r.columns.begin() + static_cast<ptrdiff_t>(i), r.columns[i]);
    if (first == r.columns.begin() + static_cast<ptrdiff_t>(i)) {
      order.push_back(i);
      source.push_back(i);
    } else {
      source[static_cast<size_t>(std::find(order.begin(), order.end(), first - r.columns.begin()) - order.begin())] = i;
    }
  }
  std::string out = "[";
  for (size_t row = 0; row < r.rows.size(); ++row) {
    out += row > 0 ? ",{" : "{";
    for (size_t k = 0; k < order.size(); ++k) {
      if (k > 0) out += ',';
      AppendJsonString(out, r.columns[order[k]]);
      out += ':';
      const Value& v = r.rows[row][source[k]];
      if (const auto* b = std::get_if<Blob>(&v)) {
        out += '"' + LowerHex(b->bytes) + '"';
      } else {
        AppendJsonValue(out, v);
      }
    }
    out += '}';
  }
  return out + "]\n";
}

}  // namespace vigil::sql
