#include "server/query_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <vector>

#include "vigil/sql/result_format.h"

namespace vigil::server {

namespace {

// Text needing no escape and no UTF-8 check: printable ASCII other than '"' and '\\'.
bool PlainAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x80 && c != '"' && c != '\\';
  });
}

void AppendString(std::string& out, std::string_view s) {
  if (PlainAscii(s)) {
    out += '"';
    out += s;
    out += '"';
    return;
  }
  out += nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void AppendValue(std::string& out, const sql::Value& v) {
  if (std::holds_alternative<std::monostate>(v)) {
    out += "null";
  } else if (const auto* i = std::get_if<int64_t>(&v)) {
    char buf[24];
    out.append(buf, std::to_chars(buf, buf + sizeof buf, *i).ptr);
  } else if (const auto* d = std::get_if<double>(&v)) {
    // The text nlohmann::json's dump writes (shortest round trip; null when not finite),
    // without building a json value per number.
    if (!std::isfinite(*d)) {
      out += "null";
    } else {
      char buf[64];
      out.append(buf, nlohmann::detail::to_chars(buf, buf + sizeof buf, *d));
    }
  } else if (const auto* s = std::get_if<std::string>(&v)) {
    AppendString(out, *s);
  } else {
    // A BLOB as its table text, as the shell's JSON prints it: plain ASCII, nothing to escape.
    out += '"';
    sql::AppendBlobText(out, std::get<sql::Blob>(v).bytes);
    out += '"';
  }
}

// The columns of each row object in key order; of a repeated name, the last.
std::vector<size_t> KeyOrder(const std::vector<std::string>& columns) {
  std::vector<size_t> order(columns.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return columns[a] < columns[b]; });
  std::vector<size_t> out;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i + 1 < order.size() && columns[order[i]] == columns[order[i + 1]]) continue;
    out.push_back(order[i]);
  }
  return out;
}

}  // namespace

std::string RowsDocument(const sql::ResultSet& r) {
  std::string out = "{\"columns\":[";
  for (size_t i = 0; i < r.columns.size(); ++i) {
    if (i > 0) out += ',';
    AppendString(out, r.columns[i]);
  }
  out += "],\"rows\":[";
  const size_t rows_start = out.size();
  const std::vector<size_t> keys = KeyOrder(r.columns);
  for (size_t row = 0; row < r.rows.size(); ++row) {
    // Room for every row at about the first one's size: the text grows once, not by doublings.
    if (row == 1) out.reserve(out.size() + (out.size() - rows_start + 1) * (r.rows.size() - 1) * 9 / 8 + 2);
    if (row > 0) out += ',';
    out += '{';
    for (size_t k = 0; k < keys.size(); ++k) {
      if (k > 0) out += ',';
      AppendString(out, r.columns[keys[k]]);
      out += ':';
      AppendValue(out, r.rows[row][keys[k]]);
    }
    out += '}';
  }
  out += "]}";
  return out;
}

}  // namespace vigil::server
