#include "vigil/common/unique_fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace vigil {

void UniqueFd::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<UniqueFd> OpenAppendLog(const std::string& path, uint32_t mode) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, static_cast<mode_t>(mode)));
  if (!fd.valid()) return Status::FromErrno(errno, "open " + path);
  return fd;
}

Result<UniqueFd> OpenDevNull() {
  UniqueFd fd(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!fd.valid()) return Status::FromErrno(errno, "open /dev/null");
  return fd;
}

}  // namespace vigil
