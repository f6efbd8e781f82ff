// Imports: one file appended to a dataset in one commit. A new dataset is
// built in a hidden sibling directory and renamed into place only when the
// whole file was accepted, so a failed import never leaves a table behind.
#include <climits>

#include "ingest/ingest_internal.h"
#include "vigil/common/uuid.h"
#include "vigil/storage/dataset.h"

namespace vigil {

namespace {

// Forwards batches and reports the running row count.
class ProgressReader : public RecordBatchReader {
 public:
  ProgressReader(std::unique_ptr<RecordBatchReader> inner, std::function<void(uint64_t)> progress)
      : inner_(std::move(inner)), progress_(std::move(progress)) {}

  SchemaPtr schema() const override { return inner_->schema(); }
  Result<std::optional<RecordBatch>> Next() override {
    VIGIL_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, inner_->Next());
    if (batch) {
      rows_ += batch->num_rows;
      if (progress_) progress_(rows_);
    }
    return batch;
  }
  uint64_t rows() const { return rows_; }

 private:
  std::unique_ptr<RecordBatchReader> inner_;
  std::function<void(uint64_t)> progress_;
  uint64_t rows_ = 0;
};

TransactionProperties PropsFor(const ImportOptions& options, const std::string& operation, const std::string& file) {
  TransactionProperties p = options.props;
  if (p.operation.empty()) p.operation = operation;
  p.extra["source_file"] = file;
  return p;
}

// Removes a directory tree built by this process (symlinks are removed, not followed).
Status RemoveTree(FileSystem* fs, const std::string& path) {
  VIGIL_ASSIGN_OR_RETURN(bool link, fs->IsSymlink(path));
  Result<std::vector<std::string>> entries =
      link ? Result<std::vector<std::string>>(Status::NotFound("")) : fs->ListDir(path);
  if (!entries.ok()) return fs->RemoveFile(path);
  for (const auto& e : *entries) VIGIL_RETURN_IF_ERROR(RemoveTree(fs, JoinPath(path, e)));
  return fs->RemoveDir(path);
}

std::string BaseName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool IsVectorFile(const std::string& file, const IngestOptions& ingest) {
  Result<IngestFormat> format = ingest.format ? Result<IngestFormat>(*ingest.format) : DetectIngestFormat(file);
  return format.ok() && (*format == IngestFormat::kFvecs || *format == IngestFormat::kNpy);
}

// One past the largest value of the integer column `column` over every row of `ds`,
// deleted ones included; 0 for an empty table or no such column.
Result<int64_t> NextId(const Dataset& ds, const std::string& column) {
  std::optional<size_t> index = ds.schema()->IndexOf(column);
  if (!index || !ds.schema()->field(*index).type.IsInteger()) return int64_t{0};
  ScanOptions scan;
  scan.columns = {column};
  scan.include_deleted = true;
  VIGIL_ASSIGN_OR_RETURN(auto reader, ds.Scan(scan));
  std::optional<int64_t> max;
  while (true) {
    VIGIL_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, reader->Next());
    if (!batch) break;
    const Column& col = batch->columns[0];
    for (size_t i = 0; i < batch->num_rows; ++i) {
      Value v = col.ValueAt(i);
      if (!std::holds_alternative<int64_t>(v)) continue;
      if (!max || std::get<int64_t>(v) > *max) max = std::get<int64_t>(v);
    }
  }
  if (!max) return int64_t{0};
  if (*max == INT64_MAX) return Status::InvalidArgument("column '" + column + "' already holds the largest id");
  return *max + 1;
}

Result<ImportResult> AppendTo(const std::shared_ptr<Dataset>& ds, const std::string& file, const ImportOptions& options,
                              const std::string& operation) {
  IngestOptions ingest = options.ingest;
  ingest.schema = ds->schema();
  if (IsVectorFile(file, ingest)) {
    VIGIL_ASSIGN_OR_RETURN(ingest.first_id, NextId(*ds, ingest.id_column));
  }
  VIGIL_ASSIGN_OR_RETURN(auto inner, OpenIngestReader(file, ingest));
  ProgressReader reader(std::move(inner), options.progress);
  VIGIL_ASSIGN_OR_RETURN(auto next, ds->Append(&reader, PropsFor(options, operation, file), options.before_commit));
  ImportResult r;
  r.rows = reader.rows();
  r.version = next->version();
  r.schema = next->schema();
  return r;
}

}  // namespace

Result<ImportResult> ImportInto(const std::shared_ptr<Dataset>& ds, const std::string& file,
                                const ImportOptions& options) {
  return AppendTo(ds, file, options, "APPEND");
}

Result<ImportResult> ImportAsNewDataset(const std::string& table_path, const Uuid& dataset_id, const std::string& file,
                                        const ImportOptions& options) {
  FileSystem* fs = options.ingest.fs ? options.ingest.fs : DefaultFileSystem();
  SchemaPtr schema = options.ingest.schema;
  if (!schema) {
    VIGIL_ASSIGN_OR_RETURN(schema, InferIngestSchema(file, options.ingest));
  }
  std::string parent = DirName(table_path);
  VIGIL_RETURN_IF_ERROR(fs->CreateDirs(parent));
  std::string staging = JoinPath(parent, "." + BaseName(table_path) + ".importing-" + Uuid::Generate().ToString());
  DatasetOptions dopts;
  dopts.fs = fs;
  Result<ImportResult> r = [&]() -> Result<ImportResult> {
    VIGIL_ASSIGN_OR_RETURN(
        auto ds, Dataset::Create(staging, schema, PropsFor(options, "CREATE_TABLE", file), dopts, dataset_id));
    return AppendTo(ds, file, options, "APPEND");
  }();
  if (r.ok()) {
    Status st = fs->Rename(staging, table_path);
    if (!st.ok()) {
      r = Status::AlreadyExists("table " + table_path + " appeared while importing: " + st.message());
    } else {
      VIGIL_RETURN_IF_ERROR(fs->SyncDir(parent));
      r->created = true;
      return r;
    }
  }
  (void)RemoveTree(fs, staging);
  return r;
}

Result<ImportResult> ImportFile(const std::string& table_path, const std::string& file, const ImportOptions& options) {
  FileSystem* fs = options.ingest.fs ? options.ingest.fs : DefaultFileSystem();
  VIGIL_ASSIGN_OR_RETURN(bool exists, fs->Exists(table_path));
  if (!exists) {
    if (!options.create) {
      return Status::NotFound("table " + table_path + " does not exist (use --create to create it from the file)");
    }
    return ImportAsNewDataset(table_path, Uuid::Generate(), file, options);
  }
  DatasetOptions dopts;
  dopts.fs = fs;
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(table_path, std::nullopt, dopts));
  return ImportInto(ds, file, options);
}

}  // namespace vigil
