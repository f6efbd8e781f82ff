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
    sql::AppendJsonString(out, r.columns[i]);
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
      sql::AppendJsonString(out, r.columns[keys[k]]);
      out += ':';
      sql::AppendJsonValue(out, r.rows[row][keys[k]]);
    }
    out += '}';
  }
  out += "]}";
  return out;
}

namespace {

void AppendStrings(std::string& out, const std::vector<std::string>& list) {
  out += '[';
  for (size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out += ',';
    sql::AppendJsonString(out, list[i]);
  }
  out += ']';
}

}  // namespace

std::string ResultDocument(const sql::ResultSet& r) {
  std::string out = "{\"admitted_jobs\":[";
  for (size_t i = 0; i < r.admitted_jobs.size(); ++i) out += (i > 0 ? "," : "") + std::to_string(r.admitted_jobs[i]);
  out += "],\"columns\":";
  AppendStrings(out, r.columns);
  out += ",\"message\":";
  sql::AppendJsonString(out, r.message);
  out += ",\"notices\":";
  AppendStrings(out, r.notices);
  out += ",\"rows\":[";
  for (size_t row = 0; row < r.rows.size(); ++row) {
    out += row > 0 ? ",[" : "[";
    for (size_t i = 0; i < r.rows[row].size(); ++i) {
      if (i > 0) out += ',';
      sql::AppendJsonValue(out, r.rows[row][i]);
    }
    out += ']';
  }
  out += "],\"warnings\":";
  AppendStrings(out, r.warnings);
  if (r.holds_secret) out += ",\"holds_secret\":true";
  return out + "}";
}

}  // namespace vigil::server
