// Ingest entry points: format detection, byte sources, line splitting,
// error formatting and dispatch to the per-format readers.
#include "vigil/ingest/ingest.h"

#include <algorithm>
#include <cstring>

#include "ingest/ingest_internal.h"
#include "vigil/common/ascii.h"

namespace vigil {

namespace {

class FileSource : public ingest::ByteSource {
 public:
  FileSource(std::shared_ptr<const RandomAccessFile> file, std::string name) : file_(std::move(file)) {
    name_ = std::move(name);
  }
  uint64_t size() const override { return file_->Size(); }
  Status ReadAt(uint64_t offset, size_t n, std::string* out) override {
    uint64_t total = file_->Size();
    if (offset >= total) {
      out->clear();
      return Status::OK();
    }
    n = static_cast<size_t>(std::min<uint64_t>(n, total - offset));
    return file_->Read(offset, n, out);
  }

 private:
  std::shared_ptr<const RandomAccessFile> file_;
};

class BufferSource : public ingest::ByteSource {
 public:
  BufferSource(std::string data, std::string name) : data_(std::move(data)) { name_ = std::move(name); }
  uint64_t size() const override { return data_.size(); }
  Status ReadAt(uint64_t offset, size_t n, std::string* out) override {
    if (offset >= data_.size()) {
      out->clear();
      return Status::OK();
    }
    out->assign(data_, static_cast<size_t>(offset), n);
    return Status::OK();
  }

