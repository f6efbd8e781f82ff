// JobStore: opening, target guards, admission (T1),
// reads, and the generic compare-and-set every transition goes through.
#include "vigil/jobs/job_store.h"

#include <algorithm>
#include <map>

#include "jobs/job_list.h"
#include "jobs/job_rows.h"
#include "jobs/job_schema.h"
#include "jobs/job_store_internal.h"
#include "vigil/meta/migrations.h"

namespace vigil::jobs {

namespace internal {

std::string Locked(meta::Connection& conn, std::string_view sql) {
  return std::string(sql) + std::string(conn.profile().lock_rows);
}

Result<std::optional<JobRecord>> LoadJob(meta::Connection& conn, int64_t job_id, bool lock) {
  std::string sql = lock ? Locked(conn, sql::kSelectJob) : std::string(sql::kSelectJob);
  VIGIL_ASSIGN_OR_RETURN(std::optional<meta::Row> row, conn.QueryOptional(sql, {job_id}));
  if (!row) return std::optional<JobRecord>();
  VIGIL_ASSIGN_OR_RETURN(JobRecord rec, ParseJob(*row));
  return std::optional<JobRecord>(std::move(rec));
}

std::string StateText(const JobState& s) {
  return std::string(Name(s.execution)) + "/" + std::string(Name(s.outcome)) + "/" + std::string(Name(s.refresh)) +
         "/" + std::string(Name(s.reconcile)) + "/" + std::string(Name(s.disposition));
}

Status CheckText(std::string_view what, std::string_view value, size_t max_bytes) {
  if (value.empty() || value.size() > max_bytes || SanitizeMessage(value) != value) {
    return Status::InvalidArgument(std::string(what) + " must be 1.." + std::to_string(max_bytes) +
                                   " bytes of printable UTF-8");
  }
  return Status::OK();
}

}  // namespace internal

namespace {

using catalog::CatalogStore;
using catalog::TableEntry;
using internal::CheckText;
using meta::Connection;
using meta::Row;

Status CheckNoGuardOn(Connection& conn, const std::string& table_incarnation) {
  VIGIL_RETURN_IF_ERROR(CatalogStore::LockIncarnationOn(conn, table_incarnation));
  VIGIL_ASSIGN_OR_RETURN(std::vector<Row> rows, conn.Query(sql::kSelectGuards, {table_incarnation}));
  if (rows.empty()) return Status::OK();
  std::string ids;
  for (const Row& row : rows) {
    VIGIL_ASSIGN_OR_RETURN(int64_t id, row.Int(0));
    ids += (ids.empty() ? "" : ", ") + std::to_string(id);
  }
  return Status::FailedPrecondition("table incarnation " + table_incarnation +
                                    " is guarded by active or unknown index jobs: " + ids);
}

Status DropTableOn(Connection& conn, const std::string& catalog, const std::string& database,
                   const std::string& table) {
  VIGIL_ASSIGN_OR_RETURN(std::optional<TableEntry> t, CatalogStore::LookupOn(conn, catalog, database, table, true));
  if (!t) return Status::NotFound("table " + catalog + "." + database + "." + table + " is not registered");
  VIGIL_RETURN_IF_ERROR(CheckNoGuardOn(conn, t->table_incarnation));
  return CatalogStore::DeleteOn(conn, t->table_incarnation);
}

// NotFound unless the spec's table is registered with the spec's incarnations; locks its row.
Status CheckTarget(Connection& conn, const JobSpec& spec) {
  VIGIL_ASSIGN_OR_RETURN(
      std::optional<TableEntry> t,
      CatalogStore::LookupOn(conn, spec.catalog_name, spec.database_name, spec.table_name, /*lock=*/true));
  if (!t || t->table_incarnation != spec.table_incarnation || t->catalog_incarnation != spec.catalog_incarnation) {
    return Status::NotFound("table " + spec.catalog_name + "." + spec.database_name + "." + spec.table_name +
                            " is not registered with incarnation " + spec.table_incarnation);
  }
  return Status::OK();
}

// OK when the fence key is free; AlreadyExists naming its holder, or InvalidArgument when the
// holder's exact name differs only in case.
Status CheckFenceFree(Connection& conn, const FenceKey& key, const std::string& exact_name) {
  VIGIL_ASSIGN_OR_RETURN(std::optional<Row> row,
                         conn.QueryOptional(sql::kSelectFence, {key.catalog_incarnation, key.table_incarnation,
                                                                key.normalization_version, key.normalized_name}));
  if (!row) return Status::OK();
  VIGIL_ASSIGN_OR_RETURN(int64_t holder, row->Int(0));
  VIGIL_ASSIGN_OR_RETURN(std::string holder_name, row->Text(1));
  if (holder_name == exact_name) {
    return Status::AlreadyExists("index '" + exact_name + "' is fenced by job " + std::to_string(holder));
  }
  return Status::InvalidArgument("ambiguous index name '" + exact_name + "': job " + std::to_string(holder) +
                                 " holds '" + holder_name + "', which differs only in case");
}

Status InsertEvent(Connection& conn, const JobRecord& rec, int64_t part, const EventDraft& d, const std::string& actor,
                   int64_t now_ms, const JobState& from) {
  std::map<std::string, std::string> detail = d.detail;
  detail["from"] = internal::StateText(from);
  detail["to"] = internal::StateText(rec.state);
  detail["state"] = std::string(DerivedState(rec.state));
  JobEvent ev{rec.job_id, rec.revision, part, now_ms, d.kind, actor, d.resolution_id, d.note, DetailJson(detail)};
  return conn.Execute(sql::kInsertEvent, EventParams(ev)).status();
}

Result<JobRecord> AdmitOn(Connection& conn, const JobSpec& spec, const std::string& actor, int64_t now_ms,
                          const RequestClaim& request) {
  VIGIL_RETURN_IF_ERROR(CheckTarget(conn, spec));
  if (request.confirm) VIGIL_RETURN_IF_ERROR(request.confirm(conn));
  JobRecord rec;
  rec.creator = actor;
  rec.created_at_ms = now_ms;
  rec.spec = spec;
  rec.fence = {spec.catalog_incarnation, spec.table_incarnation, kNormalizationV1,
               NormalizeIndexNameV1(spec.index_name)};
  rec.revision = 1;
  VIGIL_ASSIGN_OR_RETURN(rec.state, jobs::Admit());
  VIGIL_RETURN_IF_ERROR(CheckLegal(rec.state));
  VIGIL_RETURN_IF_ERROR(CheckFenceFree(conn, rec.fence, spec.index_name));
  VIGIL_ASSIGN_OR_RETURN(std::vector<Row> ids, conn.Query(sql::kInsertJob, AdmissionParams(rec)));
  if (ids.size() != 1) return Status::Internal("job insert returned no id");
  VIGIL_ASSIGN_OR_RETURN(rec.job_id, ids[0].Int(0));
  const FenceKey& k = rec.fence;
  VIGIL_RETURN_IF_ERROR(conn.Execute(sql::kInsertFence, {k.catalog_incarnation, k.table_incarnation,
                                                         k.normalization_version, k.normalized_name, rec.job_id})
                            .status());
  VIGIL_RETURN_IF_ERROR(conn.Execute(sql::kInsertGuard, {spec.table_incarnation, rec.job_id}).status());
  if (!request.token.empty()) {
    Result<int64_t> recorded = conn.Execute(sql::kInsertJobRequest, {request.token, rec.job_id});
    if (recorded.status().code() == StatusCode::kAlreadyExists) {
      return Status::AlreadyExists("request " + request.token + " already admitted a job");
    }
    VIGIL_RETURN_IF_ERROR(recorded.status());
  }
  EventDraft admitted{std::string(event::kAdmitted),
                      std::nullopt,
                      std::nullopt,
                      {{"operation", std::string(Name(spec.operation))}, {"index", spec.index_name}}};
  VIGIL_RETURN_IF_ERROR(InsertEvent(conn, rec, 0, admitted, actor, now_ms, rec.state));
  return rec;
}

// Internal when the transition touched what admission fixed, or re-takes a released fence.
Status CheckTransition(const JobRecord& cur, const Transition& t) {
  const JobRecord& n = t.next;
  if (n.job_id != cur.job_id || n.creator != cur.creator || n.created_at_ms != cur.created_at_ms ||
      !(n.spec == cur.spec) || !(n.fence == cur.fence) || n.provider != cur.provider) {
    return Status::Internal("job " + std::to_string(cur.job_id) + ": a transition changed admitted fields");
  }
  if (t.events.empty()) return Status::Internal("job " + std::to_string(cur.job_id) + ": transition has no event");
  if (!HoldsFence(cur.state) && HoldsFence(n.state)) {
    return Status::Internal("job " + std::to_string(cur.job_id) + ": a transition cannot re-take a released fence");
  }
  return CheckLegal(n.state);
}

// What every transition keeps, checked before its write transaction commits: a violation is a
// bug in a transition, never a state of the store, so the process stops rather than write it.
void CheckInvariants(const JobRecord& cur, const JobRecord& next) {
  VIGIL_CHECK(CheckLegal(next.state).ok());
  // A running job has its attempt; a finished one its finishing time.
  VIGIL_CHECK(next.state.execution != Execution::kRunning || (next.attempt && next.started_at_ms));
  VIGIL_CHECK(next.state.execution != Execution::kTerminal || next.finished_at_ms);
  // An attempt, once dispatched, stays the job's attempt: evidence is always about that attempt.
  VIGIL_CHECK(!cur.attempt || (next.attempt && next.attempt->attempt_id == cur.attempt->attempt_id));
  // Execution never goes back: a terminal job stays terminal.
  VIGIL_CHECK(cur.state.execution != Execution::kTerminal || next.state.execution == Execution::kTerminal);
}

// The catalog's attempt check (catalog::AttemptCheck), in a version claim's transaction: OK
// while the claim's job runs its attempt and the leader epoch it was dispatched under still
// holds the lease at `now_ms` (the lease clock's); else FailedPrecondition naming both.
Status CheckAttemptClaim(Connection& conn, const VersionClaim& claim, int64_t now_ms, const ClusterStore& cluster) {
  const int64_t job_id = *claim.txn.job_id;
  const std::string who = "attempt " + claim.txn.attempt_id + " of index job " + std::to_string(job_id);
  const std::string nothing = "; nothing was committed";
  VIGIL_ASSIGN_OR_RETURN(std::optional<JobRecord> job, internal::LoadJob(conn, job_id, true));
  if (!job) return Status::FailedPrecondition(who + " may not commit: the job does not exist" + nothing);
  if (job->state.execution != Execution::kRunning || !job->attempt ||
      job->attempt->attempt_id != claim.txn.attempt_id) {
    return Status::FailedPrecondition(who + " may no longer commit: the job is " + internal::StateText(job->state) +
                                      (job->attempt ? " with attempt " + job->attempt->attempt_id : "") + nothing);
  }
  Status leading = cluster.CheckLeaderOn(conn, job->attempt->leader_epoch, now_ms);
  if (leading.Is(StatusCode::kCommitConflict)) {
    return Status::FailedPrecondition(who + " may no longer commit: it was dispatched under leader epoch " +
                                      std::to_string(job->attempt->leader_epoch) + ", which no longer holds the lease" +
                                      nothing);
  }
  return leading;
}

Status ReleaseFence(Connection& conn, int64_t job_id) {
  VIGIL_ASSIGN_OR_RETURN(int64_t fences, conn.Execute(sql::kDeleteFence, {job_id}));
  if (fences != 1) return Status::Corruption("job " + std::to_string(job_id) + " did not hold its fence");
  return conn.Execute(sql::kDeleteGuard, {job_id}).status();
}

}  // namespace

JobStore::JobStore(std::unique_ptr<meta::Database> db, LeaseClock lease_clock)
    : db_(std::move(db)),
      cluster_(db_.get(), lease_clock),
      catalog_(db_.get(), [this](Connection& conn, const VersionClaim& claim, int64_t now_ms) {
        return CheckAttemptClaim(conn, claim, now_ms, cluster_);
      }) {}

Status JobStore::MigrateSchema(meta::Database& db, int64_t now_ms) {
  return meta::ApplyMigrations(db, kSchemaComponent, SchemaMigrations(db.profile().dialect), now_ms).status();
}

Result<std::unique_ptr<JobStore>> JobStore::Open(const JobStoreOptions& options) {
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<meta::Database> db, meta::Database::Open(options.uri, options.database));
  VIGIL_RETURN_IF_ERROR(MigrateSchema(*db, 0).WithContext("jobs schema"));
  return std::make_unique<JobStore>(std::move(db), options.lease_clock);
}

