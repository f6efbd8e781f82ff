// The file-system half of the environment seam (vigil/common/env.h): every
// byte Vigil reads or writes goes through a FileSystem, normally Env::fs(), so
// tests can inject faults (FaultInjectionFileSystem) and a query can record
// what it read (an IoObserver).
//
// Thread safety: FileSystem implementations are thread-safe. A WritableFile
// is used by one thread at a time; a RandomAccessFile may be read concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/status.h"

namespace vigil {

// An append-only file being written. Data is durable only after Sync().
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status Append(std::string_view data) = 0;
  virtual Status Sync() = 0;   // fdatasync: the appended bytes are durable
  virtual Status Close() = 0;  // idempotent; the destructor closes without syncing
  virtual uint64_t Size() const = 0;
};

// An immutable file read by offset.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads exactly `n` bytes at `offset` into `out` (resized); a short file is Corruption.
  virtual Status Read(uint64_t offset, size_t n, std::string* out) const = 0;
  virtual uint64_t Size() const = 0;
  virtual const std::string& path() const = 0;
};

// Receives every physical read made through an observed file system.
class IoObserver {
 public:
  virtual ~IoObserver() = default;
  virtual void OnRead(const std::string& path, uint64_t offset, size_t bytes) = 0;
};

// What fstat(2) said of an opened input file (of the descriptor, so a rename cannot race it).
struct FileFacts {
  uint64_t size = 0;
  uint32_t mode = 0;  // permission bits (07777)
  uint32_t owner_uid = 0;
};

// How NewInputFile treats symbolic links.
enum class InputLinks {
  kFollow,      // links are followed
  kRefuseLast,  // the last component may not be a link (O_NOFOLLOW)
  kRefuseAny,   // no component may be a link; the path must be absolute and canonical
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // Creates (truncating nothing: fails with AlreadyExists if `path` exists) a new file.
  virtual Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  // The same, readable and writable by the owner alone (mode 0600): secrets, metadata databases.
  virtual Result<std::unique_ptr<WritableFile>> NewPrivateWritableFile(const std::string& path) = 0;
  virtual Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) = 0;
  // Opens a file a user named (an input to import, a token file): only a regular file, refusing
  // FIFOs, devices, sockets and directories without blocking on them. `facts` (may be null)
  // receives what fstat said. Errors are typed and name the path (NotFound, PermissionDenied for
  // a refused link, InvalidArgument for a file that is not regular).
  virtual Result<std::unique_ptr<RandomAccessFile>> NewInputFile(const std::string& path, InputLinks links,
                                                                 FileFacts* facts) = 0;
  // Whole file; bounded by `max_bytes` (ResourceExhausted beyond it).
  virtual Result<std::string> ReadFile(const std::string& path, size_t max_bytes) = 0;
  virtual Result<bool> Exists(const std::string& path) = 0;
  virtual Result<uint64_t> FileSize(const std::string& path) = 0;
  // Names (not paths) of the entries of a directory, sorted.
  virtual Result<std::vector<std::string>> ListDir(const std::string& path) = 0;
  // Creates a directory and its missing parents; OK if it exists.
  virtual Status CreateDirs(const std::string& path) = 0;
  // Creates one directory inside an existing one; OK if it exists, NotFound when the parent
  // is missing (so a writer never re-creates a dataset directory that was moved away).
  virtual Status CreateDir(const std::string& path) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;
  virtual Status RemoveDir(const std::string& path) = 0;  // must be empty
  // Publishes `from` under the new name `to` without ever replacing an existing
  // `to` (link(2); AlreadyExists if `to` exists). `from` stays; the caller removes it.
  virtual Status LinkNoReplace(const std::string& from, const std::string& to) = 0;
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // fsync of a directory, making its entries durable.
  virtual Status SyncDir(const std::string& path) = 0;
  // fsync of an existing file written by other means (e.g. by SQLite), making its bytes durable.
  virtual Status SyncFile(const std::string& path) = 0;
  // True for a symbolic link (never followed by vacuum).
  virtual Result<bool> IsSymlink(const std::string& path) = 0;
};

// The real POSIX file system. Shared process-wide; never destroyed. Reports
// reads to the calling thread's IoObserver (ScopedIoObserver).
FileSystem* DefaultFileSystem();

// Convenience: write `data` to a new file at `path`, fsync it and close it.
Status WriteFileDurably(FileSystem* fs, const std::string& path, std::string_view data);

// A /proc or /sys file, whose size stat(2) cannot tell, read to its end; ResourceExhausted
// beyond `max_bytes`.
Result<std::string> ReadKernelFile(const std::string& path, size_t max_bytes);

// Joins path components with '/'.
std::string JoinPath(std::string_view a, std::string_view b);
// Directory part of a path ("a/b/c" -> "a/b").
std::string DirName(std::string_view path);

// Installs `observer` for reads on the calling thread while in scope: every
// RandomAccessFile::Read of the POSIX file system (and of wrappers over it)
// made by this thread is reported to it.
class ScopedIoObserver {
 public:
  explicit ScopedIoObserver(IoObserver* observer);
  ~ScopedIoObserver();
  ScopedIoObserver(const ScopedIoObserver&) = delete;
  ScopedIoObserver& operator=(const ScopedIoObserver&) = delete;

 private:
  IoObserver* previous_;
};
// The observer installed on this thread, or nullptr.
IoObserver* CurrentIoObserver();

}  // namespace vigil
