// Internals of Dataset shared by dataset.cc and scan.cc: the fragment sink
// that splits a row stream into fragment files, the process-wide cache of
// open fragment readers, and the scanner. Not part of the public API.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "vigil/storage/dataset.h"

namespace vigil::internal {

// Writes a stream of batches into fragment files of at most
// options.max_rows_per_fragment rows each. Single-threaded.
class FragmentSink {
 public:
  FragmentSink(FileSystem* fs, std::string dataset_path, SchemaPtr schema, DatasetOptions options);
  // Validates and writes every batch of `reader`.
  Status WriteAll(RecordBatchReader* reader);
  // Finishes the open fragment, if any.
  Status Finish();
  // Best effort: removes every file this sink created (after a failure).
  void RemoveWrittenFiles();
  const std::vector<FragmentMeta>& fragments() const { return fragments_; }

 private:
  Status Write(const RecordBatch& batch);
  Status OpenNext();

  FileSystem* fs_;
  std::string dataset_path_;
  SchemaPtr schema_;
  DatasetOptions options_;
  std::unique_ptr<FragmentWriter> writer_;
  std::string writer_rel_path_;
  std::vector<std::string> created_;  // absolute paths
  std::vector<FragmentMeta> fragments_;
};

// The shared reader of a fragment file (opened once per process and file
// system while any holder keeps it). Verifies row count against `meta`. Thread-safe.
Result<std::shared_ptr<FragmentReader>> SharedFragmentReader(FileSystem* fs, const std::string& abs_path,
                                                             BlockCache* cache, const FragmentMeta& meta);

Result<std::unique_ptr<RecordBatchReader>> NewScanner(std::shared_ptr<Dataset> dataset, ScanOptions options);

}  // namespace vigil::internal