Status JobStore::WithWrite(const std::function<Status(meta::Connection&)>& fn) {
  VIGIL_ASSIGN_OR_RETURN(meta::Transaction txn, db_->Begin(meta::TxnMode::kWrite));
  VIGIL_RETURN_IF_ERROR(fn(txn.conn()));
  return txn.Commit();
}

Status JobStore::DropTable(const std::string& catalog, const std::string& database, const std::string& table) {
  return WithWrite([&](Connection& conn) { return DropTableOn(conn, catalog, database, table); });
}

Status JobStore::DropTable(meta::Transaction& txn, const std::string& catalog, const std::string& database,
                           const std::string& table) {
  if (!txn.active()) return Status::FailedPrecondition("drop table: transaction is not active");
  return DropTableOn(txn.conn(), catalog, database, table);
}

Status JobStore::CheckNoGuard(meta::Transaction& txn, const std::string& table_incarnation) {
  if (!txn.active()) return Status::FailedPrecondition("guard check: transaction is not active");
  return CheckNoGuardOn(txn.conn(), table_incarnation);
}

Result<JobRecord> JobStore::Admit(const JobSpec& spec, const std::string& actor, int64_t now_ms,
                                  const RequestClaim& request) {
  VIGIL_RETURN_IF_ERROR(ValidateSpec(spec));
  VIGIL_RETURN_IF_ERROR(CheckText("actor", actor, kMaxIndexNameBytes));
  if (!request.token.empty()) VIGIL_RETURN_IF_ERROR(CheckText("request token", request.token, kMaxMessageBytes));
  // Group commit: concurrent admissions share one durable commit, each in its own savepoint.
  JobRecord rec;
  VIGIL_RETURN_IF_ERROR(db_->Write([&](Connection& conn) -> Status {
    VIGIL_ASSIGN_OR_RETURN(rec, AdmitOn(conn, spec, actor, now_ms, request));
    return Status::OK();
  }));
  return rec;
}

