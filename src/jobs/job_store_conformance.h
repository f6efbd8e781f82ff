// The JobStore conformance suite: every contract of job_store.h, run on SQLite
// by job_store_test.cc and on PostgreSQL by job_store_itest.cc. Times are
// explicit arguments (an injected clock), so expiry and backoff are tested
// without sleeping. Include from exactly one file per test binary.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "jobs/job_list.h"
#include "testutil/test_database.h"
#include "vigil/catalog/version_store.h"
#include "vigil/common/uuid.h"
#include "vigil/jobs/job_control.h"
#include "vigil/jobs/job_store.h"
#include "vigil/storage/filename.h"

namespace vigil::jobs {

constexpr int64_t kT0 = 1'700'000'000'000;  // Unix ms
constexpr int64_t kLeaseTtl = 10'000;

#define ASSERT_OK(expr)                                       \
  do {                                                        \
    const ::vigil::Status _st = (expr);                       \
    ASSERT_TRUE(_st.ok()) << #expr << ": " << _st.ToString(); \
  } while (0)

class JobStoreConformanceTest : public ::testing::TestWithParam<testing::DatabaseBackend> {
 protected:
  void SetUp() override {
    auto env = GetParam().make();
    ASSERT_TRUE(env.ok()) << env.status().ToString();
    env_ = std::move(env).value();
    Reopen();
    ASSERT_NE(store_, nullptr);
    auto table = store_->catalog().RegisterTable("local", "db", "docs", "/root/db/docs.vgl", now_);
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    table_ = *table;
    auto lease = store_->cluster().AcquireLeader("leader-a", now_, kLeaseTtl);
    ASSERT_TRUE(lease.ok()) << lease.status().ToString();
    epoch_ = lease->epoch;
    auto node = store_->cluster().RegisterNode("node-1", 4242, "host-1", now_);
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    node_epoch_ = *node;
  }

  void Reopen() {
    store_.reset();
    JobStoreOptions opts;
    opts.uri = env_->uri();
    opts.lease_clock = LeaseClock::kCaller;  // the suite drives lease time itself
    auto store = JobStore::Open(opts);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }

  JobSpec Spec(const std::string& index_name, const catalog::TableEntry* table = nullptr) const {
    const catalog::TableEntry& t = table ? *table : table_;
    JobSpec s;
    s.catalog_name = t.catalog_name;
    s.database_name = t.database_name;
    s.table_name = t.table_name;
    s.catalog_incarnation = t.catalog_incarnation;
    s.table_incarnation = t.table_incarnation;
    s.locator = t.locator;
    s.index_name = index_name;
    s.columns = {"emb"};
    s.category = SqlCategory::kAnn;
    s.physical_type = "IVF_PQ";
    s.properties_json = R"({"metric":"l2","num_partitions":"4"})";
    s.start_version = 7;
    s.schema_fingerprint = "fp-7";
    return s;
  }

  JobRecord MustAdmit(const std::string& name) {
    auto rec = store_->Admit(Spec(name), "alice", now_);
    EXPECT_TRUE(rec.ok()) << rec.status().ToString();
    return rec.ok() ? *rec : JobRecord{};
  }

  // A CAS on `rec` as loaded, by the leader.
  Cas Leader(const JobRecord& rec) const { return Cas{rec.job_id, rec.revision, epoch_, "leader-a", now_}; }
  Cas User(const JobRecord& rec) const { return Cas{rec.job_id, rec.revision, std::nullopt, "alice", now_}; }

  AttemptIdentity Attempt(const std::string& id = "attempt-1") const {
    return AttemptIdentity{"node-1", node_epoch_, id, 1, 1, epoch_, now_ + 60'000};
  }

  JobRecord MustOk(const Result<JobRecord>& r) {
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : JobRecord{};
  }

  JobRecord Running(const std::string& name) { return MustOk(store_->Dispatch(Leader(MustAdmit(name)), Attempt())); }

  JobRecord Finished(const std::string& name, AttemptResult result, bool observed_change = false) {
    JobRecord r = Running(name);
    AttemptReport rep;
    rep.attempt_id = "attempt-1";
    rep.result = result;
    rep.observed_change = observed_change;
    rep.invoked = result != AttemptResult::kNotInvoked;
    return MustOk(store_->RecordResult(Leader(r), rep));
  }

  int64_t CountFor(const char* table, int64_t job_id) {
    auto conn = store_->database().Acquire();
    EXPECT_TRUE(conn.ok());
    auto rows = (*conn)->Query(std::string("SELECT count(*) FROM ") + table + " WHERE job_id = $1", {job_id});
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? *(*rows)[0].Int(0) : -1;
  }
  bool HoldsFenceRow(int64_t job_id) { return CountFor("index_fences", job_id) == 1; }
  bool HoldsGuardRow(int64_t job_id) { return CountFor("index_target_guards", job_id) == 1; }

  std::vector<JobEvent> MustEvents(int64_t job_id) {
    auto ev = store_->Events(job_id);
    EXPECT_TRUE(ev.ok()) << ev.status().ToString();
    return ev.ok() ? *ev : std::vector<JobEvent>{};
  }

  // Checks the last transition: persisted record equals `rec`, revision `rev`, last event kind
  // and seq, and fence/guard rows present exactly when HoldsFence says so.
  void ExpectPersisted(const JobRecord& rec, int64_t rev, const std::string& last_kind) {
    EXPECT_EQ(rec.revision, rev);
    JobRecord loaded = MustOk(store_->Get(rec.job_id));
    EXPECT_EQ(loaded, rec);
    std::vector<JobEvent> ev = MustEvents(rec.job_id);
    ASSERT_FALSE(ev.empty());
    EXPECT_EQ(ev.back().kind, last_kind);
    EXPECT_EQ(ev.back().seq, rev);
    EXPECT_EQ(HoldsFenceRow(rec.job_id), HoldsFence(rec.state));
    EXPECT_EQ(HoldsGuardRow(rec.job_id), HoldsFence(rec.state));
  }

  JobState S(Execution e, Outcome o, RefreshState r, ReconcileState c = ReconcileState::kNone,
             Disposition d = Disposition::kNone) {
    return JobState{e, o, r, c, d};
  }

  // Inserts `n` terminal NOT_COMMITTED jobs of `t` created at `created_ms` in one statement,
  // archived at `archived_ms` when set; then analyzes the tables.
  void BulkJobs(int n, const catalog::TableEntry& t, int64_t created_ms, std::optional<int64_t> archived_ms) {
    auto txn = store_->database().Begin(meta::TxnMode::kWrite);
    ASSERT_TRUE(txn.ok());
    ASSERT_OK(txn->conn()
                  .Execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1)"
                           " INSERT INTO index_jobs (revision, creator, created_at, finished_at, catalog_name,"
                           " database_name, table_name, catalog_incarnation, table_incarnation, locator,"
                           " index_name, normalization_version, normalized_name, provider, operation, if_mode,"
                           " columns_json, properties_json, start_version, schema_fingerprint, execution,"
                           " outcome, refresh, reconcile, disposition, archived_at)"
                           " SELECT 3, 'bulk', CAST($2 AS BIGINT), CAST($2 AS BIGINT), $3, $4, $5, $6, $7, '/l',"
                           " 'idx', 1, 'idx', 'DIRECTORY', 'CREATE', 'NONE', '[]', '{}', 1, 'fp', 'TERMINAL',"
                           " 'NOT_COMMITTED', 'DONE', 'NONE', 'NONE', CAST($8 AS BIGINT) FROM n",
                           {int64_t{n}, created_ms, t.catalog_name, t.database_name, t.table_name,
                            t.catalog_incarnation, t.table_incarnation, meta::Value(archived_ms)})
                  .status());
    ASSERT_OK(txn->conn().ExecuteScript("ANALYZE"));
    ASSERT_OK(txn->Commit());
  }

  // Every job a cursor over `f` returns, in its order.
  std::vector<int64_t> ScanIds(const JobFilter& f) {
    std::vector<int64_t> out;
    auto cursor = store_->Scan(f);
    EXPECT_TRUE(cursor.ok()) << cursor.status().ToString();
    if (!cursor.ok()) return out;
    while (true) {
      auto next = cursor->Next();
      EXPECT_TRUE(next.ok()) << next.status().ToString();
      if (!next.ok() || !next->has_value()) return out;
      out.push_back((*next)->job_id);
    }
  }

  std::vector<int64_t> ListIds(const JobFilter& f) {
    std::vector<int64_t> out;
    auto listed = store_->List(f);
    EXPECT_TRUE(listed.ok()) << listed.status().ToString();
    if (listed.ok()) {
      for (const JobRecord& j : *listed) out.push_back(j.job_id);
    }
    return out;
  }

  // The query plan of a listing: must search index_jobs through an index, never scan it.
  void ExpectIndexedPlan(const ListQuery& q) {
    const bool sqlite = store_->database().profile().dialect == meta::Dialect::kSqlite;
    auto conn = store_->database().Acquire();
    ASSERT_TRUE(conn.ok());
    auto plan = (*conn)->Query((sqlite ? "EXPLAIN QUERY PLAN " : "EXPLAIN ") + q.sql, q.params);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    std::string text;
    bool scans = false;
    for (const auto& row : *plan) {
      const std::string line = row.at(row.size() - 1).DebugString();
      text += line + "\n";
      if (sqlite) {
        scans = scans || (line.find("SCAN index_jobs") != std::string::npos && line.find("USING") == std::string::npos);
      } else {
        scans = scans || line.find("Seq Scan on index_jobs") != std::string::npos;
      }
    }
    EXPECT_FALSE(scans) << text;
  }

