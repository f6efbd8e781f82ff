// The client side of the embedded leader: commands that admit or wait for
// index jobs call EnsureLeader, which starts `vigil supervise` in the
// background when no live leader lease exists. Single-threaded.
#pragma once

#include <string>

#include "vigil/common/status.h"
#include "vigil/jobs/job_store.h"
#include "vigil/storage/root.h"

namespace vigil::cli {

// `<root>/_meta/supervise.log`
std::string SuperviseLogPath(const Root& root);

// `<root>/_meta/leader.lock`: held by the root's running supervisor.
std::string LeaderLockPath(const Root& root);

// Returns once a live leader lease exists, starting `<this executable> --root R supervise`
// when none does. DeadlineExceeded when no leader appeared within `timeout_ms`.
Status EnsureLeader(const Root& root, jobs::JobStore& store, int64_t timeout_ms = 15'000);

}  // namespace vigil::cli