Result<JobRecord> JobStore::Admit(meta::Transaction& txn, const JobSpec& spec, const std::string& actor, int64_t now_ms,
                                  const RequestClaim& request) {
  if (!txn.active()) return Status::FailedPrecondition("admit: transaction is not active");
  VIGIL_RETURN_IF_ERROR(ValidateSpec(spec));
  VIGIL_RETURN_IF_ERROR(CheckText("actor", actor, kMaxIndexNameBytes));
  if (!request.token.empty()) VIGIL_RETURN_IF_ERROR(CheckText("request token", request.token, kMaxMessageBytes));
  return AdmitOn(txn.conn(), spec, actor, now_ms, request);
}

Status JobStore::ConfirmRequest(const RequestClaim& request) {
  if (!request.confirm) return Status::OK();
  return db_->Write([&](Connection& conn) { return request.confirm(conn); });
}

Result<std::optional<int64_t>> JobStore::JobOfRequest(const std::string& request_token) {
  VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, db_->Acquire());
  VIGIL_ASSIGN_OR_RETURN(std::vector<Row> rows, conn->Query(sql::kSelectJobOfRequest, {request_token}));
  if (rows.empty()) return std::optional<int64_t>();
  VIGIL_ASSIGN_OR_RETURN(int64_t id, rows[0].Int(0));
  return std::optional<int64_t>(id);
}

