// Segment files: every index segment lives under `_indices/<uuid>/` of its
// dataset with an inventory (name, size, XXH3-64) recorded in the manifest.
// SegmentWriter writes files durably and produces the inventory;
// SegmentFiles verifies the inventory and reads files for decoders.
//
// Thread safety: SegmentWriter is single-threaded; SegmentFiles is thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/file_system.h"
#include "vigil/common/status.h"
#include "vigil/common/uuid.h"
#include "vigil/storage/manifest.h"

namespace vigil::index {

// "_indices/<uuid>" relative to the dataset root.
std::string SegmentDir(const Uuid& uuid);

class SegmentWriter {
 public:
  // Creates `<dataset_path>/_indices/<uuid>/`; AlreadyExists if that segment directory exists.
  static Result<std::unique_ptr<SegmentWriter>> Create(FileSystem* fs, const std::string& dataset_path,
                                                       const Uuid& uuid);
  // Writes one whole file durably (fsynced) and records it in the inventory.
  Status WriteFile(const std::string& name, std::string_view bytes);
  // Streams a file in pieces; Finish the stream before the next one.
  Status BeginFile(const std::string& name);
  Status AppendToFile(std::string_view bytes);
  Status EndFile();
  // Fsyncs the segment directory and returns the inventory.
  Result<std::vector<SegmentFile>> Finish();
  // Absolute path of a file in this segment (for libraries that write their own files).
  std::string FilePath(const std::string& name) const;
  // Records a file that a library wrote itself at FilePath(name) (read back to checksum it).
  Status AddExistingFile(const std::string& name);
  // Best effort: removes everything written (after a failed build).
  void Abandon();

 private:
  SegmentWriter(FileSystem* fs, std::string dir) : fs_(fs), dir_(std::move(dir)) {}
  FileSystem* fs_;
  std::string dir_;
  std::vector<SegmentFile> files_;
  std::unique_ptr<WritableFile> open_;
  std::string open_name_;
  uint64_t open_size_ = 0;
  void* open_checksum_ = nullptr;  // StreamingChecksum*, owned while a file is open
};

class SegmentFiles {
 public:
  // Checks that every inventory file exists with its recorded size (cheap; no reads).
  static Result<std::shared_ptr<SegmentFiles>> Open(FileSystem* fs, const std::string& dataset_path,
                                                    const IndexSegmentMeta& meta);
  // Reads a whole inventory file and verifies its checksum; Corruption on mismatch.
  Result<std::string> ReadVerified(const std::string& name, size_t max_bytes) const;
  // Opens an inventory file for ranged reads; its size is checked against the
  // inventory and the format's own block checksums guard each range.
  Result<std::unique_ptr<RandomAccessFile>> OpenVerified(const std::string& name) const;
  // Absolute path of an inventory file.
  std::string FilePath(const std::string& name) const;
  const IndexSegmentMeta& meta() const { return meta_; }
  FileSystem* fs() const { return fs_; }

 private:
  SegmentFiles(FileSystem* fs, std::string dir, IndexSegmentMeta meta)
      : fs_(fs), dir_(std::move(dir)), meta_(std::move(meta)) {}
  const SegmentFile* Find(const std::string& name) const;
  FileSystem* fs_;
  std::string dir_;
  IndexSegmentMeta meta_;
};

}  // namespace vigil::index
