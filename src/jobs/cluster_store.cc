// ClusterStore: the leader lease and the node registry. Each write is one short
// transaction; lease and heartbeat times come from LeaseNow.
#include "vigil/jobs/cluster_store.h"

#include "jobs/job_schema.h"
#include "jobs/job_store_internal.h"

namespace vigil::jobs {

namespace {

using meta::Connection;
using meta::Row;

Result<LeaderLease> LoadLease(Connection& conn, bool lock) {
  std::string sql = lock ? internal::Locked(conn, sql::kSelectLease) : std::string(sql::kSelectLease);
  VIGIL_ASSIGN_OR_RETURN(std::optional<Row> row, conn.QueryOptional(sql));
  if (!row) return Status::Corruption("the leader lease row is missing");
  LeaderLease l;
  VIGIL_ASSIGN_OR_RETURN(l.holder, row->Text(0));
  VIGIL_ASSIGN_OR_RETURN(l.epoch, row->Int(1));
  VIGIL_ASSIGN_OR_RETURN(l.acquired_at_ms, row->Int(2));
  VIGIL_ASSIGN_OR_RETURN(l.expires_at_ms, row->Int(3));
  return l;
}

Status StoreLease(Connection& conn, const LeaderLease& l) {
  return conn.Execute(sql::kUpdateLease, {l.holder, l.epoch, l.acquired_at_ms, l.expires_at_ms}).status();
}

bool Live(const LeaderLease& l, int64_t now_ms) { return !l.holder.empty() && l.expires_at_ms > now_ms; }

Result<NodeInfo> ParseNode(const Row& row) {
  NodeInfo n;
  VIGIL_ASSIGN_OR_RETURN(n.node_id, row.Text(0));
  VIGIL_ASSIGN_OR_RETURN(n.epoch, row.Int(1));
  VIGIL_ASSIGN_OR_RETURN(n.started_at_ms, row.Int(2));
  VIGIL_ASSIGN_OR_RETURN(n.heartbeat_at_ms, row.Int(3));
  VIGIL_ASSIGN_OR_RETURN(n.pid, row.Int(4));
  VIGIL_ASSIGN_OR_RETURN(n.host, row.Text(5));
  VIGIL_ASSIGN_OR_RETURN(const int64_t draining, row.Int(6));
  n.draining = draining != 0;
  VIGIL_ASSIGN_OR_RETURN(n.capacity, row.Int(7));
  return n;
}

}  // namespace

namespace internal {

Result<int64_t> LeaseNow(Connection& conn, int64_t caller_now_ms, LeaseClock clock) {
  if (clock == LeaseClock::kCaller || conn.profile().dialect != meta::Dialect::kPostgres) return caller_now_ms;
  // clock_timestamp(), unlike now(), advances within a transaction: the time after the row lock.
  VIGIL_ASSIGN_OR_RETURN(std::vector<Row> rows,
                         conn.Query("SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint"));
  if (rows.size() != 1) return Status::Internal("the database clock returned no row");
  return rows[0].Int(0);
}

Status CheckLeaderOn(Connection& conn, int64_t epoch, int64_t caller_now_ms, LeaseClock clock) {
  VIGIL_ASSIGN_OR_RETURN(LeaderLease l, LoadLease(conn, true));
  VIGIL_ASSIGN_OR_RETURN(const int64_t now_ms, LeaseNow(conn, caller_now_ms, clock));
  if (l.epoch != epoch || !Live(l, now_ms)) {
    return Status::CommitConflict("leader epoch " + std::to_string(epoch) + " is not live (lease epoch " +
                                  std::to_string(l.epoch) + ")");
  }
  return Status::OK();
}

}  // namespace internal

Result<LeaderLease> ClusterStore::AcquireLeader(const std::string& holder, int64_t caller_now_ms, int64_t ttl_ms) {
  VIGIL_RETURN_IF_ERROR(internal::CheckText("leader holder", holder, kMaxIndexNameBytes));
  if (ttl_ms <= 0) return Status::InvalidArgument("leader lease ttl must be positive");
  LeaderLease out;
  VIGIL_RETURN_IF_ERROR(WithWrite([&](Connection& conn) -> Status {
    VIGIL_ASSIGN_OR_RETURN(out, LoadLease(conn, true));
    VIGIL_ASSIGN_OR_RETURN(const int64_t now_ms, LeaseNow(conn, caller_now_ms));
    if (Live(out, now_ms) && out.holder != holder) {
      return Status::Busy("leader lease is held by " + out.holder + " until " + std::to_string(out.expires_at_ms));
    }
    if (!Live(out, now_ms)) out = LeaderLease{holder, out.epoch + 1, now_ms, 0};  // a new holder or a lapse
    out.expires_at_ms = now_ms + ttl_ms;
    return StoreLease(conn, out);
  }));
  return out;
}

Result<LeaderLease> ClusterStore::TakeOverLeader(const std::string& holder, const LeaderLease& dead,
                                                 int64_t caller_now_ms, int64_t ttl_ms) {
  VIGIL_RETURN_IF_ERROR(internal::CheckText("leader holder", holder, kMaxIndexNameBytes));
  if (ttl_ms <= 0) return Status::InvalidArgument("leader lease ttl must be positive");
  LeaderLease out;
  VIGIL_RETURN_IF_ERROR(WithWrite([&](Connection& conn) -> Status {
    VIGIL_ASSIGN_OR_RETURN(out, LoadLease(conn, true));
    if (out.holder != dead.holder || out.epoch != dead.epoch) {
      return Status::CommitConflict("leader lease changed hands: now " + out.holder + " at epoch " +
                                    std::to_string(out.epoch));
    }
    VIGIL_ASSIGN_OR_RETURN(const int64_t now_ms, LeaseNow(conn, caller_now_ms));
    out = LeaderLease{holder, out.epoch + 1, now_ms, now_ms + ttl_ms};
    return StoreLease(conn, out);
  }));
  return out;
}

Status ClusterStore::ReleaseLeader(const std::string& holder, int64_t epoch, int64_t caller_now_ms) {
  return WithWrite([&](Connection& conn) -> Status {
    VIGIL_ASSIGN_OR_RETURN(LeaderLease l, LoadLease(conn, true));
    VIGIL_ASSIGN_OR_RETURN(const int64_t now_ms, LeaseNow(conn, caller_now_ms));
    if (l.holder != holder || l.epoch != epoch || !Live(l, now_ms)) return Status::OK();  // not ours any more
    l.expires_at_ms = now_ms;
    return StoreLease(conn, l);
  });
}

Result<LeaderLease> ClusterStore::RenewLeader(const std::string& holder, int64_t epoch, int64_t caller_now_ms,
                                              int64_t ttl_ms) {
  if (ttl_ms <= 0) return Status::InvalidArgument("leader lease ttl must be positive");
  LeaderLease out;
  VIGIL_RETURN_IF_ERROR(WithWrite([&](Connection& conn) -> Status {
    VIGIL_ASSIGN_OR_RETURN(out, LoadLease(conn, true));
    VIGIL_ASSIGN_OR_RETURN(const int64_t now_ms, LeaseNow(conn, caller_now_ms));
    if (out.holder != holder || out.epoch != epoch || !Live(out, now_ms)) {
      return Status::CommitConflict("leader lease of " + holder + " at epoch " + std::to_string(epoch) + " is lost");
    }
    out.expires_at_ms = now_ms + ttl_ms;
    return StoreLease(conn, out);
  }));
  return out;
}

Result<LeaderLease> ClusterStore::GetLeader() {
  VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, db_->Acquire());
  return LoadLease(*conn, false);
}

