// The durable job store (seed 000 sections 5, 7-9, appendices B and C;
// DESIGN.md sections 2, 3, 5): index jobs with their append-only events, same-name
// fences, target guards, audit records and per-table refresh generations, on
// meta::Database (SQLite or PostgreSQL, one shared conformance suite). The table
// registry and version catalogs (catalog()) and the leader lease and node
// registry (cluster()) are stores of their own on the same database, whose rows
// a job write reads in its own transaction. Every job write is one transaction: a compare-and-set on the job's
// revision (and, for leader-driven transitions, the leader epoch), the new
// state from job_state.h checked with CheckLegal, one `revision+1` event, and
// the fence and target guard released exactly when HoldsFence() turns false.
// Nothing is kept in memory: reopening the store sees everything.
//
// Times are Unix milliseconds passed by the caller (tests inject them).
// Thread safety: a JobStore is thread-safe; overloads taking a meta::Transaction
// run on the caller's transaction (used by one thread at a time).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/catalog/catalog_store.h"
#include "vigil/common/status.h"
#include "vigil/jobs/backoff.h"
#include "vigil/jobs/cluster_store.h"
#include "vigil/jobs/job_record.h"
#include "vigil/jobs/job_state.h"
#include "vigil/jobs/request_claim.h"
#include "vigil/meta/database.h"

namespace vigil::jobs {

struct JobStoreOptions {
  std::string uri;  // see meta::Database::Open
  meta::DatabaseOptions database;
  LeaseClock lease_clock = LeaseClock::kStore;
};

// One table, or (without a table name) every table of a database.
struct TableScope {
  std::string catalog_name;
  std::string database_name;
  std::optional<std::string> table_name;

  bool operator==(const TableScope&) const = default;
};

enum class JobOrder { kNewestFirst, kOldestFirst };

// A job listing: predicates on the store's indexed columns, evaluated by the
// store, and one page of `limit` jobs in `order` (see JobCursor for the rest).
struct JobFilter {
  std::optional<std::string> catalog_name;
  std::optional<std::string> database_name;
  std::optional<std::string> table_name;
  std::optional<std::string> index_name;  // compared by normalization v1, like the fence
  std::optional<std::string> state;       // a DerivedState() value, e.g. "OUTCOME_UNKNOWN"
  std::optional<Outcome> outcome;
  std::optional<int64_t> min_job_id;         // inclusive
  std::optional<int64_t> max_job_id;         // inclusive
  std::optional<int64_t> created_from_ms;    // created_at >= this
  std::optional<int64_t> created_before_ms;  // created_at < this
  // Set: only jobs of these scopes whose target table still resolves (a non-administrator's
  // listing); empty matches nothing.
  std::optional<std::vector<TableScope>> visible;
  // Only jobs a leader must act on: not terminal, or a refresh to run.
  bool waiting_for_leader = false;
  // Archived jobs too. Without it a job is listed until archived, and an archived one
  // (a tombstone) while it still holds its fence (seed 000 I8).
  bool include_archived = false;
  JobOrder order = JobOrder::kNewestFirst;
  int limit = 100;  // jobs per page, 1..kMaxListLimit
};

// The compare-and-set of one transition.
struct Cas {
  int64_t job_id = 0;
  int64_t revision = 0;                 // the revision the caller loaded
  std::optional<int64_t> leader_epoch;  // set for leader-driven transitions
  std::string actor;                    // recorded on the event
  int64_t now_ms = 0;
};

// What a transition function produces: the next record (starting as a copy of
// the current one) and at least one event.
struct Transition {
  JobRecord next;
  std::vector<EventDraft> events;
};
// Maps the loaded record to the next one using a job_state.h transition.
using TransitionFn = std::function<Status(const JobRecord& current, Transition* t)>;

// A classified attempt result (seed 000 section 7.4) from the matching attempt.
struct AttemptReport {
  std::string attempt_id;
  AttemptResult result = AttemptResult::kUnknown;
  bool observed_change = false;
  bool invoked = false;
  std::optional<std::string> error_code;     // [A-Z0-9_]{1,64}
  std::optional<std::string> error_message;  // sanitized and cut to 1,024 bytes on write
  std::optional<int64_t> committed_version;
  // An UNKNOWN outcome's first watcher check comes this long after the result (the leader's
  // jobs.reconcile_initial_backoff_seconds).
  int64_t reconcile_backoff_s = Backoff{}.initial_s;
  // The first check is due at once (an attempt whose commit the store fences, recorded by the
  // node that ran it: the leader can settle it now); the backoff applies after it.
  bool due_now = false;
};

// One check of an UNKNOWN job's watcher that proved nothing (seed 000 section 8.1).
struct WatchCheck {
  bool read_ok = true;             // false: the dataset could not be read (retryable)
  std::optional<int64_t> version;  // on a good read: what was observed
  std::optional<std::string> fingerprint;
  std::string error;       // on a failed read; sanitized into the event
  int64_t backoff_s = 30;  // the next check is due at now + backoff_s
};

namespace event {
constexpr std::string_view kWatchChecked = "WATCH_CHECKED";
constexpr std::string_view kWatchReadFailed = "WATCH_READ_FAILED";
}  // namespace event

struct ArchiveResult {
  int64_t archived = 0;    // terminal jobs with a released fence
  int64_t tombstoned = 0;  // UNKNOWN jobs still holding their fence
};

namespace audit {
constexpr std::string_view kForceRelease = "FORCE_RELEASE";
constexpr std::string_view kForceReleaseWithoutRefresh = "FORCE_RELEASE WITHOUT REFRESH";
}  // namespace audit

// One FORCE_RELEASE (seed 000 section 8.2), written in the transaction of its request into
// an append-only table of its own: it names the job's target itself, so it outlives the
// job's archival and deletion.
struct AuditRecord {
  int64_t audit_id = 0;  // increasing
  int64_t at_ms = 0;
  std::string actor;
  std::string action;  // an audit:: constant
  int64_t job_id = 0;
  std::string resolution_id;
  std::string catalog_name;
  std::string database_name;
  std::string table_name;
  std::string table_incarnation;
  std::string index_name;
  std::string note;                   // the COMMENT, normalized
  std::vector<std::string> warnings;  // as shown to the actor (ForceWarnings)

