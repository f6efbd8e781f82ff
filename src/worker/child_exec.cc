// Async-signal-safe calls only (see child_exec.h): this runs between fork and
// exec in the child of a multi-threaded process.
#include "worker/child_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vigil/worker/protocol.h"

namespace vigil::worker {

namespace {

constexpr int kDupFloor = 64;

[[noreturn]] void ChildExit(int code) { ::_exit(code); }

bool ChildInCgroup(const ChildPlan& p) {
  char buf[8192];
  int fd = ::open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t used = 0;
  while (used < sizeof buf) {
    ssize_t n = ::read(fd, buf + used, sizeof buf - used);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    used += static_cast<size_t>(n);
  }
  ::close(fd);
  for (int i = 0; i < p.markers_count; ++i) {
    if (::memmem(buf, used, p.markers[i], p.marker_lens[i]) == nullptr) return false;
  }
  return true;
}

}  // namespace

[[noreturn]] void ChildMain(const ChildPlan& p) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) sigaction(s, &dfl, nullptr);
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) ChildExit(kExitSetup);
  if (::getppid() != p.parent) ChildExit(kExitParentGone);
  if (p.go_fd >= 0) {
    ::close(p.go_write_fd);
    char b = 0;
    ssize_t n;
    do {
      n = ::read(p.go_fd, &b, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) ChildExit(kExitSetup);
    if (!ChildInCgroup(p)) ChildExit(kExitCgroupVerify);
  }
  int tmp[kChildFds];
  for (int i = 0; i < kChildFds; ++i) {
    tmp[i] = p.fds[i] < 0 ? -1 : ::fcntl(p.fds[i], F_DUPFD_CLOEXEC, kDupFloor);
    if (p.fds[i] >= 0 && tmp[i] < 0) ChildExit(kExitSetup);
  }
  for (int i = 0; i < kChildFds; ++i) {
    if (tmp[i] < 0) {
      ::close(i);
    } else if (i == kChildExecStatus) {
      if (::dup3(tmp[i], i, O_CLOEXEC) < 0) ChildExit(kExitSetup);
    } else if (::dup2(tmp[i], i) < 0) {  // dup2 leaves close-on-exec clear
      ChildExit(kExitSetup);
    }
  }
  if (::syscall(SYS_close_range, kChildFds, ~0U, 0) != 0) {
    for (int fd = kChildFds; fd < kDupFloor + 64; ++fd) ::close(fd);
  }
  struct rlimit core = {0, 0};
  struct rlimit files = {p.open_files, p.open_files};
  struct rlimit as = {p.address_space, p.address_space};
  if (::setrlimit(RLIMIT_CORE, &core) != 0 || ::setrlimit(RLIMIT_NOFILE, &files) != 0 ||
      ::setrlimit(RLIMIT_AS, &as) != 0) {
    ChildExit(kExitSetup);
  }
  ::execve(p.path, p.argv, p.envp);
  int err = errno;
  ssize_t ignored = ::write(kChildExecStatus, &err, sizeof err);
  (void)ignored;
  ChildExit(kExitExecFailed);
}

}  // namespace vigil::worker
