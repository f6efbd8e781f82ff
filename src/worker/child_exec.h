// The forked child of the worker supervisor, from fork to exec. The supervisor
// is multi-threaded, so this code may make ONLY async-signal-safe calls
// (signal-safety(7)): no allocation, no locks, no logging, nothing from the C++
// library that may allocate or lock. Everything it needs is prepared by the
// parent before fork, in a ChildPlan; failures end the child with an exit code.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstddef>

namespace vigil::worker {

// Descriptor numbers in the worker (its command line names them).
constexpr int kChildIn = 3;
constexpr int kChildOut = 4;
constexpr int kChildSecret = 5;
constexpr int kChildLock = 6;
constexpr int kChildExecStatus = 7;  // close-on-exec: EOF tells the parent exec succeeded
constexpr int kChildFds = 8;
constexpr int kMaxCgroupMarkers = 4;

// Everything the forked child needs, prepared before fork; the pointers stay valid until
// the fork returns in the parent.
struct ChildPlan {
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int fds[kChildFds];                           // source descriptor for each child number; -1: closed
  int go_fd = -1;                               // cgroup barrier: wait for one byte
  int go_write_fd = -1;                         // the parent's end, closed first so the parent's close reads as EOF
  const char* markers[kMaxCgroupMarkers] = {};  // WorkerCgroup::membership_markers()
  size_t marker_lens[kMaxCgroupMarkers] = {};
  int markers_count = 0;
  pid_t parent = 0;
  rlim_t address_space = RLIM_INFINITY;
  rlim_t open_files = 1024;
};

// Runs in the forked child: default signal dispositions, PR_SET_PDEATHSIG, the cgroup
// barrier and membership check, the descriptors renumbered and the rest closed, the
// rlimits, then execve. Exits with a kExit* code (protocol.h) when a step fails.
[[noreturn]] void ChildMain(const ChildPlan& plan);

}  // namespace vigil::worker