  bool operator==(const AuditRecord&) const = default;
};

class JobStore;

// Pages through a listing in its order, one query of filter.limit jobs at a time, each
// continuing after the last job returned (keyset paging on the job id): any number of
// jobs with one page in memory, and a job that matches throughout is returned once.
// One thread at a time; the store outlives the cursor.
class JobCursor {
 public:
  // The next job; nullopt after the last one.
  Result<std::optional<JobRecord>> Next();

 private:
  friend class JobStore;
  JobCursor(JobStore* store, JobFilter filter) : store_(store), filter_(std::move(filter)) {}

  JobStore* store_;
  JobFilter filter_;
  std::vector<JobRecord> page_;
  size_t pos_ = 0;
  bool exhausted_ = false;
};

class JobStore {
 public:
  // Opens its own pool on `options.uri` and applies the "jobs" migrations.
  static Result<std::unique_ptr<JobStore>> Open(const JobStoreOptions& options);
  // Applies the "jobs" migrations to `db`. Idempotent.
  static Status MigrateSchema(meta::Database& db, int64_t now_ms);

  meta::Database& database() { return *db_; }

  // The table registry and version catalogs (catalog/catalog_store.h) on the same database,
  // whose attempt check is this store's: a claim commits only while its job runs the attempt
  // under the live leader epoch.
  catalog::CatalogStore& catalog() { return catalog_; }
  // The leader lease and node registry (cluster_store.h) on the same database and lease clock.
  ClusterStore& cluster() { return cluster_; }

  // ---- Tables and their guards ----
  // Drops a registered table after CheckNoGuard; a re-registered one gets a new incarnation.
  // NotFound when not registered; FailedPrecondition when guarded.
  Status DropTable(const std::string& catalog, const std::string& database, const std::string& table);
  Status DropTable(meta::Transaction& txn, const std::string& catalog, const std::string& database,
                   const std::string& table);
  // For DROP TABLE / target-changing DDL inside the caller's write transaction: locks the table
  // row, then FailedPrecondition naming the active or unknown job ids that guard it.
  Status CheckNoGuard(meta::Transaction& txn, const std::string& table_incarnation);

