#include "vigil/common/process_identity.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>

namespace vigil {

namespace {

Result<std::string> BootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!std::getline(in, id) || id.empty()) return Status::NotSupported("this system has no boot id");
  return id;
}

// The start time (field 22) of /proc/<pid>/stat; the command name in field 2 may hold spaces
// and parentheses, so fields are counted after its last ')'.
Result<uint64_t> StartTicks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return Status::NotFound("process " + std::to_string(pid) + " is gone");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 > stat.size()) {
    return Status::Corruption("unexpected /proc/" + std::to_string(pid) + "/stat");
  }
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i != 22) continue;
    uint64_t ticks = 0;
    auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), ticks);
    if (ec != std::errc() || end != field.data() + field.size()) break;
    return ticks;
  }
  return Status::Corruption("unexpected /proc/" + std::to_string(pid) + "/stat");
}

}  // namespace

Result<ProcessIdentity> IdentifyProcess(pid_t pid) {
  ProcessIdentity who;
  who.pid = pid;
  VIGIL_ASSIGN_OR_RETURN(who.start_ticks, StartTicks(pid));
  VIGIL_ASSIGN_OR_RETURN(who.boot_id, BootId());
  return who;
}

std::string FormatProcessIdentity(const ProcessIdentity& who) {
  return "pid " + std::to_string(who.pid) + " start " + std::to_string(who.start_ticks) + " boot " + who.boot_id;
}

Result<ProcessIdentity> ParseProcessIdentity(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string pid_word, start_word, boot_word;
  long long pid = 0;
  ProcessIdentity who;
  if (!(in >> pid_word >> pid >> start_word >> who.start_ticks >> boot_word >> who.boot_id) || pid_word != "pid" ||
      start_word != "start" || boot_word != "boot" || pid <= 0) {
    return Status::Corruption("not a process identity");
  }
  who.pid = static_cast<pid_t>(pid);
  return who;
}

Result<bool> SignalExactProcess(const ProcessIdentity& who, int sig) {
  VIGIL_ASSIGN_OR_RETURN(std::string boot, BootId());
  if (boot != who.boot_id) return false;  // another boot or another host: not ours to signal
  // A pidfd pins the process: once its start time is checked, the signal cannot reach
  // another process that took the pid meanwhile.
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, who.pid, 0));
  if (pidfd < 0) {
    if (errno == ESRCH) return false;
    return Status::FromErrno(errno, "pidfd_open " + std::to_string(who.pid));
  }
  Result<uint64_t> ticks = StartTicks(who.pid);
  bool signalled = false;
  int err = 0;
  if (ticks.ok() && *ticks == who.start_ticks) {  // else gone, or the pid was reused
    signalled = ::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0) == 0;
    err = signalled ? 0 : errno;
  }
  ::close(pidfd);
  if (err != 0 && err != ESRCH) return Status::FromErrno(err, "signal " + std::to_string(who.pid));
  return signalled;
}

}  // namespace vigil
