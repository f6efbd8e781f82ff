// The cluster's rows in the metadata store (DESIGN.md sections 2 and 5): the
// leader lease (one row: holder, epoch, expiry) and the node registry (each
// node's epoch, heartbeat, drain mark and capacity). The job store checks both
// inside its own transactions (a leader-driven transition needs the live leader
// epoch, a dispatch the node's current epoch) and reaches this store as
// JobStore::cluster(), over the same database; it can also stand alone over it.
// Each write is one short transaction. On PostgreSQL every time that decides a
// lease or a node heartbeat is the database's clock (LeaseClock::kStore), so
// nodes whose clocks disagree still agree on who leads; an embedded root's
// SQLite file is on the one machine whose clock every caller reads.
//
// Times are Unix milliseconds passed by the caller (tests inject them).
// Thread safety: a ClusterStore is thread-safe (its database is, and it is
// immutable); CheckLeader runs on the caller's transaction (one thread at a time).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/meta/database.h"

namespace vigil::jobs {

// The clock that decides leases and node heartbeats.
enum class LeaseClock {
  kStore,   // PostgreSQL's clock_timestamp(); on SQLite (one machine) the caller's now_ms
  kCaller,  // the now_ms each call passes, on both backends (suites that drive time)
};

struct LeaderLease {
  std::string holder;  // "" when never held
  int64_t epoch = 0;
  int64_t acquired_at_ms = 0;
  int64_t expires_at_ms = 0;

  // Held and not expired at now_ms (the rule of every lease decision).
  bool Live(int64_t now_ms) const { return !holder.empty() && expires_at_ms > now_ms; }
};

struct NodeInfo {
  std::string node_id;
  int64_t epoch = 0;
  int64_t started_at_ms = 0;
  int64_t heartbeat_at_ms = 0;
  int64_t pid = 0;
  std::string host;
  bool draining = false;  // finishes its attempts and leads nothing until resumed
  int64_t capacity = 0;   // attempts it runs for any leader (its node agent); 0: none
};

constexpr int64_t kMaxNodeCapacity = 256;  // jobs.concurrency_per_node's bound
constexpr int kMaxListLimit = 1000;        // rows of one listing (jobs, audit records, nodes)

class ClusterStore {
 public:
  // `db` outlives the store and holds the "jobs" schema component (jobs/job_schema.cc).
  ClusterStore(meta::Database* db, LeaseClock lease_clock) : db_(db), lease_clock_(lease_clock) {}

  LeaseClock lease_clock() const { return lease_clock_; }

  // ---- Leader lease ----
  // Succeeds when free, expired, or held (unexpired) by `holder`. The epoch increases on every
  // change of holder and after a lapse; Busy when another holder's lease is live.
  Result<LeaderLease> AcquireLeader(const std::string& holder, int64_t now_ms, int64_t ttl_ms);
  // Extends a live lease; CommitConflict when `holder`/`epoch` no longer hold it or it expired.
  Result<LeaderLease> RenewLeader(const std::string& holder, int64_t epoch, int64_t now_ms, int64_t ttl_ms);
  // Replaces a lease whose holder the caller has proven dead (e.g. it no longer holds the
  // root's leader lock) with a new epoch, without waiting for expiry. CommitConflict when
  // the lease is no longer (`dead.holder`, `dead.epoch`).
  Result<LeaderLease> TakeOverLeader(const std::string& holder, const LeaderLease& dead, int64_t now_ms,
                                     int64_t ttl_ms);
  // Hands a live lease back (it lapses now, so the next holder gets a new epoch at once).
  // OK when `holder`/`epoch` no longer hold it.
  Status ReleaseLeader(const std::string& holder, int64_t epoch, int64_t now_ms);
  Result<LeaderLease> GetLeader();
  // The clock every lease decision reads (LeaseClock): the database's on PostgreSQL,
  // `caller_now_ms` on SQLite. The lease and node functions here read it themselves; their
  // `now_ms` argument is the caller's clock.
  Result<int64_t> LeaseClockMs(int64_t caller_now_ms);
  // Inside the caller's write transaction: locks the lease row; CommitConflict unless `epoch`
  // is the live leader epoch at now_ms.
  Status CheckLeader(meta::Transaction& txn, int64_t epoch, int64_t now_ms);
  // CheckLeader on the caller's connection (inside its write transaction).
  Status CheckLeaderOn(meta::Connection& conn, int64_t epoch, int64_t now_ms) const;

  // ---- Nodes ----
  // Registers a start of `node_id` that runs up to `capacity` attempts any leader assigns to it
  // (0: only its own leader's); returns its new epoch (1, 2, ...).
  Result<int64_t> RegisterNode(const std::string& node_id, int64_t pid, const std::string& host, int64_t now_ms,
                               int64_t capacity = 0);
  // CommitConflict when `epoch` was replaced; NotFound for an unknown node.
  Status Heartbeat(const std::string& node_id, int64_t epoch, int64_t now_ms);
  Result<std::optional<NodeInfo>> GetNode(const std::string& node_id);
  // Marks a node draining (or not). The mark outlives the node's restarts until cleared.
  // NotFound for an unknown node.
  Status SetNodeDraining(const std::string& node_id, bool draining);
  // Every registered node by id; ResourceExhausted past kMaxListLimit (never cut short).
  Result<std::vector<NodeInfo>> ListNodes();
  // On the caller's transaction: FailedPrecondition unless `node_id` is registered at `epoch`.
  static Status CheckNodeEpochOn(meta::Connection& conn, const std::string& node_id, int64_t epoch);

 private:
  Status WithWrite(const std::function<Status(meta::Connection&)>& fn);
  // LeaseClockMs on `conn` (inside the caller's transaction).
  Result<int64_t> LeaseNow(meta::Connection& conn, int64_t caller_now_ms) const;

  meta::Database* const db_;
  const LeaseClock lease_clock_;
};

}  // namespace vigil::jobs
