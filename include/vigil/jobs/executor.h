// Executors run one dispatched attempt and report what they know about it
// (classification.h). The real executor launches `vigil-worker` under hard
// limits (the worker layer); InProcessExecutor calls the provider in the
// calling process and exists for tests and for the job layer's own checks
// until then — it is never a production path.
// Thread safety: Execute may be called from one thread at a time per executor.
#pragma once

#include <functional>
#include <string>

#include "vigil/index/segment.h"
#include "vigil/jobs/classification.h"
#include "vigil/jobs/job_record.h"

namespace vigil::jobs {

// The attempt lock of one attempt (DESIGN.md section 6):
// `<dataset>/_staging/<attempt id>/attempt.lock`. The dispatcher holds it from
// before T3 until the result is recorded; a launched worker inherits it. When
// it can be taken, no process of the attempt is alive (termination proof).
std::string AttemptLockPath(const std::string& locator, const std::string& attempt_id);

struct ExecutionRequest {
  JobRecord job;
  AttemptIdentity attempt;
  index::ProgressFn progress;  // may be null
  int attempt_lock_fd = -1;    // the held attempt lock; a worker launcher passes it to the child
};

struct ExecutionOutcome {
  ExecutorReport report;
  std::string message;                        // sanitized by the store before it is persisted
  std::optional<int64_t> committed_version;   // on success
};

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs the attempt to completion (or to its proven or unproven end). Never throws.
  virtual ExecutionOutcome Execute(const ExecutionRequest& request) = 0;
};

// Calls the provider API directly: reopens the admitted version, revalidates
// the schema fingerprint (a mismatch is a complete invoked=false report), then
// invokes the provider with the job id and attempt id as transaction
// properties. Failpoint `executor.before_invoke` fires before invocation.
class InProcessExecutor : public Executor {
 public:
  ExecutionOutcome Execute(const ExecutionRequest& request) override;
};

}  // namespace vigil::jobs