Result<int64_t> ClusterStore::LeaseClockMs(int64_t caller_now_ms) {
  VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, db_->Acquire());
  return LeaseNow(*conn, caller_now_ms);
}

Result<int64_t> ClusterStore::LeaseNow(Connection& conn, int64_t caller_now_ms) const {
  return internal::LeaseNow(conn, caller_now_ms, lease_clock_);
}

Status ClusterStore::CheckLeader(meta::Transaction& txn, int64_t epoch, int64_t now_ms) {
  if (!txn.active()) return Status::FailedPrecondition("leader check: transaction is not active");
  return CheckLeaderOn(txn.conn(), epoch, now_ms);
}

Status ClusterStore::CheckLeaderOn(Connection& conn, int64_t epoch, int64_t now_ms) const {
  return internal::CheckLeaderOn(conn, epoch, now_ms, lease_clock_);
}

Result<int64_t> ClusterStore::RegisterNode(const std::string& node_id, int64_t pid, const std::string& host,
                                           int64_t caller_now_ms, int64_t capacity) {
  VIGIL_RETURN_IF_ERROR(internal::CheckText("node id", node_id, kMaxIndexNameBytes));
  VIGIL_RETURN_IF_ERROR(internal::CheckText("host", host, kMaxIndexNameBytes));
  if (capacity < 0 || capacity > kMaxNodeCapacity) {
    return Status::InvalidArgument("node capacity must be in 0.." + std::to_string(kMaxNodeCapacity) + ", not " +
                                   std::to_string(capacity));
  }
  int64_t epoch = 0;
  VIGIL_RETURN_IF_ERROR(WithWrite([&](Connection& conn) -> Status {
    VIGIL_ASSIGN_OR_RETURN(const int64_t now_ms, LeaseNow(conn, caller_now_ms));
    VIGIL_ASSIGN_OR_RETURN(std::vector<Row> rows,
                           conn.Query(sql::kRegisterNode, {node_id, now_ms, pid, host, capacity}));
    if (rows.size() != 1) return Status::Internal("node registration returned no epoch");
    VIGIL_ASSIGN_OR_RETURN(epoch, rows[0].Int(0));
    return Status::OK();
  }));
  return epoch;
}