 private:
  std::string data_;
};

Result<std::unique_ptr<RecordBatchReader>> OpenWith(std::unique_ptr<ingest::ByteSource> src, IngestFormat format,
                                                    const IngestOptions& options) {
  if (options.batch_rows == 0) return Status::InvalidArgument("batch_rows must be positive");
  switch (format) {
    case IngestFormat::kCsv:
      return ingest::OpenCsv(std::move(src), options);
    case IngestFormat::kJsonl:
      return ingest::OpenJsonl(std::move(src), options);
    case IngestFormat::kFvecs:
      return ingest::OpenFvecs(std::move(src), options);
    case IngestFormat::kNpy:
      return ingest::OpenNpy(std::move(src), options);
  }
  return Status::Internal("unknown ingest format");
}

FileSystem* FsOf(const IngestOptions& options) { return options.fs ? options.fs : DefaultFileSystem(); }

}  // namespace

std::string_view IngestFormatName(IngestFormat format) {
  switch (format) {
    case IngestFormat::kCsv:
      return "csv";
    case IngestFormat::kJsonl:
      return "jsonl";
    case IngestFormat::kFvecs:
      return "fvecs";
    case IngestFormat::kNpy:
      return "npy";
  }
  return "unknown";
}

Result<IngestFormat> ParseIngestFormat(std::string_view name) {
  std::string n = AsciiLowered(name);
  if (n == "csv") return IngestFormat::kCsv;
  if (n == "jsonl" || n == "json" || n == "ndjson") return IngestFormat::kJsonl;
  if (n == "fvecs") return IngestFormat::kFvecs;
  if (n == "npy") return IngestFormat::kNpy;
  return Status::InvalidArgument("unknown format '" + std::string(name.substr(0, 32)) +
                                 "'; expected csv, jsonl, fvecs or npy");
}

Result<IngestFormat> DetectIngestFormat(std::string_view path) {
  size_t slash = path.find_last_of('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  size_t dot = base.find_last_of('.');
  if (dot == std::string_view::npos || dot + 1 == base.size()) {
    return Status::InvalidArgument("cannot tell the format of '" + std::string(path) +
                                   "' from its extension; pass --format csv|jsonl|fvecs|npy");
  }
  Result<IngestFormat> f = ParseIngestFormat(base.substr(dot + 1));
  if (!f.ok()) {
    return Status::InvalidArgument("unknown extension of '" + std::string(path) +
                                   "'; pass --format csv|jsonl|fvecs|npy");
  }
  return f;
}

Result<std::shared_ptr<const RandomAccessFile>> OpenIngestFile(const std::string& path, bool no_symlinks) {
  VIGIL_ASSIGN_OR_RETURN(
      std::unique_ptr<RandomAccessFile> file,
      DefaultFileSystem()->NewInputFile(path, no_symlinks ? InputLinks::kRefuseAny : InputLinks::kFollow, nullptr));
  return std::shared_ptr<const RandomAccessFile>(std::move(file));
}

Result<std::unique_ptr<RecordBatchReader>> OpenIngestReader(const std::string& path, const IngestOptions& options) {
  IngestFormat format;
  if (options.format) {
    format = *options.format;
  } else {
    VIGIL_ASSIGN_OR_RETURN(format, DetectIngestFormat(path));
  }
  std::unique_ptr<ingest::ByteSource> src;
  if (options.input) {
    src = std::make_unique<FileSource>(options.input, path);
  } else {
    VIGIL_ASSIGN_OR_RETURN(src, ingest::ByteSource::OpenFile(FsOf(options), path));
  }
  return OpenWith(std::move(src), format, options);
}

Result<std::unique_ptr<RecordBatchReader>> OpenIngestReaderFromBuffer(std::string data, std::string name,
                                                                      const IngestOptions& options) {
  if (!options.format) return Status::InvalidArgument("a buffer needs an explicit format");
  return OpenWith(ingest::ByteSource::FromBuffer(std::move(data), std::move(name)), *options.format, options);
}

Result<SchemaPtr> InferIngestSchema(const std::string& path, const IngestOptions& options) {
  IngestOptions opts = options;
  opts.schema = nullptr;
  VIGIL_ASSIGN_OR_RETURN(auto reader, OpenIngestReader(path, opts));
  return reader->schema();
}

Result<SchemaPtr> VectorFileSchema(uint32_t dim, const IngestOptions& options) {
  std::vector<Field> fields;
  fields.push_back(Field{-1, options.id_column, DataType::Of(TypeId::kInt64), false});
  fields.push_back(Field{-1, options.vector_column, DataType::Vector(VectorElement::kFloat32, dim), false});
  return Schema::Make(std::move(fields));
}

namespace ingest {

namespace {
// The position of the schema's only vector field, if it has exactly one.
std::optional<size_t> SoleVectorField(const Schema& schema) {
  std::optional<size_t> found;
  for (size_t i = 0; i < schema.num_fields(); ++i) {
    if (schema.field(i).type.id != TypeId::kVector) continue;
    if (found) return std::nullopt;
    found = i;
  }
  return found;
}
}  // namespace

Result<std::unique_ptr<ByteSource>> ByteSource::OpenFile(FileSystem* fs, const std::string& path) {
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, fs->NewInputFile(path, InputLinks::kFollow, nullptr));
  return std::unique_ptr<ByteSource>(new FileSource(std::move(file), path));
}

std::unique_ptr<ByteSource> ByteSource::FromBuffer(std::string data, std::string name) {
  return std::make_unique<BufferSource>(std::move(data), std::move(name));
}

Status LineReader::Fill() {
  if (buf_start_ > 0) {
    buf_.erase(0, buf_start_);
    buf_start_ = 0;
  }
  std::string chunk;
  VIGIL_RETURN_IF_ERROR(source_->ReadAt(read_pos_, kChunkBytes, &chunk));
  read_pos_ += chunk.size();
  buf_ += chunk;
  return Status::OK();
}

Result<bool> LineReader::Next(std::string_view* line) {
  size_t scan_from = buf_start_;
  while (true) {
    size_t nl = buf_.find('\n', scan_from);
    bool at_end = read_pos_ >= source_->size();
    if (nl == std::string::npos && !at_end) {
      if (buf_.size() - buf_start_ > max_line_bytes_) {
        return TextError(source_->name(), line_number_ + 1, 1,
                         "line is longer than " + std::to_string(max_line_bytes_) + " bytes");
      }
      scan_from = buf_.size() - buf_start_;
      VIGIL_RETURN_IF_ERROR(Fill());
      scan_from += buf_start_;
      continue;
    }
    if (nl == std::string::npos && buf_start_ == buf_.size()) return false;
    size_t end = nl == std::string::npos ? buf_.size() : nl;
    size_t next = nl == std::string::npos ? buf_.size() : nl + 1;
    line_.assign(buf_, buf_start_, end - buf_start_);
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    pos_ += next - buf_start_;
    buf_start_ = next;
    ++line_number_;
    *line = line_;
    return true;
  }
}

Status TextError(std::string_view file, uint64_t line, uint64_t column, std::string_view message) {
  return Status::InvalidArgument(std::string(file) + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
                                 std::string(message));
}

Status RecordError(std::string_view file, uint64_t record, uint64_t offset, std::string_view message) {
  return Status::InvalidArgument(std::string(file) + ": record " + std::to_string(record) + " (byte offset " +
                                 std::to_string(offset) + "): " + std::string(message));
}

Result<VectorTarget> ResolveVectorTarget(const std::string& file, uint32_t dim, const IngestOptions& options) {
  VectorTarget t;
  t.first_id = options.first_id;
  if (!options.schema) {
    VIGIL_ASSIGN_OR_RETURN(t.schema, VectorFileSchema(dim, options));
    t.id_index = 0;
    t.vector_index = 1;
    return t;
  }
  t.schema = options.schema;
  auto vi = t.schema->IndexOf(options.vector_column);
  if (!vi) vi = SoleVectorField(*t.schema);
  if (!vi) {
    return Status::InvalidArgument(file + ": the table has no vector column '" + options.vector_column + "'");
  }
  const Field& vf = t.schema->field(*vi);
  if (vf.type.id != TypeId::kVector || vf.type.dim != dim) {
    return Status::InvalidArgument(file + ": vectors have dimension " + std::to_string(dim) + " but column '" +
                                   vf.name + "' is " + vf.type.ToString());
  }
  t.vector_index = *vi;
  auto ii = t.schema->IndexOf(options.id_column);
  if (ii && t.schema->field(*ii).type.IsInteger()) t.id_index = static_cast<int>(*ii);
  for (size_t i = 0; i < t.schema->num_fields(); ++i) {
    const Field& f = t.schema->field(i);
    if (i != t.vector_index && static_cast<int>(i) != t.id_index && !f.nullable) {
      return Status::InvalidArgument(file + ": non-nullable column '" + f.name + "' has no values in a vector file");
    }
  }
  return t;
}

}  // namespace ingest
}  // namespace vigil
