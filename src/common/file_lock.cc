#include "vigil/common/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace vigil {

namespace {

Status Errno(const std::string& what, const std::string& path) {
  return Status::IOError(what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

Result<FileLock> FileLock::Acquire(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) return Status::IOError("cannot create the directory of " + path + ": " + ec.message());
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("cannot open lock file", path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) return Status::Busy("lock " + path + " is held by another process");
    errno = err;
    return Errno("cannot lock", path);
  }
  return FileLock(fd, path);
}

Result<bool> FileLock::IsHeld(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound("lock file " + path + " does not exist");
    return Errno("cannot open lock file", path);
  }
  bool held = false;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    if (err != EWOULDBLOCK) {
      ::close(fd);
      errno = err;
      return Errno("cannot probe lock", path);
    }
    held = true;
  }
  ::close(fd);  // releases the probe's own lock, if it took one
  return held;
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    Release();
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

FileLock::~FileLock() { Release(); }

void FileLock::Release() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

}  // namespace vigil
