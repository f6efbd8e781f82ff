// The sandbox vigil-worker enters right after exec, before its handshake and
// long before any provider code (DESIGN.md section 6): no_new_privs, every
// capability dropped (bounding set where CAP_SETPCAP allows it, ambient,
// effective, permitted, inheritable), and a seccomp filter that refuses with
// EPERM process creation (fork, vfork, clone without CLONE_THREAD, execve,
// execveat), ptrace, process_vm_readv/writev, sockets of any family but
// AF_UNIX, io_uring (it can open sockets without socket(2)), and every syscall
// of another ABI (x32, i386); clone3 fails with ENOSYS so glibc creates
// threads with clone(CLONE_THREAD). Threads keep working.
// The Lance runner's sandbox (SandboxMode::kLanceRunner, for a job of an external
// Lance table) is the same except that fork, vfork, clone and execve stay allowed:
// the worker starts `node lance_runner.mjs`, which inherits every other part of it
// (no privileges, no capabilities, no sockets but AF_UNIX, no ptrace, the worker's
// cgroup and rlimits).
//
// Thread safety: EnterSandbox changes per-thread state (no_new_privs,
// capabilities, the filter) and so refuses to run unless the process has
// exactly one thread; threads started afterwards inherit everything.
#pragma once

#include <string>

#include "vigil/common/status.h"

namespace vigil::worker {

// Enters the sandbox; every step is read back. On error the process is in a
// partial state and must exit without running provider code: FailedPrecondition
// when the process has more than one thread or the architecture has no filter,
// otherwise an error naming the failed step (and its errno).
enum class SandboxMode { kProvider, kLanceRunner };
Status EnterSandbox(SandboxMode mode = SandboxMode::kProvider);

#ifdef VIGIL_FAILPOINTS
// Test builds: tries each operation the sandbox refuses and two it allows, and
// reads /proc/self/status. Returns space-separated key=value pairs: the errno
// name of each attempt ("ok" when it succeeded), and no_new_privs, seccomp,
// cap_inh/cap_prm/cap_eff/cap_bnd/cap_amb as /proc/self/status shows them.
std::string ProbeSandbox();
#endif

}  // namespace vigil::worker
