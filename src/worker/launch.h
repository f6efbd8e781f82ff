// One run of vigil-worker for Supervisor::Run, in phases: admit (concurrency
// slot, deadlines), plan (cgroup, pipes, command line, environment), fork,
// place in the cgroup, await exec, handshake, send the request and the secret,
// read progress and the one response, reap and classify into a LaunchResult
// (supervisor.h says what each outcome proves). A phase before the request
// was delivered fails the launch as failed_before_request, after reaping any
// child. Internal to the supervisor. Not thread-safe: one launch per Run call.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/common/unique_fd.h"
#include "vigil/worker/cgroup.h"
#include "vigil/worker/protocol.h"
#include "vigil/worker/supervisor.h"
#include "worker/child_exec.h"

namespace vigil::worker {

class Supervisor::Launch {
 public:
  // `supervisor` and `request` outlive the launch; the request's secret is zeroized when
  // the launch ends.
  Launch(Supervisor* supervisor, LaunchRequest* request);
  ~Launch();
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;

  // Runs every phase until the worker answered, died or hit its deadline, and reaps it.
  LaunchResult Run();

 private:
  // Blocks SIGPIPE on the launching thread while it lives, so a write to a dead worker
  // fails with EPIPE instead of killing the supervisor; discards a SIGPIPE raised meanwhile.
  class SigpipeBlock {
   public:
    SigpipeBlock();
    ~SigpipeBlock();

   private:
    sigset_t pipe_, old_;
    bool was_pending_ = false;
  };

  // A concurrency slot, released when the launch ends (after its pipes and cgroup).
  class Slot {
   public:
    ~Slot();
    bool Acquire(ForkThread* fork_thread, int concurrency);

   private:
    ForkThread* fork_thread_ = nullptr;
  };

  Status Admit();          // the secret's bound, a concurrency slot, the deadlines
  Status Plan();           // the cgroup, pipes, command line, environment and ChildPlan
  Status Fork();           // on the fork thread; closes the child's pipe ends
  Status PlaceInCgroup();  // move and verify, then release the child's barrier
  Status AwaitExec();      // EOF on the exec-status pipe: exec succeeded
  Status Handshake();      // both ways; records the handshake latency
  Status SendRequest();    // the request frame, then the secret on its own pipe
  // Progress until the one identity-matched response (result_.complete), else why not;
  // `kill_now` when the worker must not be waited for.
  Status ReadResponses(bool* kill_now);
  // Waits for the child to exit until the deadline (unless `kill_now`), kills it
  // otherwise, reaps it and removes its cgroup.
  void Reap(bool kill_now);

  // The launch failed before the request was delivered: proves no invocation.
  LaunchResult FailedBeforeRequest(Status st);
  // The same after fork: kills and reaps the child first; a sandbox exit is typed.
  LaunchResult FailedAfterFork(Status st);
  // The result after the request was delivered and the child reaped.
  LaunchResult Finished(const Status& incomplete);

  Supervisor& supervisor_;
  const SupervisorOptions& options_;
  LaunchRequest& request_;
  SigpipeBlock no_sigpipe_;
  Slot slot_;  // before the pipes and the cgroup: released after them
  LaunchResult result_;
  // On options_.env's monotonic clock, in microseconds.
  int64_t start_ = 0;
  int64_t deadline_ = 0;
  int64_t handshake_deadline_ = 0;
  uint64_t cgroup_memory_ = 0;
  std::optional<WorkerCgroup> cgroup_;
  UniqueFd in_r_, in_w_, out_r_, out_w_, secret_r_, secret_w_, status_r_, status_w_, go_r_, go_w_;
  UniqueFd devnull_, err_log_;
  std::vector<std::string> args_, env_;
  std::vector<char*> argv_, envp_;
  ChildPlan plan_;
  pid_t pid_ = -1;
  UniqueFd pidfd_;
  FrameReader reader_;
};

}  // namespace vigil::worker
