// `vigil serve`: the HTTP API of a root (server/api_server.h) and, beside it,
// the root's job leader (a running `vigil supervise` is stopped first, so that
// the server leads; a root another `vigil serve` leads is refused) and the node
// agent, which runs the attempts a leader assigns to this node (up to
// jobs.concurrency_per_node, the capacity it registers). With a shared [meta]
// url several nodes serve one root: one leads, assigning attempts over the live
// nodes, and the others stand by until its lease lapses. A node drained in the
// store (DRAIN NODE, --drain) lets its leader finish its running attempts and
// hand the lease back, and leads nothing until RESUME NODE; it reads the mark
// with its heartbeat, every third of the lease. Runs in the foreground
// until SIGTERM or SIGINT, then stops accepting, lets requests in flight finish
// for up to --grace seconds, and stops the leader, which lets running builds
// finish and records them.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <thread>

#include "cli/commands.h"
#include "cli/root_leader.h"
#include "cli/supervise_client.h"
#include "vigil/common/config.h"
#include "vigil/common/failpoint.h"
#include "vigil/common/logging.h"
#include "vigil/common/mutex.h"
#include "vigil/jobs/node_agent.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/server/api_server.h"

namespace vigil::cli {

namespace {

// The running job leader as the server's threads share it, and the node's drain mark.
class LeaderSlot {
 public:
  // The leader is running: a stop or a drain asked for already reaches it.
  void Started(jobs::Leader* leader) {
    MutexLock lock(&mu_);
    leader_ = leader;
    if (stopping_ || draining_) leader->RequestStop();
  }
  // The leader ended with `st`: true when the server stops (asked before the leader ended or
  // within `pause`); else it may be started again after the pause.
  bool Ended(const Status& st, std::chrono::milliseconds pause) {
    MutexLock lock(&mu_);
    leader_ = nullptr;
    if (stopping_) return true;
    if (!st.ok()) {
      VIGIL_LOG_ERROR("the job leader stopped: {}; starting it again in {} ms", st.ToString(), pause.count());
    }
    return lock.WaitFor(stopped_, pause, [this]() VIGIL_REQUIRES(mu_) { return stopping_; });
  }
  // Sets the node's drain mark (read from the store); a drained node's leader stops: its
  // running attempts finish and are recorded, then it hands the lease back.
  void SetDraining(bool draining) {
    MutexLock lock(&mu_);
    if (draining == draining_) return;
    draining_ = draining;
    VIGIL_LOG_INFO(draining ? "this node is drained: it leads no jobs until RESUME NODE"
                            : "this node is resumed: it may lead again");
    if (draining && leader_ != nullptr) leader_->RequestStop();
  }
  bool draining() {
    MutexLock lock(&mu_);
    return draining_;
  }
  // Waits up to `pause` (a standby's retry, a heartbeat's period); true once a stop is asked for.
  bool Standby(std::chrono::milliseconds pause) {
    MutexLock lock(&mu_);
    return lock.WaitFor(stopped_, pause, [this]() VIGIL_REQUIRES(mu_) { return stopping_; });
  }
  // Asks the running leader, and any started later, to stop.
  void Stop() {
    {
      MutexLock lock(&mu_);
      stopping_ = true;
      if (leader_ != nullptr) leader_->RequestStop();
    }
    stopped_.notify_all();
  }

