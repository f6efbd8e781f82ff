#include "vigil/storage/schema.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "vigil/common/bounds.h"
#include "vigil/common/checksum.h"
#include "vigil/common/names.h"

namespace vigil {

namespace {

std::string Upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

struct SimpleType {
  const char* name;
  TypeId id;
};
constexpr SimpleType kSimpleTypes[] = {
    {"BOOL", TypeId::kBool},       {"BOOLEAN", TypeId::kBool},   {"TINYINT", TypeId::kInt8},
    {"INT8", TypeId::kInt8},       {"SMALLINT", TypeId::kInt16}, {"INT16", TypeId::kInt16},
    {"INT", TypeId::kInt32},       {"INTEGER", TypeId::kInt32},  {"INT32", TypeId::kInt32},
    {"BIGINT", TypeId::kInt64},    {"INT64", TypeId::kInt64},    {"FLOAT", TypeId::kFloat32},
    {"FLOAT32", TypeId::kFloat32}, {"REAL", TypeId::kFloat32},   {"DOUBLE", TypeId::kFloat64},
    {"FLOAT64", TypeId::kFloat64}, {"STRING", TypeId::kString},  {"VARCHAR", TypeId::kString},
    {"TEXT", TypeId::kString},     {"DATE", TypeId::kDate},      {"TIMESTAMP", TypeId::kTimestamp},
};

// Splits "A, B" inside parentheses of "NAME(A, B)"; returns false if not of that shape.
bool SplitParams(const std::string& t, std::string* name, std::vector<std::string>* params) {
  size_t open = t.find('(');
  if (open == std::string::npos || t.back() != ')') return false;
  *name = Trim(t.substr(0, open));
  std::string inner = t.substr(open + 1, t.size() - open - 2);
  params->clear();
  size_t start = 0;
  for (;;) {
    size_t comma = inner.find(',', start);
    params->push_back(Trim(inner.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return true;
}

Result<uint32_t> ParseUint(const std::string& s, const std::string& what, uint64_t max) {
  if (s.empty() || s.size() > 10 || !std::all_of(s.begin(), s.end(), ::isdigit)) {
    return Status::InvalidArgument(what + " must be a positive integer, got '" + s + "'");
  }
  uint64_t v = std::stoull(s);
  if (v > max) return Status::InvalidArgument(what + " " + s + " exceeds the limit " + std::to_string(max));
  return static_cast<uint32_t>(v);
}

}  // namespace

DataType DataType::Decimal(uint8_t precision, uint8_t scale) {
  DataType t{TypeId::kDecimal};
  t.precision = precision;
  t.scale = scale;
  return t;
}

DataType DataType::Vector(VectorElement element, uint32_t dim) {
  DataType t{TypeId::kVector};
  t.element = element;
  t.dim = dim;
  return t;
}

DataType DataType::Varchar(uint32_t max_length) {
  DataType t{TypeId::kString};
  t.max_length = max_length;
  return t;
}

size_t DataType::FixedWidth() const {
  switch (id) {
    case TypeId::kBool:
    case TypeId::kInt8:
      return 1;
    case TypeId::kInt16:
      return 2;
    case TypeId::kInt32:
    case TypeId::kFloat32:
    case TypeId::kDate:
      return 4;
    case TypeId::kInt64:
    case TypeId::kFloat64:
    case TypeId::kTimestamp:
    case TypeId::kDecimal:
      return 8;
    case TypeId::kString:
      return 0;
    case TypeId::kVector:
      return static_cast<size_t>(dim) * (element == VectorElement::kFloat16 ? 2 : 4);
  }
  return 0;
}

bool DataType::IsInteger() const {
  return id == TypeId::kInt8 || id == TypeId::kInt16 || id == TypeId::kInt32 || id == TypeId::kInt64;
}

bool DataType::IsNumeric() const {
  return IsInteger() || id == TypeId::kFloat32 || id == TypeId::kFloat64 || id == TypeId::kDecimal;
}

std::string DataType::ToString() const {
  switch (id) {
    case TypeId::kBool:
      return "BOOL";
    case TypeId::kInt8:
      return "TINYINT";
    case TypeId::kInt16:
      return "SMALLINT";
    case TypeId::kInt32:
      return "INT";
    case TypeId::kInt64:
      return "BIGINT";
    case TypeId::kFloat32:
      return "FLOAT";
    case TypeId::kFloat64:
      return "DOUBLE";
    case TypeId::kString:
      return max_length ? "VARCHAR(" + std::to_string(max_length) + ")" : "STRING";
    case TypeId::kDate:
      return "DATE";
    case TypeId::kTimestamp:
      return "TIMESTAMP";
    case TypeId::kDecimal:
      return "DECIMAL(" + std::to_string(precision) + "," + std::to_string(scale) + ")";
    case TypeId::kVector:
      return std::string("VECTOR(") + (element == VectorElement::kFloat16 ? "FLOAT16" : "FLOAT32") + ", " +
             std::to_string(dim) + ")";
  }
  return "?";
}

Result<DataType> DataType::Parse(std::string_view text) {
  std::string t = Upper(Trim(text));
  for (const auto& st : kSimpleTypes) {
    if (t == st.name) return DataType::Of(st.id);
  }
  std::string name;
  std::vector<std::string> params;
  if (SplitParams(t, &name, &params)) {
    if (name == "VARCHAR" || name == "CHAR" || name == "STRING") {
      if (params.size() != 1) return Status::InvalidArgument(name + " takes one length: '" + t + "'");
      VIGIL_ASSIGN_OR_RETURN(uint32_t n, ParseUint(params[0], name + " length", bounds::kMaxStringValueBytes));
      if (n == 0) return Status::InvalidArgument(name + " length must be at least 1");
      return DataType::Varchar(n);
    }
    if (name == "DECIMAL" || name == "NUMERIC") {
      if (params.size() != 2) return Status::InvalidArgument("DECIMAL takes (precision, scale): '" + t + "'");
      VIGIL_ASSIGN_OR_RETURN(uint32_t p, ParseUint(params[0], "DECIMAL precision", 18));
      VIGIL_ASSIGN_OR_RETURN(uint32_t s, ParseUint(params[1], "DECIMAL scale", 18));
      if (p < 1) return Status::InvalidArgument("DECIMAL precision must be 1..18, got 0");
      if (s > p) {
        return Status::InvalidArgument("DECIMAL scale " + std::to_string(s) + " exceeds precision " +
                                       std::to_string(p));
      }
      return DataType::Decimal(static_cast<uint8_t>(p), static_cast<uint8_t>(s));
    }
    if (name == "VECTOR") {
      if (params.size() != 2) return Status::InvalidArgument("VECTOR takes (FLOAT16|FLOAT32, dim): '" + t + "'");
      VectorElement e;
      if (params[0] == "FLOAT32" || params[0] == "FLOAT") {
        e = VectorElement::kFloat32;
      } else if (params[0] == "FLOAT16" || params[0] == "HALF") {
        e = VectorElement::kFloat16;
      } else {
        return Status::InvalidArgument("VECTOR element type must be FLOAT16 or FLOAT32, got '" + params[0] + "'");
      }
      VIGIL_ASSIGN_OR_RETURN(uint32_t d, ParseUint(params[1], "VECTOR dimension", bounds::kMaxVectorDimension));
      if (d == 0) return Status::InvalidArgument("VECTOR dimension must be positive");
      return DataType::Vector(e, d);
    }
  }
  return Status::InvalidArgument("unknown type '" + std::string(Trim(text)) + "'");
}

Status DataType::CheckLength(std::string_view value) const {
  if (id != TypeId::kString || max_length == 0 || value.size() <= max_length) return Status::OK();
  size_t chars = Utf8Length(value);
  if (chars <= max_length) return Status::OK();
  return Status::InvalidArgument("a value of " + std::to_string(chars) + " characters exceeds " + ToString());
}

bool DataType::operator==(const DataType& o) const {
  if (id != o.id) return false;
  if (id == TypeId::kDecimal) return precision == o.precision && scale == o.scale;
  if (id == TypeId::kVector) return element == o.element && dim == o.dim;
  return true;
}

size_t FindInvalidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    if (p[i] < 0x80) {
      ++i;
      uint64_t word;
      while (i + 8 <= n && (std::memcpy(&word, p + i, 8), (word & 0x8080808080808080ULL) == 0)) i += 8;
      continue;
    }
    auto cont = [&](size_t k) { return k < n && (p[k] & 0xC0) == 0x80; };
    const unsigned c = p[i];
    size_t len = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      len = cont(i + 1) ? 2 : 0;
    } else if (c >= 0xE0 && c <= 0xEF) {
      const unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
      len = i + 1 < n && p[i + 1] >= lo && p[i + 1] <= hi && cont(i + 2) ? 3 : 0;
    } else if (c >= 0xF0 && c <= 0xF4) {
      const unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
      len = i + 1 < n && p[i + 1] >= lo && p[i + 1] <= hi && cont(i + 2) && cont(i + 3) ? 4 : 0;
    }
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

size_t Utf8Length(std::string_view s) {
  return static_cast<size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

Result<std::shared_ptr<const Schema>> Schema::Make(std::vector<Field> fields) {
  if (fields.empty()) return Status::InvalidArgument("a schema needs at least one column");
  if (fields.size() > bounds::kMaxFieldsPerSchema) {
    return Status::InvalidArgument("a schema may have at most " + std::to_string(bounds::kMaxFieldsPerSchema) +
                                   " columns, got " + std::to_string(fields.size()));
  }
  std::set<std::string> names;
  std::set<int32_t> ids;
  int32_t next_id = 0;
  for (const auto& f : fields) next_id = std::max(next_id, f.id + 1);
  for (auto& f : fields) {
    VIGIL_RETURN_IF_ERROR(ValidateIdentifier(f.name, "column name"));
    if (!names.insert(Upper(f.name)).second) {
      return Status::InvalidArgument("duplicate column name '" + f.name + "'");
    }
    if (f.id < -1) return Status::InvalidArgument("column '" + f.name + "' has a negative field id");
    if (f.id == -1) f.id = next_id++;
    if (!ids.insert(f.id).second) {
      return Status::InvalidArgument("duplicate field id " + std::to_string(f.id) + " at column '" + f.name + "'");
    }
    if (f.type.id == TypeId::kVector && (f.type.dim == 0 || f.type.dim > bounds::kMaxVectorDimension)) {
      return Status::InvalidArgument("column '" + f.name + "' has an invalid vector dimension");
    }
    if (f.type.id == TypeId::kString && f.type.max_length > bounds::kMaxStringValueBytes) {
      return Status::InvalidArgument("column '" + f.name + "' has an invalid VARCHAR length");
    }
    if (f.type.id == TypeId::kDecimal &&
        (f.type.precision < 1 || f.type.precision > 18 || f.type.scale > f.type.precision)) {
      return Status::InvalidArgument("column '" + f.name + "' has an invalid DECIMAL precision/scale");
    }
  }
  auto s = std::make_shared<Schema>();
  s->fields_ = std::move(fields);
  std::string canon;
  for (const auto& f : s->fields_) {
    canon += std::to_string(f.id) + ":" + f.name + ":" + f.type.ToString() + (f.nullable ? ":N;" : ":NN;");
  }
  s->fingerprint_ = ChecksumToHex(Checksum64(canon));
  return std::shared_ptr<const Schema>(std::move(s));
}

std::optional<size_t> Schema::IndexOf(std::string_view name) const {
  std::string u = Upper(name);
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (Upper(fields_[i].name) == u) return i;
  }
  return std::nullopt;
}

std::optional<size_t> Schema::IndexOfId(int32_t id) const {
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].id == id) return i;
  }
  return std::nullopt;
}

