#include "vigil/worker/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#ifdef VIGIL_FAILPOINTS
#include <linux/netlink.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#endif

#include "vigil/common/file_system.h"

namespace vigil::worker {

namespace {

#if defined(__x86_64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
constexpr bool kHaveFilter = true;
#elif defined(__aarch64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
constexpr bool kHaveFilter = true;
#else
constexpr uint32_t kAuditArch = 0;
constexpr bool kHaveFilter = false;
#endif

constexpr uint32_t kNrOffset = offsetof(struct seccomp_data, nr);
constexpr uint32_t kArchOffset = offsetof(struct seccomp_data, arch);
// The low 32 bits of the first argument: clone's flags (the kernel ignores the
// upper half), socket's and socketpair's int domain.
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
constexpr uint32_t kArg0LowOffset = offsetof(struct seccomp_data, args[0]);
#else
constexpr uint32_t kArg0LowOffset = offsetof(struct seccomp_data, args[0]) + 4;
#endif

// Refused whatever their arguments.
constexpr long kRefusedSyscalls[] = {
#ifdef __NR_fork
    __NR_fork,
#endif
#ifdef __NR_vfork
    __NR_vfork,
#endif
    __NR_execve,
    __NR_execveat,
    __NR_ptrace,
    __NR_process_vm_readv,
    __NR_process_vm_writev,
#ifdef __NR_io_uring_setup
    // io_uring opens sockets (IORING_OP_SOCKET) without socket(2).
    __NR_io_uring_setup,
    __NR_io_uring_enter,
    __NR_io_uring_register,
#endif
};

constexpr uint32_t kRetAllow = SECCOMP_RET_ALLOW;
constexpr uint32_t kRetEperm = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
constexpr uint32_t kRetEnosys = SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA);

// Reads a small /proc file whole.
Result<std::string> ReadProcFile(const char* path) { return ReadKernelFile(path, 1 << 20); }

// The value of "Key:\tvalue" in /proc/self/status text; empty when absent.
std::string StatusField(std::string_view status, std::string_view key) {
  size_t at = 0;
  while (at < status.size()) {
    size_t eol = status.find('\n', at);
    std::string_view line = status.substr(at, eol == std::string_view::npos ? std::string_view::npos : eol - at);
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ':') {
      std::string_view v = line.substr(key.size() + 1);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      return std::string(v);
    }
    if (eol == std::string_view::npos) break;
    at = eol + 1;
  }
  return "";
}

Result<int> LastCapability() {
  VIGIL_ASSIGN_OR_RETURN(std::string text, ReadProcFile("/proc/sys/kernel/cap_last_cap"));
  char* end = nullptr;
  long last = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || (*end != '\n' && *end != '\0') || last < 0 || last > 63) {
    return Status::Internal("unexpected /proc/sys/kernel/cap_last_cap: '" + text + "'");
  }
  return static_cast<int>(last);
}

Status DropCapabilities() {
  VIGIL_ASSIGN_OR_RETURN(int last, LastCapability());
  struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return Status::FromErrno(errno, "capget");
  // Emptying the bounding set needs CAP_SETPCAP. Without it the set stays, inert:
  // it only limits what an execve could grant, and execve is refused (and no_new_privs).
  const bool drop_bounding = (data[CAP_TO_INDEX(CAP_SETPCAP)].effective & CAP_TO_MASK(CAP_SETPCAP)) != 0;
  if (drop_bounding) {
    for (int cap = 0; cap <= last; ++cap) {
      int held = ::prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
      if (held < 0) return Status::FromErrno(errno, "PR_CAPBSET_READ " + std::to_string(cap));
      if (held == 1 && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
        return Status::FromErrno(errno, "PR_CAPBSET_DROP " + std::to_string(cap));
      }
    }
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) {
    return Status::FromErrno(errno, "PR_CAP_AMBIENT_CLEAR_ALL");
  }
  for (auto& d : data) d = {};
  header = {_LINUX_CAPABILITY_VERSION_3, 0};
  if (::syscall(SYS_capset, &header, data) != 0) return Status::FromErrno(errno, "capset");

  // Read everything back: a call that returned success must also have taken effect.
  header = {_LINUX_CAPABILITY_VERSION_3, 0};
  if (::syscall(SYS_capget, &header, data) != 0) return Status::FromErrno(errno, "capget");
  for (const auto& d : data) {
    if (d.effective != 0 || d.permitted != 0 || d.inheritable != 0) {
      return Status::Internal("capabilities remain after capset");
    }
  }
  for (int cap = 0; cap <= last; ++cap) {
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0) != 0) {
      return Status::Internal("ambient capability " + std::to_string(cap) + " remains");
    }
    if (drop_bounding && ::prctl(PR_CAPBSET_READ, cap, 0, 0, 0) != 0) {
      return Status::Internal("bounding capability " + std::to_string(cap) + " remains");
    }
  }
  return Status::OK();
}