 private:
  Mutex mu_;
  jobs::Leader* leader_ VIGIL_GUARDED_BY(mu_) = nullptr;
  bool stopping_ VIGIL_GUARDED_BY(mu_) = false;
  bool draining_ VIGIL_GUARDED_BY(mu_) = false;
  std::condition_variable stopped_;  // signalled when stopping_ is set
};

// How long `vigil serve` waits before it starts a leader that stopped on an error.
constexpr int64_t kLeaderRestartMs = 1000;

struct ServeOptions {
  std::string listen;   // empty: [server] listen
  std::string node_id;  // empty: "serve@<host>:<port>"
  int64_t grace_s = 10;
  bool drain = false;  // start drained (DRAIN NODE): serve, but lead nothing until RESUME NODE
};

// The server's settings from vigil.toml, with --listen over [server] listen.
Result<server::HttpServerOptions> HttpOptions(const Config& config, const std::string& listen) {
  VIGIL_ASSIGN_OR_RETURN(ListenAddress addr, ParseListenAddress(listen.empty() ? config.server.listen : listen));
  server::HttpServerOptions http;
  http.host = addr.host;
  http.port = addr.port;
  http.max_connections = config.server.max_connections;
  http.max_body_bytes = config.server.max_body_bytes;
  http.header_timeout = std::chrono::milliseconds(config.server.header_timeout_ms);
  http.body_grace = std::chrono::milliseconds(config.server.body_grace_ms);
  http.min_body_bytes_per_second = config.server.min_body_bytes_per_second;
  http.write_timeout = std::chrono::milliseconds(config.server.write_timeout_ms);
  http.tls_cert_file = config.server.tls_cert_file;
  http.tls_key_file = config.server.tls_key_file;
  return http;
}

Status RunServe(const Context& ctx, const ServeOptions& opts) {
  VIGIL_ASSIGN_OR_RETURN(Root root, ctx.OpenRoot());
  VIGIL_ASSIGN_OR_RETURN(std::string config_checksum, ConfigChecksum(root));
  VIGIL_ASSIGN_OR_RETURN(Config config, LoadConfig(root.path()));
  VIGIL_ASSIGN_OR_RETURN(server::HttpServerOptions http, HttpOptions(config, opts.listen));
  if (opts.grace_s < 0) return Status::InvalidArgument("--grace must be >= 0 seconds");

  // Every thread started from here on inherits the blocked signals; main waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  VIGIL_ASSIGN_OR_RETURN(std::optional<RunningLeader> running, FindRunningLeader(root));
  if (running && running->is_server()) {
    return Status::FailedPrecondition("this root is served already by `vigil serve` (pid " +
                                      std::to_string(running->process.pid) +
                                      "); stop it first (SIGTERM), or give this server a root of its own");
  }
  if (running) {
    std::printf("stopping the running supervisor (pid %d) so that the server leads...\n",
                static_cast<int>(running->process.pid));
    VIGIL_RETURN_IF_ERROR(StopLeader(root, 3600 * 1000));
  }
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<jobs::JobStore> store, jobs::OpenRootJobStore(root));
  LeaderSlot slot;
  std::atomic<bool> leading{false};
  server::ApiServerOptions api;
  api.root_dir = root.path();
  api.http = http;
  api.leader_running = [&] { return leading.load(); };
  api.node_draining = [&] { return slot.draining(); };
  jobs::ReconcileResults reconcile_results;  // of every leadership this process holds
  api.reconcile_results = &reconcile_results;
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<server::ApiServer> started, server::ApiServer::Start(api));
  const std::string address = http.host + ":" + std::to_string(started->port());
  const std::string node_id = opts.node_id.empty() ? "serve@" + address : opts.node_id;
  // The node registers once and heartbeats while it serves, leading or standing by; its agent
  // runs what any leader assigns to it.
  const auto capacity = static_cast<int64_t>(config.jobs.concurrency_per_node);
  VIGIL_ASSIGN_OR_RETURN(const int64_t node_epoch,
                         store->cluster().RegisterNode(node_id, ::getpid(), address, root.env()->NowMs(), capacity));
  jobs::ClaimedAttempts claimed;
  jobs::NodeAgentOptions agent_options;
  agent_options.node_id = node_id;
  agent_options.node_epoch = node_epoch;
  agent_options.concurrency = static_cast<int>(capacity);
  agent_options.lease_ttl_ms = static_cast<int64_t>(config.jobs.leader_lease_seconds) * 1000;
  agent_options.reconcile_backoff.initial_s = static_cast<int64_t>(config.jobs.reconcile_initial_backoff_seconds);
  agent_options.reconcile_backoff.max_s = static_cast<int64_t>(config.jobs.reconcile_max_backoff_seconds);
  agent_options.claimed = &claimed;
  agent_options.env = root.env();
  jobs::NodeAgent agent(
      store.get(), [&root, &config] { return MakeWorkerExecutor(root, config); }, agent_options);
  VIGIL_RETURN_IF_ERROR(agent.Start());
  if (opts.drain) VIGIL_RETURN_IF_ERROR(store->cluster().SetNodeDraining(node_id, true));
  // The drain mark outlives restarts: a node drained before starts drained.
  auto read_drain_mark = [&] {
    Result<std::optional<jobs::NodeInfo>> self = store->cluster().GetNode(node_id);
    if (self.ok() && self->has_value()) slot.SetDraining((*self)->draining);
    return self.status();
  };
  VIGIL_RETURN_IF_ERROR(read_drain_mark());
  const auto heartbeat = std::chrono::milliseconds(static_cast<int64_t>(config.jobs.leader_lease_seconds) * 1000 / 3);
  std::thread node_thread([&] {
    while (!slot.Standby(heartbeat)) {
      const int64_t sent = root.env()->NowMs();
      Status st = store->cluster().Heartbeat(node_id, node_epoch, sent);
      if (st.ok()) agent.HeartbeatSucceeded(sent);
      if (st.ok()) st = read_drain_mark();
      if (!st.ok()) VIGIL_LOG_WARN("node heartbeat of {}: {}", node_id, st.ToString());
    }
  });
  std::thread leader_thread([&] {
    RootLeaderOptions lo;
    lo.kind = "serve";
    lo.config_checksum = config_checksum;
    lo.node_id = node_id;
    lo.node_address = address;
    lo.node_epoch = node_epoch;
    lo.claimed = &claimed;
    lo.reconcile_results = &reconcile_results;
    lo.on_started = [&](jobs::Leader* l) {
      slot.Started(l);
      leading.store(true);
    };
    // A node whose store holds another's live lease stands by and tries again; a leader that
    // stops on an error (its store unreachable, its lease lost) is started again after a
    // pause: a server never leaves admitted jobs without one.
    const auto standby = std::chrono::milliseconds(
        std::min<int64_t>(kLeaderRestartMs, static_cast<int64_t>(config.jobs.leader_lease_seconds) * 1000 / 3));
    for (;;) {
      if (slot.draining()) {
        (void)failpoint::Hit("serve.drained_standby");  // tests: a drained node passed a turn to lead
        if (slot.Standby(standby)) break;
        continue;
      }
      Status st = RunRootLeader(root, config, *store, lo);
      leading.store(false);
      if (st.code() == StatusCode::kBusy) {
        if (slot.Standby(standby)) break;
        continue;
      }
      if (slot.Ended(st, std::chrono::milliseconds(kLeaderRestartMs))) break;
    }
  });
  std::printf("vigil serve: listening on %s://%s (root %s)\n", http.tls_cert_file.empty() ? "http" : "https",
              address.c_str(), root.path().c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::printf("vigil serve: stopping (signal %d)\n", sig);
  std::fflush(stdout);
  started->Shutdown(std::chrono::seconds(opts.grace_s));
  // The agent's attempts finish while the node still heartbeats, so no leader settles them.
  agent.Stop();
  slot.Stop();
  leader_thread.join();
  node_thread.join();
  return Status::OK();
}

}  // namespace

void AddServeCommand(CLI::App* app, Context* ctx) {
  auto* sub = app->add_subcommand("serve", "Serve the root's HTTP API and lead its index jobs");
  auto opts = std::make_shared<ServeOptions>();
  sub->add_option("--listen", opts->listen, "host:port to listen on (default: [server] listen, 127.0.0.1:7431)");
  sub->add_option("--node-id", opts->node_id,
                  "This node's name in the metadata store's node registry (default: serve@host:port)");
  sub->add_option("--grace", opts->grace_s, "Seconds in-flight requests get to finish on SIGTERM (default 10)");
  sub->add_flag("--drain", opts->drain,
                "Start drained: serve reads and admit jobs but lead none, until RESUME NODE (the mark is kept in "
                "the store; DRAIN NODE sets it on a running node)");
  sub->footer(
      "Authenticate with a bearer token (Authorization: Bearer <token>); `vigil init` prints the\n"
      "administrator's. The API is described at GET /v1/openapi.json.");
  ctx->actions.emplace_back(sub, [ctx, opts] { return RunServe(*ctx, *opts); });
}

}  // namespace vigil::cli
