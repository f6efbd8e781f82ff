// The [worker] settings of vigil.toml: the limits of one isolated index worker
// (memory, runtime, processes, files, threads, its cgroup), and the default of
// its thread count: the cores this process may run on.
#include "common/config_settings.h"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace vigil {

namespace config_detail {

std::vector<Setting> WorkerSettings() {
  return {
      {"worker", "memory_bytes", Kind::kSize, 64 * kMiB, kPiB,
       "Hard memory limit of one index worker: cgroup memory.max when a cgroup is\n"
       "used, else RLIMIT_AS (address space, which counts thread stacks and malloc\n"
       "arenas too). 8GiB holds an IVF_PQ build over 10M x 128-d float32 vectors\n"
       "(4.8GiB raw) with room for codes and training buffers, and stays below the\n"
       "memory of a typical development machine. Bytes or \"<n>KiB|MiB|GiB|TiB\".",
       VIGIL_NUM_(worker, memory_bytes)},

      {"worker", "max_runtime_seconds", Kind::kDuration, 1, 30 * kDay,
       "Wall-clock deadline of one worker; it is killed and reaped after it and the\n"
       "job's outcome is UNKNOWN. One hour covers a whole-snapshot build at the\n"
       "default caps on one node. Seconds or \"<n>s|m|h|d\".",
       VIGIL_NUM_(worker, max_runtime_seconds)},

      {"worker", "pids_max", Kind::kCount, kPidsHeadroom, 4'194'304,
       "cgroup pids.max of one worker (every thread counts). Must be at least\n"
       "omp_threads + 16 (main thread, BLAS and runtime helpers); 256 stops a\n"
       "runaway thread or fork loop long before the host's limits.",
       VIGIL_NUM_(worker, pids_max)},

      {"worker", "cgroup_parent", Kind::kPath, 0, 0,
       "Absolute path of an operator-delegated cgroup v2 directory (for example\n"
       "\"/sys/fs/cgroup/vigil\" with memory and pids in its cgroup.subtree_control);\n"
       "each worker gets its own child cgroup there before it runs provider code.\n"
       "\"v1\": child cgroups below this process's own cgroup v1 memory and pids\n"
       "cgroups. Empty: no cgroup, rlimits only.",
       VIGIL_STR_(worker, cgroup_parent)},

      {"worker", "require_cgroup", Kind::kBool, 0, 0,
       "true refuses mutation when no usable cgroup boundary exists (production\n"
       "rule of seed 000 section 6); false accepts rlimits alone, which suits an\n"
       "embedded root. `vigil doctor` says which applies on this machine.",
       VIGIL_BOOL_(worker, require_cgroup)},

      {"worker", "nofile", Kind::kCount, 16, 1'048'576,
       "RLIMIT_NOFILE of one worker. 1024 is the usual soft limit, always settable\n"
       "without privilege; a build reads a table's fragments one at a time.",
       VIGIL_NUM_(worker, nofile)},

      {"worker", "omp_threads", Kind::kCount, 1, kMaxOmpThreads,
       "Threads of one worker's index build: OpenMP threads (OMP_NUM_THREADS) of an\n"
       "IVF_PQ build, BLAS staying single-threaded; an FTS build indexes its native\n"
       "postings on a second thread when this is 2 or more. Default: the cores this\n"
       "process may run on (its CPU affinity; the value below is this machine's), at\n"
       "most pids_max - 16. Lower it to leave cores to queries on the same machine.",
       VIGIL_NUM_(worker, omp_threads)},
  };
}

}  // namespace config_detail

using config_detail::kMaxOmpThreads;
using config_detail::kPidsHeadroom;

uint32_t UsableCores() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return static_cast<uint32_t>(std::max(1, CPU_COUNT(&set)));
  return std::max(1u, std::thread::hardware_concurrency());
}

uint32_t DefaultOmpThreads(uint32_t pids_max) {
  const uint64_t room = pids_max > kPidsHeadroom ? pids_max - kPidsHeadroom : 1;
  return static_cast<uint32_t>(std::max<uint64_t>(1, std::min({uint64_t{UsableCores()}, room, kMaxOmpThreads})));
}

}  // namespace vigil
