// Ingest: streaming readers that turn CSV, JSON Lines, .fvecs and .npy files
// into RecordBatches of bounded size, and ImportFile, which appends such a
// file to a table as one commit (nothing is committed when any row is bad).
//
// Readers never load the whole file: they hold one input chunk and one batch.
// Every error about the input is InvalidArgument naming the file and the
// place: "file:line:column: ..." for text formats, "file: record N (byte
// offset B): ..." for vector files. Input bytes appear in a message only as a
// short excerpt ('abc...', at most 32 bytes, other than printable ASCII as \xNN),
// so a file that is not valid input is never echoed.
//
// Thread safety: a reader is used by one thread at a time; the free functions
// are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "vigil/common/file_system.h"
#include "vigil/common/status.h"
#include "vigil/common/uuid.h"
#include "vigil/storage/column.h"
#include "vigil/storage/manifest.h"
#include "vigil/storage/schema.h"

namespace vigil {

class Dataset;

enum class IngestFormat { kCsv, kJsonl, kFvecs, kNpy };

// "csv", "jsonl", "fvecs", "npy".
std::string_view IngestFormatName(IngestFormat format);
// Parses a format name ("json" and "ndjson" mean JSON Lines); InvalidArgument otherwise.
Result<IngestFormat> ParseIngestFormat(std::string_view name);
// The format implied by the file extension (.csv, .jsonl/.ndjson/.json, .fvecs, .npy).
Result<IngestFormat> DetectIngestFormat(std::string_view path);

constexpr size_t kDefaultIngestBatchRows = 16384;

struct IngestOptions {
  std::optional<IngestFormat> format;  // empty: from the extension
  SchemaPtr schema;                    // target schema; null: inferred / default
  size_t batch_rows = kDefaultIngestBatchRows;
  size_t infer_sample_rows = 1000;      // text formats: rows read to infer types
  size_t infer_sample_bytes = 4 << 20;  // ... and at most this many bytes
  std::string id_column = "id";         // vector files: first_id + 0-based record position
  int64_t first_id = 0;
  std::string vector_column = "vector";  // vector files: the vector itself
  FileSystem* fs = nullptr;              // null: DefaultFileSystem()
  // An input already opened (OpenIngestFile): read instead of opening the path, which
  // then only names the input in messages and gives the format by its extension.
  std::shared_ptr<const RandomAccessFile> input;
};

// Opens `path` for reading as ingest input without ever blocking: anything but a
// regular file (FIFO, device, socket, directory) is InvalidArgument "<path> is not a
// regular file (a FIFO)" and nothing is read. With `no_symlinks` the absolute `path`
// is walked component by component without following links (PermissionDenied on one).
Result<std::shared_ptr<const RandomAccessFile>> OpenIngestFile(const std::string& path, bool no_symlinks = false);

// Opens a streaming reader over `path`. Without a schema, CSV and JSON Lines
// infer one from a bounded sample; vector files yield (id BIGINT NOT NULL,
// vector VECTOR(FLOAT32, dim) NOT NULL). With a schema, every value is parsed
// and range-checked against it; unknown columns and missing non-nullable
// columns are errors.
Result<std::unique_ptr<RecordBatchReader>> OpenIngestReader(const std::string& path, const IngestOptions& options);
// Same over an in-memory file (tests, fuzzing); `name` is used in messages.
// `format` must be set in `options`.
Result<std::unique_ptr<RecordBatchReader>> OpenIngestReaderFromBuffer(std::string data, std::string name,
                                                                      const IngestOptions& options);

// The schema OpenIngestReader would use for `path` when none is given.
Result<SchemaPtr> InferIngestSchema(const std::string& path, const IngestOptions& options);

// The default schema of a vector file: id BIGINT NOT NULL, vector VECTOR(FLOAT32, dim) NOT NULL.
Result<SchemaPtr> VectorFileSchema(uint32_t dim, const IngestOptions& options = {});

// Parses one text cell (CSV field, JSON string) as a value of `type`, with
// range checks. DATE and TIMESTAMP are read as storage/temporal.h reads them.
// Vectors are JSON arrays "[0.1, 2, ...]" of exactly dim numbers.
// Errors are InvalidArgument without a location (callers add it).
Result<Value> ParseTextValue(std::string_view text, const DataType& type);
// Parses a vector's text "[a, b, ...]" into exactly `dim` finite FLOAT32 values (dim 0: any
// length from 1 to the dimension bound): each element read as a double, then rounded once.
Status ParseVectorText(std::string_view text, uint32_t dim, std::vector<float>* out);

struct ImportOptions {
  IngestOptions ingest;
  bool create = false;                          // create the table when it does not exist
  TransactionProperties props;                  // operation defaults to "APPEND" / "CREATE_TABLE"
  std::function<void(uint64_t rows)> progress;  // called after each batch with the total so far
  // Runs after the rows are written, just before the commit; its error commits nothing.
  std::function<Status()> before_commit;
};

struct ImportResult {
  uint64_t rows = 0;
  uint64_t version = 0;  // the version the import committed
  bool created = false;
  SchemaPtr schema;
};

// Appends the rows of `file` to `ds` in one commit, with the table's own schema.
// Vector files number their rows after the table's largest id (deleted rows
// included), so a second file never repeats the ids of the first. On any error
// nothing is committed.
Result<ImportResult> ImportInto(const std::shared_ptr<Dataset>& ds, const std::string& file,
                                const ImportOptions& options);
// Creates a dataset with `dataset_id` at `path` (which must not exist) from
// `file`: with `ingest.schema` or the inferred one, built in a hidden sibling
// directory and renamed into place only when every row was accepted.
Result<ImportResult> ImportAsNewDataset(const std::string& path, const Uuid& dataset_id, const std::string& file,
                                        const ImportOptions& options);
// ImportInto the dataset at `table_path`; a missing one is NotFound unless
// `create`, then ImportAsNewDataset with a fresh id.
Result<ImportResult> ImportFile(const std::string& table_path, const std::string& file, const ImportOptions& options);

}  // namespace vigil