Result<JobRecord> JobStore::Get(int64_t job_id) {
  VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, db_->Acquire());
  VIGIL_ASSIGN_OR_RETURN(std::optional<JobRecord> rec, internal::LoadJob(*conn, job_id, false));
  if (!rec) return Status::NotFound("no index job " + std::to_string(job_id));
  return std::move(*rec);
}

Result<std::vector<JobRecord>> JobStore::QueryJobs(std::string_view sql, const meta::Params& params) {
  VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, db_->Acquire());
  VIGIL_ASSIGN_OR_RETURN(std::vector<Row> rows, conn->Query(sql, params));
  std::vector<JobRecord> out;
  out.reserve(rows.size());
  for (const Row& row : rows) {
    VIGIL_ASSIGN_OR_RETURN(JobRecord rec, ParseJob(row));
    out.push_back(std::move(rec));
  }
  return out;
}

Result<std::vector<JobRecord>> JobStore::Page(const JobFilter& filter) {
  if (!filter.visible || filter.visible->size() <= kMaxScopesPerQuery) {
    VIGIL_ASSIGN_OR_RETURN(ListQuery q, BuildListQuery(filter));
    return QueryJobs(q.sql, q.params);
  }
  // One query per group of scopes, each a page of its own; the merged page is their first jobs.
  const std::vector<TableScope>& all = *filter.visible;
  std::map<int64_t, JobRecord> merged;
  for (size_t i = 0; i < all.size(); i += kMaxScopesPerQuery) {
    JobFilter part = filter;
    const size_t end = std::min(all.size(), i + kMaxScopesPerQuery);
    part.visible =
        std::vector<TableScope>(all.begin() + static_cast<ptrdiff_t>(i), all.begin() + static_cast<ptrdiff_t>(end));
    VIGIL_ASSIGN_OR_RETURN(ListQuery q, BuildListQuery(part));
    VIGIL_ASSIGN_OR_RETURN(std::vector<JobRecord> jobs, QueryJobs(q.sql, q.params));
    for (JobRecord& j : jobs) merged.emplace(j.job_id, std::move(j));
  }
  std::vector<JobRecord> out;
  auto take = [&](auto begin, auto end) {
    for (auto it = begin; it != end && static_cast<int>(out.size()) < filter.limit; ++it) {
      out.push_back(std::move(it->second));
    }
  };
  if (filter.order == JobOrder::kNewestFirst) {
    take(merged.rbegin(), merged.rend());
  } else {
    take(merged.begin(), merged.end());
  }
  return out;
}