  // Moves the injected clock and keeps the leader lease live.
  void Tick(int64_t ms) {
    now_ += ms;
    ASSERT_TRUE(store_->cluster().RenewLeader("leader-a", epoch_, now_, kLeaseTtl).ok());
  }

  std::unique_ptr<testing::TestDatabaseEnv> env_;
  std::unique_ptr<JobStore> store_;
  int64_t now_ = kT0;
  catalog::TableEntry table_;
  int64_t epoch_ = 0;
  int64_t node_epoch_ = 0;
};

TEST_P(JobStoreConformanceTest, T1AdmissionWritesJobFenceGuardAndFirstEvent) {
  JobRecord r = MustAdmit("Emb_Idx");
  EXPECT_GT(r.job_id, 0);
  EXPECT_EQ(r.state, JobState{});
  EXPECT_EQ(r.fence.normalized_name, "emb_idx");
  EXPECT_EQ(r.fence.normalization_version, 1);
  EXPECT_EQ(r.fence.table_incarnation, table_.table_incarnation);
  EXPECT_EQ(r.provider, "DIRECTORY");
  EXPECT_EQ(r.spec, Spec("Emb_Idx"));
  EXPECT_EQ(r.creator, "alice");
  ExpectPersisted(r, 1, "ADMITTED");
  JobRecord second = MustAdmit("other_idx");
  EXPECT_GT(second.job_id, r.job_id);
}

TEST_P(JobStoreConformanceTest, AnAdmittingRequestIsRecordedWithItsJobOnce) {
  auto none = store_->JobOfRequest("realm:alice/key-1/1700000000000");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->has_value());
  auto rec = store_->Admit(Spec("emb_idx"), "alice", now_, {"realm:alice/key-1/1700000000000"});
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  auto found = store_->JobOfRequest("realm:alice/key-1/1700000000000");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ(**found, rec->job_id);
  // One request admits at most one job: the second admission leaves nothing behind.
  auto again = store_->Admit(Spec("other_idx"), "alice", now_, {"realm:alice/key-1/1700000000000"});
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists) << again.status().ToString();
  auto fence = store_->Admit(Spec("other_idx"), "alice", now_);
  EXPECT_TRUE(fence.ok()) << "the refused admission kept its fence: " << fence.status().ToString();
  // A token that is not printable text is refused.
  EXPECT_EQ(store_->Admit(Spec("third_idx"), "alice", now_, {std::string("bad\x01token")}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_P(JobStoreConformanceTest, ARequestThatLostItsReservationAdmitsNothing) {
  int confirms = 0;
  RequestClaim lost{"realm:alice/key-2/1700000000000", [&](meta::Connection& conn) -> Status {
                      ++confirms;
                      // The confirm runs inside the admission's transaction, on its connection.
                      auto probe = conn.Query("SELECT 1", {});
                      if (!probe.ok()) return probe.status();
                      return Status::FailedPrecondition("the reservation was taken over");
                    }};
  auto refused = store_->Admit(Spec("emb_idx"), "alice", now_, lost);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition) << refused.status().ToString();
  EXPECT_EQ(confirms, 1);
  auto recorded = store_->JobOfRequest(lost.token);
  ASSERT_TRUE(recorded.ok());
  EXPECT_FALSE(recorded->has_value());
  // Nothing of the admission stayed: the fence is free and no job exists.
  auto jobs = store_->List({});
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  EXPECT_TRUE(jobs->empty());
  RequestClaim owned{"realm:alice/key-3/1700000000000", [](meta::Connection&) { return Status::OK(); }};
  auto admitted = store_->Admit(Spec("emb_idx"), "alice", now_, owned);
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  EXPECT_EQ(store_->ConfirmRequest(owned).code(), StatusCode::kOk);
  EXPECT_EQ(store_->ConfirmRequest(lost).code(), StatusCode::kFailedPrecondition);
}

TEST_P(JobStoreConformanceTest, AdmissionNeedsTheRegisteredIncarnation) {
  JobSpec s = Spec("idx");
  s.table_incarnation = "not-the-incarnation";
  EXPECT_EQ(store_->Admit(s, "alice", now_).status().code(), StatusCode::kNotFound);
  s = Spec("idx");
  s.table_name = "missing";
  EXPECT_EQ(store_->Admit(s, "alice", now_).status().code(), StatusCode::kNotFound);
  // Dropped and re-created: a new incarnation; the old one cannot admit.
  ASSERT_OK(store_->DropTable("local", "db", "docs"));
  auto again = store_->catalog().RegisterTable("local", "db", "docs", "/root/db/docs.vgl", now_);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->table_incarnation, table_.table_incarnation);
  EXPECT_EQ(again->catalog_incarnation, table_.catalog_incarnation);
  EXPECT_EQ(store_->Admit(Spec("idx"), "alice", now_).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store_->Admit(Spec("idx", &*again), "alice", now_).ok());
  EXPECT_EQ(store_->catalog().RegisterTable("local", "db", "docs", "/x", now_).status().code(),
            StatusCode::kAlreadyExists);
  auto looked = store_->catalog().LookupTable("local", "db", "docs");
  ASSERT_TRUE(looked.ok() && looked->has_value());
  EXPECT_EQ(**looked, *again);
}

TEST_P(JobStoreConformanceTest, FenceBlocksSameNameUntilReleasedAndRefusesCaseOnlyCollisions) {
  JobRecord first = MustAdmit("emb_idx");
  auto dup = store_->Admit(Spec("emb_idx"), "bob", now_);
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(dup.status().message().find(std::to_string(first.job_id)), std::string::npos);
  auto case_only = store_->Admit(Spec("EMB_idx"), "bob", now_);
  EXPECT_EQ(case_only.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(case_only.status().message().find("ambiguous"), std::string::npos);
  // Another table's same name is a different fence key.
  auto other = store_->catalog().RegisterTable("local", "db", "other", "/root/db/other.vgl", now_);
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(store_->Admit(Spec("emb_idx", &*other), "bob", now_).ok());
  MustOk(store_->Cancel(User(first)));
  EXPECT_TRUE(store_->Admit(Spec("EMB_IDX"), "bob", now_).ok());
}

TEST_P(JobStoreConformanceTest, T2CancelIsTwoCasesAndReleasesTheFence) {
  JobRecord r = MustAdmit("idx");
  JobRecord done = MustOk(store_->Cancel(User(r)));
  EXPECT_EQ(done.state, S(Execution::kTerminal, Outcome::kCancelledBeforeDispatch, RefreshState::kNotRequired));
  EXPECT_EQ(done.finished_at_ms, now_);
  ExpectPersisted(done, 3, "CANCELLED");
  std::vector<JobEvent> ev = MustEvents(r.job_id);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[1].kind, "CANCEL_REQUESTED");
  EXPECT_EQ(ev[1].seq, 2);
  EXPECT_EQ(DerivedState(done.state), "CANCELLED");
  // A cancelled job cannot be dispatched.
  EXPECT_EQ(store_->Dispatch(Leader(done), Attempt()).status().code(), StatusCode::kFailedPrecondition);
}

TEST_P(JobStoreConformanceTest, T2DurableCancellingIsCompletedAfterACrash) {
  JobRecord r = MustAdmit("idx");
  JobRecord mid = MustOk(store_->Apply(User(r), [](const JobRecord& cur, Transition* t) -> Status {
    VIGIL_ASSIGN_OR_RETURN(t->next.state, BeginCancel(cur.state));
    t->events.push_back({"CANCEL_REQUESTED", std::nullopt, std::nullopt, {}});
    return Status::OK();
  }));
  ExpectPersisted(mid, 2, "CANCEL_REQUESTED");
  EXPECT_TRUE(HoldsFenceRow(r.job_id));
  Reopen();
  // Dispatch loses to the durable CANCELLING (C2/C3).
  EXPECT_EQ(store_->Dispatch(Leader(mid), Attempt()).status().code(), StatusCode::kFailedPrecondition);
  JobRecord done = MustOk(store_->CompleteCancel(User(mid)));
  ExpectPersisted(done, 3, "CANCELLED");
}