// A classic BPF program with forward jumps to named targets.
class FilterProgram {
 public:
  enum Target : uint8_t { kNext, kAllow, kDeny, kNoSys, kCloneFlags, kSocketDomain, kTargetCount };

  void Load(uint32_t offset) { code_.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset)); }
  // A conditional jump (op: BPF_JEQ, BPF_JGE, BPF_JSET) against `k`.
  void JumpIf(uint16_t op, uint32_t k, Target if_true, Target if_false = kNext) {
    fixups_.push_back({code_.size(), if_true, if_false});
    code_.push_back(BPF_JUMP(BPF_JMP | op | BPF_K, k, 0, 0));
  }
  void Return(uint32_t action) { code_.push_back(BPF_STMT(BPF_RET | BPF_K, action)); }
  void Bind(Target t) { at_[t] = code_.size(); }

  // Resolves the jumps; Internal when a target is unbound, behind, or out of range.
  Result<std::vector<sock_filter>> Finish() {
    for (const Fixup& f : fixups_) {
      VIGIL_ASSIGN_OR_RETURN(code_[f.index].jt, Offset(f.index, f.if_true));
      VIGIL_ASSIGN_OR_RETURN(code_[f.index].jf, Offset(f.index, f.if_false));
    }
    return code_;
  }

 private:
  struct Fixup {
    size_t index;
    Target if_true, if_false;
  };

  Result<uint8_t> Offset(size_t from, Target t) const {
    if (t == kNext) return uint8_t{0};
    const size_t to = at_[t];
    if (to == kUnbound || to <= from || to - from - 1 > 255) return Status::Internal("bad seccomp filter jump");
    return static_cast<uint8_t>(to - from - 1);
  }

  static constexpr size_t kUnbound = ~size_t{0};
  std::vector<sock_filter> code_;
  std::vector<Fixup> fixups_;
  std::array<size_t, kTargetCount> at_ = [] {
    std::array<size_t, kTargetCount> a;
    a.fill(kUnbound);
    return a;
  }();
};

// Process creation, refused in the provider's sandbox and allowed in the Lance runner's.
bool CreatesProcesses(long nr) {
#ifdef __NR_fork
  if (nr == __NR_fork) return true;
#endif
#ifdef __NR_vfork
  if (nr == __NR_vfork) return true;
#endif
  return nr == __NR_execve || nr == __NR_execveat;
}

