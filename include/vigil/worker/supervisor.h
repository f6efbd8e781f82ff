// The worker supervisor (DESIGN.md section 6): launches one vigil-worker per
// provider call from a long-lived forking thread (PR_SET_PDEATHSIG fires when
// the forking thread exits), under RLIMIT_AS / RLIMIT_NOFILE / RLIMIT_CORE=0,
// with only the protocol pipes and the attempt lock inherited, an allowlisted
// environment and optionally its own cgroup (memory and pids limits) entered
// before exec; the worker enters its sandbox (worker/sandbox.h) before the
// handshake. Enforces a wall-clock deadline by SIGKILL and always reaps.
// The reap is the termination proof. What the supervisor learned becomes a
// LaunchResult (seed 000 section 7.4 classification input):
//   - failed_before_request: launch, cgroup placement, the worker's sandbox,
//     handshake or request delivery failed before a complete request could be
//     read: proves no invocation (a sandbox failure is FailedPrecondition);
//   - complete: an identity-matched response arrived (its `invoked` and typed code count);
//   - otherwise UNKNOWN: EOF, signal, OOM, deadline, corruption or identity mismatch
//     after the request was delivered.
// Thread safety: Run may be called from several threads; at most `concurrency`
// run at once, more are refused as Busy before launch.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "vigil/common/env.h"
#include "vigil/common/status.h"
#include "vigil/worker/cgroup.h"
#include "vigil/worker/protocol.h"

namespace vigil::worker {

// Address-space limit of a worker. Measured (vigil-worker, OMP_NUM_THREADS=1,
// MALLOC_ARENA_MAX=2): VmPeak ~56 MiB idle after exec, ~0.3 GiB while building
// IVF_PQ over 20,000 x 64 floats (OpenMP and FAISS threads and their arenas,
// the training sample, the codes). 8 GiB leaves room for builds over a few GiB
// of vectors; raise it for larger tables.
constexpr uint64_t kDefaultAddressSpaceBytes = 8ull << 30;

struct SupervisorOptions {
  std::string worker_path;                                   // empty: DefaultWorkerPath()
  uint64_t address_space_bytes = kDefaultAddressSpaceBytes;  // RLIMIT_AS; 0 = unlimited
  uint64_t open_files = 1024;                                // RLIMIT_NOFILE
  int omp_threads = 1;                                       // OMP_NUM_THREADS of the worker
  int concurrency = 1;
  std::chrono::milliseconds handshake_timeout{10'000};
  CgroupOptions cgroup;
  // Refuse to run (Create fails, CheckCapability fails) without a usable cgroup.
  bool require_cgroup = false;
  // The worker's stderr (appended; created 0600); empty: /dev/null.
  std::string stderr_path;
  // false launches workers without their sandbox, the benchmark's baseline;
  // test builds (VIGIL_FAILPOINTS) only: Create refuses it elsewhere.
  bool sandbox = true;
  // The clock of every launch's deadlines and the sleeps of its reaping and cgroup removal.
  Env* env = Env::Default();
};

struct LaunchRequest {
  Request request;                                   // secret_follows is set by Run from `secret`
  std::string secret;                                // optional; sent only over the secret pipe; zeroized by Run
  int attempt_lock_fd = -1;                          // held attempt lock; the worker inherits it
  std::chrono::milliseconds timeout{3'600'000};      // wall-clock limit from launch
  std::function<void(const Progress&)> on_progress;  // called on the Run thread
  // Answers the worker's version catalog calls (on the Run thread); set, the request asks
  // the worker to commit through it (Request::version_catalog).
  std::function<CatalogAnswer(const CatalogCall&)> on_catalog_call;
  std::function<void(pid_t)> on_launched;  // after the handshake, on the Run thread
};

struct LaunchResult {
  bool failed_before_request = false;
  bool complete = false;
  Response response;  // when complete
  Status error;       // why not complete (never contains the secret)
  pid_t pid = -1;
  bool reaped = false;  // the child was waited for: nothing of it runs any more
  int wait_status = 0;  // from waitpid when reaped
  bool deadline_exceeded = false;
  bool oom_killed = false;
  bool in_cgroup = false;
  std::chrono::microseconds handshake_latency{0};  // fork to worker handshake received
};

// The vigil-worker next to the running executable, else the one in the build
// tree this library was built in.
std::string DefaultWorkerPath();

class Supervisor {
 public:
  // Starts the forking thread. FailedPrecondition when require_cgroup is set
  // and no usable cgroup exists; NotFound when the worker executable is missing.
  static Result<std::unique_ptr<Supervisor>> Create(SupervisorOptions options);
  // Kills and reaps running workers, then stops the forking thread.
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Runs one worker for `request` to its end (response, death or deadline) and reaps it.
  LaunchResult Run(LaunchRequest request);
  // Kills the running workers and waits until they are reaped; every later Run fails before
  // its request. Thread-safe.
  void KillAll();
  // OK when workers can run as configured (the cgroup is usable where required).
  Status CheckCapability() const;
  bool uses_cgroup() const { return cgroup_.has_value(); }
  const SupervisorOptions& options() const { return options_; }

 private:
  class ForkThread;  // src/worker/fork_thread.h
  class Launch;      // src/worker/launch.h
  explicit Supervisor(SupervisorOptions options);

  SupervisorOptions options_;
  std::optional<CgroupPlacement> cgroup_;
  Status cgroup_status_;
  std::unique_ptr<ForkThread> fork_thread_;
};

}  // namespace vigil::worker
