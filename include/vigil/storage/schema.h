// Table schemas: typed fields with stable ids, nullability and a fingerprint.
// A Schema is an immutable value once built; share it as shared_ptr<const Schema>.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "vigil/common/status.h"

namespace vigil {

enum class TypeId : uint8_t {
  kBool = 1,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kFloat32,
  kFloat64,
  kString,
  kDate,       // int32 days since 1970-01-01
  kTimestamp,  // int64 microseconds since 1970-01-01T00:00:00Z
  kDecimal,    // int64 unscaled value; precision 1..18, scale 0..precision
  kVector,     // fixed-size list of FLOAT16 or FLOAT32 elements
};

enum class VectorElement : uint8_t { kFloat16 = 1, kFloat32 = 2 };

struct DataType {
  TypeId id = TypeId::kInt64;
  uint8_t precision = 0;                            // kDecimal
  uint8_t scale = 0;                                // kDecimal
  VectorElement element = VectorElement::kFloat32;  // kVector
  uint32_t dim = 0;                                 // kVector
  uint32_t max_length = 0;                          // kString: VARCHAR(n) in characters (code points); 0 is unbounded

  static DataType Of(TypeId id) { return DataType{id}; }
  static DataType Decimal(uint8_t precision, uint8_t scale);
  static DataType Vector(VectorElement element, uint32_t dim);
  static DataType Varchar(uint32_t max_length);

  // Bytes per value in a column buffer; 0 for STRING (variable width).
  size_t FixedWidth() const;
  bool IsInteger() const;  // INT8..INT64
  bool IsNumeric() const;  // integers, floats, decimal
  // SQL spelling: BOOL, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, STRING,
  // VARCHAR(n), DATE, TIMESTAMP, DECIMAL(p,s), VECTOR(FLOAT32, d).
  std::string ToString() const;
  // Parses ToString() output and common aliases (INT64, BIGINT, INTEGER, VARCHAR,
  // TEXT, BOOLEAN, REAL, FLOAT32, FLOAT64, CHAR(n) and STRING(n) for VARCHAR(n),
  // ...). Validates parameters.
  static Result<DataType> Parse(std::string_view text);

  // InvalidArgument "a value of 7 characters exceeds VARCHAR(5)" when a string
  // is longer than the declared length; OK for every other type.
  Status CheckLength(std::string_view value) const;

  // The same stored type: VARCHAR(n) equals STRING, the length constrains writes only.
  bool operator==(const DataType& o) const;
};

// STRING values are UTF-8. The offset of the first byte of `s` that does not
// belong to a well-formed UTF-8 sequence (no overlong forms, surrogates or code
// points past U+10FFFF); npos when `s` is valid UTF-8.
size_t FindInvalidUtf8(std::string_view s);
// Characters (code points) of UTF-8 text: the bytes that are not continuation bytes.
size_t Utf8Length(std::string_view s);

struct Field {
  int32_t id = -1;  // stable: assigned once, never reused within a table
  std::string name;
  DataType type;
  bool nullable = true;
};

class Schema {
 public:
  Schema() = default;
  // Validates names (identifier rules, unique case-insensitively), ids (unique,
  // non-negative) and types. Field ids of -1 are assigned in order.
  static Result<std::shared_ptr<const Schema>> Make(std::vector<Field> fields);

  const std::vector<Field>& fields() const { return fields_; }
  size_t num_fields() const { return fields_.size(); }
  const Field& field(size_t i) const { return fields_[i]; }
  // Position of a field by exact name, case-insensitive; nullopt if absent.
  std::optional<size_t> IndexOf(std::string_view name) const;
  std::optional<size_t> IndexOfId(int32_t id) const;
  // The largest field id in use (-1 when empty).
  int32_t MaxFieldId() const;

  // 16 hex digits over ids, names, types (ToString) and nullability, in field
  // order; a schema without VARCHAR(n) fields keeps the fingerprint it always had.
  const std::string& fingerprint() const { return fingerprint_; }

  nlohmann::json ToJson() const;
  static Result<std::shared_ptr<const Schema>> FromJson(const nlohmann::json& j);
  // "id BIGINT NOT NULL, emb VECTOR(FLOAT32, 128) NOT NULL"
  std::string ToString() const;

 private:
  std::vector<Field> fields_;
  std::string fingerprint_;
};

using SchemaPtr = std::shared_ptr<const Schema>;

}  // namespace vigil