Result<std::vector<sock_filter>> BuildFilter(SandboxMode mode) {
  const bool runner = mode == SandboxMode::kLanceRunner;
  FilterProgram p;
  using F = FilterProgram;
  // Another ABI (i386 through int 0x80) has other syscall numbers: refuse all of it.
  p.Load(kArchOffset);
  p.JumpIf(BPF_JEQ, kAuditArch, F::kNext, F::kDeny);
  p.Load(kNrOffset);
#if defined(__x86_64__)
  p.JumpIf(BPF_JGE, __X32_SYSCALL_BIT, F::kDeny);
#endif
  for (long nr : kRefusedSyscalls) {
    if (!runner || !CreatesProcesses(nr)) p.JumpIf(BPF_JEQ, static_cast<uint32_t>(nr), F::kDeny);
  }
#ifdef __NR_clone3
  // clone3's flags sit in a user-memory struct a filter cannot read; ENOSYS makes
  // glibc fall back to clone, whose flags it can.
  p.JumpIf(BPF_JEQ, __NR_clone3, F::kNoSys);
#endif
  if (!runner) p.JumpIf(BPF_JEQ, __NR_clone, F::kCloneFlags);
  p.JumpIf(BPF_JEQ, __NR_socket, F::kSocketDomain);
  p.JumpIf(BPF_JEQ, __NR_socketpair, F::kSocketDomain, F::kAllow);
  p.Bind(F::kCloneFlags);
  p.Load(kArg0LowOffset);
  p.JumpIf(BPF_JSET, CLONE_THREAD, F::kAllow, F::kDeny);
  p.Bind(F::kSocketDomain);
  p.Load(kArg0LowOffset);
  p.JumpIf(BPF_JEQ, AF_UNIX, F::kAllow, F::kDeny);
  p.Bind(F::kAllow);
  p.Return(kRetAllow);
  p.Bind(F::kDeny);
  p.Return(kRetEperm);
  p.Bind(F::kNoSys);
  p.Return(kRetEnosys);
  return p.Finish();
}

Status InstallFilter(SandboxMode mode) {
  if (!kHaveFilter) return Status::FailedPrecondition("no seccomp filter is defined for this architecture");
  VIGIL_ASSIGN_OR_RETURN(std::vector<sock_filter> code, BuildFilter(mode));
  struct sock_fprog prog = {static_cast<unsigned short>(code.size()), code.data()};
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
    return Status::FromErrno(errno, "seccomp(SECCOMP_SET_MODE_FILTER)");
  }
  if (::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 2) return Status::Internal("the seccomp filter is not in effect");
  return Status::OK();
}

}  // namespace