TEST_P(JobStoreConformanceTest, T3DispatchPersistsAttemptIdentityBeforeReturning) {
  JobRecord r = MustAdmit("idx");
  JobRecord run = MustOk(store_->Dispatch(Leader(r), Attempt()));
  EXPECT_EQ(run.state.execution, Execution::kRunning);
  ASSERT_TRUE(run.attempt.has_value());
  EXPECT_EQ(*run.attempt, Attempt());
  EXPECT_EQ(run.attempt->leader_epoch, epoch_);
  EXPECT_EQ(run.started_at_ms, now_);
  ExpectPersisted(run, 2, "DISPATCHED");
  EXPECT_EQ(store_->Cancel(User(run)).status().code(), StatusCode::kFailedPrecondition);
  // A replaced node epoch or a missing leader epoch refuses dispatch.
  JobRecord r2 = MustAdmit("idx2");
  ASSERT_TRUE(store_->cluster().RegisterNode("node-1", 4243, "host-1", now_).ok());
  EXPECT_EQ(store_->Dispatch(Leader(r2), Attempt()).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->Dispatch(User(r2), Attempt()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(MustOk(store_->Get(r2.job_id)).revision, 1);
}

TEST_P(JobStoreConformanceTest, T4NeverInvokedIsNotCommittedAndReleasesWithoutChange) {
  JobRecord r = Finished("idx", AttemptResult::kNotInvoked);
  EXPECT_EQ(r.state, S(Execution::kTerminal, Outcome::kNotCommitted, RefreshState::kNotRequired));
  EXPECT_FALSE(r.invoked);
  ExpectPersisted(r, 3, "RESULT");
  EXPECT_FALSE(HoldsFenceRow(r.job_id));
  JobRecord changed = Finished("idx2", AttemptResult::kNotInvoked, true);
  EXPECT_EQ(changed.state.refresh, RefreshState::kRequired);
  ExpectPersisted(changed, 3, "RESULT");
  EXPECT_TRUE(HoldsFenceRow(changed.job_id));
}

TEST_P(JobStoreConformanceTest, T5CommittedHoldsTheFenceUntilRefreshIsDone) {
  JobRecord run = Running("idx");
  AttemptReport rep{"attempt-1", AttemptResult::kCommitted, false, true, std::nullopt, std::nullopt, 8};
  JobRecord r = MustOk(store_->RecordResult(Leader(run), rep));
  EXPECT_EQ(r.state, S(Execution::kTerminal, Outcome::kCommitted, RefreshState::kRequired));
  EXPECT_EQ(r.committed_version, 8);
  EXPECT_TRUE(r.invoked);
  EXPECT_EQ(r.finished_at_ms, now_);
  ExpectPersisted(r, 3, "RESULT");
  EXPECT_TRUE(HoldsFenceRow(r.job_id));
  EXPECT_EQ(DerivedState(r.state), "REFRESHING");
}

TEST_P(JobStoreConformanceTest, T6NotCommittedWithoutChangeReleasesAtOnce) {
  JobRecord run = Running("idx");
  AttemptReport rep{"attempt-1",       AttemptResult::kNotCommitted,        false,       true,
                    "COMMIT_CONFLICT", std::string("conflict\x01 at v8\n"), std::nullopt};
  JobRecord r = MustOk(store_->RecordResult(Leader(run), rep));
  EXPECT_EQ(r.state, S(Execution::kTerminal, Outcome::kNotCommitted, RefreshState::kNotRequired));
  EXPECT_EQ(r.error_code, "COMMIT_CONFLICT");
  EXPECT_EQ(r.error_message, "conflict at v8");
  ExpectPersisted(r, 3, "RESULT");
  EXPECT_FALSE(HoldsFenceRow(r.job_id));
  EXPECT_FALSE(HoldsGuardRow(r.job_id));
}

TEST_P(JobStoreConformanceTest, T7NoCommitWithChangeAndNoopRequireRefresh) {
  JobRecord changed = Finished("idx", AttemptResult::kNotCommittedChanged);
  EXPECT_EQ(changed.state, S(Execution::kTerminal, Outcome::kNotCommitted, RefreshState::kRequired));
  ExpectPersisted(changed, 3, "RESULT");
  JobRecord noop = Finished("idx2", AttemptResult::kNoop);
  EXPECT_EQ(noop.state, S(Execution::kTerminal, Outcome::kNoop, RefreshState::kRequired));
  ExpectPersisted(noop, 3, "RESULT");
  EXPECT_TRUE(HoldsFenceRow(noop.job_id));
  // NOOP decided before dispatch, with nothing observed, releases at once.
  JobRecord pre = MustOk(store_->ConcludeBeforeDispatch(User(MustAdmit("idx3")), AttemptResult::kNoop, false));
  EXPECT_EQ(pre.state, S(Execution::kTerminal, Outcome::kNoop, RefreshState::kNotRequired));
  ExpectPersisted(pre, 2, "RESULT");
}

TEST_P(JobStoreConformanceTest, T8UnknownWatchesAndKeepsTheFence) {
  JobRecord run = Running("idx");
  std::string long_message(3000, 'x');
  AttemptReport rep{"attempt-1", AttemptResult::kUnknown, false, true, "IO", long_message, std::nullopt};
  JobRecord r = MustOk(store_->RecordResult(Leader(run), rep));
  EXPECT_EQ(r.state, S(Execution::kTerminal, Outcome::kUnknown, RefreshState::kNotRequired, ReconcileState::kWatching));
  EXPECT_EQ(r.error_message->size(), 1024u);
  EXPECT_EQ(r.reconcile_next_at_ms, now_ + 30'000);
  EXPECT_EQ(r.reconcile_backoff_s, 30);
  ExpectPersisted(r, 3, "RESULT");
  EXPECT_TRUE(HoldsFenceRow(r.job_id));
  EXPECT_EQ(DerivedState(r.state), "OUTCOME_UNKNOWN");
  // A stale callback of another attempt is rejected.
  AttemptReport stale = rep;
  stale.attempt_id = "attempt-0";
  EXPECT_EQ(store_->RecordResult(Leader(run), stale).status().code(), StatusCode::kCommitConflict);
}

TEST_P(JobStoreConformanceTest, T9WatcherObservationRequiresRefresh) {
  JobRecord u = Finished("idx", AttemptResult::kUnknown);
  now_ += 5'000;  // within the leader lease
  JobRecord r = MustOk(store_->ObserveChange(Leader(u), 9, "fp-9"));
  EXPECT_EQ(r.state.refresh, RefreshState::kRequired);
  EXPECT_EQ(r.state.outcome, Outcome::kUnknown);
  EXPECT_EQ(r.last_observed_version, 9);
  EXPECT_EQ(r.last_observed_fingerprint, "fp-9");
  EXPECT_EQ(r.reconcile_last_at_ms, now_);
  ExpectPersisted(r, 4, "CHANGE_OBSERVED");
}

TEST_P(JobStoreConformanceTest, T10TerminationProofThenFinalReadKeepsUnknownAndFence) {
  JobRecord u = Finished("idx", AttemptResult::kUnknown);
  EXPECT_EQ(store_->ProveTermination(Leader(u), "attempt-9", TerminationProof::kLockFree).status().code(),
            StatusCode::kCommitConflict);
  JobRecord p = MustOk(store_->ProveTermination(Leader(u), "attempt-1", TerminationProof::kCatalogFence));
  EXPECT_EQ(p.state.reconcile, ReconcileState::kFinalReadPending);
  EXPECT_TRUE(p.termination_proven);
  ExpectPersisted(p, 4, "TERMINATION_PROVEN");
  const std::vector<JobEvent> events = MustEvents(p.job_id);
  EXPECT_NE(events.back().detail_json.find("\"proof\":\"CATALOG_FENCE\""), std::string::npos)
      << events.back().detail_json;
  JobRecord f = MustOk(store_->FinishFinalRead(Leader(p), 8, "fp-8"));
  EXPECT_EQ(f.state, S(Execution::kTerminal, Outcome::kUnknown, RefreshState::kNotRequired,
                       ReconcileState::kStoppedTerminationProven));
  EXPECT_FALSE(f.reconcile_next_at_ms.has_value());
  ExpectPersisted(f, 5, "FINAL_READ");
  EXPECT_TRUE(HoldsFenceRow(f.job_id));
}

TEST_P(JobStoreConformanceTest, ProvenanceAttributionReleasesAfterRefresh) {
  JobRecord u = Finished("idx", AttemptResult::kUnknown);
  JobRecord p = MustOk(store_->ProveTermination(Leader(u), "attempt-1", TerminationProof::kLockFree));
  JobRecord a = MustOk(store_->Attribute(Leader(p), true, 8));
  EXPECT_EQ(a.state.outcome, Outcome::kCommitted);
  EXPECT_EQ(a.state.refresh, RefreshState::kRequired);
  EXPECT_EQ(a.committed_version, 8);
  ExpectPersisted(a, 5, "ATTRIBUTED");
  JobRecord s = MustOk(store_->RefreshStart(Leader(a)));
  JobRecord d = MustOk(store_->RefreshDone(Leader(s), s.refresh_generation, true));
  EXPECT_EQ(DerivedState(d.state), "FINISHED");
  ExpectPersisted(d, 7, "REFRESH_DONE");
  EXPECT_FALSE(HoldsFenceRow(d.job_id));
}

TEST_P(JobStoreConformanceTest, T11RefreshRunsRetriesAndReleasesWhenDone) {
  JobRecord c = Finished("idx", AttemptResult::kCommitted);
  EXPECT_EQ(store_->GetRefreshGeneration(table_.table_incarnation).value(), 0);
  JobRecord s = MustOk(store_->RefreshStart(Leader(c)));
  EXPECT_EQ(s.state.refresh, RefreshState::kRunning);
  EXPECT_EQ(s.refresh_generation, 1);
  ExpectPersisted(s, 4, "REFRESH_STARTED");
  now_ += 1000;
  JobRecord f = MustOk(store_->RefreshDone(Leader(s), 1, false, "cache\tunreachable"));
  EXPECT_EQ(f.state.refresh, RefreshState::kRetryPending);
  EXPECT_EQ(f.refresh_retries, 1);
  EXPECT_EQ(f.refresh_last_error, "cacheunreachable");
  EXPECT_EQ(f.refresh_next_at_ms, now_ + 30'000);
  EXPECT_EQ(DerivedState(f.state), "COMMITTED_REFRESH_PENDING");
  ExpectPersisted(f, 5, "REFRESH_FAILED");
  EXPECT_TRUE(HoldsFenceRow(f.job_id));
  JobRecord s2 = MustOk(store_->RefreshStart(Leader(f)));
  EXPECT_EQ(s2.refresh_generation, 2);
  // A callback of the older refresh generation cannot complete it.
  EXPECT_EQ(store_->RefreshDone(Leader(s2), 1, true).status().code(), StatusCode::kCommitConflict);
  JobRecord d = MustOk(store_->RefreshDone(Leader(s2), 2, true));
  EXPECT_EQ(d.state.refresh, RefreshState::kDone);
  ExpectPersisted(d, 7, "REFRESH_DONE");
  EXPECT_FALSE(HoldsGuardRow(d.job_id));
  EXPECT_EQ(store_->GetRefreshGeneration(table_.table_incarnation).value(), 1);
}

TEST_P(JobStoreConformanceTest, T12AckRefreshesAndKeepsTheFenceWithLinkedEvents) {
  JobRecord u = Finished("idx", AttemptResult::kUnknown);
  JobRecord a = MustOk(store_->RequestAck(User(u), "  looked at it\n  "));
  EXPECT_EQ(a.state.disposition, Disposition::kAckRefreshPending);
  EXPECT_EQ(a.state.refresh, RefreshState::kRequired);
  ASSERT_TRUE(a.resolution_id.has_value());
  ExpectPersisted(a, 4, "ACK_REQUESTED");
  // The identical retry joins the pending request; another note is refused by the state machine.
  JobRecord joined = MustOk(store_->RequestAck(User(u), "looked at it"));
  EXPECT_EQ(joined.revision, 4);
  EXPECT_EQ(joined.resolution_id, a.resolution_id);
  EXPECT_EQ(store_->RequestAck(User(a), "other").status().code(), StatusCode::kFailedPrecondition);
  JobRecord s = MustOk(store_->RefreshStart(Leader(a)));
  JobRecord d = MustOk(store_->RefreshDone(Leader(s), s.refresh_generation, true));
  EXPECT_EQ(d.state.disposition, Disposition::kAcknowledged);
  EXPECT_EQ(d.state.outcome, Outcome::kUnknown);
  EXPECT_FALSE(d.resolution_id.has_value());
  ExpectPersisted(d, 6, "ACK_COMPLETED");
  EXPECT_TRUE(HoldsFenceRow(d.job_id));
  std::vector<JobEvent> ev = MustEvents(d.job_id);
  ASSERT_GE(ev.size(), 2u);
  EXPECT_EQ(ev[ev.size() - 2].kind, "REFRESH_DONE");
  EXPECT_EQ(ev.back().resolution_id, a.resolution_id);
  EXPECT_EQ(ev.back().seq, 6);
  EXPECT_EQ(ev.back().part, 1);
  EXPECT_EQ(ev[3].note, "looked at it");
  EXPECT_EQ(ev[3].actor, "alice");
}

TEST_P(JobStoreConformanceTest, T13ForceReleasesAfterRefresh) {
  JobRecord u = Finished("idx", AttemptResult::kUnknown);
  JobRecord f = MustOk(store_->RequestForce(User(u), "worker host lost; accepted"));
  EXPECT_EQ(f.state.disposition, Disposition::kForceRefreshPending);
  ExpectPersisted(f, 4, "FORCE_REQUESTED");
  EXPECT_TRUE(HoldsFenceRow(f.job_id));
  JobRecord s = MustOk(store_->RefreshStart(Leader(f)));
  JobRecord d = MustOk(store_->RefreshDone(Leader(s), s.refresh_generation, true));
  EXPECT_EQ(d.state, S(Execution::kTerminal, Outcome::kUnknown, RefreshState::kDone, ReconcileState::kStoppedByForce,
                       Disposition::kForceReleased));
  ExpectPersisted(d, 6, "FORCE_COMPLETED");
  EXPECT_FALSE(HoldsFenceRow(d.job_id));
  EXPECT_EQ(MustEvents(d.job_id).back().resolution_id, f.resolution_id);
  EXPECT_TRUE(store_->Admit(Spec("idx"), "bob", now_).ok());
}

TEST_P(JobStoreConformanceTest, T14ForceWithoutRefreshSupersedesAndReleasesInOneCas) {
  JobRecord u = Finished("idx", AttemptResult::kUnknown);
  JobRecord a = MustOk(store_->RequestAck(User(u), "ack first"));
  JobRecord f =
      MustOk(store_->ForceWithoutRefresh(Cas{a.job_id, a.revision, std::nullopt, "admin", now_}, "emergency"));
  EXPECT_EQ(f.state, S(Execution::kTerminal, Outcome::kUnknown, RefreshState::kSkippedByForce,
                       ReconcileState::kStoppedByForce, Disposition::kForceReleased));
  EXPECT_EQ(f.refresh_generation, a.refresh_generation + 1);
  EXPECT_EQ(DerivedState(f.state), "OUTCOME_UNKNOWN");
  ExpectPersisted(f, 5, "FORCE_WITHOUT_REFRESH_COMPLETED");
  std::vector<JobEvent> ev = MustEvents(f.job_id);
  ASSERT_EQ(ev.size(), 7u);
  EXPECT_EQ(ev[4].kind, "SUPERSEDED_BY_EMERGENCY_FORCE");
  EXPECT_EQ(ev[4].resolution_id, a.resolution_id);
  EXPECT_EQ(ev[5].kind, "FORCE_WITHOUT_REFRESH_REQUESTED");
  EXPECT_EQ(ev[5].note, "emergency");
  EXPECT_EQ(ev[6].resolution_id, ev[5].resolution_id);
  EXPECT_EQ(ev[6].seq, 5);
  // A known outcome whose refresh keeps failing can be force-released too.
  JobRecord c = Finished("idx2", AttemptResult::kCommitted);
  JobRecord k = MustOk(store_->ForceWithoutRefresh(User(c), "cache down"));
  EXPECT_EQ(DerivedState(k.state), "COMMITTED_REFRESH_SKIPPED");
  EXPECT_FALSE(HoldsFenceRow(k.job_id));
}

TEST_P(JobStoreConformanceTest, StaleRevisionAndStaleLeaderEpochChangeNothing) {
  JobRecord r = MustAdmit("idx");
  Cas stale = Leader(r);
  stale.revision = 7;
  EXPECT_EQ(store_->Dispatch(stale, Attempt()).status().code(), StatusCode::kCommitConflict);
  // Leadership moves to another holder after expiry: the old epoch is rejected.
  now_ += kLeaseTtl + 1;
  auto b = store_->cluster().AcquireLeader("leader-b", now_, kLeaseTtl);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->epoch, epoch_ + 1);
  EXPECT_EQ(store_->Dispatch(Leader(r), Attempt()).status().code(), StatusCode::kCommitConflict);
  EXPECT_EQ(MustOk(store_->Get(r.job_id)), r);
  EXPECT_EQ(MustEvents(r.job_id).size(), 1u);
  epoch_ = b->epoch;
  EXPECT_TRUE(store_->Dispatch(Leader(r), Attempt()).ok());
  // An expired lease of the current epoch is not live either.
  now_ += kLeaseTtl;
  JobRecord r2 = MustAdmit("idx2");
  EXPECT_EQ(store_->ConcludeBeforeDispatch(Leader(r2), AttemptResult::kNoop, false).status().code(),
            StatusCode::kCommitConflict);
}

TEST_P(JobStoreConformanceTest, ApplyRejectsIllegalOrIdentityChangingTransitions) {
  JobRecord r = MustAdmit("idx");
  auto renamed = store_->Apply(User(r), [](const JobRecord&, Transition* t) -> Status {
    t->next.spec.index_name = "other";
    t->events.push_back({"X", std::nullopt, std::nullopt, {}});
    return Status::OK();
  });
  EXPECT_EQ(renamed.status().code(), StatusCode::kInternal);
  auto illegal = store_->Apply(User(r), [](const JobRecord&, Transition* t) -> Status {
    t->next.state.outcome = Outcome::kCommitted;  // PENDING with an outcome
    t->events.push_back({"X", std::nullopt, std::nullopt, {}});
    return Status::OK();
  });
  EXPECT_EQ(illegal.status().code(), StatusCode::kInternal);
  EXPECT_EQ(MustOk(store_->Get(r.job_id)), r);
  EXPECT_EQ(store_->Get(r.job_id + 100).status().code(), StatusCode::kNotFound);
}

// A transition that breaks an invariant the state table cannot see (RUNNING without an attempt)
// stops the process before its write commits; the job stays as it was.
TEST_P(JobStoreConformanceTest, ATransitionBreakingAnInvariantStopsBeforeItCommits) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  JobRecord r = MustAdmit("idx");
  EXPECT_DEATH((void)store_->Apply(User(r),
                                   [](const JobRecord&, Transition* t) -> Status {
                                     t->next.state.execution = Execution::kRunning;  // no attempt
                                     t->events.push_back({"X", std::nullopt, std::nullopt, {}});
                                     return Status::OK();
                                   }),
               "next.state.execution != Execution::kRunning");
  EXPECT_EQ(MustOk(store_->Get(r.job_id)), r);
}

TEST_P(JobStoreConformanceTest, GuardBlocksDropTableWhileAJobIsActiveOrUnknown) {
  JobRecord r = MustAdmit("idx");
  Status st = store_->DropTable("local", "db", "docs");
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find(std::to_string(r.job_id)), std::string::npos);
  {
    auto txn = store_->database().Begin(meta::TxnMode::kWrite);
    ASSERT_TRUE(txn.ok());
    EXPECT_EQ(store_->CheckNoGuard(*txn, table_.table_incarnation).code(), StatusCode::kFailedPrecondition);
  }
  JobRecord run = MustOk(store_->Dispatch(Leader(r), Attempt()));
  AttemptReport rep{"attempt-1", AttemptResult::kUnknown, false, true, std::nullopt, std::nullopt, std::nullopt};
  JobRecord u = MustOk(store_->RecordResult(Leader(run), rep));
  EXPECT_EQ(store_->DropTable("local", "db", "docs").code(), StatusCode::kFailedPrecondition);
  MustOk(store_->ForceWithoutRefresh(User(u), "gone"));
  ASSERT_OK(store_->DropTable("local", "db", "docs"));
  EXPECT_EQ(store_->DropTable("local", "db", "docs").code(), StatusCode::kNotFound);
  auto looked = store_->catalog().LookupTable("local", "db", "docs");
  ASSERT_TRUE(looked.ok());
  EXPECT_FALSE(looked->has_value());
}

TEST_P(JobStoreConformanceTest, ArchiveKeepsUnknownJobsAsResolvableTombstones) {
  JobRecord done = Finished("a", AttemptResult::kNotCommitted);     // released
  JobRecord refreshing = Finished("b", AttemptResult::kCommitted);  // holds until refresh
  JobRecord unknown = Finished("c", AttemptResult::kUnknown);       // holds until FORCE
  JobRecord pending = MustAdmit("d");
  now_ += 1000;
  auto res = store_->Archive(now_, now_);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->archived, 1);
  EXPECT_EQ(res->tombstoned, 1);
  EXPECT_EQ(MustOk(store_->Get(done.job_id)).archived_at_ms, now_);
  EXPECT_FALSE(MustOk(store_->Get(refreshing.job_id)).archived_at_ms.has_value());
  EXPECT_FALSE(MustOk(store_->Get(pending.job_id)).archived_at_ms.has_value());
  JobRecord tomb = MustOk(store_->Get(unknown.job_id));
  EXPECT_TRUE(tomb.tombstone);
  EXPECT_EQ(tomb.state, unknown.state);
  EXPECT_TRUE(HoldsFenceRow(unknown.job_id));
  // I8: the tombstone is listed (by state too) while it holds its fence; the archived job is not.
  JobFilter f;
  EXPECT_EQ(ListIds(f), (std::vector<int64_t>{pending.job_id, unknown.job_id, refreshing.job_id}));
  EXPECT_EQ(store_->Count(f).value(), 3);
  f.state = "OUTCOME_UNKNOWN";
  EXPECT_EQ(ListIds(f), std::vector<int64_t>{unknown.job_id});
  f.include_archived = true;
  EXPECT_EQ(ListIds(f), std::vector<int64_t>{unknown.job_id});
  // Still resolvable; the events stay. Once released it leaves the default listing.
  JobRecord forced = MustOk(store_->ForceWithoutRefresh(User(tomb), "archived but unknown"));
  EXPECT_TRUE(forced.tombstone);
  EXPECT_FALSE(HoldsFenceRow(unknown.job_id));
  EXPECT_EQ(MustEvents(unknown.job_id).size(), 5u);
  EXPECT_EQ(store_->Archive(now_ + 1, now_).value().archived, 0);
  EXPECT_EQ(ListIds(JobFilter{}), (std::vector<int64_t>{pending.job_id, refreshing.job_id}));
  EXPECT_EQ(ListIds(f), std::vector<int64_t>{unknown.job_id});
}

