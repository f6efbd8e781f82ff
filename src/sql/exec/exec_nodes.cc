// SHOW NODES: the nodes registered in the root's metadata store (every `vigil
// serve` of a shared store, or the embedded root's supervisor), which of them
// holds the leader lease, whether each still heartbeats or is drained, how many
// attempts it takes at once (its jobs.concurrency_per_node) and how many it runs. Times are the lease clock's (the
// database's with PostgreSQL). DRAIN NODE / RESUME NODE set a node's drain mark, which the node reads with its
// heartbeat.
#include <map>

#include "sql/exec/exec_internal.h"
#include "vigil/jobs/leader.h"

namespace vigil::sql {

namespace {

// Role of `node`: "leader" (it holds the live lease), "standby" (heartbeating) or "gone".
std::string RoleOf(const jobs::NodeInfo& node, const jobs::LeaderLease& lease, bool alive, int64_t now) {
  if (lease.Live(now) && jobs::NodeOfLeaderHolder(lease.holder) == node.node_id) return "leader";
  return alive ? "standby" : "gone";
}

// Attempts running per executor node.
Result<std::map<std::string, int64_t>> RunningAttempts(jobs::JobStore& store) {
  jobs::JobFilter f;
  f.state = "RUNNING";
  f.limit = jobs::kMaxListLimit;
  std::map<std::string, int64_t> running;
  VIGIL_RETURN_IF_ERROR(store.ForEach(f, [&running](const jobs::JobRecord& j) {
    if (j.attempt) ++running[j.attempt->executor_node_id];
    return Status::OK();
  }));
  return running;
}

}  // namespace

Result<ResultSet> ExecShowNodes(ExecContext& ctx, const ShowNodesStatement&) {
  VIGIL_RETURN_IF_ERROR(RequireGlobalAdmin(ctx, "SHOW NODES"));
  VIGIL_ASSIGN_OR_RETURN(std::vector<jobs::NodeInfo> nodes, ctx.store->cluster().ListNodes());
  VIGIL_ASSIGN_OR_RETURN(jobs::LeaderLease lease, ctx.store->cluster().GetLeader());
  using Counts = std::map<std::string, int64_t>;
  VIGIL_ASSIGN_OR_RETURN(Counts running, RunningAttempts(*ctx.store));
  VIGIL_ASSIGN_OR_RETURN(const int64_t now, ctx.store->cluster().LeaseClockMs(ctx.Now()));
  // A node is alive while its last heartbeat is younger than one lease.
  const int64_t lease_ms = static_cast<int64_t>(ctx.config.jobs.leader_lease_seconds) * 1000;
  ResultSet r;
  r.columns = {"Node",     "Address",  "Epoch",           "Pid",         "Role",      "Alive",
               "Draining", "Capacity", "RunningAttempts", "HeartbeatAt", "StartedAt", "LeaseExpiresAt"};
  for (const jobs::NodeInfo& n : nodes) {
    const bool alive = n.heartbeat_at_ms + lease_ms > now;
    const std::string role = RoleOf(n, lease, alive, now);
    r.rows.push_back({Value(n.node_id), Value(n.host), Value(n.epoch), Value(n.pid), Value(role),
                      Value(std::string(alive ? "YES" : "NO")), Value(std::string(n.draining ? "YES" : "NO")),
                      Value(n.capacity), Value(running[n.node_id]), Value(FormatTimeMs(n.heartbeat_at_ms)),
                      Value(FormatTimeMs(n.started_at_ms)),
                      role == "leader" ? Value(FormatTimeMs(lease.expires_at_ms)) : Value()});
  }
  return r;
}

Result<ResultSet> ExecDrainNode(ExecContext& ctx, const DrainNodeStatement& s) {
  VIGIL_RETURN_IF_ERROR(RequireGlobalAdmin(ctx, s.drain ? "DRAIN NODE" : "RESUME NODE"));
  VIGIL_RETURN_IF_ERROR(ctx.store->cluster().SetNodeDraining(s.node_id, s.drain));
  ResultSet r;
  r.message = s.drain ? "node " + s.node_id +
                            " is draining: within a third of the leader lease it dispatches nothing new, lets its "
                            "running attempts finish and hands the lease over; it keeps serving reads and admitting "
                            "jobs until RESUME NODE"
                      : "node " + s.node_id + " resumed: it may lead again";
  return r;
}

}  // namespace vigil::sql
