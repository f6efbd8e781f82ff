#include "vigil/jobs/attempt_execution.h"

#include <functional>
#include <memory>
#include <utility>

#include "vigil/catalog/version_store.h"
#include "vigil/common/failpoint.h"
#include "vigil/common/logging.h"

namespace vigil::jobs {

namespace {

// Forwards an attempt's progress to the job record: at most one write per phase change or
// per 250 ms; a failed write only loses progress.
index::ProgressFn ProgressRecorder(JobStore* store, Env* env, const JobRecord& job) {
  auto last = std::make_shared<std::pair<std::string, int64_t>>("", 0);
  const int64_t job_id = job.job_id;
  const std::string attempt_id = job.attempt ? job.attempt->attempt_id : "";
  return [store, env, job_id, attempt_id, last](std::string_view phase, uint64_t done, uint64_t total) {
    const int64_t now = env->MonotonicMs();
    if (phase == last->first && now - last->second < 250 && done < total) return;
    last->first = std::string(phase);
    last->second = now;
    (void)store->RecordProgress(job_id, attempt_id, std::string(phase), static_cast<int64_t>(done),
                                static_cast<int64_t>(total));
  };
}

}  // namespace

Result<JobRecord> ExecuteAttempt(JobStore* store, Executor* executor, AttemptRun run) {
  const JobRecord& running = run.running;
  if (!running.attempt) return Status::Internal("job " + std::to_string(running.job_id) + " has no attempt");
  const AttemptIdentity& attempt = *running.attempt;
  const int lock_fd = run.lock.fd();
  const int64_t job_id = running.job_id;
  // The attempt lock records the worker, so that a later leader can stop exactly it.
  auto record_process = [lock_fd, job_id](pid_t pid) {
    Result<ProcessIdentity> who = IdentifyProcess(pid);
    Status st = who.ok() ? RecordAttemptProcess(lock_fd, *who) : who.status();
    if (!st.ok())
      VIGIL_LOG_WARN("job {}: cannot record its worker {} in the attempt lock: {}", job_id, pid, st.ToString());
  };
  // The attempt's claims are judged on the clock its result is recorded at.
  std::function<int64_t()> clock = [t = run.dispatched_at_ms] { return t; };
  if (run.env != nullptr) clock = [env = run.env] { return env->NowMs(); };
  // Progress throttling and the lock's removal: the attempt's Env (the process's under a logical clock).
  Env* env = run.env != nullptr ? run.env : Env::Default();
  // An external Lance table commits through LanceDB alone: it has no version catalog.
  std::shared_ptr<VersionCatalog> versions;
  if (running.spec.engine == index::TableEngine::kVigil) {
    versions =
        catalog::TableDatasetOptions(&store->catalog(), running.spec.table_incarnation, std::move(clock)).versions;
  }
  ExecutionOutcome outcome =
      executor->Execute({running, attempt, ProgressRecorder(store, env, running), lock_fd, record_process, versions});
  Classification c = Classify(running.spec.operation, running.spec.if_mode, outcome.report);
  AttemptReport report;
  report.attempt_id = attempt.attempt_id;
  report.result = c.result;
  report.observed_change = c.observed_change;
  report.invoked = outcome.report.complete && outcome.report.invoked;
  if (outcome.report.code != StatusCode::kOk || !outcome.report.complete) {
    // A complete response or a failure before the request names its typed code.
    const bool typed = outcome.report.complete || outcome.report.failed_before_request;
    report.error_code = typed ? std::string(StatusCodeName(outcome.report.code)) : "UNKNOWN_OUTCOME";
    report.error_message = outcome.message;
  }
  report.committed_version = outcome.committed_version;
  report.reconcile_backoff_s = run.reconcile_backoff_s;
  report.due_now = run.due_now;
  // Crash cut C6: the attempt ran, its result is not recorded.
  if (Status fp = failpoint::Hit("runner.before_record"); !fp.ok()) return fp;
  // The result is recorded at the time it is known, not at the dispatch time.
  const int64_t recorded_at = run.env != nullptr ? run.env->NowMs() : run.dispatched_at_ms;
  Cas result_cas{running.job_id, running.revision, attempt.leader_epoch, run.actor, recorded_at};
  VIGIL_ASSIGN_OR_RETURN(JobRecord done, store->RecordResult(result_cas, report));
  // A known outcome needs no termination proof: the lock goes (an UNKNOWN one keeps it
  // for the reconciler, which removes it after attribution).
  run.lock.Release();
  if (done.state.outcome != Outcome::kUnknown) RemoveAttemptLock(done.spec, attempt.attempt_id, env->fs());
  return done;
}

bool ClaimedAttempts::Claim(const std::string& attempt_id) {
  MutexLock lock(&mu_);
  return claims_.emplace(attempt_id, kExecuting).second;
}

void ClaimedAttempts::Finished(const std::string& attempt_id) {
  MutexLock lock(&mu_);
  auto it = claims_.find(attempt_id);
  if (it != claims_.end()) it->second = marks_;
}

uint64_t ClaimedAttempts::Mark() {
  MutexLock lock(&mu_);
  return ++marks_;
}

void ClaimedAttempts::Forget(const std::set<std::string>& running, uint64_t mark) {
  MutexLock lock(&mu_);
  for (auto it = claims_.begin(); it != claims_.end();) {
    it = it->second < mark && running.count(it->first) == 0 ? claims_.erase(it) : std::next(it);
  }
}

size_t ClaimedAttempts::size() const {
  MutexLock lock(&mu_);
  return claims_.size();
}

}  // namespace vigil::jobs
