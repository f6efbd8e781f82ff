#include <algorithm>
#include <map>

#include "dataset_internal.h"
#include "vigil/common/failpoint.h"
#include "vigil/common/mutex.h"
#include "vigil/common/uuid.h"
#include "vigil/storage/filename.h"

namespace vigil::internal {

namespace {

// Rows per block: the configured number, lowered so that a block of the widest
// fixed-width column (a vector) stays near 1 MiB — a point read (refining a
// vector search, fetching result rows) then decodes 1 MiB, not the 8 MiB a
// 16384-row block of 128-d FLOAT32 vectors would take.
uint32_t RowsPerBlock(const Schema& schema, uint32_t configured) {
  constexpr size_t kTargetBlockBytes = 1 << 20;
  constexpr uint32_t kMinRows = 1024;
  size_t widest = 1;
  for (const auto& f : schema.fields()) widest = std::max(widest, f.type.FixedWidth());
  uint32_t by_width = static_cast<uint32_t>(std::max<size_t>(kMinRows, kTargetBlockBytes / widest));
  return std::min(configured, by_width);
}

}  // namespace

FragmentSink::FragmentSink(FileSystem* fs, std::string dataset_path, SchemaPtr schema, DatasetOptions options)
    : fs_(fs), dataset_path_(std::move(dataset_path)), schema_(std::move(schema)), options_(options) {}

Status FragmentSink::OpenNext() {
  writer_rel_path_ = NewFragmentPath();
  std::string abs = JoinPath(dataset_path_, writer_rel_path_);
  VIGIL_RETURN_IF_ERROR(fs_->CreateDir(DirName(abs)));  // never re-creates a moved dataset
  FragmentWriterOptions wopts = options_.writer;
  wopts.rows_per_block = RowsPerBlock(*schema_, wopts.rows_per_block);
  auto w = FragmentWriter::Create(fs_, abs, schema_, wopts);
  if (!w.ok()) return w.status();
  created_.push_back(abs);
  writer_ = std::move(*w);
  return Status::OK();
}

Status FragmentSink::Finish() {
  if (!writer_) return Status::OK();
  VIGIL_ASSIGN_OR_RETURN(FragmentFileInfo info, writer_->Finish());
  writer_.reset();
  FragmentMeta meta;
  meta.path = writer_rel_path_;
  meta.num_rows = info.num_rows;
  meta.file_size = info.file_size;
  meta.footer_checksum = info.footer_checksum;
  fragments_.push_back(std::move(meta));
  return Status::OK();
}

Status FragmentSink::Write(const RecordBatch& batch) {
  size_t begin = 0;
  while (begin < batch.num_rows) {
    if (!writer_) VIGIL_RETURN_IF_ERROR(OpenNext());
    uint64_t room = options_.max_rows_per_fragment - writer_->rows_written();
    size_t take = static_cast<size_t>(std::min<uint64_t>(room, batch.num_rows - begin));
    if (begin == 0 && take == batch.num_rows) {
      VIGIL_RETURN_IF_ERROR(writer_->Write(batch));
    } else {
      RecordBatch slice = RecordBatch::Empty(batch.schema);
      for (size_t c = 0; c < batch.columns.size(); ++c)
        slice.columns[c].AppendRange(batch.columns[c], begin, begin + take);
      slice.num_rows = take;
      VIGIL_RETURN_IF_ERROR(writer_->Write(slice));
    }
    begin += take;
    if (writer_->rows_written() >= options_.max_rows_per_fragment) VIGIL_RETURN_IF_ERROR(Finish());
  }
  return Status::OK();
}

Status FragmentSink::WriteAll(RecordBatchReader* reader) {
  for (;;) {
    VIGIL_ASSIGN_OR_RETURN(auto batch, reader->Next());
    if (!batch) return Status::OK();
    VIGIL_RETURN_IF_ERROR(batch->Validate());
    VIGIL_RETURN_IF_ERROR(Write(*batch));
    VIGIL_FAILPOINT("commit.between_batches");
  }
}

void FragmentSink::RemoveWrittenFiles() {
  writer_.reset();
  for (const auto& p : created_) (void)fs_->RemoveFile(p);
}

Result<std::shared_ptr<FragmentReader>> SharedFragmentReader(FileSystem* fs, const std::string& abs_path,
                                                             BlockCache* cache, const FragmentMeta& meta) {
  static Mutex mu;
  static auto* readers VIGIL_PT_GUARDED_BY(mu) =
      new std::map<std::pair<FileSystem*, std::string>, std::weak_ptr<FragmentReader>>();
  std::pair<FileSystem*, std::string> key(fs, abs_path);
  {
    MutexLock lock(&mu);
    auto it = readers->find(key);
    if (it != readers->end()) {
      if (auto r = it->second.lock()) return r;
      readers->erase(it);
    }
  }
  VIGIL_ASSIGN_OR_RETURN(auto reader, FragmentReader::Open(fs, abs_path, cache));
  if (reader->num_rows() != meta.num_rows) {
    return Status::Corruption(abs_path + " has " + std::to_string(reader->num_rows()) + " rows; the manifest says " +
                              std::to_string(meta.num_rows));
  }
  MutexLock lock(&mu);
  auto& slot = (*readers)[key];
  if (auto r = slot.lock()) return r;
  slot = reader;
  return reader;
}

}  // namespace vigil::internal