int32_t Schema::MaxFieldId() const {
  int32_t m = -1;
  for (const auto& f : fields_) m = std::max(m, f.id);
  return m;
}

nlohmann::json Schema::ToJson() const {
  nlohmann::json fields = nlohmann::json::array();
  for (const auto& f : fields_) {
    fields.push_back({{"id", f.id}, {"name", f.name}, {"type", f.type.ToString()}, {"nullable", f.nullable}});
  }
  return {{"fields", fields}, {"fingerprint", fingerprint_}};
}

Result<std::shared_ptr<const Schema>> Schema::FromJson(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("fields") || !j["fields"].is_array()) {
    return Status::Corruption("schema JSON has no 'fields' array");
  }
  std::vector<Field> fields;
  for (const auto& jf : j["fields"]) {
    if (!jf.is_object() || !jf.contains("id") || !jf["id"].is_number_integer() || !jf.contains("name") ||
        !jf["name"].is_string() || !jf.contains("type") || !jf["type"].is_string() || !jf.contains("nullable") ||
        !jf["nullable"].is_boolean()) {
      return Status::Corruption("schema JSON has a malformed field entry");
    }
    int64_t id = jf["id"].get<int64_t>();
    if (id < 0 || id > INT32_MAX) return Status::Corruption("schema JSON has an out-of-range field id");
    auto type = DataType::Parse(jf["type"].get<std::string>());
    if (!type.ok()) return Status::Corruption("schema JSON: " + type.status().message());
    fields.push_back(Field{static_cast<int32_t>(id), jf["name"].get<std::string>(), *type, jf["nullable"].get<bool>()});
  }
  auto schema = Make(std::move(fields));
  if (!schema.ok()) return Status::Corruption("schema JSON: " + schema.status().message());
  if (j.contains("fingerprint") &&
      (!j["fingerprint"].is_string() || j["fingerprint"].get<std::string>() != (*schema)->fingerprint())) {
    return Status::Corruption("schema JSON fingerprint does not match its fields");
  }
  return schema;
}

std::string Schema::ToString() const {
  std::string s;
  for (const auto& f : fields_) {
    if (!s.empty()) s += ", ";
    s += f.name + " " + f.type.ToString() + (f.nullable ? "" : " NOT NULL");
  }
  return s;
}

}  // namespace vigil
