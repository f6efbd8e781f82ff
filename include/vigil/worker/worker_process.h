// The inside of vigil-worker: one handshake, one request, one provider call
// (create vector index, create scalar index, drop index), progress messages
// and one final response (DESIGN.md section 6). The worker reopens exactly the
// admitted version and revalidates the schema fingerprint and, for CREATE /
// REPLACE, the admitted caps and the request under them before it sets
// `invoked`; a mismatch is a complete invoked=false STALE_ADMISSION response.
// A failure after an allocation failed names the memory limit (worker.memory_bytes).
// When the request asks for it (version_catalog), every version the provider
// reads as newest or commits goes through the supervisor's catalog: a
// kCatalogCall frame, answered by one kCatalogAnswer (PipeVersionCatalog).
// Failpoints (armed only through the request), in call order:
//   worker.before_invoke   after revalidation, before `invoked` is set
//   worker.sandbox_probe   test builds: fires -> the provider is not invoked; the
//                          response carries ProbeSandbox() (worker/sandbox.h) as its message
//   worker.abort           after `invoked`: fires -> abort()
//   worker.allocate        after `invoked`: fires -> allocate until allocation fails
//   provider.after_segment_write, provider.after_commit   (inside the provider)
//   worker.after_provider  after the provider returned, before the response
//   worker.response_identity / worker.response_corrupt   a response for another
//                          attempt / a frame with a bad checksum (supervisor tests)
// Not thread-safe: one call per process.
#pragma once

#include <functional>
#include <string_view>

#include "vigil/common/env.h"
#include "vigil/common/mutex.h"
#include "vigil/storage/dataset.h"
#include "vigil/worker/protocol.h"

namespace vigil::worker {

struct WorkerFds {
  int in = -1;                 // frames from the supervisor
  int out = -1;                // frames to the supervisor
  int secret = -1;             // the secret pipe (read to EOF when the request announces a secret)
  int lock = -1;               // the attempt lock; a Lance runner keeps it open while it runs
  bool lance_sandbox = false;  // the Lance runner's sandbox: only a Lance job is served
};

// The dataset's version catalog seen from inside the worker: each call is a frame to the
// supervisor and its answer. An unanswered call (EOF, a bad frame) is an IOError: the
// claim's outcome is unknown to the worker. Thread-safe (one call at a time).
class PipeVersionCatalog : public VersionCatalog {
 public:
  // `reader` is the one FrameReader of `in`; all three outlive the catalog.
  PipeVersionCatalog(int in, int out, FrameReader* reader) : in_(in), out_(out), reader_(reader) {}
  Result<std::optional<CatalogVersion>> Latest() override;
  Status Claim(const VersionClaim& claim) override;

 private:
  Result<CatalogAnswer> Call(const CatalogCall& call);

  const int in_;
  const int out_;
  Mutex mu_;
  FrameReader* reader_ VIGIL_GUARDED_BY(mu_);
};

// Serves one request on `fds`; returns the process exit code (0 after a
// response was written, kExit* otherwise). The secret is zeroized before return. Progress
// frames are throttled on `env`'s monotonic clock.
int ServeOneRequest(const WorkerFds& fds, Env* env = Env::Default());

// The provider call of `job` (index::PrepareJob's revalidation, failpoints, index::InvokeJob)
// as a response for `attempt`; `secret` only scrubs messages. Progress goes to `progress` when set;
// `dataset` opens and commits the dataset (its version catalog).
Response ExecuteJob(const AttemptIdentity& attempt, const index::JobRequest& job, std::string_view secret,
                    const std::function<void(std::string_view, uint64_t, uint64_t)>& progress,
                    const DatasetOptions& dataset = {});

}  // namespace vigil::worker