Result<std::vector<JobRecord>> JobStore::List(const JobFilter& filter) {
  VIGIL_RETURN_IF_ERROR(ValidateFilter(filter));
  return Page(filter);
}

Result<JobCursor> JobStore::Scan(const JobFilter& filter) {
  VIGIL_RETURN_IF_ERROR(ValidateFilter(filter));
  return JobCursor(this, filter);
}

Status JobStore::ForEach(const JobFilter& filter, const std::function<Status(const JobRecord&)>& fn) {
  VIGIL_ASSIGN_OR_RETURN(JobCursor cursor, Scan(filter));
  while (true) {
    VIGIL_ASSIGN_OR_RETURN(std::optional<JobRecord> job, cursor.Next());
    if (!job) return Status::OK();
    VIGIL_RETURN_IF_ERROR(fn(*job));
  }
}

Result<int64_t> JobStore::Count(const JobFilter& filter) {
  JobFilter checked = filter;
  checked.limit = 1;
  VIGIL_RETURN_IF_ERROR(ValidateFilter(checked));
  if (filter.visible && filter.visible->size() > kMaxScopesPerQuery) {
    // A job may match scopes of several queries: count each one once.
    JobFilter paged = filter;
    paged.limit = kMaxListLimit;
    int64_t n = 0;
    VIGIL_RETURN_IF_ERROR(ForEach(paged, [&](const JobRecord&) {
      ++n;
      return Status::OK();
    }));
    return n;
  }
  VIGIL_ASSIGN_OR_RETURN(ListQuery q, BuildCountQuery(filter));
  VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, db_->Acquire());
  VIGIL_ASSIGN_OR_RETURN(std::optional<Row> row, conn->QueryOptional(q.sql, q.params));
  if (!row) return Status::Internal("job count returned no row");
  return row->Int(0);
}

