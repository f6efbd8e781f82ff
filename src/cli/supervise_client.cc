#include "cli/supervise_client.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "vigil/jobs/root_jobs.h"
#include "vigil/storage/file_lock.h"

namespace vigil::cli {

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A live lease whose holder still holds the root's leader lock (a killed
// supervisor's lease stays unexpired for a while; its lock is gone at once).
Result<bool> LeaderLive(const Root& root, jobs::JobStore& store) {
  VIGIL_ASSIGN_OR_RETURN(jobs::LeaderLease lease, store.GetLeader());
  if (lease.holder.empty() || lease.expires_at_ms <= NowMs()) return false;
  Result<bool> held = FileLock::IsHeld(LeaderLockPath(root));
  if (held.status().code() == StatusCode::kNotFound) return false;
  return held;
}

Status StartSupervisor(const Root& root) {
  pid_t pid = ::fork();
  if (pid < 0) return Status::IOError("cannot start the supervisor: fork failed");
  if (pid == 0) {
    const std::string dir = root.path();
    ::dup2(STDERR_FILENO, STDOUT_FILENO);  // its notice is not part of the caller's results
    ::execl("/proc/self/exe", "vigil", "--root", dir.c_str(), "supervise", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);  // `supervise` detaches and returns once its daemon runs
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::Internal("`vigil supervise` failed to start; see " + SuperviseLogPath(root));
  }
  return Status::OK();
}

}  // namespace

std::string SuperviseLogPath(const Root& root) {
  return root.path() + "/" + std::string(kRootMetaDirName) + "/supervise.log";
}

std::string LeaderLockPath(const Root& root) {
  return root.path() + "/" + std::string(kRootMetaDirName) + "/leader.lock";
}

Status EnsureLeader(const Root& root, jobs::JobStore& store, int64_t timeout_ms) {
  VIGIL_ASSIGN_OR_RETURN(bool live, LeaderLive(root, store));
  if (live) return Status::OK();
  VIGIL_RETURN_IF_ERROR(StartSupervisor(root));
  const int64_t deadline = NowMs() + timeout_ms;
  while (NowMs() < deadline) {
    VIGIL_ASSIGN_OR_RETURN(live, LeaderLive(root, store));
    if (live) return Status::OK();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::DeadlineExceeded("no job leader started within " + std::to_string(timeout_ms) + " ms; see " +
                                  SuperviseLogPath(root));
}

}  // namespace vigil::cli
