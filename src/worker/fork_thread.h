// The supervisor's long-lived thread that forks every worker (PR_SET_PDEATHSIG
// fires when the forking thread exits, so it must outlive the workers), plus
// the bookkeeping of running workers: the concurrency slots and the pids to
// kill when the supervisor goes away. Internal to the supervisor.
// Thread safety: thread-safe.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <deque>
#include <set>
#include <thread>

#include "vigil/common/mutex.h"
#include "vigil/common/status.h"
#include "vigil/worker/supervisor.h"
#include "worker/child_exec.h"

namespace vigil::worker {

class Supervisor::ForkThread {
 public:
  ForkThread();
  // Stops the thread; running workers must have been reaped (KillAllAndWait).
  ~ForkThread();
  ForkThread(const ForkThread&) = delete;
  ForkThread& operator=(const ForkThread&) = delete;

  // Forks on this thread; the child runs ChildMain(plan). The pid counts as running
  // until Reaped.
  Result<pid_t> Fork(const ChildPlan& plan);
  // Takes one of `concurrency` slots; false when all are taken or the supervisor stops.
  bool TryAcquire(int concurrency);
  void Release();
  void Reaped(pid_t pid);
  // Kills every running worker, refuses new slots and waits until every slot is released.
  void KillAllAndWait();

 private:
  struct Task {
    const ChildPlan* plan;
    bool done = false;
    pid_t pid = -1;
    int err = 0;
  };

  void Loop();

  Mutex mu_;
  std::condition_variable cv_;
  std::deque<Task*> tasks_ VIGIL_GUARDED_BY(mu_);
  std::set<pid_t> running_ VIGIL_GUARDED_BY(mu_);
  int active_ VIGIL_GUARDED_BY(mu_) = 0;
  bool stop_ VIGIL_GUARDED_BY(mu_) = false;
  bool stop_runs_ VIGIL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace vigil::worker