  // ---- Jobs ----
  // T1 in one write transaction: table registered with the spec's incarnations (else NotFound),
  // fence free (else AlreadyExists naming its job; a case-only collision with another exact name
  // is InvalidArgument "ambiguous"), then job PENDING/NONE, fence, target guard, event 1. The
  // API request behind it (`request`, when it has a token) is confirmed and recorded in the same
  // transaction: a request that lost its reservation admits nothing (the confirm's error), and
  // a token admits at most one job (AlreadyExists).
  Result<JobRecord> Admit(const JobSpec& spec, const std::string& actor, int64_t now_ms,
                          const RequestClaim& request = {});
  Result<JobRecord> Admit(meta::Transaction& txn, const JobSpec& spec, const std::string& actor, int64_t now_ms,
                          const RequestClaim& request = {});
  // The job admitted by the request `request_token`, or nullopt when none was.
  Result<std::optional<int64_t>> JobOfRequest(const std::string& request_token);
  // Runs `request.confirm` (when set) in a write transaction of its own: for an effect that is
  // not a metadata write (an append), just before it is published.
  Status ConfirmRequest(const RequestClaim& request);
  // NotFound when there is no such job (archived jobs and tombstones are found).
  Result<JobRecord> Get(int64_t job_id);
  // One page: at most filter.limit jobs in filter.order. InvalidArgument for a limit outside
  // 1..kMaxListLimit or an unknown state name.
  Result<std::vector<JobRecord>> List(const JobFilter& filter);
  // Every matching job, paged by filter.limit (see JobCursor); the errors of List.
  Result<JobCursor> Scan(const JobFilter& filter);
  // Calls fn for every matching job in filter.order; stops at fn's first error.
  Status ForEach(const JobFilter& filter, const std::function<Status(const JobRecord&)>& fn);
  // How many jobs match (filter.limit and filter.order aside); the errors of List.
  Result<int64_t> Count(const JobFilter& filter);
  // UNKNOWN jobs whose reconciliation is due (WATCHING, RETRY_PENDING, FINAL_READ_PENDING, or
  // STOPPED_TERMINATION_PROVEN awaiting attribution) with reconcile_next_at unset or <= due_by_ms,
  // earliest first; archived tombstones included. InvalidArgument outside 1..kMaxListLimit.
  Result<std::vector<JobRecord>> ListReconcileDue(int64_t due_by_ms, int limit);
  // Jobs with a refresh to run by due_by_ms: REQUIRED, RUNNING (a dead leader's, to replay) or
  // RETRY_PENDING and due; oldest first; archived ones and tombstones included.
  Result<std::vector<JobRecord>> ListRefreshDue(int64_t due_by_ms, int limit);
  // Every event of the job, by (seq, part).
  Result<std::vector<JobEvent>> Events(int64_t job_id);

  // The generic compare-and-set: CommitConflict (nothing changed) when the job is not at
  // cas.revision or cas.leader_epoch is not the live leader epoch; otherwise fn's error, or
  // the next record written with revision+1, its events, and the fence and guard released
  // when HoldsFence() turns false. Internal when fn changes admitted fields or re-takes a fence.
  Result<JobRecord> Apply(const Cas& cas, const TransitionFn& fn);

  // Records the running attempt's progress (phase, done, total). Advisory: no revision, no
  // event, never a state change; ignored (OK) once the attempt is no longer RUNNING.
  Status RecordProgress(int64_t job_id, const std::string& attempt_id, const std::string& phase, int64_t done,
                        int64_t total);