Result<std::optional<JobRecord>> JobCursor::Next() {
  if (pos_ == page_.size()) {
    if (exhausted_) return std::optional<JobRecord>();
    VIGIL_ASSIGN_OR_RETURN(page_, store_->Page(filter_));
    pos_ = 0;
    exhausted_ = static_cast<int>(page_.size()) < filter_.limit;
    if (page_.empty()) return std::optional<JobRecord>();
    const int64_t last = page_.back().job_id;
    if (filter_.order == JobOrder::kNewestFirst) {
      filter_.max_job_id = last - 1;
    } else {
      filter_.min_job_id = last + 1;
    }
  }
  return std::optional<JobRecord>(std::move(page_[pos_++]));
}

Result<std::vector<AuditRecord>> JobStore::ListAudit(int64_t after_id, int limit) {
  if (limit < 1 || limit > kMaxListLimit) {
    return Status::InvalidArgument("audit list limit must be 1.." + std::to_string(kMaxListLimit));
  }
  VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, db_->Acquire());
  VIGIL_ASSIGN_OR_RETURN(std::vector<Row> rows, conn->Query(sql::kSelectAudit, {after_id, int64_t{limit}}));
  std::vector<AuditRecord> out;
  out.reserve(rows.size());
  for (const Row& row : rows) {
    VIGIL_ASSIGN_OR_RETURN(AuditRecord a, ParseAudit(row));
    out.push_back(std::move(a));
  }
  return out;
}

Result<std::vector<JobRecord>> JobStore::ListReconcileDue(int64_t due_by_ms, int limit) {
  if (limit < 1 || limit > kMaxListLimit) {
    return Status::InvalidArgument("job list limit must be 1.." + std::to_string(kMaxListLimit));
  }
  return QueryJobs(sql::kSelectReconcileDue, {due_by_ms, int64_t{limit}});
}

Result<std::vector<JobRecord>> JobStore::ListRefreshDue(int64_t due_by_ms, int limit) {
  if (limit < 1 || limit > kMaxListLimit) {
    return Status::InvalidArgument("job list limit must be 1.." + std::to_string(kMaxListLimit));
  }
  return QueryJobs(sql::kSelectRefreshDue, {due_by_ms, int64_t{limit}});
}

Result<std::vector<JobEvent>> JobStore::Events(int64_t job_id) {
  VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, db_->Acquire());
  VIGIL_ASSIGN_OR_RETURN(std::vector<Row> rows, conn->Query(sql::kSelectEvents, {job_id}));
  std::vector<JobEvent> out;
  for (const Row& row : rows) {
    VIGIL_ASSIGN_OR_RETURN(JobEvent ev, ParseEvent(row));
    out.push_back(std::move(ev));
  }
  return out;
}

Status JobStore::RecordProgress(int64_t job_id, const std::string& attempt_id, const std::string& phase, int64_t done,
                                int64_t total) {
  VIGIL_RETURN_IF_ERROR(CheckText("progress phase", phase, 64));
  return db_->Write(
      [&](Connection& conn) {
        return conn.Execute(sql::kUpdateProgress, {phase, done, total, job_id, attempt_id}).status();
      },
      meta::WriteScope::kPerStatement);
}

Result<JobRecord> JobStore::Apply(const Cas& cas, const TransitionFn& fn) { return ApplyWith(cas, fn, nullptr); }