// An acknowledged tombstone keeps its fence, so it stays listed, and its refresh waits for a leader.
TEST_P(JobStoreConformanceTest, AcknowledgedTombstonesStayListedWhileTheyHoldTheirFence) {
  JobRecord u = Finished("u", AttemptResult::kUnknown);
  now_ += 1000;
  ASSERT_EQ(store_->Archive(now_, now_).value().tombstoned, 1);
  JobRecord acked = MustOk(store_->RequestAck(User(MustOk(store_->Get(u.job_id))), "seen"));
  JobFilter waiting;
  waiting.waiting_for_leader = true;
  EXPECT_EQ(ListIds(waiting), std::vector<int64_t>{u.job_id});
  JobRecord started = MustOk(store_->RefreshStart(Leader(acked)));
  JobRecord done = MustOk(store_->RefreshDone(Leader(started), started.refresh_generation, true));
  EXPECT_EQ(done.state.disposition, Disposition::kAcknowledged);
  EXPECT_TRUE(HoldsFenceRow(u.job_id));
  EXPECT_EQ(ListIds(JobFilter{}), std::vector<int64_t>{u.job_id});
  EXPECT_TRUE(ListIds(waiting).empty());
}

VersionClaim Claim(uint64_t version, const std::string& attempt = "", std::optional<int64_t> job = std::nullopt) {
  VersionClaim c;
  c.version = version;
  c.manifest = ClaimManifestPath(version);
  c.txn.operation = attempt.empty() ? "APPEND" : "CREATE_INDEX";
  c.txn.attempt_id = attempt;
  c.txn.job_id = job;
  return c;
}

