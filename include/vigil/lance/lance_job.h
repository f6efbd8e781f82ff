// One admitted index job on an external Lance table, run by the isolated worker
// through the Lance runner: CREATE / REPLACE (create_index), DROP (drop_index),
// BUILD (optimize_index), each stating the admitted version so a dataset another
// writer changed since is STALE_ADMISSION before anything is written. Thread
// safety: reentrant.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "vigil/common/status.h"
#include "vigil/index/provider_job.h"
#include "vigil/lance/lance_runner.h"

namespace vigil::lance {

struct LanceJobResult {
  int64_t committed_version = 0;
};

struct LanceJobCall {
  LanceRunnerOptions runner;
  // Called with each progress phase (OPENING, BUILDING, DROPPING, OPTIMIZING, STOPPED_AT).
  std::function<void(std::string_view phase)> progress;
  // Test hook: the runner holds at this point (before_commit, after_commit); empty: none.
  std::string stop_at;
  // Test hook: the runner fails with this untyped message right after LanceDB's commit; empty: none.
  std::string fail_after_commit;
};

// The runner request of `job` (its op, dataset, admitted version, name, column, type and
// properties). InvalidArgument for a job no Lance operation serves.
Result<nlohmann::json> LanceRequest(const index::JobRequest& job);

// Runs `job`. `*invoked` becomes true once the runner announced its write (a phase after
// OPENING): a failure before it proves nothing was written.
Result<LanceJobResult> RunLanceJob(const index::JobRequest& job, const LanceJobCall& call, bool* invoked);

}  // namespace vigil::lance
