#include "server/query/query_request.h"

#include <simdjson.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "vigil/common/names.h"
#include "vigil/sql/parser.h"

namespace vigil::server {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// Bodies up to this size are parsed by the serving thread's kept parser.
constexpr size_t kKeptParserBytes = 64 * 1024;

Status FieldError(std::string_view field, std::string_view must) {
  std::string message = "\"";
  message.append(field).append("\" ").append(must);
  return Status::InvalidArgument(message);
}

Result<int64_t> Integer(std::string_view field, element v, int64_t max) {
  int64_t n = 0;
  if (v.get_int64().get(n) != simdjson::SUCCESS || n < 1 || n > max) {
    return FieldError(field, "must be an integer in 1.." + std::to_string(max));
  }
  return n;
}

Result<std::string> String(std::string_view field, element v) {
  std::string_view s;
  if (v.get_string().get(s) != simdjson::SUCCESS) return FieldError(field, "must be a string");
  return std::string(s);
}

Result<std::vector<double>> Vector(element v) {
  simdjson::dom::array a;
  if (v.get_array().get(a) != simdjson::SUCCESS || a.size() == 0) {
    return FieldError("vector", "must be a non-empty array of numbers");
  }
  std::vector<double> out;
  out.reserve(a.size());
  for (element x : a) {
    double d = 0;
    if (!x.is_number() || x.get_double().get(d) != simdjson::SUCCESS) {
      return FieldError("vector", "must contain only numbers");
    }
    out.push_back(d);
  }
  return out;
}

Result<std::vector<std::string>> SelectList(element v) {
  simdjson::dom::array a;
  if (v.get_array().get(a) != simdjson::SUCCESS || a.size() == 0) {
    return FieldError("select", "must be a non-empty array of column names");
  }
  std::vector<std::string> out;
  for (element c : a) {
    std::string_view name;
    if (c.get_string().get(name) != simdjson::SUCCESS) return FieldError("select", "must list column names");
    if (name != "_distance" && name != "_score" && name != "_rowid") {
      VIGIL_RETURN_IF_ERROR(ValidateIdentifier(name, "column name"));
    }
    out.emplace_back(name);
  }
  return out;
}

// At most the first 64 bytes of a field name the client sent (valid UTF-8, as simdjson checked
// it), cut at a character boundary, "..." when cut.
std::string Excerpt(std::string_view key) {
  constexpr size_t kMaxBytes = 64;
  if (key.size() <= kMaxBytes) return std::string(key);
  size_t end = kMaxBytes;
  while (end > 0 && (static_cast<unsigned char>(key[end]) & 0xC0) == 0x80) --end;
  return std::string(key.substr(0, end)) + "...";
}

// Stores one field of the body into `q`.
Status ReadField(std::string_view key, element v, QueryRequest& q) {
  if (key == "vector") {
    VIGIL_ASSIGN_OR_RETURN(q.vector, Vector(v));
  } else if (key == "text") {
    VIGIL_ASSIGN_OR_RETURN(q.text, String(key, v));
  } else if (key == "column") {
    VIGIL_ASSIGN_OR_RETURN(q.column, String(key, v));
  } else if (key == "k") {
    VIGIL_ASSIGN_OR_RETURN(q.k, Integer(key, v, 10'000));
  } else if (key == "nprobes") {
    VIGIL_ASSIGN_OR_RETURN(q.nprobes, Integer(key, v, 1'000'000));
  } else if (key == "refine_factor") {
    VIGIL_ASSIGN_OR_RETURN(q.refine_factor, Integer(key, v, 1'000'000));
  } else if (key == "use_index") {
    bool b = false;
    if (v.get_bool().get(b) != simdjson::SUCCESS) return FieldError(key, "must be true or false");
    q.use_index = b;
  } else if (key == "filter") {
    VIGIL_ASSIGN_OR_RETURN(q.filter, String(key, v));
    if (q.filter->empty()) return FieldError(key, "must be a SQL expression such as \"price < 10\"");
    // The route binds only the query vector: a parameter here would be left without a value.
    Result<std::vector<sql::Token>> tokens = sql::Tokenize(*q.filter);
    if (tokens.ok() && std::any_of(tokens->begin(), tokens->end(),
                                   [](const sql::Token& t) { return t.kind == sql::TokenKind::kParameter; })) {
      return FieldError(key, "cannot hold parameters (?, $1, :name): write the values into the expression");
    }
  } else if (key == "select") {
    VIGIL_ASSIGN_OR_RETURN(q.select, SelectList(v));
  } else if (key == "limit") {
    VIGIL_ASSIGN_OR_RETURN(q.limit, Integer(key, v, 100'000));
  } else {
    return Status::InvalidArgument("unknown field \"" + Excerpt(key) +
                                   "\" in the query body (fields: vector, text, column, k, nprobes, "
                                   "refine_factor, use_index, filter, select, limit)");
  }
  return Status::OK();
}

}  // namespace

namespace {

bool FitsFloat32(double x) { return std::isfinite(x) && std::fabs(x) <= std::numeric_limits<float>::max(); }

// The value bound for the query vector: FLOAT32 bytes in the engine's order (little-endian)
// when every element fits, else the text the engine parses and refuses.
sql::Value VectorValue(const std::vector<double>& v) {
  static_assert(std::endian::native == std::endian::little, "FLOAT32 blobs are little-endian");
  if (!std::all_of(v.begin(), v.end(), FitsFloat32)) return sql::Value(VectorText(v));
  std::string bytes(v.size() * sizeof(float), '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    const float f = static_cast<float>(v[i]);
    std::memcpy(&bytes[i * sizeof(float)], &f, sizeof(float));
  }
  return sql::Value(sql::Blob{std::move(bytes)});
}

}  // namespace

std::string VectorText(const std::vector<double>& v) {
  std::string out = "[";
  char buf[32];
  for (double x : v) {
    if (out.size() > 1) out += ", ";
    if (FitsFloat32(x)) {
      out.append(buf, std::to_chars(buf, buf + sizeof buf, static_cast<float>(x)).ptr);
    } else {
      std::snprintf(buf, sizeof(buf), "%.9g", x);
      out += buf;
    }
  }
  return out + "]";
}

Result<QueryRequest> ParseQueryRequest(std::string_view body) {
  QueryRequest q;
  if (body.empty()) return q;
  // A thread's parser keeps its buffers for the next request of a usual size; a larger body gets
  // a parser of its own, so that no thread holds its memory afterwards.
  thread_local simdjson::dom::parser kept;
  std::optional<simdjson::dom::parser> own;
  simdjson::dom::parser& parser = body.size() <= kKeptParserBytes ? kept : own.emplace();
  element doc;
  if (auto err = parser.parse(body.data(), body.size()).get(doc); err != simdjson::SUCCESS) {
    return Status::InvalidArgument(std::string("the request body is not valid JSON: ") + simdjson::error_message(err));
  }
  simdjson::dom::object fields;
  if (doc.get_object().get(fields) != simdjson::SUCCESS) {
    return Status::InvalidArgument("the request body must be a JSON object");
  }
  std::vector<std::string_view> seen;
  for (simdjson::dom::key_value_pair field : fields) {
    if (std::find(seen.begin(), seen.end(), field.key) != seen.end()) {
      return FieldError(field.key, "appears twice in the query body");
    }
    seen.push_back(field.key);
    VIGIL_RETURN_IF_ERROR(ReadField(field.key, field.value, q));
  }
  if (q.vector && q.text) return Status::InvalidArgument("a query has \"vector\" or \"text\", not both");
  const auto given = [&](std::string_view f) { return std::find(seen.begin(), seen.end(), f) != seen.end(); };
  for (std::string_view f : {"nprobes", "refine_factor", "use_index"}) {
    if (given(f) && !q.vector) return FieldError(f, "applies to a vector query only");
  }
  const bool search = q.vector || q.text;
  if (given("k") && !search) return FieldError("k", "applies to a vector or text query; a scan takes \"limit\"");
  if (given("limit") && search) return FieldError("limit", "applies to a scan; a vector or text query takes \"k\"");
  if (given("column") && !search) return FieldError("column", "applies to a vector or text query only");
  return q;
}

namespace {

// vector_search('table', 'column', ?1, k, '{options}'): the vector is the first parameter.
Result<std::string> VectorSearch(const std::string& table, const std::string& column, const QueryRequest& q) {
  nlohmann::json options = nlohmann::json::object();
  if (q.nprobes) options["nprobes"] = *q.nprobes;
  if (q.refine_factor) options["refine_factor"] = *q.refine_factor;
  if (q.use_index) options["use_index"] = *q.use_index;
  VIGIL_ASSIGN_OR_RETURN(std::string opts, SqlString(options.dump()));
  return "vector_search('" + table + "', '" + column + "', ?1, " + std::to_string(q.k) + ", " + opts + ")";
}

}  // namespace

std::vector<std::string> DefaultSelect(const Schema& schema, const QueryRequest& q) {
  std::vector<std::string> names;
  for (const Field& f : schema.fields()) {
    // Quoted, since a column may be named like a keyword; identifier rules keep '"' out of names.
    if (f.type.id != TypeId::kVector) names.push_back("\"" + f.name + "\"");
  }
  if (names.empty()) return {"*"};
  if (q.vector) names.push_back("_distance");
  if (q.text) names.push_back("_score");
  return names;
}

Result<BoundQuery> QueryStatement(const std::string& table, const QueryRequest& q) {
  BoundQuery out;
  std::string select;
  for (const std::string& name : q.select) select += (select.empty() ? "" : ", ") + name;
  if (select.empty()) select = "*";
  std::string from = table;
  if (q.vector || q.text) {
    if (!q.column) return Status::InvalidArgument("a vector or text query needs \"column\": the indexed column");
    VIGIL_RETURN_IF_ERROR(ValidateIdentifier(*q.column, "column name"));
    if (q.vector) {
      VIGIL_ASSIGN_OR_RETURN(from, VectorSearch(table, *q.column, q));
      out.params.push_back(VectorValue(*q.vector));
    } else {
      VIGIL_ASSIGN_OR_RETURN(std::string text, SqlString(*q.text));
      from = "fts_search('" + table + "', '" + *q.column + "', " + text + ", " + std::to_string(q.k) + ")";
    }
  }
  std::string statement = "SELECT " + select + " FROM " + from;
  if (q.filter) statement += " WHERE (" + *q.filter + ")";
  if (!q.vector && !q.text) statement += " LIMIT " + std::to_string(q.limit);
  out.sql = std::move(statement);
  return out;
}

Result<std::string> SqlString(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') {
      return Status::InvalidArgument("a text value contains a control character");
    }
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

}  // namespace vigil::server
