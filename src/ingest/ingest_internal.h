// Internals shared by the ingest readers (ingest_*.cc): a chunked byte source
// over a file or a buffer, error formatting with locations, the text-type
// inference lattice and per-format reader factories. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/excerpt.h"
#include "vigil/common/file_system.h"
#include "vigil/common/status.h"
#include "vigil/ingest/ingest.h"
#include "vigil/storage/column.h"

namespace vigil::ingest {

constexpr size_t kChunkBytes = 1 << 20;

// Sequential bytes from a file (read in chunks through the FileSystem) or a buffer.
class ByteSource {
 public:
  static Result<std::unique_ptr<ByteSource>> OpenFile(FileSystem* fs, const std::string& path);
  static std::unique_ptr<ByteSource> FromBuffer(std::string data, std::string name);
  virtual ~ByteSource() = default;

  const std::string& name() const { return name_; }
  virtual uint64_t size() const = 0;
  // Reads up to `n` bytes at `offset` into `out` (resized; short only at the end).
  virtual Status ReadAt(uint64_t offset, size_t n, std::string* out) = 0;

 protected:
  std::string name_;
};

// Splits a ByteSource into lines ('\n', with a trailing '\r' dropped), tracking
// line numbers. Holds at most one chunk plus the longest line.
class LineReader {
 public:
  explicit LineReader(ByteSource* source, size_t max_line_bytes = 64 << 20)
      : source_(source), max_line_bytes_(max_line_bytes) {}
  // Next line without its terminator; false at the end. The view lives until the next call.
  Result<bool> Next(std::string_view* line);
  // 1-based number of the line last returned.
  uint64_t line_number() const { return line_number_; }
  uint64_t bytes_consumed() const { return pos_; }

 private:
  Status Fill();

  ByteSource* source_;
  size_t max_line_bytes_;
  std::string buf_;
  size_t buf_start_ = 0;   // first unconsumed byte of buf_
  uint64_t pos_ = 0;       // source offset of buf_[buf_start_]
  uint64_t read_pos_ = 0;  // source offset just after buf_
  uint64_t line_number_ = 0;
  std::string line_;
};

// ValidateIdentifier's rule for a column name read from the input; the message
// quotes the name only as an Excerpt up to its first invalid character.
Status CheckColumnName(std::string_view name);

// "name:line:column: message" as InvalidArgument.
Status TextError(std::string_view file, uint64_t line, uint64_t column, std::string_view message);
// "name: record N (byte offset B): message" as InvalidArgument.
Status RecordError(std::string_view file, uint64_t record, uint64_t offset, std::string_view message);
// Text files (CSV, JSON Lines) are UTF-8, like the STRING values they hold:
// "name:line:column: invalid UTF-8 (byte 0xff)" at the first bad byte of a line.
Status CheckUtf8Line(std::string_view file, uint64_t line_no, std::string_view line);

// Appends `text` parsed as `field`'s type to `col` (vectors directly into the buffer).
// An empty optional text means NULL. Errors carry no location.
Status AppendText(Column* col, const Field& field, const std::string_view* text);
// Appends a parsed value (from JSON) of `field`'s type to `col`, with range checks.
Status AppendValue(Column* col, const Field& field, const Value& v);

// Type inference over text samples: the narrowest type that fits every value.
class TypeGuess {
 public:
  void Observe(std::string_view text);            // a text cell (CSV)
  void ObserveJsonString(std::string_view text);  // a JSON string: DATE, TIMESTAMP or STRING
  void ObserveNull() { saw_null_ = true; }
  void ObserveBool() { Merge(kBool); }
  void ObserveInt() { Merge(kInt); }
  void ObserveDouble() { Merge(kDouble); }
  void ObserveVector(uint32_t dim);
  void ObserveString() { Merge(kString); }
  DataType Result() const;
  bool saw_null() const { return saw_null_; }

 private:
  enum Kind { kNone, kBool, kInt, kDouble, kDate, kTimestamp, kVector, kString };
  void Merge(Kind k);
  Kind kind_ = kNone;
  uint32_t dim_ = 0;
  bool saw_null_ = false;
};

Result<std::unique_ptr<RecordBatchReader>> OpenCsv(std::unique_ptr<ByteSource> src, const IngestOptions& options);
Result<std::unique_ptr<RecordBatchReader>> OpenJsonl(std::unique_ptr<ByteSource> src, const IngestOptions& options);
Result<std::unique_ptr<RecordBatchReader>> OpenFvecs(std::unique_ptr<ByteSource> src, const IngestOptions& options);
Result<std::unique_ptr<RecordBatchReader>> OpenNpy(std::unique_ptr<ByteSource> src, const IngestOptions& options);

// Inferred schemas from a bounded sample of the source (fields nullable).
Result<SchemaPtr> InferCsvSchema(ByteSource* src, const IngestOptions& options);
Result<SchemaPtr> InferJsonlSchema(ByteSource* src, const IngestOptions& options);

// For vector files: where the id and vector columns are in `schema`, checking
// that every other field is nullable and the vector dim matches.
struct VectorTarget {
  SchemaPtr schema;
  int id_index = -1;
  size_t vector_index = 0;
  int64_t first_id = 0;  // the id of record 0
};
Result<VectorTarget> ResolveVectorTarget(const std::string& file, uint32_t dim, const IngestOptions& options);

}  // namespace vigil::ingest
