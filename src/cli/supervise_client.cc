#include "cli/supervise_client.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "vigil/common/checksum.h"
#include "vigil/common/config.h"
#include "vigil/common/file_lock.h"
#include "vigil/jobs/root_jobs.h"

namespace vigil::cli {

namespace {

// A live lease whose holder still holds the root's leader lock (a killed
// supervisor's lease stays unexpired for a while; its lock is gone at once).
Result<bool> LeaderLive(const Root& root, jobs::JobStore& store) {
  VIGIL_ASSIGN_OR_RETURN(jobs::LeaderLease lease, store.cluster().GetLeader());
  VIGIL_ASSIGN_OR_RETURN(const int64_t now, store.cluster().LeaseClockMs(root.env()->NowMs()));
  if (!lease.Live(now)) return false;
  // With a shared store the leader may be a node elsewhere: its live lease is all there is.
  VIGIL_ASSIGN_OR_RETURN(Config config, LoadConfig(root.path()));
  if (!config.meta.url.empty()) return true;
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

Result<std::string> ConfigChecksum(const Root& root) {
  Result<std::string> bytes = root.fs()->ReadFile(JoinPath(root.path(), kConfigFile), kMaxConfigBytes);
  if (bytes.status().Is(StatusCode::kNotFound)) return std::string("none");
  VIGIL_RETURN_IF_ERROR(bytes.status());
  return ChecksumToHex(Checksum64(*bytes));
}

Status RecordRunningLeader(int lock_fd, const std::string& kind, const std::string& config_checksum) {
  VIGIL_ASSIGN_OR_RETURN(ProcessIdentity me, IdentifyProcess(::getpid()));
  const std::string record = FormatProcessIdentity(me) + " kind " + kind + " config " + config_checksum + "\n";
  if (::ftruncate(lock_fd, 0) != 0) return Status::FromErrno(errno, "truncate leader lock");
  if (::pwrite(lock_fd, record.data(), record.size(), 0) != static_cast<ssize_t>(record.size())) {
    return Status::FromErrno(errno, "write leader lock");
  }
  return Status::OK();
}

Result<std::optional<RunningLeader>> FindRunningLeader(const Root& root) {
  const std::string lock = LeaderLockPath(root);
  Result<bool> held = FileLock::IsHeld(lock);
  if (held.status().Is(StatusCode::kNotFound)) return std::optional<RunningLeader>();
  VIGIL_RETURN_IF_ERROR(held.status());
  if (!*held) return std::optional<RunningLeader>();
  VIGIL_ASSIGN_OR_RETURN(std::string text, root.fs()->ReadFile(lock, 512));
  RunningLeader leader;
  Result<ProcessIdentity> who = ParseProcessIdentity(text);
  if (!who.ok()) return Status::Corruption(lock + " does not record the running supervisor");
  leader.process = *who;
  const size_t at = text.find(" config ");
  if (at != std::string::npos) {
    leader.config_checksum = text.substr(at + 8);
    while (!leader.config_checksum.empty() && leader.config_checksum.back() == '\n') leader.config_checksum.pop_back();
  }
  if (const size_t kind = text.find(" kind "); kind != std::string::npos) {
    const size_t end = text.find_first_of(" \n", kind + 6);
    leader.kind = text.substr(kind + 6, end == std::string::npos ? end : end - kind - 6);
  }
  if (leader.kind != "supervise" && leader.kind != "serve") {
    return Status::Corruption(lock + " records a leader of unknown kind");
  }
  return std::optional<RunningLeader>(std::move(leader));
}

Status StopLeader(const Root& root, int64_t timeout_ms) {
  VIGIL_ASSIGN_OR_RETURN(std::optional<RunningLeader> leader, FindRunningLeader(root));
  if (!leader) return Status::OK();
  if (leader->is_server()) {
    return Status::FailedPrecondition("the root's leader is `vigil serve` (pid " + std::to_string(leader->process.pid) +
                                      "), not a supervisor: stop the server itself (SIGTERM) if that is meant");
  }
  VIGIL_ASSIGN_OR_RETURN(bool signalled, SignalExactProcess(leader->process, SIGTERM));
  if (!signalled) {
    return Status::FailedPrecondition("the supervisor recorded in " + LeaderLockPath(root) +
                                      " is not a process of this host that can be signalled");
  }
  const int64_t deadline = root.env()->NowMs() + timeout_ms;
  while (root.env()->NowMs() < deadline) {
    Result<bool> held = FileLock::IsHeld(LeaderLockPath(root));
    if (!held.ok() || !*held) return Status::OK();
    root.env()->SleepForMs(50);
  }
  return Status::DeadlineExceeded("the supervisor (pid " + std::to_string(leader->process.pid) + ") still runs after " +
                                  std::to_string(timeout_ms) + " ms: it lets running index builds finish first");
}

Status EnsureLeader(const Root& root, jobs::JobStore& store, int64_t timeout_ms) {
  VIGIL_ASSIGN_OR_RETURN(bool live, LeaderLive(root, store));
  if (live) return Status::OK();
  VIGIL_RETURN_IF_ERROR(StartSupervisor(root));
  const int64_t deadline = root.env()->NowMs() + timeout_ms;
  while (root.env()->NowMs() < deadline) {
    VIGIL_ASSIGN_OR_RETURN(live, LeaderLive(root, store));
    if (live) return Status::OK();
    root.env()->SleepForMs(50);
  }
  return Status::DeadlineExceeded("no job leader started within " + std::to_string(timeout_ms) + " ms; see " +
                                  SuperviseLogPath(root));
}

}  // namespace vigil::cli
