// In-memory columnar data: Value (one cell), Column (one field's values for a
// run of rows) and RecordBatch (columns of one schema plus row addresses).
// These are plain values; not thread-safe for concurrent mutation.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/storage/schema.h"

namespace vigil {

// One cell. Integers, DATE, TIMESTAMP and DECIMAL (unscaled) are int64_t;
// FLOAT and DOUBLE are double; vectors are FLOAT32 element values.
using Value = std::variant<std::monostate, bool, int64_t, double, std::string, std::vector<float>>;
inline bool IsNull(const Value& v) { return std::holds_alternative<std::monostate>(v); }
// Human-readable rendering (dates as YYYY-MM-DD, timestamps ISO-8601, decimals scaled).
std::string ValueToString(const Value& v, const DataType& type);

// A row address: fragment id in the high 32 bits, row offset in the low 32.
using RowAddress = uint64_t;
inline RowAddress MakeRowAddress(uint32_t fragment_id, uint32_t offset) {
  return (static_cast<uint64_t>(fragment_id) << 32) | offset;
}
inline uint32_t RowFragment(RowAddress a) { return static_cast<uint32_t>(a >> 32); }
inline uint32_t RowOffset(RowAddress a) { return static_cast<uint32_t>(a); }

class Column {
 public:
  Column() = default;
  explicit Column(DataType type) : type_(type) {}

  const DataType& type() const { return type_; }
  size_t size() const { return size_; }
  bool has_nulls() const { return !validity_.empty(); }
  bool IsValid(size_t row) const { return validity_.empty() || validity_[row] != 0; }

  // Fixed-width values, row-major (a vector row is dim elements).
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(data_.data()); }
  template <typename T>
  const T* values() const {
    return reinterpret_cast<const T*>(data_.data());
  }
  // STRING: bytes of row i.
  std::string_view StringAt(size_t row) const {
    return std::string_view(data_).substr(offsets_[row], offsets_[row + 1] - offsets_[row]);
  }
  // Any type as a Value (FLOAT16 vectors widened to FLOAT32).
  Value ValueAt(size_t row) const;

  // Appends with type checking and range checking; InvalidArgument names the problem.
  Status Append(const Value& v);
  void AppendNull();
  // Fast paths; the caller guarantees the type matches.
  void AppendInt64(int64_t v);
  void AppendDouble(double v);
  void AppendBool(bool v);
  void AppendString(std::string_view s);
  void AppendFixed(const void* bytes, size_t n);  // one fixed-width value (n = FixedWidth())
  // Appends rows [begin, end) of `other` (same type).
  void AppendRange(const Column& other, size_t begin, size_t end);
  // Keeps the rows whose selection flag is non-zero.
  Column Filter(const std::vector<uint8_t>& keep) const;
  void Reserve(size_t rows);
  // Bytes held by buffers (for memory accounting).
  size_t MemoryBytes() const;

  // Raw buffer access for encoders/decoders.
  std::string& mutable_data() { return data_; }
  std::vector<uint64_t>& mutable_offsets() { return offsets_; }
  std::vector<uint8_t>& mutable_validity() { return validity_; }
  const std::string& raw_data() const { return data_; }
  const std::vector<uint64_t>& offsets() const { return offsets_; }
  const std::vector<uint8_t>& validity() const { return validity_; }
  // Sets the row count after filling raw buffers; checks the buffers agree.
  Status SetSizeFromBuffers(size_t rows);

 private:
  void MarkValid();

  DataType type_;
  size_t size_ = 0;
  std::string data_;               // fixed-width values, or STRING bytes
  std::vector<uint64_t> offsets_;  // STRING only: size_ + 1 entries, offsets_[0] = 0
  std::vector<uint8_t> validity_;  // empty = all valid; else 1 byte per row (1 = valid)
};

struct RecordBatch {
  SchemaPtr schema;  // the fields of `columns`, in order (may be a projection)
  std::vector<Column> columns;
  std::vector<RowAddress> row_addresses;  // filled by scans; empty for data being written
  size_t num_rows = 0;

  // An empty batch with one column per schema field.
  static RecordBatch Empty(SchemaPtr schema);
  // Checks columns agree with the schema and each other; nullability respected.
  Status Validate() const;
  // Appends one row of values in schema order.
  Status AppendRow(const std::vector<Value>& row);
};

// A stream of batches (ingest readers, scans). Next() returns an empty
// optional at the end.
class RecordBatchReader {
 public:
  virtual ~RecordBatchReader() = default;
  virtual SchemaPtr schema() const = 0;
  virtual Result<std::optional<RecordBatch>> Next() = 0;
};

// A reader over batches already in memory (INSERT VALUES, tests).
std::unique_ptr<RecordBatchReader> MakeBatchReader(SchemaPtr schema, std::vector<RecordBatch> batches);

// IEEE half <-> float conversions for FLOAT16 vectors.
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);

}  // namespace vigil
