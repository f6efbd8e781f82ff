// Per-worker cgroups (DESIGN.md section 6): each vigil-worker runs in its own
// cgroup with a memory and a process limit, created below an operator-delegated
// cgroup v2 parent, or, on hosts that offer only cgroup v1 memory and pids
// controllers, below this process's own cgroups in those two hierarchies.
// The supervisor moves the stopped child in and verifies it before the child
// may exec (the stop/move/verify/exec barrier). Removal is idempotent.
// Thread safety: WorkerCgroup is owned by one thread; free functions are thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "vigil/common/env.h"
#include "vigil/common/status.h"

namespace vigil::worker {

// The parent value that selects cgroup v1 below this process's own memory and pids cgroups.
constexpr std::string_view kCgroupV1Self = "v1";

struct CgroupOptions {
  // Empty: no cgroup. A directory on a cgroup2 file system: a delegated v2 parent
  // (memory and pids enabled in its cgroup.subtree_control). kCgroupV1Self: cgroup v1.
  std::string parent;
  uint64_t memory_max_bytes = 0;  // 0: the supervisor's address-space limit
  int64_t pids_max = 256;
};

enum class CgroupVersion { kV1, kV2 };

// Where worker cgroups go, resolved from CgroupOptions::parent.
struct CgroupPlacement {
  CgroupVersion version = CgroupVersion::kV2;
  // v2: one directory; v1: the memory parent and the pids parent (absolute paths).
  std::vector<std::string> parent_dirs;
  // The same parents as /proc/<pid>/cgroup names them (relative to the cgroup namespace root).
  std::vector<std::string> parent_paths;
};

// NotSupported (naming what is missing) when `parent` cannot hold worker cgroups:
// no such cgroup2 directory, controllers not delegated, no v1 memory/pids hierarchy.
Result<CgroupPlacement> ResolveCgroup(const std::string& parent);

// Resolves `options.parent` and creates, limits and removes a probe cgroup:
// OK only where a worker cgroup would really work.
Status ProbeCgroup(const CgroupOptions& options, Env* env = Env::Default());

// One worker's cgroup (one directory per hierarchy).
class WorkerCgroup {
 public:
  // Creates `<parent>/<name>` in each hierarchy and writes the limits (memory 0: unlimited).
  // Remove's waits for a reaped process to leave sleep on `env`.
  static Result<WorkerCgroup> Create(const CgroupPlacement& placement, const std::string& name,
                                     uint64_t memory_max_bytes, int64_t pids_max, Env* env = Env::Default());
  WorkerCgroup(WorkerCgroup&& other) noexcept;
  WorkerCgroup& operator=(WorkerCgroup&& other) noexcept;
  WorkerCgroup(const WorkerCgroup&) = delete;
  WorkerCgroup& operator=(const WorkerCgroup&) = delete;
  ~WorkerCgroup();  // Remove(), errors ignored

  // Moves `pid` into every directory of this cgroup.
  Status AddProcess(pid_t pid) const;
  // OK when /proc/<pid>/cgroup shows `pid` in this cgroup in every hierarchy.
  Status Verify(pid_t pid) const;
  // Substrings of /proc/self/cgroup (":<path>\n") a member must show; for a
  // check without allocation in a forked child.
  const std::vector<std::string>& membership_markers() const { return markers_; }
  // Whether the kernel OOM-killed a process of this cgroup.
  bool OomKilled() const;
  // Removes the directories (they must be empty); missing ones are fine. Idempotent.
  Status Remove();

  const std::vector<std::string>& dirs() const { return dirs_; }

 private:
  WorkerCgroup() = default;
  CgroupVersion version_ = CgroupVersion::kV2;
  Env* env_ = Env::Default();
  std::vector<std::string> dirs_;
  std::vector<std::string> paths_;
  std::vector<std::string> markers_;
};

// Removes leftover worker cgroups `vigil-worker-<pid>-*` below the placement's
// parents whose supervisor <pid> is gone. Best effort.
void RemoveStaleCgroups(const CgroupPlacement& placement);

}  // namespace vigil::worker