Status EnterSandbox(SandboxMode mode) {
  VIGIL_ASSIGN_OR_RETURN(std::string status, ReadProcFile("/proc/self/status"));
  const std::string threads = StatusField(status, "Threads");
  if (threads != "1") {
    return Status::FailedPrecondition("the worker has " + (threads.empty() ? "an unknown number of" : threads) +
                                      " threads; the sandbox is entered with exactly one");
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return Status::FromErrno(errno, "PR_SET_NO_NEW_PRIVS");
  if (::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) return Status::Internal("no_new_privs is not set");
  VIGIL_RETURN_IF_ERROR(DropCapabilities().WithContext("capabilities"));
  return InstallFilter(mode);
}

#ifdef VIGIL_FAILPOINTS

namespace {

// A pid above the kernel's PID_MAX_LIMIT: without the filter, ptrace and
// process_vm_readv on it fail with ESRCH, never EPERM.
constexpr pid_t kNoSuchPid = 0x3fffffff;

std::string ErrnoName(int err) {
  const char* name = ::strerrorname_np(err);
  return name != nullptr ? name : std::to_string(err);
}

// The outcome of a fork-like call: the child exits at once.
std::string Forked(long pid) {
  if (pid == 0) ::_exit(0);
  if (pid < 0) return ErrnoName(errno);
  int st = 0;
  while (::waitpid(static_cast<pid_t>(pid), &st, 0) < 0 && errno == EINTR) {
  }
  return "ok";
}

std::string Socket(int domain, int type, int protocol) {
  int fd = ::socket(domain, type | SOCK_CLOEXEC, protocol);
  if (fd < 0) return ErrnoName(errno);
  ::close(fd);
  return "ok";
}

std::string SocketPair(int domain) {
  int fds[2];
  if (::socketpair(domain, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return ErrnoName(errno);
  ::close(fds[0]);
  ::close(fds[1]);
  return "ok";
}

struct ThreadProbe {
  std::string socket_inet;
  std::string fork;
};

void* RunThreadProbe(void* arg) {
  auto* t = static_cast<ThreadProbe*>(arg);
  t->socket_inet = Socket(AF_INET, SOCK_STREAM, 0);
  t->fork = Forked(::fork());
  return nullptr;
}

}  // namespace

std::string ProbeSandbox() {
  std::string out;
  auto add = [&out](const char* key, const std::string& value) {
    if (!out.empty()) out += ' ';
    out += key;
    out += '=';
    out += value.empty() ? "?" : value;
  };
  auto status = ReadProcFile("/proc/self/status");
  const std::string s = status.ok() ? *status : "";
  add("no_new_privs", StatusField(s, "NoNewPrivs"));
  add("seccomp", StatusField(s, "Seccomp"));
  add("cap_inh", StatusField(s, "CapInh"));
  add("cap_prm", StatusField(s, "CapPrm"));
  add("cap_eff", StatusField(s, "CapEff"));
  add("cap_bnd", StatusField(s, "CapBnd"));
  add("cap_amb", StatusField(s, "CapAmb"));

#ifdef SYS_fork
  add("fork", Forked(::syscall(SYS_fork)));
#endif
  {
    pid_t pid = ::vfork();
    if (pid == 0) ::_exit(0);
    add("vfork", Forked(pid));
  }
  add("clone", Forked(::fork()));  // glibc's fork is clone(SIGCHLD | ...)
#ifdef SYS_clone3
  {
    struct {
      uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
    } args = {};
    args.exit_signal = SIGCHLD;
    add("clone3", Forked(::syscall(SYS_clone3, &args, sizeof args)));
  }
#endif
  // A missing program: without the filter these fail with ENOENT, never EPERM.
  const char* missing = "/nonexistent/vigil-sandbox-probe";
  char* const argv[] = {const_cast<char*>(missing), nullptr};
  char* const envp[] = {nullptr};
  add("execve", ::execve(missing, argv, envp) == 0 ? "ok" : ErrnoName(errno));
  add("execveat", ::syscall(SYS_execveat, AT_FDCWD, missing, argv, envp, 0) == 0 ? "ok" : ErrnoName(errno));
  add("ptrace", ::ptrace(PTRACE_ATTACH, kNoSuchPid, nullptr, nullptr) == 0 ? "ok" : ErrnoName(errno));
  char byte = 0;
  struct iovec local = {&byte, 1};
  struct iovec remote = {&byte, 1};
  add("process_vm_readv", ::process_vm_readv(kNoSuchPid, &local, 1, &remote, 1, 0) >= 0 ? "ok" : ErrnoName(errno));
  add("process_vm_writev", ::process_vm_writev(kNoSuchPid, &local, 1, &remote, 1, 0) >= 0 ? "ok" : ErrnoName(errno));
  add("socket_inet", Socket(AF_INET, SOCK_STREAM, 0));
  add("socket_inet6", Socket(AF_INET6, SOCK_DGRAM, 0));
  add("socket_netlink", Socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
  add("socket_packet", Socket(AF_PACKET, SOCK_DGRAM, 0));
  add("socketpair_inet", SocketPair(AF_INET));
#ifdef SYS_io_uring_setup
  {
    char params[120] = {};  // struct io_uring_params
    long fd = ::syscall(SYS_io_uring_setup, 1, params);
    add("io_uring_setup", fd >= 0 ? "ok" : ErrnoName(errno));
    if (fd >= 0) ::close(static_cast<int>(fd));
  }
#endif
  add("socket_unix", Socket(AF_UNIX, SOCK_STREAM, 0));
  add("socketpair_unix", SocketPair(AF_UNIX));

  ThreadProbe t;
  pthread_t thread;
  int err = ::pthread_create(&thread, nullptr, RunThreadProbe, &t);
  add("thread", err == 0 ? "ok" : ErrnoName(err));
  if (err == 0) {
    ::pthread_join(thread, nullptr);
    add("thread_socket_inet", t.socket_inet);
    add("thread_fork", t.fork);
  }
  return out;
}

#endif  // VIGIL_FAILPOINTS

}  // namespace vigil::worker