  // ---- Transitions (each one Apply) ----
  // T2 as two CASes: PENDING -> CANCELLING, then CANCELLED_BEFORE_DISPATCH (fence released).
  Result<JobRecord> Cancel(const Cas& cas);
  // T2's second CAS alone: completes a durable CANCELLING (crash cut C3).
  Result<JobRecord> CompleteCancel(const Cas& cas);
  // T3: needs cas.leader_epoch == attempt.leader_epoch and the node's current epoch
  // (FailedPrecondition otherwise); the attempt identity is durable when this returns (I1).
  Result<JobRecord> Dispatch(const Cas& cas, const AttemptIdentity& attempt);
  // NOOP / NOT_COMMITTED decided before dispatch (AttemptResult kNoop or kNotInvoked).
  Result<JobRecord> ConcludeBeforeDispatch(const Cas& cas, AttemptResult result, bool observed_change);
  // Scheduling-policy exhaustion (seed 000 section 6): a PENDING job no node took ends
  // NOT_COMMITTED / NOT_REQUIRED with error SCHEDULING_EXHAUSTED and `message`.
  Result<JobRecord> ExhaustScheduling(const Cas& cas, const std::string& message);
  // T4-T8 from the matching attempt (CommitConflict for another attempt id).
  Result<JobRecord> RecordResult(const Cas& cas, const AttemptReport& report);
  // T9: the watcher saw the version or index change.
  Result<JobRecord> ObserveChange(const Cas& cas, int64_t version, const std::string& fingerprint);
  // T10: matching termination proof (recorded with what proved it), then the final
  // authoritative read.
  Result<JobRecord> ProveTermination(const Cas& cas, const std::string& attempt_id, TerminationProof proof);
  Result<JobRecord> FinishFinalRead(const Cas& cas, int64_t version, const std::string& fingerprint);
  // A watcher check without termination proof or change: persists reconcile_backoff_s and the
  // next check (now + backoff_s) so a restarted leader continues the schedule. A failed read
  // enters RETRY_PENDING, a good one returns to WATCHING and records its observation; outcome,
  // refresh and fence never change. From FINAL_READ_PENDING or an unattributed
  // STOPPED_TERMINATION_PROVEN only the schedule moves. FailedPrecondition for any other state,
  // or for an observation that differs from the last one (that is T9, ObserveChange).
  Result<JobRecord> RecordWatch(const Cas& cas, const WatchCheck& check);
  // Vigil's provenance attribution after termination proof.
  Result<JobRecord> Attribute(const Cas& cas, bool committed, std::optional<int64_t> committed_version);
  // T11: REQUIRED|RETRY_PENDING -> RUNNING with a new job refresh generation (in the record).
  Result<JobRecord> RefreshStart(const Cas& cas);
  // T11-T13 completion for `refresh_generation` (CommitConflict when older): DONE bumps the
  // table's refresh generation in the same transaction and completes a pending ACK/FORCE;
  // a failure becomes RETRY_PENDING with a persisted backoff.
  Result<JobRecord> RefreshDone(const Cas& cas, int64_t refresh_generation, bool ok, const std::string& error = "");
  // T12 / T13 requests with a note (see NormalizeNote). Repeating the pending request of the
  // same action, actor and note joins it (no new revision). A FORCE request writes its
  // AuditRecord in the same transaction.
  Result<JobRecord> RequestAck(const Cas& cas, const std::string& note);
  Result<JobRecord> RequestForce(const Cas& cas, const std::string& note);
  // T14 in one CAS: supersedes a pending resolution, skips refresh, releases fence and guard;
  // writes its AuditRecord in the same transaction.
  Result<JobRecord> ForceWithoutRefresh(const Cas& cas, const std::string& note);

  // ---- Audit ----
  // Audit records with audit_id > after_id, oldest first, at most `limit` (1..kMaxListLimit).
  Result<std::vector<AuditRecord>> ListAudit(int64_t after_id, int limit);

  // ---- Refresh generations ----
  Result<int64_t> BumpRefreshGeneration(meta::Transaction& txn, const std::string& table_incarnation, int64_t now_ms);
  // 0 when never bumped.
  Result<int64_t> GetRefreshGeneration(const std::string& table_incarnation);

  // ---- Retention ----
  // Terminal jobs finished before `before_ms` whose fence is released get archived_at = now;
  // UNKNOWN ones still holding their fence become tombstones. Nothing is deleted.
  Result<ArchiveResult> Archive(int64_t before_ms, int64_t now_ms);

  explicit JobStore(std::unique_ptr<meta::Database> db, LeaseClock lease_clock = LeaseClock::kStore);

 private:
  friend class JobCursor;

  // Runs in one transaction after fn, before the write (e.g. node epoch check, table bump).
  using TxnHook = std::function<Status(meta::Connection&, const JobRecord& current, const Transition&)>;
  Result<JobRecord> ApplyWith(const Cas& cas, const TransitionFn& fn, const TxnHook& hook);
  Result<JobRecord> RequestResolution(const Cas& cas, const std::string& note, bool force);
  Status WithWrite(const std::function<Status(meta::Connection&)>& fn);
  // Runs a SELECT of job columns on a pooled connection and parses every row.
  Result<std::vector<JobRecord>> QueryJobs(std::string_view sql, const meta::Params& params);
  // List's page for a validated filter: one query per group of visible scopes, merged.
  Result<std::vector<JobRecord>> Page(const JobFilter& filter);

  const std::unique_ptr<meta::Database> db_;
  ClusterStore cluster_;
  catalog::CatalogStore catalog_;
};

}  // namespace vigil::jobs
