// The query route's request body (POST .../query), read into a typed request
// and turned into the SELECT the route runs. The body is read with simdjson:
// nlohmann's parser spends about 57 us on a 128-float vector body, simdjson
// about 3 us (`vigil bench server` reports the step). Its own library (no
// server, no session), so that its fuzz target links only the parser below it.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/sql/result.h"
#include "vigil/storage/schema.h"

namespace vigil::server {

// What a query body asks for: a vector search (vector + column), a full-text search (text +
// column) or, with neither, a scan; each with an optional filter and select list.
struct QueryRequest {
  std::optional<std::vector<double>> vector;
  std::optional<std::string> text;
  std::optional<std::string> column;
  int64_t k = 10;
  std::optional<int64_t> nprobes;
  std::optional<int64_t> refine_factor;
  std::optional<bool> use_index;
  std::optional<std::string> filter;  // a SQL expression, never empty
  std::vector<std::string> select;    // column names; empty means every column
  int64_t limit = 100;                // a scan's row limit
};

// Reads a query body (an empty body is the empty object). InvalidArgument names the field
// that is wrong: invalid JSON, not an object, an unknown or repeated field, a wrong type, a
// number out of its range (k 1..10000, nprobes and refine_factor 1..1000000, limit 1..100000).
Result<QueryRequest> ParseQueryRequest(std::string_view body);

// A SELECT and the values bound to its parameters.
struct BoundQuery {
  std::string sql;
  std::vector<sql::Value> params;
};

// The columns a query whose body names none answers (the route's default "select"): every
// column of the table (`schema`) but its vectors, then the search's own column (_distance or
// _score); every column, vectors too, when the table holds nothing but vectors. Each name is
// double-quoted for SQL.
std::vector<std::string> DefaultSelect(const Schema& schema, const QueryRequest& q);

// The SELECT that answers `q` on `table` ("db.table", already checked): vector_search(...) or
// fts_search(...) or the table itself, WHERE (filter), LIMIT for a scan. The query vector is
// bound, never written into the text: as FLOAT32 bytes when every element fits a FLOAT32, else
// as text (VectorText), which the engine refuses with its own message. InvalidArgument for a
// column name outside the identifier allowlist or text SQL cannot carry.
Result<BoundQuery> QueryStatement(const std::string& table, const QueryRequest& q);

// A SQL string literal: 'text' with quotes doubled; NUL and control bytes are refused.
Result<std::string> SqlString(std::string_view text);

// A query vector as text: each element the shortest text that reads back as the same FLOAT32
// when the value is within FLOAT32's range, else the double's own digits.
std::string VectorText(const std::vector<double>& v);

}  // namespace vigil::server