Result<JobRecord> JobStore::ApplyWith(const Cas& cas, const TransitionFn& fn, const TxnHook& hook) {
  VIGIL_RETURN_IF_ERROR(CheckText("actor", cas.actor, kMaxIndexNameBytes));
  VIGIL_ASSIGN_OR_RETURN(meta::Transaction txn, db_->Begin(meta::TxnMode::kWrite));
  Connection& conn = txn.conn();
  if (cas.leader_epoch) VIGIL_RETURN_IF_ERROR(cluster_.CheckLeaderOn(conn, *cas.leader_epoch, cas.now_ms));
  VIGIL_ASSIGN_OR_RETURN(std::optional<JobRecord> cur, internal::LoadJob(conn, cas.job_id, true));
  if (!cur) return Status::NotFound("no index job " + std::to_string(cas.job_id));
  if (cur->revision != cas.revision) {
    return Status::CommitConflict("job " + std::to_string(cas.job_id) + " is at revision " +
                                  std::to_string(cur->revision) + ", not " + std::to_string(cas.revision));
  }
  Transition t{*cur, {}};
  VIGIL_RETURN_IF_ERROR(fn(*cur, &t));
  VIGIL_RETURN_IF_ERROR(CheckTransition(*cur, t));
  if (hook) VIGIL_RETURN_IF_ERROR(hook(conn, *cur, t));
  JobRecord& next = t.next;
  next.revision = cur->revision + 1;
  next.archived_at_ms = cur->archived_at_ms;
  next.tombstone = cur->tombstone;
  CheckInvariants(*cur, next);
  VIGIL_ASSIGN_OR_RETURN(int64_t updated, conn.Execute(sql::kUpdateJob, MutableParams(next, cur->revision)));
  if (updated != 1) return Status::CommitConflict("job " + std::to_string(cas.job_id) + " changed concurrently");
  for (size_t i = 0; i < t.events.size(); ++i) {
    VIGIL_RETURN_IF_ERROR(
        InsertEvent(conn, next, static_cast<int64_t>(i), t.events[i], cas.actor, cas.now_ms, cur->state));
  }
  if (HoldsFence(cur->state) && !HoldsFence(next.state)) VIGIL_RETURN_IF_ERROR(ReleaseFence(conn, next.job_id));
  VIGIL_RETURN_IF_ERROR(txn.Commit());
  return std::move(next);
}

Result<int64_t> JobStore::BumpRefreshGeneration(meta::Transaction& txn, const std::string& table_incarnation,
                                                int64_t now_ms) {
  if (!txn.active()) return Status::FailedPrecondition("refresh generation: transaction is not active");
  VIGIL_ASSIGN_OR_RETURN(std::vector<Row> rows,
                         txn.conn().Query(sql::kBumpRefreshGeneration, {table_incarnation, now_ms}));
  if (rows.size() != 1) return Status::Internal("refresh generation bump returned no row");
  return rows[0].Int(0);
}

Result<int64_t> JobStore::GetRefreshGeneration(const std::string& table_incarnation) {
  VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, db_->Acquire());
  VIGIL_ASSIGN_OR_RETURN(std::optional<Row> row,
                         conn->QueryOptional(sql::kSelectRefreshGeneration, {table_incarnation}));
  if (!row) return int64_t{0};
  return row->Int(0);
}

Result<ArchiveResult> JobStore::Archive(int64_t before_ms, int64_t now_ms) {
  ArchiveResult out;
  VIGIL_RETURN_IF_ERROR(WithWrite([&](Connection& conn) -> Status {
    VIGIL_ASSIGN_OR_RETURN(out.archived, conn.Execute(sql::kArchiveReleased, {now_ms, before_ms}));
    VIGIL_ASSIGN_OR_RETURN(out.tombstoned, conn.Execute(sql::kTombstoneUnknown, {now_ms, before_ms}));
    return Status::OK();
  }));
  return out;
}

}  // namespace vigil::jobs
