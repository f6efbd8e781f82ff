// Descriptors handed to other processes (a worker's pipes, its stderr log, a daemon's
// /dev/null): the owner that closes them, and the one place outside the file-system seam
// that opens a file by descriptor. Data files go through FileSystem (file_system.h).
//
// Thread safety: a UniqueFd is owned by one thread at a time.
#pragma once

#include <cstdint>
#include <string>

#include "vigil/common/status.h"

namespace vigil {

// A descriptor closed on destruction; move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      Close();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Close(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives the descriptor up without closing it.
  int Release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Close();

 private:
  int fd_ = -1;
};

// `path` opened for appending (created with `mode` when missing), close-on-exec.
Result<UniqueFd> OpenAppendLog(const std::string& path, uint32_t mode);
// /dev/null opened for reading and writing, close-on-exec.
Result<UniqueFd> OpenDevNull();

}  // namespace vigil
