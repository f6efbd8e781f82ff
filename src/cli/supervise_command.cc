// `vigil supervise`: the background leader of an embedded root. It dispatches,
// refreshes and reconciles index jobs, and exits after an idle period. Commands
// that admit or wait for jobs start it on demand (EnsureLeader); a second one
// finds the lease held and exits at once.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "cli/commands.h"
#include "cli/root_leader.h"
#include "cli/supervise_client.h"
#include "vigil/common/config.h"
#include "vigil/common/logging.h"
#include "vigil/common/unique_fd.h"
#include "vigil/jobs/leader.h"
#include "vigil/jobs/root_jobs.h"

namespace vigil::cli {

namespace {

struct SuperviseOptions {
  bool foreground = false;
  int64_t idle_exit_s = -1;  // -1: jobs.supervise_idle_exit_seconds of vigil.toml
  bool stop = false;         // stop the running supervisor
  bool restart = false;      // stop it, then start one with the current vigil.toml
  int64_t stop_timeout_s = 3600;
};

std::atomic<jobs::Leader*> g_leader{nullptr};

void OnSignal(int) {
  jobs::Leader* leader = g_leader.load();
  if (leader != nullptr) leader->RequestStop();
}

// Detaches from the terminal: the caller's process returns (true) once the
// daemon (a grandchild in its own session, stdio on the log) has started.
Result<bool> Detach(const std::string& log_path) {
  int ready[2];
  if (::pipe(ready) != 0) return Status::IOError("supervise: pipe failed");
  pid_t child = ::fork();
  if (child < 0) return Status::IOError("supervise: fork failed");
  if (child > 0) {
    ::close(ready[1]);
    char pid_text[32] = {0};
    ssize_t n = ::read(ready[0], pid_text, sizeof(pid_text) - 1);
    ::close(ready[0]);
    ::waitpid(child, nullptr, 0);
    if (n <= 0) return Status::Internal("supervise: the background process did not start; see " + log_path);
    std::printf("supervisor started (pid %s), log: %s\n", pid_text, log_path.c_str());
    return true;
  }
  ::close(ready[0]);
  ::setsid();
  if (::fork() > 0) ::_exit(0);  // the grandchild can never reacquire a terminal
  Result<UniqueFd> devnull = OpenDevNull();
  Result<UniqueFd> log = OpenAppendLog(log_path, 0644);
  if (devnull.ok()) ::dup2(devnull->get(), STDIN_FILENO);
  if (log.ok()) {
    ::dup2(log->get(), STDOUT_FILENO);
    ::dup2(log->get(), STDERR_FILENO);
  }
  std::string pid = std::to_string(::getpid());
  (void)!::write(ready[1], pid.data(), pid.size());
  ::close(ready[1]);
  return false;
}

Status RunSupervise(const Context& ctx, const SuperviseOptions& opts) {
  VIGIL_ASSIGN_OR_RETURN(Root root, ctx.OpenRoot());
  if (opts.idle_exit_s < -1) return Status::InvalidArgument("--idle-exit must be >= 0 seconds");
  if (opts.stop || opts.restart) {
    VIGIL_ASSIGN_OR_RETURN(std::optional<RunningLeader> running, FindRunningLeader(root));
    if (running && !running->is_server()) {
      std::printf("stopping the supervisor (pid %d)...\n", static_cast<int>(running->process.pid));
    }
    VIGIL_RETURN_IF_ERROR(StopLeader(root, opts.stop_timeout_s * 1000));
    if (running) std::printf("supervisor stopped\n");
    if (opts.stop) {
      if (!running) std::printf("no supervisor runs on this root\n");
      return Status::OK();
    }
  }
  // The checksum first: a vigil.toml edited after this point makes `doctor` ask for a restart.
  VIGIL_ASSIGN_OR_RETURN(std::string config_checksum, ConfigChecksum(root));
  VIGIL_ASSIGN_OR_RETURN(Config config, LoadConfig(root.path()));
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<jobs::JobStore> store, jobs::OpenRootJobStore(root));
  if (!opts.foreground) {
    store.reset();  // no database connection crosses fork()
    VIGIL_ASSIGN_OR_RETURN(bool parent, Detach(SuperviseLogPath(root)));
    if (parent) return Status::OK();
    VIGIL_ASSIGN_OR_RETURN(store, jobs::OpenRootJobStore(root));
  }
  const int64_t idle_s =
      opts.idle_exit_s >= 0 ? opts.idle_exit_s : static_cast<int64_t>(config.jobs.supervise_idle_exit_seconds);
  RootLeaderOptions lo;
  lo.kind = "supervise";
  lo.idle_exit_ms = idle_s * 1000;
  lo.config_checksum = config_checksum;
  lo.on_started = [](jobs::Leader* leader) {
    g_leader.store(leader);
    ::signal(SIGTERM, OnSignal);
    ::signal(SIGINT, OnSignal);
  };
  Status st = RunRootLeader(root, config, *store, lo);
  g_leader.store(nullptr);
  if (st.code() == StatusCode::kBusy) {
    VIGIL_LOG_INFO("another node leads this root: {}", st.message());
    return Status::OK();
  }
  return st;
}

}  // namespace

void AddSuperviseCommand(CLI::App* app, Context* ctx) {
  auto* sub = app->add_subcommand(
      "supervise", "Run the root's job leader in the background: dispatch, refresh and reconcile index jobs");
  auto opts = std::make_shared<SuperviseOptions>();
  sub->add_flag("--foreground", opts->foreground, "Stay attached to the terminal");
  sub->add_option("--idle-exit", opts->idle_exit_s,
                  "Exit after this many seconds without work (0: never; default: jobs.supervise_idle_exit_seconds)");
  auto* stop = sub->add_flag("--stop", opts->stop,
                             "Stop the running supervisor: it dispatches nothing more, lets running builds finish "
                             "and records them");
  sub->add_flag("--restart", opts->restart, "Stop the running supervisor, then start one with the current vigil.toml")
      ->excludes(stop);
  sub->add_option("--stop-timeout", opts->stop_timeout_s, "Seconds to wait for a stopping supervisor (default 3600)");
  sub->footer(
      "A running supervisor keeps the vigil.toml it started with; after editing the file, `vigil supervise\n"
      "--restart` applies it (`vigil doctor` says when the running one is out of date).");
  ctx->actions.emplace_back(sub, [ctx, opts] { return RunSupervise(*ctx, *opts); });
}

}  // namespace vigil::cli