Status ClusterStore::Heartbeat(const std::string& node_id, int64_t epoch, int64_t caller_now_ms) {
  return WithWrite([&](Connection& conn) -> Status {
    VIGIL_ASSIGN_OR_RETURN(const int64_t now_ms, LeaseNow(conn, caller_now_ms));
    VIGIL_ASSIGN_OR_RETURN(int64_t n, conn.Execute(sql::kHeartbeatNode, {node_id, epoch, now_ms}));
    if (n == 1) return Status::OK();
    VIGIL_ASSIGN_OR_RETURN(std::optional<Row> row, conn.QueryOptional(sql::kSelectNode, {node_id}));
    if (!row) return Status::NotFound("node " + node_id + " is not registered");
    return Status::CommitConflict("node " + node_id + " epoch " + std::to_string(epoch) + " was replaced");
  });
}

Result<std::optional<NodeInfo>> ClusterStore::GetNode(const std::string& node_id) {
  VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, db_->Acquire());
  VIGIL_ASSIGN_OR_RETURN(std::optional<Row> row, conn->QueryOptional(sql::kSelectNode, {node_id}));
  if (!row) return std::optional<NodeInfo>();
  VIGIL_ASSIGN_OR_RETURN(NodeInfo n, ParseNode(*row));
  return std::optional<NodeInfo>(std::move(n));
}

Status ClusterStore::SetNodeDraining(const std::string& node_id, bool draining) {
  return WithWrite([&](Connection& conn) -> Status {
    VIGIL_ASSIGN_OR_RETURN(int64_t n, conn.Execute(sql::kSetNodeDraining, {node_id, int64_t{draining ? 1 : 0}}));
    if (n == 1) return Status::OK();
    return Status::NotFound("node " + node_id + " is not registered (SHOW NODES lists the nodes)");
  });
}

Result<std::vector<NodeInfo>> ClusterStore::ListNodes() {
  VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, db_->Acquire());
  VIGIL_ASSIGN_OR_RETURN(std::vector<Row> rows, conn->Query(sql::kSelectNodes, {int64_t{kMaxListLimit} + 1}));
  if (rows.size() > static_cast<size_t>(kMaxListLimit)) {
    return Status::ResourceExhausted("more than " + std::to_string(kMaxListLimit) + " nodes are registered");
  }
  std::vector<NodeInfo> out;
  for (const Row& row : rows) {
    VIGIL_ASSIGN_OR_RETURN(NodeInfo n, ParseNode(row));
    out.push_back(std::move(n));
  }
  return out;
}

Status ClusterStore::CheckNodeEpochOn(Connection& conn, const std::string& node_id, int64_t epoch) {
  VIGIL_ASSIGN_OR_RETURN(std::optional<Row> row, conn.QueryOptional(sql::kSelectNode, {node_id}));
  int64_t current = 0;
  if (row) {
    VIGIL_ASSIGN_OR_RETURN(current, row->Int(1));
  }
  if (current != epoch) {
    return Status::FailedPrecondition("node " + node_id + " is at epoch " + std::to_string(current) + ", not " +
                                      std::to_string(epoch));
  }
  return Status::OK();
}

Status ClusterStore::WithWrite(const std::function<Status(meta::Connection&)>& fn) {
  VIGIL_ASSIGN_OR_RETURN(meta::Transaction txn, db_->Begin(meta::TxnMode::kWrite));
  VIGIL_RETURN_IF_ERROR(fn(txn.conn()));
  return txn.Commit();
}

}  // namespace vigil::jobs
