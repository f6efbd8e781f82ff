// Running one dispatched attempt and recording its classified result (T4-T8),
// shared by the leader's runner (attempts it runs on its own node) and the node
// agent (attempts a leader assigned to another node), and the set of attempts a
// process has claimed for execution, so that no attempt runs twice in it.
// Thread safety: ExecuteAttempt runs on the calling thread (store and executor are
// thread-safe); ClaimedAttempts is thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "vigil/common/env.h"
#include "vigil/common/file_lock.h"
#include "vigil/common/mutex.h"
#include "vigil/common/status.h"
#include "vigil/jobs/executor.h"
#include "vigil/jobs/job_store.h"

namespace vigil::jobs {

struct AttemptRun {
  JobRecord running;  // the job as Dispatch left it (RUNNING with the attempt)
  FileLock lock;      // the attempt lock, held by this process
  std::string actor;  // recorded on the result's event
  int64_t reconcile_backoff_s = Backoff{}.initial_s;
  // Set when the attempt ran on a node other than its leader's: an UNKNOWN result is due
  // for the leader's reconciler at once.
  bool due_now = false;
  // The attempt's claims and its result are judged at env's time; null: at `dispatched_at_ms`
  // (tests with a logical clock).
  Env* env = nullptr;
  int64_t dispatched_at_ms = 0;
};

// Executes the attempt, classifies the report and records it with a CAS under the attempt's
// own leader epoch (CommitConflict once that epoch lost the lease, or the job moved on).
// The lock is released; its file is removed unless the outcome is UNKNOWN (the reconciler's).
Result<JobRecord> ExecuteAttempt(JobStore* store, Executor* executor, AttemptRun run);

// Attempt ids this process runs or ran. A claim is taken before the attempt can be RUNNING
// (the runner) or before it is executed (the node agent), and stays until the job is seen
// no longer running it.
class ClaimedAttempts {
 public:
  // False when `attempt_id` is already claimed.
  bool Claim(const std::string& attempt_id);
  // The attempt's execution in this process ended (its result recorded or not).
  void Finished(const std::string& attempt_id);
  // A mark to take before listing the attempts RUNNING in the store.
  uint64_t Mark();
  // Forgets claims that finished before `mark` and are not in `running` (the RUNNING attempts
  // listed after the mark): those jobs left the attempt, which never runs again.
  void Forget(const std::set<std::string>& running, uint64_t mark);
  size_t size() const;

 private:
  static constexpr uint64_t kExecuting = ~uint64_t{0};
  mutable Mutex mu_;
  uint64_t marks_ VIGIL_GUARDED_BY(mu_) = 0;
  // attempt id -> the mark its execution finished at, or kExecuting
  std::map<std::string, uint64_t> claims_ VIGIL_GUARDED_BY(mu_);
};

}  // namespace vigil::jobs
