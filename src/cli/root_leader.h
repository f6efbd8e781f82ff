// The job leader of an embedded root run in this process, shared by `vigil
// supervise` and `vigil serve`: it takes the root's leader lock (so exactly one
// process leads, and the lock's holder knows any other lease holder is dead),
// records itself there for `vigil doctor` and `supervise --stop`, and runs a
// jobs::Leader with the settings of vigil.toml. Single-threaded per call.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "vigil/common/config.h"
#include "vigil/common/status.h"
#include "vigil/jobs/job_store.h"
#include "vigil/jobs/leader.h"
#include "vigil/storage/root.h"

namespace vigil::cli {

struct RootLeaderOptions {
  std::string kind = "supervise";  // names the lease holder: "<kind>:<host>:<pid>:<random>"
  int64_t idle_exit_ms = 0;        // 0: run until stopped
  std::string config_checksum;     // of the vigil.toml `config` came from (ConfigChecksum)
  // Called once the leader exists (to make it stoppable), before it starts.
  std::function<void(jobs::Leader*)> on_started;
};

// Runs the leader until it is stopped or idles out. OK (doing nothing) when another process
// holds the root's leader lock or lease.
Status RunRootLeader(const Root& root, const Config& config, jobs::JobStore& store, const RootLeaderOptions& options);

}  // namespace vigil::cli
