// An exclusive advisory lock on a file (flock(2)), used as the attempt lock of
// an index job (DESIGN.md section 6): the dispatcher takes it before the job
// is marked RUNNING and the worker inherits the descriptor for its whole life,
// so a process that can take the lock knows that every holder is gone (the
// kernel drops a flock lock with the last descriptor of its open file).
// flock locks belong to an open file, so two FileLocks on one path conflict
// even inside one process.
// Part of the environment seam: the one place an advisory lock is taken.
// Thread safety: a FileLock is owned by one thread at a time; IsHeld is thread-safe.
#pragma once

#include <optional>
#include <string>

#include "vigil/common/status.h"

namespace vigil {

class FileLock {
 public:
  // Creates `path` (and its parent directories) if missing and takes the lock
  // without waiting. Busy when another open file holds it.
  static Result<FileLock> Acquire(const std::string& path);

  // Whether a holder is alive: true when the lock is held, false when it could
  // be taken (and was released again). NotFound when the file does not exist.
  static Result<bool> IsHeld(const std::string& path);

  FileLock() = default;  // holds nothing
  FileLock(FileLock&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) { other.fd_ = -1; }
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

  // The locked descriptor (close-on-exec set; a launcher clears it for the child it hands it to).
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // Releases the lock and closes the descriptor; the file stays. Idempotent.
  void Release();

 private:
  FileLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

}  // namespace vigil
