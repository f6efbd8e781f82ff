// The client side of the embedded leader: commands that admit or wait for
// index jobs call EnsureLeader, which starts `vigil supervise` in the
// background when no live leader lease exists; `vigil supervise --stop` and
// `vigil doctor` find the running one through its leader lock. Single-threaded.
#pragma once

#include <string>

#include <optional>

#include "vigil/common/process_identity.h"
#include "vigil/common/status.h"
#include "vigil/jobs/job_store.h"
#include "vigil/storage/root.h"

namespace vigil::cli {

// `<root>/_meta/supervise.log`
std::string SuperviseLogPath(const Root& root);

// `<root>/_meta/leader.lock`: held by the root's running supervisor.
std::string LeaderLockPath(const Root& root);

// What the root's running leader recorded in its leader lock: which process it is, what runs
// it ("supervise": a background supervisor; "serve": `vigil serve`) and the checksum of the
// vigil.toml it loaded.
struct RunningLeader {
  ProcessIdentity process;
  std::string kind = "supervise";
  std::string config_checksum;

  bool is_server() const { return kind == "serve"; }
};

// The checksum of the root's vigil.toml bytes; "none" when the root has no vigil.toml.
Result<std::string> ConfigChecksum(const Root& root);
// Records this process, its `kind` and `config_checksum` in the held leader lock `lock_fd`.
Status RecordRunningLeader(int lock_fd, const std::string& kind, const std::string& config_checksum);
// The supervisor holding the root's leader lock; nullopt when none runs.
Result<std::optional<RunningLeader>> FindRunningLeader(const Root& root);
// Asks the running supervisor to stop (SIGTERM to exactly that process: it dispatches nothing
// more, lets running attempts finish and records them) and waits until its lock is free.
// OK at once when none runs; DeadlineExceeded after `timeout_ms`; FailedPrecondition, touching
// nothing, when the leader is a `vigil serve` (a server is stopped by its own operator).
Status StopLeader(const Root& root, int64_t timeout_ms);

// Returns once a live leader lease exists, starting `<this executable> --root R supervise`
// when none does. DeadlineExceeded when no leader appeared within `timeout_ms`.
Status EnsureLeader(const Root& root, jobs::JobStore& store, int64_t timeout_ms = 15'000);

}  // namespace vigil::cli
