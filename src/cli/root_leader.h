// The job leader of a root run in this process, shared by `vigil supervise` and
// `vigil serve`. On an embedded root it takes the root's leader lock (so exactly
// one process leads, and the lock's holder knows any other lease holder is
// dead) and records itself there for `vigil doctor` and `supervise --stop`. With
// a shared [meta] url no lock can prove another node dead: the lease in the
// store alone decides, and a new leader waits for a dead one's lease to lapse.
// Either way it runs a jobs::Leader with the settings of vigil.toml.
// Single-threaded per call.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "vigil/common/config.h"
#include "vigil/common/status.h"
#include "vigil/jobs/attempt_execution.h"
#include "vigil/jobs/job_store.h"
#include "vigil/jobs/leader.h"
#include "vigil/storage/root.h"

namespace vigil::cli {

struct RootLeaderOptions {
  // "supervise" or "serve": names the lease holder ("<kind>:<host>:<pid>:<random>") and is
  // recorded in the leader lock (RunningLeader::kind).
  std::string kind = "supervise";
  int64_t idle_exit_ms = 0;     // 0: run until stopped
  std::string config_checksum;  // of the vigil.toml `config` came from (ConfigChecksum)
  std::string node_id;          // this node in the store's registry; empty: the host name
  std::string node_address;     // where the node serves ("host:port"), shown by SHOW NODES
  int64_t node_epoch = 0;       // > 0: the node registered itself with this epoch
  // Called once the leader exists (to make it stoppable), before it starts.
  std::function<void(jobs::Leader*)> on_started;
  // The attempts this process runs, shared with its node agent (null: no agent).
  jobs::ClaimedAttempts* claimed = nullptr;
  // Where the reconciler counts its results (null: nowhere); outlives the leader.
  jobs::ReconcileResults* reconcile_results = nullptr;
};

// A `vigil-worker` executor under the limits of vigil.toml's [worker] section.
Result<std::unique_ptr<jobs::Executor>> MakeWorkerExecutor(const Root& root, const Config& config);

// Runs the leader until it is stopped or idles out. OK (doing nothing) when another process
// holds the root's leader lock; Busy naming the holder when another process holds a live lease.
Status RunRootLeader(const Root& root, const Config& config, jobs::JobStore& store, const RootLeaderOptions& options);

}  // namespace vigil::cli
