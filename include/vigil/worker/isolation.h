// A probe of the isolation this machine offers an index worker (DESIGN.md
// section 6): cgroup v2 (unified or hybrid) with a writable, delegated
// subtree and its controllers; cgroup v1 memory and pids hierarchies writable
// below this process's own cgroup; and, tried in a forked child,
// PR_SET_PDEATHSIG, RLIMIT_AS / NOFILE / CORE, non-dumpable and close_range.
// The probe only reads, except that it creates and removes one empty child
// cgroup per writable candidate and forks one short-lived child.
//
// Thread safety: ProbeIsolation may be called from any thread; it forks, so
// the child only makes async-signal-safe calls. Reports are plain values.
#pragma once

#include <string>
#include <vector>

#include "vigil/common/config.h"

namespace vigil::worker {

struct CgroupV2Probe {
  bool mounted = false;        // a cgroup2 file system is mounted
  bool unified = false;        // it is the only hierarchy (/sys/fs/cgroup is cgroup2)
  std::string mount;           // its mount point, e.g. /sys/fs/cgroup or /sys/fs/cgroup/unified
  std::string own_cgroup_dir;  // this process's cgroup directory in it
  std::string candidate_dir;   // the configured parent, else own_cgroup_dir
  bool candidate_exists = false;
  bool candidate_writable = false;               // cgroup.procs and cgroup.subtree_control writable
  bool child_created = false;                    // an empty child cgroup could be made (and removed)
  std::vector<std::string> controllers;          // cgroup.controllers of the candidate
  std::vector<std::string> subtree_controllers;  // cgroup.subtree_control of the candidate
  bool child_has_memory_max = false;             // the child had memory.max
  bool child_has_pids_max = false;               // the child had pids.max
  std::string detail;                            // why not, when something is missing
};

struct CgroupV1Probe {
  std::string controller;  // "memory" or "pids"
  bool mounted = false;
  std::string dir;        // this process's cgroup directory in that hierarchy
  bool writable = false;  // a child cgroup could be made (and removed) below dir
  std::string detail;
};

struct IsolationReport {
  CgroupV2Probe cgroup_v2;
  CgroupV1Probe cgroup_v1_memory;
  CgroupV1Probe cgroup_v1_pids;

  bool child_probe_ran = false;  // false: fork failed; the flags below are then false
  bool pdeathsig = false;        // PR_SET_PDEATHSIG took effect (read back)
  bool rlimit_as = false;        // RLIMIT_AS could be lowered
  bool rlimit_nofile = false;    // RLIMIT_NOFILE could be lowered
  bool rlimit_core = false;      // RLIMIT_CORE could be set to 0
  bool not_dumpable = false;     // PR_SET_DUMPABLE 0 took effect
  bool close_range = false;      // close_range(2) is implemented
  std::string child_detail;      // errno names of the calls that failed

  bool is_root = false;     // effective uid 0
  bool nproc_binds = true;  // false with CAP_SYS_ADMIN or CAP_SYS_RESOURCE: RLIMIT_NPROC is ignored

  // A cgroup v2 boundary with memory.max and pids.max is usable for workers.
  bool CgroupV2Usable() const;
  // Some cgroup (v2, or v1 memory and pids) can hold a worker's hard limits.
  bool CgroupAvailable() const;
};

// One line of `vigil doctor`'s isolation section.
struct IsolationCapability {
  std::string name;  // "cgroup.v2.delegated", "rlimit.as", ...
  bool available = false;
  std::string detail;  // what was found, or why not
};

// Probes this machine. `cgroup_parent` is worker.cgroup_parent: a delegated
// cgroup v2 directory to try, or empty / "v1" to try this process's own v2 cgroup.
IsolationReport ProbeIsolation(const std::string& cgroup_parent = "");

// Why a worker cannot be started with `worker`'s isolation settings on a
// machine described by `report` (probed with worker.cgroup_parent); empty when
// it can: a configured parent must be usable, require_cgroup needs a parent,
// and without a cgroup RLIMIT_AS must be settable.
std::string IsolationRefusal(const WorkerConfig& worker, const IsolationReport& report);

// The report as capability lines in a fixed order.
std::vector<IsolationCapability> DescribeIsolation(const IsolationReport& report);

}  // namespace vigil::worker
