#include "cli/root_leader.h"

#include <unistd.h>

#include <chrono>
#include <climits>
#include <optional>

#include "cli/supervise_client.h"
#include "vigil/common/file_lock.h"
#include "vigil/common/logging.h"
#include "vigil/common/uuid.h"
#include "vigil/jobs/worker_executor.h"

namespace vigil::cli {

namespace {

std::string HostName() {
  char host[HOST_NAME_MAX + 1] = {0};
  if (::gethostname(host, sizeof(host) - 1) != 0) return "localhost";
  return host;
}

// Every attempt runs in a `vigil-worker` under the limits of vigil.toml's [worker] section.
jobs::WorkerExecutorOptions WorkerOptions(const Root& root, const Config& config) {
  jobs::WorkerExecutorOptions w;
  w.supervisor.address_space_bytes = config.worker.memory_bytes;
  w.supervisor.open_files = config.worker.nofile;
  w.supervisor.omp_threads = static_cast<int>(config.worker.omp_threads);
  w.supervisor.concurrency = static_cast<int>(config.jobs.concurrency_per_node);
  w.supervisor.require_cgroup = config.worker.require_cgroup;
  w.supervisor.cgroup.parent = config.worker.cgroup_parent;
  w.supervisor.cgroup.memory_max_bytes = config.worker.memory_bytes;
  w.supervisor.cgroup.pids_max = config.worker.pids_max;
  w.supervisor.stderr_path = root.path() + "/" + std::string(kRootMetaDirName) + "/worker.log";
  w.attempt_timeout = std::chrono::seconds(config.worker.max_runtime_seconds);
  w.lance = config.lance;
  return w;
}
}  // namespace

Result<std::unique_ptr<jobs::Executor>> MakeWorkerExecutor(const Root& root, const Config& config) {
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<jobs::WorkerExecutor> executor,
                         jobs::WorkerExecutor::Create(WorkerOptions(root, config)));
  return std::unique_ptr<jobs::Executor>(std::move(executor));
}

Status RunRootLeader(const Root& root, const Config& config, jobs::JobStore& store, const RootLeaderOptions& opts) {
  const bool shared = !config.meta.url.empty();
  std::optional<FileLock> leader_lock;
  if (!shared) {
    Result<FileLock> lock = FileLock::Acquire(LeaderLockPath(root));
    if (lock.status().code() == StatusCode::kBusy) {
      VIGIL_LOG_INFO("another leader runs this root");
      return Status::OK();
    }
    VIGIL_RETURN_IF_ERROR(lock.status());
    VIGIL_RETURN_IF_ERROR(RecordRunningLeader(lock->fd(), opts.kind, opts.config_checksum));
    leader_lock.emplace(std::move(*lock));
  }
  jobs::LeaderOptions options;
  // Only the root's leader lock proves the previous holder dead, and only on one machine.
  if (!shared) options.holder_is_dead = [](const jobs::LeaderLease&) { return true; };
  options.runner.node_id = opts.node_id.empty() ? HostName() : opts.node_id;
  options.runner.node_address = opts.node_address.empty() ? HostName() : opts.node_address;
  options.runner.lease_ttl_ms = static_cast<int64_t>(config.jobs.leader_lease_seconds) * 1000;
  options.runner.node_epoch = opts.node_epoch;
  options.runner.leader_holder =
      jobs::LeaderHolderName(opts.kind, options.runner.node_id, ::getpid(), Uuid::Generate().ToString().substr(0, 8));
  options.idle_exit_ms = opts.idle_exit_ms;
  options.retention_ms = static_cast<int64_t>(config.jobs.archive_after_seconds) * 1000;
  options.runner.attempt_deadline_ms = static_cast<int64_t>(config.worker.max_runtime_seconds) * 1000;
  options.runner.concurrency = static_cast<int>(config.jobs.concurrency_per_node);
  options.runner.concurrency_per_catalog = config.jobs.concurrency_per_catalog;
  options.runner.concurrency_per_cluster = config.jobs.concurrency_per_cluster;
  options.runner.max_pending_ms = static_cast<int64_t>(config.jobs.max_pending_seconds) * 1000;
  options.runner.claimed = opts.claimed;
  options.reconcile.backoff.initial_s = static_cast<int64_t>(config.jobs.reconcile_initial_backoff_seconds);
  options.reconcile.backoff.max_s = static_cast<int64_t>(config.jobs.reconcile_max_backoff_seconds);
  options.reconcile.lance = config.lance;
  options.reconcile.results = opts.reconcile_results;
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<jobs::Executor> executor, MakeWorkerExecutor(root, config));
  jobs::Leader leader(&store, executor.get(), options, root.env());
  if (opts.on_started) opts.on_started(&leader);
  Status st = leader.Run();
  if (st.code() == StatusCode::kBusy && !shared) {
    VIGIL_LOG_INFO("another leader runs this root: {}", st.message());
    return Status::OK();
  }
  return st;
}

}  // namespace vigil::cli