TEST_P(JobStoreConformanceTest, TableVersionsAreClaimedOnlyOnePastTheNewest) {
  catalog::StoreVersionCatalog versions(&store_->catalog(), table_.table_incarnation, [this] { return now_; });
  catalog::StoreVersionCatalog other(&store_->catalog(), "another-incarnation", [this] { return now_; });
  EXPECT_FALSE(versions.Latest().value().has_value());
  // The first claim adopts whatever version the dataset's files had reached.
  const VersionClaim five = Claim(5);
  ASSERT_OK(versions.Claim(five));
  EXPECT_EQ(versions.Latest().value(), (CatalogVersion{5, five.manifest}));
  EXPECT_EQ(versions.Claim(Claim(5)).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(versions.Claim(Claim(7)).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(versions.Claim(Claim(4)).code(), StatusCode::kAlreadyExists);
  ASSERT_OK(versions.Claim(Claim(6)));
  EXPECT_EQ(versions.Latest().value()->version, 6u);
  EXPECT_FALSE(other.Latest().value().has_value());
  ASSERT_OK(other.Claim(Claim(1)));
  EXPECT_EQ(versions.Latest().value()->version, 6u);
  // A job id needs an attempt id and the other way round.
  EXPECT_EQ(versions.Claim(Claim(7, "", 3)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(versions.Claim(Claim(7, "attempt-1")).code(), StatusCode::kInvalidArgument);
  // The manifest must be a claim of that version: the name is later a path in the dataset.
  for (const std::string& bad :
       std::vector<std::string>{"_versions/7.manifest", "_versions/6.claim-" + Uuid::Generate().ToString(),
                                "../7.claim-" + Uuid::Generate().ToString(), "_versions/7.claim-x", ""}) {
    VersionClaim c = Claim(7);
    c.manifest = bad;
    EXPECT_EQ(versions.Claim(c).code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(versions.Latest().value()->version, 6u);
}

// The fence of seed 000's crash cut C11 and of a leader that lost its lease: an attempt
// commits only while its job runs it under the leader epoch it was dispatched by.
TEST_P(JobStoreConformanceTest, AnAttemptCommitsOnlyWhileItsJobRunsItUnderTheLiveLease) {
  catalog::StoreVersionCatalog versions(&store_->catalog(), table_.table_incarnation, [this] { return now_; });
  ASSERT_OK(versions.Claim(Claim(7)));
  JobRecord r = Running("idx");
  // Not the job's attempt, or a job that does not exist: refused, nothing committed.
  EXPECT_EQ(versions.Claim(Claim(8, "attempt-2", r.job_id)).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(versions.Claim(Claim(8, "attempt-1", r.job_id + 100)).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(versions.Latest().value()->version, 7u);
  ASSERT_OK(versions.Claim(Claim(8, "attempt-1", r.job_id)));
  auto found = versions.FindAttempt("attempt-1");
  ASSERT_TRUE(found.ok() && found->has_value()) << found.status().ToString();
  EXPECT_EQ((*found)->version, 8u);
  EXPECT_EQ((*found)->job_id, r.job_id);
  EXPECT_FALSE(versions.FindAttempt("attempt-2").value().has_value());

  // Once the job's result is recorded the attempt is over: no later commit.
  JobRecord done = Finished("idx2", AttemptResult::kUnknown);
  EXPECT_EQ(versions.Claim(Claim(9, "attempt-1", done.job_id)).code(), StatusCode::kFailedPrecondition);

  // A running attempt whose leader lost the lease: refused once another epoch holds it.
  JobRecord running = Running("idx3");
  now_ += kLeaseTtl + 1;
  auto taken = store_->cluster().AcquireLeader("leader-b", now_, kLeaseTtl);
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  Status late = versions.Claim(Claim(9, "attempt-1", running.job_id));
  EXPECT_EQ(late.code(), StatusCode::kFailedPrecondition) << late.ToString();
  EXPECT_NE(late.message().find("no longer holds the lease"), std::string::npos) << late.ToString();
  EXPECT_EQ(versions.Latest().value()->version, 8u);
}

TEST_P(JobStoreConformanceTest, ResolutionNotesAreValidated) {
  JobRecord u = Finished("idx", AttemptResult::kUnknown);
  EXPECT_EQ(store_->RequestAck(User(u), "   ").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->RequestAck(User(u), "\n\t").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->RequestForce(User(u), std::string(1025, 'n')).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->ForceWithoutRefresh(User(u), "bad \xff utf8").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(MustOk(store_->Get(u.job_id)).revision, u.revision);
  JobRecord ok = MustOk(store_->RequestForce(User(u), std::string(1024, 'n') + "  "));
  EXPECT_EQ(MustEvents(ok.job_id).back().note->size(), 1024u);
}

TEST_P(JobStoreConformanceTest, EventsAreAppendOnly) {
  JobRecord r = MustAdmit("idx");
  auto conn = store_->database().Acquire();
  ASSERT_TRUE(conn.ok());
  EXPECT_FALSE((*conn)->Execute("UPDATE index_job_events SET kind = 'X' WHERE job_id = $1", {r.job_id}).ok());
  EXPECT_FALSE((*conn)->Execute("DELETE FROM index_job_events WHERE job_id = $1", {r.job_id}).ok());
  EXPECT_EQ(MustEvents(r.job_id).size(), 1u);
}

TEST_P(JobStoreConformanceTest, ReopeningReplaysEveryRecordFromStorage) {
  JobRecord u = Finished("idx", AttemptResult::kUnknown);
  JobRecord a = MustOk(store_->RequestAck(User(u), "note"));
  JobRecord p = MustAdmit("idx2");
  std::vector<JobEvent> events = MustEvents(a.job_id);
  Reopen();
  EXPECT_EQ(MustOk(store_->Get(a.job_id)), a);
  EXPECT_EQ(MustOk(store_->Get(p.job_id)), p);
  EXPECT_EQ(MustEvents(a.job_id), events);
  EXPECT_EQ(store_->cluster().GetLeader().value().epoch, epoch_);
  EXPECT_EQ(store_->Admit(Spec("IDX"), "bob", now_).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->DropTable("local", "db", "docs").code(), StatusCode::kFailedPrecondition);
  // The reopened store continues the same job: ACK joins, refresh completes it.
  JobRecord s = MustOk(store_->RefreshStart(Leader(a)));
  EXPECT_EQ(MustOk(store_->RefreshDone(Leader(s), s.refresh_generation, true)).state.disposition,
            Disposition::kAcknowledged);
}

TEST_P(JobStoreConformanceTest, ListFiltersAreBoundedAndExact) {
  JobRecord u = Finished("u", AttemptResult::kUnknown);
  JobRecord c = Finished("c", AttemptResult::kCommitted);
  JobRecord p = MustAdmit("p");
  auto other = store_->catalog().RegisterTable("local", "db2", "docs", "/root/db2/docs.vgl", now_);
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(store_->Admit(Spec("p", &*other), "bob", now_).ok());
  JobFilter f;
  f.catalog_name = "local";
  f.database_name = "db";
  auto all = store_->List(f);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].job_id, p.job_id);  // newest first
  f.limit = 2;
  EXPECT_EQ(store_->List(f).value().size(), 2u);
  f.limit = 100;
  f.state = "REFRESHING";
  auto refreshing = store_->List(f);
  ASSERT_EQ(refreshing.value().size(), 1u);
  EXPECT_EQ(refreshing.value()[0].job_id, c.job_id);
  f.state.reset();
  f.outcome = Outcome::kUnknown;
  EXPECT_EQ(store_->List(f).value().at(0).job_id, u.job_id);
  f.limit = 0;
  EXPECT_EQ(store_->List(f).status().code(), StatusCode::kInvalidArgument);
  f.limit = kMaxListLimit + 1;
  EXPECT_EQ(store_->List(f).status().code(), StatusCode::kInvalidArgument);
  f.limit = 10;
  f.state = "BOGUS";
  EXPECT_EQ(store_->List(f).status().code(), StatusCode::kInvalidArgument);
}

// 100k archived jobs of one table: listing its OUTCOME_UNKNOWN jobs is an index search.
TEST_P(JobStoreConformanceTest, UnknownListingOfATableUsesAnIndexWith100kArchivedJobs) {
  JobRecord u = Finished("u", AttemptResult::kUnknown);
  {
    auto txn = store_->database().Begin(meta::TxnMode::kWrite);
    ASSERT_TRUE(txn.ok());
    ASSERT_OK(txn->conn()
                  .Execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)"
                           " INSERT INTO index_jobs (revision, creator, created_at, finished_at, catalog_name,"
                           " database_name, table_name, catalog_incarnation, table_incarnation, locator,"
                           " index_name, normalization_version, normalized_name, provider, operation, if_mode,"
                           " columns_json, properties_json, start_version, schema_fingerprint, execution,"
                           " outcome, refresh, reconcile, disposition, archived_at)"
                           " SELECT 3, 'bulk', CAST($1 AS BIGINT), CAST($1 AS BIGINT), 'local', 'db', 'docs', $2, $3, "
                           "'/l', 'idx', 1, 'idx',"
                           " 'DIRECTORY', 'CREATE', 'NONE', '[]', '{}', 1, 'fp', 'TERMINAL', 'NOT_COMMITTED',"
                           " 'DONE', 'NONE', 'NONE', CAST($1 AS BIGINT) FROM n",
                           {now_, table_.catalog_incarnation, table_.table_incarnation})
                  .status());
    ASSERT_OK(txn->conn().ExecuteScript("ANALYZE"));
    ASSERT_OK(txn->Commit());
  }
  JobFilter f;
  f.catalog_name = "local";
  f.database_name = "db";
  f.table_name = "docs";
  f.state = "OUTCOME_UNKNOWN";
  f.include_archived = true;
  auto listed = store_->List(f);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].job_id, u.job_id);
  auto q = BuildListQuery(f);
  ASSERT_TRUE(q.ok());
  const bool sqlite = store_->database().profile().dialect == meta::Dialect::kSqlite;
  auto conn = store_->database().Acquire();
  ASSERT_TRUE(conn.ok());
  auto plan = (*conn)->Query((sqlite ? "EXPLAIN QUERY PLAN " : "EXPLAIN ") + q->sql, q->params);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  std::string text;
  for (const auto& row : *plan) text += row.at(row.size() - 1).DebugString() + "\n";
  EXPECT_NE(text.find("idx_index_jobs_target"), std::string::npos) << text;
  EXPECT_EQ(text.find(sqlite ? "SCAN index_jobs" : "Seq Scan on index_jobs"), std::string::npos) << text;
}

TEST_P(JobStoreConformanceTest, RecordWatchPersistsTheScheduleAndFollowsTheRead) {
  JobRecord u = Finished("idx", AttemptResult::kUnknown);
  now_ += 5'000;  // within the leader lease
  WatchCheck failed;
  failed.read_ok = false;
  failed.error = "dataset\nmissing";
  failed.backoff_s = 60;
  JobRecord f = MustOk(store_->RecordWatch(Leader(u), failed));
  EXPECT_EQ(f.state,
            S(Execution::kTerminal, Outcome::kUnknown, RefreshState::kNotRequired, ReconcileState::kRetryPending));
  EXPECT_EQ(f.reconcile_backoff_s, 60);
  EXPECT_EQ(f.reconcile_next_at_ms, now_ + 60'000);
  EXPECT_EQ(f.reconcile_last_at_ms, now_);
  EXPECT_FALSE(f.last_observed_version.has_value());
  ExpectPersisted(f, 4, "WATCH_READ_FAILED");
  EXPECT_NE(MustEvents(f.job_id).back().detail_json.find("datasetmissing"), std::string::npos);
  EXPECT_TRUE(HoldsFenceRow(f.job_id));
  // A good read of the admitted version returns to WATCHING and records the observation.
  WatchCheck ok;
  ok.version = 7;
  ok.fingerprint = "fp";
  ok.backoff_s = 120;
  JobRecord w = MustOk(store_->RecordWatch(Leader(f), ok));
  EXPECT_EQ(w.state.reconcile, ReconcileState::kWatching);
  EXPECT_EQ(w.last_observed_version, 7);
  EXPECT_EQ(w.last_observed_fingerprint, "fp");
  EXPECT_EQ(w.reconcile_next_at_ms, now_ + 120'000);
  ExpectPersisted(w, 5, "WATCH_CHECKED");
  // A changed observation is T9, not a plain check; malformed checks are refused.
  WatchCheck moved = ok;
  moved.version = 8;
  EXPECT_EQ(store_->RecordWatch(Leader(w), moved).status().code(), StatusCode::kFailedPrecondition);
  moved = ok;
  moved.fingerprint = "fp2";
  EXPECT_EQ(store_->RecordWatch(Leader(w), moved).status().code(), StatusCode::kFailedPrecondition);
  WatchCheck bad = failed;
  bad.version = 7;
  EXPECT_EQ(store_->RecordWatch(Leader(w), bad).status().code(), StatusCode::kInvalidArgument);
  bad = failed;
  bad.backoff_s = 0;
  EXPECT_EQ(store_->RecordWatch(Leader(w), bad).status().code(), StatusCode::kInvalidArgument);
  // From a pending final read only the schedule moves; a known outcome has no watcher.
  JobRecord p = MustOk(store_->ProveTermination(Leader(w), "attempt-1", TerminationProof::kLockFree));
  JobRecord pf = MustOk(store_->RecordWatch(Leader(p), failed));
  EXPECT_EQ(pf.state.reconcile, ReconcileState::kFinalReadPending);
  EXPECT_EQ(pf.reconcile_next_at_ms, now_ + 60'000);
  JobRecord c = Finished("other", AttemptResult::kCommitted);
  EXPECT_EQ(store_->RecordWatch(Leader(c), failed).status().code(), StatusCode::kFailedPrecondition);
}

TEST_P(JobStoreConformanceTest, ReconcileDueListsUnknownJobsByTheirNextCheck) {
  JobRecord a = Finished("a", AttemptResult::kUnknown);  // next check at now + 30 s
  now_ += 1'000;
  JobRecord b = Finished("b", AttemptResult::kUnknown);  // at now + 31 s
  Finished("c", AttemptResult::kCommitted);
  MustAdmit("d");
  auto ids = [&](int64_t due_by, int limit) {
    std::vector<int64_t> out;
    auto listed = store_->ListReconcileDue(due_by, limit);
    EXPECT_TRUE(listed.ok()) << listed.status().ToString();
    if (listed.ok()) {
      for (const JobRecord& j : *listed) out.push_back(j.job_id);
    }
    return out;
  };
  EXPECT_TRUE(ids(now_, 10).empty());
  EXPECT_EQ(ids(*a.reconcile_next_at_ms, 10), std::vector<int64_t>{a.job_id});
  EXPECT_EQ(ids(*b.reconcile_next_at_ms, 10), (std::vector<int64_t>{a.job_id, b.job_id}));
  EXPECT_EQ(ids(*b.reconcile_next_at_ms, 1), std::vector<int64_t>{a.job_id});
  // A finished final read awaits attribution at once; a FORCE-released job is never listed.
  JobRecord p = MustOk(store_->ProveTermination(Leader(b), "attempt-1", TerminationProof::kLockFree));
  JobRecord f = MustOk(store_->FinishFinalRead(Leader(p), 7, "fp"));
  EXPECT_EQ(ids(now_, 10), std::vector<int64_t>{f.job_id});
  MustOk(store_->ForceWithoutRefresh(User(f), "gone"));
  EXPECT_TRUE(ids(now_, 10).empty());
  EXPECT_EQ(store_->ListReconcileDue(now_, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->ListReconcileDue(now_, kMaxListLimit + 1).status().code(), StatusCode::kInvalidArgument);
}

// More unarchived jobs than one page: the cursor returns each once, in either order, and the
// count is exact; List stays one page.
TEST_P(JobStoreConformanceTest, CursorsPageThroughEveryJobBeyondOnePage) {
  JobRecord first = MustAdmit("first");
  BulkJobs(2500, table_, now_, std::nullopt);
  JobRecord last = MustAdmit("last");
  JobFilter f;
  f.limit = kMaxListLimit;
  EXPECT_EQ(store_->Count(f).value(), 2502);
  EXPECT_EQ(store_->List(f).value().size(), static_cast<size_t>(kMaxListLimit));
  f.order = JobOrder::kOldestFirst;
  std::vector<int64_t> ids = ScanIds(f);
  ASSERT_EQ(ids.size(), 2502u);
  EXPECT_EQ(ids.front(), first.job_id);
  EXPECT_EQ(ids.back(), last.job_id);
  for (size_t i = 1; i < ids.size(); ++i) ASSERT_LT(ids[i - 1], ids[i]);
  f.order = JobOrder::kNewestFirst;
  f.limit = 7;  // small pages
  std::vector<int64_t> newest = ScanIds(f);
  ASSERT_EQ(newest.size(), 2502u);
  EXPECT_EQ(newest.front(), last.job_id);
  EXPECT_TRUE(std::equal(newest.begin(), newest.end(), ids.rbegin()));
  // Keyset bounds: a window, and ForEach stops at the callback's first error.
  f.min_job_id = ids[10];
  f.max_job_id = ids[19];
  EXPECT_EQ(ScanIds(f).size(), 10u);
  EXPECT_EQ(store_->Count(f).value(), 10);
  int seen = 0;
  Status stop =
      store_->ForEach(f, [&](const JobRecord&) { return ++seen == 3 ? Status::Cancelled("enough") : Status::OK(); });
  EXPECT_EQ(stop.code(), StatusCode::kCancelled);
  EXPECT_EQ(seen, 3);
  f.limit = 0;
  EXPECT_EQ(store_->Scan(f).status().code(), StatusCode::kInvalidArgument);
}

// The default listing with 100k archived jobs reads only what it returns: both halves of its
// union (unarchived jobs, archived ones holding a fence) search index_jobs by an index.
TEST_P(JobStoreConformanceTest, DefaultListingUsesIndexesWith100kArchivedJobs) {
  BulkJobs(100'000, table_, now_, now_);
  JobRecord u = Finished("u", AttemptResult::kUnknown);
  JobRecord p = MustAdmit("p");
  now_ += 1000;
  ASSERT_EQ(store_->Archive(now_, now_).value().tombstoned, 1);
  JobFilter f;
  f.order = JobOrder::kOldestFirst;
  EXPECT_EQ(ScanIds(f), (std::vector<int64_t>{u.job_id, p.job_id}));
  EXPECT_EQ(store_->Count(f).value(), 2);
  ExpectIndexedPlan(BuildListQuery(f).value());
  f.min_job_id = u.job_id + 1;
  ExpectIndexedPlan(BuildListQuery(f).value());
  JobFilter waiting;
  waiting.waiting_for_leader = true;
  EXPECT_EQ(ListIds(waiting), std::vector<int64_t>{p.job_id});
  ExpectIndexedPlan(BuildCountQuery(waiting).value());
}

TEST_P(JobStoreConformanceTest, FiltersOnIndexNameCreationTimeAndJobIdAreExact) {
  JobRecord a = MustAdmit("Emb_Idx");
  Tick(5'000);
  JobRecord b = MustAdmit("other");
  Tick(5'000);
  JobRecord c = Finished("EMB_IDX2", AttemptResult::kNotCommitted);
  JobFilter f;
  f.order = JobOrder::kOldestFirst;
  f.index_name = "emb_IDX";
  EXPECT_EQ(ListIds(f), std::vector<int64_t>{a.job_id});
  f.index_name.reset();
  f.created_from_ms = b.created_at_ms;
  EXPECT_EQ(ListIds(f), (std::vector<int64_t>{b.job_id, c.job_id}));
  f.created_before_ms = c.created_at_ms;
  EXPECT_EQ(ListIds(f), std::vector<int64_t>{b.job_id});
  EXPECT_EQ(store_->Count(f).value(), 1);
  f = JobFilter{};
  f.min_job_id = b.job_id;
  EXPECT_EQ(ListIds(f), (std::vector<int64_t>{c.job_id, b.job_id}));
  f.max_job_id = b.job_id;
  EXPECT_EQ(ListIds(f), std::vector<int64_t>{b.job_id});
}

// A non-administrator's listing is filtered by the store: its scopes, and only targets that
// still resolve; more scopes than one query takes are split and merged without duplicates.
TEST_P(JobStoreConformanceTest, VisibleScopesAreFilteredInTheStore) {
  auto other = store_->catalog().RegisterTable("local", "db", "other", "/root/db/other.vgl", now_);
  auto db2 = store_->catalog().RegisterTable("local", "db2", "docs", "/root/db2/docs.vgl", now_);
  auto gone = store_->catalog().RegisterTable("local", "db", "gone", "/root/db/gone.vgl", now_);
  ASSERT_TRUE(other.ok() && db2.ok() && gone.ok());
  JobRecord docs = MustAdmit("a");
  JobRecord in_other = MustOk(store_->Admit(Spec("a", &*other), "bob", now_));
  JobRecord in_db2 = MustOk(store_->Admit(Spec("a", &*db2), "bob", now_));
  JobRecord orphan = MustOk(store_->Admit(Spec("a", &*gone), "bob", now_));
  MustOk(store_->Cancel(User(orphan)));
  ASSERT_OK(store_->DropTable("local", "db", "gone"));
  BulkJobs(1500, *db2, now_, std::nullopt);  // newer jobs nobody below may see
  JobFilter f;
  f.order = JobOrder::kOldestFirst;
  f.visible = std::vector<TableScope>{{"local", "db", std::string("docs")}};
  EXPECT_EQ(ScanIds(f), std::vector<int64_t>{docs.job_id});
  f.visible = std::vector<TableScope>{{"local", "db", std::nullopt}};
  EXPECT_EQ(ScanIds(f), (std::vector<int64_t>{docs.job_id, in_other.job_id}));  // not the orphan
  EXPECT_EQ(store_->Count(f).value(), 2);
  f.visible = std::vector<TableScope>{};
  EXPECT_TRUE(ScanIds(f).empty());
  EXPECT_EQ(store_->Count(f).value(), 0);
  // 250 scopes in three queries; two of them name db.docs.
  std::vector<TableScope> many;
  for (int i = 0; i < 248; ++i) many.push_back({"local", "nodb" + std::to_string(i), std::nullopt});
  many.insert(many.begin() + 10, TableScope{"local", "db", std::string("docs")});
  many.push_back({"local", "db", std::nullopt});
  f.visible = many;
  f.limit = 1;
  EXPECT_EQ(ScanIds(f), (std::vector<int64_t>{docs.job_id, in_other.job_id}));
  EXPECT_EQ(store_->Count(f).value(), 2);
  f.order = JobOrder::kNewestFirst;
  EXPECT_EQ(ListIds(f), std::vector<int64_t>{in_other.job_id});
  f.visible.reset();
  f.limit = kMaxListLimit;
  EXPECT_EQ(store_->Count(f).value(), 1504);  // an administrator also sees the orphan
  (void)in_db2;
}

// Every event carries the time of its own compare-and-set; StartTime and FinishTime are the
// DISPATCHED and RESULT events' times, and the refresh events keep theirs.
TEST_P(JobStoreConformanceTest, EventsCarryTheTimeOfTheirCompareAndSet) {
  JobRecord admitted = MustAdmit("idx");
  Tick(1'000);
  JobRecord running = MustOk(store_->Dispatch(Leader(admitted), Attempt()));
  for (int i = 0; i < 8; ++i) Tick(5'000);
  AttemptReport rep{"attempt-1", AttemptResult::kCommitted, false, true, std::nullopt, std::nullopt, 8};
  JobRecord done = MustOk(store_->RecordResult(Leader(running), rep));
  Tick(2'000);
  JobRecord refreshing = MustOk(store_->RefreshStart(Leader(done)));
  Tick(3'000);
  JobRecord finished = MustOk(store_->RefreshDone(Leader(refreshing), refreshing.refresh_generation, true));
  EXPECT_EQ(finished.started_at_ms, kT0 + 1'000);
  EXPECT_EQ(finished.finished_at_ms, kT0 + 41'000);
  std::vector<JobEvent> ev = MustEvents(finished.job_id);
  ASSERT_EQ(ev.size(), 5u);
  const std::vector<std::pair<std::string, int64_t>> expected = {{"ADMITTED", kT0},
                                                                 {"DISPATCHED", kT0 + 1'000},
                                                                 {"RESULT", kT0 + 41'000},
                                                                 {"REFRESH_STARTED", kT0 + 43'000},
                                                                 {"REFRESH_DONE", kT0 + 46'000}};
  for (size_t i = 0; i < ev.size(); ++i) {
    EXPECT_EQ(ev[i].kind, expected[i].first);
    EXPECT_EQ(ev[i].at_ms, expected[i].second) << ev[i].kind;
  }
}

// Every FORCE_RELEASE writes one audit record with its request; ACK and a joining retry do not.
// The record names its target itself and outlives archival and the job's deletion.
TEST_P(JobStoreConformanceTest, ForceReleaseWritesAnAuditRecordThatOutlivesTheJob) {
  JobRecord u = Finished("u_idx", AttemptResult::kUnknown);
  JobRecord v = Finished("v_idx", AttemptResult::kUnknown);
  JobRecord w = Finished("w_idx", AttemptResult::kUnknown);
  now_ += 1'000;
  MustOk(store_->RequestAck(User(w), "only seen"));
  JobRecord forced = MustOk(store_->RequestForce(User(u), "  host lost  "));
  MustOk(store_->RequestForce(User(forced), "host lost"));  // joins: no new record
  now_ += 1'000;
  MustOk(store_->ForceWithoutRefresh(Cas{v.job_id, v.revision, std::nullopt, "root", now_}, "emergency"));
  auto audit = store_->ListAudit(0, 10);
  ASSERT_TRUE(audit.ok()) << audit.status().ToString();
  ASSERT_EQ(audit->size(), 2u);
  const AuditRecord& a = (*audit)[0];
  EXPECT_GT(a.audit_id, 0);
  EXPECT_EQ(a.at_ms, kT0 + 1'000);
  EXPECT_EQ(a.actor, "alice");
  EXPECT_EQ(a.action, audit::kForceRelease);
  EXPECT_EQ(a.job_id, u.job_id);
  EXPECT_EQ(a.resolution_id, *forced.resolution_id);
  EXPECT_EQ(a.catalog_name, "local");
  EXPECT_EQ(a.database_name, "db");
  EXPECT_EQ(a.table_name, "docs");
  EXPECT_EQ(a.table_incarnation, table_.table_incarnation);
  EXPECT_EQ(a.index_name, "u_idx");
  EXPECT_EQ(a.note, "host lost");
  EXPECT_EQ(a.warnings, ForceWarnings(u, false));
  const AuditRecord& b = (*audit)[1];
  EXPECT_GT(b.audit_id, a.audit_id);
  EXPECT_EQ(b.actor, "root");
  EXPECT_EQ(b.action, audit::kForceReleaseWithoutRefresh);
  EXPECT_EQ(b.job_id, v.job_id);
  EXPECT_EQ(b.warnings.size(), 2u);
  EXPECT_EQ(MustEvents(v.job_id).back().resolution_id, b.resolution_id);
  EXPECT_EQ(store_->ListAudit(a.audit_id, 10).value(), std::vector<AuditRecord>{b});
  EXPECT_EQ(store_->ListAudit(0, 0).status().code(), StatusCode::kInvalidArgument);
  // Append-only; archival and the deletion of the job leave it as it was.
  auto conn = store_->database().Acquire();
  ASSERT_TRUE(conn.ok());
  EXPECT_FALSE((*conn)->Execute("UPDATE index_job_audit SET note = 'x'").ok());
  EXPECT_FALSE((*conn)->Execute("DELETE FROM index_job_audit").ok());
  now_ += 1'000;
  ASSERT_TRUE(store_->Archive(now_, now_).ok());
  const bool sqlite = store_->database().profile().dialect == meta::Dialect::kSqlite;
  ASSERT_OK((*conn)->ExecuteScript(sqlite ? "DROP TRIGGER index_job_events_no_delete"
                                          : "DROP TRIGGER index_job_events_append_only ON index_job_events"));
  for (const char* table : {"index_job_events", "index_fences", "index_target_guards", "index_jobs"}) {
    ASSERT_OK((*conn)->Execute(std::string("DELETE FROM ") + table + " WHERE job_id = $1", {v.job_id}).status());
  }
  EXPECT_EQ(store_->Get(v.job_id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->ListAudit(0, 10).value(), *audit);
}

// DROP DATABASE (its check and removal under the catalog's lock) and a table registration
// (which asks whether the database exists under the same lock) race on two threads: the
// registration is wholly before the drop, which then refuses (not empty), or after it, and then
// fails (no database). Never a registration left behind in a dropped database.
TEST_P(JobStoreConformanceTest, DropDatabaseRacingATableRegistrationSerializes) {
  JobControl control(store_.get(), [this] { return now_; });
  for (int round = 0; round < 20; ++round) {
    const std::string db = "race" + std::to_string(round);
    std::atomic<bool> exists{true};  // the database's directory
    std::atomic<int> go{0};
    Result<catalog::TableEntry> registered = Status::Internal("not run");
    Status dropped = Status::Internal("not run");
    std::thread registering([&] {
      while (go.load() == 0) {
      }
      registered = store_->catalog().RegisterTable(
          "local", db, "x", "/data/x.lance", now_, index::TableEngine::kLance, [&]() -> Status {
            return exists.load() ? Status::OK() : Status::NotFound("database '" + db + "' does not exist");
          });
    });
    std::thread dropping([&] {
      while (go.load() == 0) {
      }
      dropped = control.DropDatabase("local", db, [&] {
        exists = false;
        return Status::OK();
      });
    });
    go.store(1);
    registering.join();
    dropping.join();
    ASSERT_NE(registered.ok(), dropped.ok()) << registered.status().ToString() << " / " << dropped.ToString();
    if (registered.ok()) {
      EXPECT_EQ(dropped.code(), StatusCode::kFailedPrecondition) << dropped.ToString();
      EXPECT_NE(dropped.message().find("is not empty (tables x (external))"), std::string::npos) << dropped.ToString();
      EXPECT_TRUE(exists.load());
    } else {
      EXPECT_EQ(registered.status().code(), StatusCode::kNotFound) << registered.status().ToString();
      EXPECT_FALSE(exists.load());
      EXPECT_FALSE(store_->catalog().LookupTable("local", db, "x").value().has_value());
    }
  }
}

}  // namespace vigil::jobs
