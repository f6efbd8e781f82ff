// A FileSystem for tests that injects faults into another one:
//   - fail the N-th mutating or reading operation with ENOSPC or EIO;
//   - tear a write (only a prefix of the appended bytes reaches the file);
//   - simulate a power cut: DropUnsyncedData() truncates every file written
//     through it to its last synced length and removes files and directory
//     entries whose directory was not synced since they were created.
// Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "vigil/common/file_system.h"
#include "vigil/common/mutex.h"

namespace vigil {

class FaultInjectionFileSystem : public FileSystem {
 public:
  enum class Fault { kNone, kNoSpace, kIoError, kTornWrite };

  explicit FaultInjectionFileSystem(FileSystem* base);

  // Makes operation number `n` (1-based, counted from now over every call of
  // this interface and of the files it opened) fail with `fault`. A torn write
  // applies to an Append; other operations get EIO for kTornWrite.
  void FailOperation(int64_t n, Fault fault);
  // Fails every operation from number `n` on (a full disk that stays full).
  void FailFrom(int64_t n, Fault fault);
  void ClearFaults();
  // Operations counted since construction or the last ResetCount().
  int64_t OperationCount() const;
  void ResetCount();
  // Simulates losing everything not yet made durable (see header comment).
  Status DropUnsyncedData();

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> NewPrivateWritableFile(const std::string& path) override;
  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override;
  Result<std::unique_ptr<RandomAccessFile>> NewInputFile(const std::string& path, InputLinks links,
                                                         FileFacts* facts) override;
  Result<std::string> ReadFile(const std::string& path, size_t max_bytes) override;
  Result<bool> Exists(const std::string& path) override;
  Result<uint64_t> FileSize(const std::string& path) override;
  Result<std::vector<std::string>> ListDir(const std::string& path) override;
  Status CreateDirs(const std::string& path) override;
  Status CreateDir(const std::string& path) override;
  Status RemoveFile(const std::string& path) override;
  Status RemoveDir(const std::string& path) override;
  Status LinkNoReplace(const std::string& from, const std::string& to) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status SyncDir(const std::string& path) override;
  Status SyncFile(const std::string& path) override;
  Result<bool> IsSymlink(const std::string& path) override;

  // Called by the files this file system opened. Returns the fault for the
  // next operation (kNone to proceed).
  Fault NextOperation() VIGIL_EXCLUDES(mu_);
  void RecordSync(const std::string& path, uint64_t size) VIGIL_EXCLUDES(mu_);

 private:
  Status Check(const char* op, const std::string& path) VIGIL_EXCLUDES(mu_);
  // Wraps a new file so its appends can fail and its unsynced bytes can be dropped.
  std::unique_ptr<WritableFile> Track(const std::string& path, std::unique_ptr<WritableFile> base) VIGIL_EXCLUDES(mu_);

  FileSystem* base_;
  mutable Mutex mu_;
  int64_t count_ VIGIL_GUARDED_BY(mu_) = 0;
  std::map<int64_t, Fault> one_shot_ VIGIL_GUARDED_BY(mu_);
  int64_t fail_from_ VIGIL_GUARDED_BY(mu_) = 0;  // 0 = never
  Fault fail_from_fault_ VIGIL_GUARDED_BY(mu_) = Fault::kNone;
  std::map<std::string, uint64_t> synced_size_ VIGIL_GUARDED_BY(mu_);  // files written here
  // Names not yet made durable by SyncDir.
  std::set<std::string> unsynced_entries_ VIGIL_GUARDED_BY(mu_);
};

}  // namespace vigil
