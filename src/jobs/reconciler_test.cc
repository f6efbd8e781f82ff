#include "vigil/jobs/reconciler.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <optional>

#include "testutil/temp_dir.h"
#include "vigil/catalog/version_store.h"
#include "vigil/common/file_lock.h"
#include "vigil/index/provider.h"
#include "vigil/ingest/datagen.h"
#include "vigil/jobs/admission.h"
#include "vigil/jobs/attempt_lock.h"
#include "vigil/jobs/executor.h"

namespace vigil::jobs {
namespace {

constexpr int64_t kLeaseTtl = 7 * 24 * 3'600'000LL;  // covers every fake clock jump below

// UNKNOWN jobs on a real dataset and a real SQLite store: attempts are dispatched through the
// store with their attempt lock held by the test (a live dispatcher) or released (a dead one),
// and the provider commits with the attempt id as InProcessExecutor does.
class ReconcilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DatagenOptions o;
    o.rows = 400;
    o.dim = 8;
    o.latent_dim = 2;
    o.words_per_body = 8;
    gen_ = *DataGenerator::Make(o);
    path_ = dir_.Join("db/docs.vgl");
    auto ds = *Dataset::Create(path_, gen_->schema(), {});
    auto reader = gen_->NewReader();
    ASSERT_TRUE(ds->Append(reader.get(), {}).ok());
    OpenStore();
    auto table = store_->catalog().RegisterTable("local", "db", "docs", path_, now_);
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    incarnation_ = table->table_incarnation;
    auto lease = store_->cluster().AcquireLeader(kHolder, now_, kLeaseTtl);
    ASSERT_TRUE(lease.ok()) << lease.status().ToString();
    epoch_ = lease->epoch;
    auto node = store_->cluster().RegisterNode("local", 1, "localhost", now_);
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    node_epoch_ = *node;
  }

  void OpenStore() {
    store_.reset();
    JobStoreOptions so;
    so.uri = "sqlite://" + dir_.Join("meta.db");
    auto store = JobStore::Open(so);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    options_.results = &results_;
    reconciler_ = std::make_unique<Reconciler>(
        store_.get(), kHolder, [this] { return epoch_; }, options_);
  }

  // The reconciler as for a provider whose commits the store does not fence: only the attempt
  // lock proves an attempt's end.
  void Unfenced() {
    options_.commits_fenced = [](std::string_view) { return false; };
    reconciler_ = std::make_unique<Reconciler>(
        store_.get(), kHolder, [this] { return epoch_; }, options_);
  }

  // The table's dataset, opened to commit through its catalog at the test's clock.
  DatasetOptions Committed() {
    return catalog::TableDatasetOptions(&store_->catalog(), incarnation_, [this] { return now_; });
  }

  CreateIndexStatement Statement(const std::string& name, const std::string& column, index::IndexType type) {
    CreateIndexStatement s;
    s.target = {"local", "db", "docs"};
    s.index_name = name;
    s.column = column;
    s.type = type;
    return s;
  }

  Result<JobRecord> Admit(const std::string& name, const std::string& column = "ts",
                          index::IndexType type = index::IndexType::kBtree) {
    Admission admission(store_.get(), {});
    return admission.Create(Statement(name, column, type), "admin", now_);
  }

  // Admits and dispatches (T3) with the attempt lock taken first, as the runner does.
  JobRecord Dispatch(const std::string& name, std::optional<FileLock>* lock, const std::string& column = "ts",
                     index::IndexType type = index::IndexType::kBtree) {
    auto job = Admit(name, column, type);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    if (!job.ok()) return {};
    AttemptIdentity a;
    a.executor_node_id = "local";
    a.node_epoch = node_epoch_;
    a.attempt_id = std::to_string(job->job_id) + "-attempt";
    a.leader_epoch = epoch_;
    a.deadline_at_ms = now_ + 3'600'000;
    auto taken = FileLock::Acquire(AttemptLockPath(path_, a.attempt_id));
    EXPECT_TRUE(taken.ok()) << taken.status().ToString();
    if (taken.ok()) lock->emplace(std::move(*taken));
    auto running = store_->Dispatch(Leader(*job), a);
    EXPECT_TRUE(running.ok()) << running.status().ToString();
    return running.ok() ? *running : JobRecord{};
  }

  // Runs the provider for the attempt, committing through the table's catalog as a worker's
  // supervisor does (a claim carrying job id and attempt id).
  ExecutionOutcome Provide(const JobRecord& running) {
    InProcessExecutor executor;
    ExecutionRequest req;
    req.job = running;
    req.attempt = *running.attempt;
    req.versions = Committed().versions;
    return executor.Execute(req);
  }

  // Provide, which must commit; the response is lost.
  void RunProvider(const JobRecord& running) {
    ExecutionOutcome out = Provide(running);
    ASSERT_EQ(out.report.code, StatusCode::kOk) << out.message;
    ASSERT_TRUE(out.committed_version.has_value());
  }

  // T8 with an incomplete report, as the runner records a lost response.
  JobRecord Unknown(const JobRecord& running) {
    AttemptReport r;
    r.attempt_id = running.attempt->attempt_id;
    r.result = AttemptResult::kUnknown;
    r.error_code = "UNKNOWN_OUTCOME";
    auto rec = store_->RecordResult(Leader(running), r);
    EXPECT_TRUE(rec.ok()) << rec.status().ToString();
    return rec.ok() ? *rec : JobRecord{};
  }

  Cas Leader(const JobRecord& rec) const { return Cas{rec.job_id, rec.revision, epoch_, kHolder, now_}; }

  JobRecord Get(int64_t id) {
    auto rec = store_->Get(id);
    EXPECT_TRUE(rec.ok()) << rec.status().ToString();
    return rec.ok() ? *rec : JobRecord{};
  }

  std::vector<std::string> Kinds(int64_t id) {
    std::vector<std::string> out;
    auto events = store_->Events(id);
    EXPECT_TRUE(events.ok()) << events.status().ToString();
    if (events.ok()) {
      for (const JobEvent& e : *events) out.push_back(e.kind);
    }
    return out;
  }

  bool HoldsFenceRow(int64_t job_id) {
    auto conn = store_->database().Acquire();
    EXPECT_TRUE(conn.ok());
    auto rows = (*conn)->Query("SELECT count(*) FROM index_fences WHERE job_id = $1", {job_id});
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() && *(*rows)[0].Int(0) == 1;
  }

  int RunDue() {
    auto n = reconciler_->RunDue(now_);
    EXPECT_TRUE(n.ok()) << n.status().ToString();
    return n.ok() ? *n : -1;
  }

  void AppendRows() {
    auto ds = *Dataset::Open(path_, std::nullopt, Committed());
    auto reader = gen_->NewReader();
    ASSERT_TRUE(ds->Append(reader.get(), {}).ok());
  }

  // RefreshStart + RefreshDone, as the runner's refresh does.
  JobRecord Refresh(const JobRecord& job) {
    auto started = store_->RefreshStart(Leader(job));
    EXPECT_TRUE(started.ok()) << started.status().ToString();
    if (!started.ok()) return job;
    auto done = store_->RefreshDone(Leader(*started), started->refresh_generation, true);
    EXPECT_TRUE(done.ok()) << done.status().ToString();
    return done.ok() ? *done : *started;
  }

  static constexpr const char* kHolder = "leader-a";
  // The detail of the job's TERMINATION_PROVEN event ("" when there is none).
  std::string ProofDetail(int64_t id) {
    auto events = store_->Events(id);
    if (!events.ok()) return "";
    for (const JobEvent& e : *events) {
      if (e.kind == event::kTerminationProven) return e.detail_json;
    }
    return "";
  }

  // Forks a stopped child that inherits `lock` (as a launched worker does) and records it there.
  pid_t ForkStoppedWorker(FileLock* lock) {
    const pid_t worker = ::fork();
    if (worker == 0) {
      ::raise(SIGSTOP);
      ::_exit(0);
    }
    EXPECT_GT(worker, 0);
    auto who = IdentifyProcess(worker);
    EXPECT_TRUE(who.ok()) << who.status().ToString();
    if (who.ok()) {
      EXPECT_TRUE(RecordAttemptProcess(lock->fd(), *who).ok());
    }
    return worker;
  }

  testing::TempDir dir_;
  std::shared_ptr<const DataGenerator> gen_;
  std::string path_;
  std::string incarnation_;
  ReconcileResults results_;  // what every reconciler of the test wrote
  ReconcilerOptions options_;
  int64_t now_ = 1'700'000'000'000;
  int64_t epoch_ = 0;
  int64_t node_epoch_ = 0;
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<Reconciler> reconciler_;
};

TEST_F(ReconcilerTest, UnfencedHeldLockKeepsWatchingOnADoublingPersistedBackoff) {
  Unfenced();
  std::optional<FileLock> lock;
  JobRecord u = Unknown(Dispatch("ts_idx", &lock));
  ASSERT_EQ(u.reconcile_backoff_s, 30);
  ASSERT_EQ(u.reconcile_next_at_ms, now_ + 30'000);
  // Not due yet: nothing is looked at or written.
  now_ += 29'000;
  EXPECT_EQ(RunDue(), 0);
  EXPECT_EQ(Get(u.job_id).revision, u.revision);

  int64_t backoff = 30;
  for (int64_t expected : {60, 120, 240, 480, 960, 1800, 1800}) {
    now_ = *Get(u.job_id).reconcile_next_at_ms;
    EXPECT_EQ(RunDue(), 1);
    JobRecord r = Get(u.job_id);
    EXPECT_EQ(r.state.outcome, Outcome::kUnknown);
    EXPECT_EQ(r.state.reconcile, ReconcileState::kWatching);
    EXPECT_EQ(r.state.refresh, RefreshState::kNotRequired);  // nothing changed
    EXPECT_FALSE(r.termination_proven);
    EXPECT_EQ(r.reconcile_backoff_s, expected) << "after " << backoff;
    EXPECT_EQ(r.reconcile_next_at_ms, now_ + expected * 1000);
    EXPECT_EQ(r.reconcile_last_at_ms, now_);
    EXPECT_EQ(r.last_observed_version, u.spec.start_version);
    EXPECT_EQ(Kinds(u.job_id).back(), "WATCH_CHECKED");
    EXPECT_TRUE(HoldsFenceRow(u.job_id));
    backoff = expected;
  }
  // Each pass counted one look that proved nothing, and nothing else.
  EXPECT_EQ(results_.watched.load(), 7);
  EXPECT_EQ(results_.terminations_proven.load() + results_.changes_observed.load() + results_.errors.load(), 0);
  // A restarted leader (new store, new reconciler) continues the persisted schedule.
  const int64_t next_at = *Get(u.job_id).reconcile_next_at_ms;
  OpenStore();
  now_ = next_at - 1;
  EXPECT_EQ(RunDue(), 0);
  EXPECT_EQ(Get(u.job_id).reconcile_next_at_ms, next_at);
  now_ = next_at;
  EXPECT_EQ(RunDue(), 1);
  EXPECT_EQ(Get(u.job_id).reconcile_backoff_s, 1800);
  // The fence still holds the name.
  EXPECT_EQ(Admit("ts_idx").status().code(), StatusCode::kAlreadyExists);
}

TEST_F(ReconcilerTest, FreeLockAndACommitCarryingTheAttemptIdIsCommitted) {
  std::optional<FileLock> lock;
  JobRecord running = Dispatch("ts_idx", &lock);
  RunProvider(running);
  lock.reset();  // the worker is gone; its response was lost (C6)
  JobRecord u = Unknown(running);
  const uint64_t committed = Dataset::ListVersions(path_)->back().version;
  now_ = *u.reconcile_next_at_ms;
  EXPECT_EQ(RunDue(), 1);
  JobRecord a = Get(u.job_id);
  EXPECT_EQ(a.state.outcome, Outcome::kCommitted);
  EXPECT_EQ(a.committed_version, static_cast<int64_t>(committed));
  EXPECT_EQ(a.state.refresh, RefreshState::kRequired);
  EXPECT_EQ(a.state.reconcile, ReconcileState::kStoppedTerminationProven);
  EXPECT_TRUE(a.termination_proven);
  EXPECT_EQ(a.last_observed_version, static_cast<int64_t>(committed));
  EXPECT_EQ(DerivedState(a.state), "REFRESHING");
  EXPECT_TRUE(HoldsFenceRow(a.job_id));  // a COMMITTED attribution keeps the fence until refresh DONE
  std::vector<std::string> kinds = Kinds(a.job_id);
  std::vector<std::string> tail(kinds.end() - 4, kinds.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"CHANGE_OBSERVED", "TERMINATION_PROVEN", "FINAL_READ", "ATTRIBUTED"}));
  EXPECT_EQ(results_.changes_observed.load(), 1);
  EXPECT_EQ(results_.terminations_proven.load(), 1);
  EXPECT_EQ(results_.committed.load(), 1);
  EXPECT_EQ(results_.not_committed.load() + results_.watched.load(), 0);
  JobRecord done = Refresh(a);
  EXPECT_EQ(DerivedState(done.state), "FINISHED");
  EXPECT_FALSE(HoldsFenceRow(a.job_id));
  // Attributed jobs are not looked at again.
  now_ += 3'600'000;
  EXPECT_EQ(RunDue(), 0);
}

TEST_F(ReconcilerTest, FreeLockWithoutSuchCommitIsNotCommittedAndReleasesTheName) {
  std::optional<FileLock> lock;
  JobRecord running = Dispatch("ts_idx", &lock);
  lock.reset();
  JobRecord u = Unknown(running);
  AppendRows();  // another writer's commit, without this attempt's id
  now_ = *u.reconcile_next_at_ms;
  EXPECT_EQ(RunDue(), 1);
  JobRecord a = Get(u.job_id);
  EXPECT_EQ(a.state.outcome, Outcome::kNotCommitted);
  EXPECT_FALSE(a.committed_version.has_value());
  EXPECT_EQ(Kinds(a.job_id).back(), "ATTRIBUTED");
  EXPECT_EQ(results_.not_committed.load(), 1);
  EXPECT_EQ(results_.committed.load(), 0);
  // job_state's Attribute requires a refresh for either outcome; the fence goes with it.
  EXPECT_EQ(a.state.refresh, RefreshState::kRequired);
  EXPECT_TRUE(HoldsFenceRow(a.job_id));
  JobRecord done = Refresh(a);
  EXPECT_EQ(DerivedState(done.state), "FAILED");
  EXPECT_FALSE(HoldsFenceRow(a.job_id));
  EXPECT_TRUE(index::ListIndexes(path_)->empty());
  EXPECT_TRUE(Admit("ts_idx").ok());
}

TEST_F(ReconcilerTest, AnUnreadableDatasetRetriesWithBackoffAndRecovers) {
  std::optional<FileLock> lock;
  JobRecord running = Dispatch("ts_idx", &lock);
  lock.reset();
  JobRecord u = Unknown(running);
  const std::string moved = path_ + ".moved";
  std::filesystem::rename(path_, moved);
  for (int64_t expected : {60, 120}) {
    now_ = *Get(u.job_id).reconcile_next_at_ms;
    EXPECT_EQ(RunDue(), 1);
    JobRecord r = Get(u.job_id);
    EXPECT_EQ(r.state.reconcile, ReconcileState::kRetryPending);
    EXPECT_EQ(r.state.outcome, Outcome::kUnknown);
    EXPECT_EQ(r.state.refresh, RefreshState::kNotRequired);
    EXPECT_FALSE(r.termination_proven);  // the lock file is gone too: no proof
    EXPECT_EQ(r.reconcile_backoff_s, expected);
    EXPECT_EQ(r.reconcile_next_at_ms, now_ + expected * 1000);
    EXPECT_EQ(Kinds(u.job_id).back(), "WATCH_READ_FAILED");
    EXPECT_TRUE(HoldsFenceRow(u.job_id));
  }
  EXPECT_EQ(results_.watched.load(), 2);  // an unreadable dataset is looked at again, not an error
  EXPECT_EQ(results_.errors.load(), 0);
  std::filesystem::rename(moved, path_);
  now_ = *Get(u.job_id).reconcile_next_at_ms;
  EXPECT_EQ(RunDue(), 1);
  EXPECT_EQ(Get(u.job_id).state.outcome, Outcome::kNotCommitted);
}

TEST_F(ReconcilerTest, RecoverSettlesADeadDispatchersAttemptInOnePassAndLeavesALiveOne) {
  std::optional<FileLock> dead_lock, live_lock;
  JobRecord dead = Dispatch("ts_idx", &dead_lock);
  JobRecord live = Dispatch("cat_idx", &live_lock, "category", index::IndexType::kBitmap);
  RunProvider(dead);
  dead_lock.reset();  // the dispatcher died after the commit, before recording the result
  ASSERT_TRUE(reconciler_->Recover(now_).ok());
  JobRecord d = Get(dead.job_id);
  EXPECT_EQ(d.state.outcome, Outcome::kCommitted);
  EXPECT_EQ(d.error_code, "LOST_RESPONSE");
  std::vector<std::string> kinds = Kinds(d.job_id);
  std::vector<std::string> tail(kinds.end() - 5, kinds.end());
  EXPECT_EQ(tail,
            (std::vector<std::string>{"RESULT", "CHANGE_OBSERVED", "TERMINATION_PROVEN", "FINAL_READ", "ATTRIBUTED"}));
  EXPECT_EQ(results_.lost_attempts.load(), 1);
  EXPECT_EQ(results_.committed.load(), 1);
  // A held lock is a live dispatcher (e.g. a demoted leader, C5): still RUNNING.
  EXPECT_EQ(Get(live.job_id).state.execution, Execution::kRunning);
  EXPECT_EQ(Get(live.job_id).revision, live.revision);
  // Once it lets go without a result, a later pass settles it; the other attempt's commit is
  // not this one's.
  live_lock.reset();
  now_ += 1'000;
  EXPECT_EQ(RunDue(), 1);
  JobRecord l = Get(live.job_id);
  EXPECT_EQ(l.state.outcome, Outcome::kNotCommitted);
  EXPECT_EQ(l.error_code, "LOST_RESPONSE");
  EXPECT_EQ(results_.lost_attempts.load(), 2);
  EXPECT_EQ(results_.not_committed.load(), 1);
}

TEST_F(ReconcilerTest, AMissingLockFileProvesNothingUntilTheNodeEpochIsReplaced) {
  std::optional<FileLock> lock;
  JobRecord running = Dispatch("ts_idx", &lock);
  lock.reset();
  std::filesystem::remove_all(std::filesystem::path(AttemptLockPath(path_, running.attempt->attempt_id)).parent_path());
  ASSERT_TRUE(reconciler_->Recover(now_).ok());
  EXPECT_EQ(Get(running.job_id).state.execution, Execution::kRunning);
  ASSERT_TRUE(store_->cluster().RegisterNode("local", 2, "localhost", now_).ok());  // the node restarted
  ASSERT_TRUE(reconciler_->Recover(now_).ok());
  JobRecord r = Get(running.job_id);
  EXPECT_EQ(r.state.outcome, Outcome::kNotCommitted);
  EXPECT_TRUE(r.termination_proven);
}

TEST_F(ReconcilerTest, AChangeWhileWatchingRequiresARefreshOnce) {
  Unfenced();
  std::optional<FileLock> lock;
  JobRecord u = Unknown(Dispatch("ts_idx", &lock));
  AppendRows();
  const int64_t appended = static_cast<int64_t>(*Dataset::LatestVersion(path_));
  now_ = *u.reconcile_next_at_ms;
  EXPECT_EQ(RunDue(), 1);
  JobRecord r = Get(u.job_id);
  EXPECT_EQ(r.state.outcome, Outcome::kUnknown);
  EXPECT_EQ(r.state.reconcile, ReconcileState::kWatching);
  EXPECT_EQ(r.state.refresh, RefreshState::kRequired);
  EXPECT_EQ(r.last_observed_version, appended);
  ASSERT_TRUE(r.last_observed_fingerprint.has_value());
  std::vector<std::string> kinds = Kinds(u.job_id);
  std::vector<std::string> tail(kinds.end() - 2, kinds.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"CHANGE_OBSERVED", "WATCH_CHECKED"}));
  // The refresh runs; with nothing new, the next check observes no change.
  JobRecord refreshed = Refresh(r);
  EXPECT_EQ(refreshed.state.refresh, RefreshState::kDone);
  EXPECT_TRUE(HoldsFenceRow(u.job_id));  // UNKNOWN keeps the fence after its refresh
  now_ = *refreshed.reconcile_next_at_ms;
  EXPECT_EQ(RunDue(), 1);
  EXPECT_EQ(Get(u.job_id).state.refresh, RefreshState::kDone);
  EXPECT_EQ(Kinds(u.job_id).back(), "WATCH_CHECKED");
}

TEST_F(ReconcilerTest, ALostLeaseStopsThePassWithoutWriting) {
  std::optional<FileLock> lock;
  JobRecord running = Dispatch("ts_idx", &lock);
  lock.reset();
  JobRecord u = Unknown(running);
  now_ += kLeaseTtl + 1;
  auto other = store_->cluster().AcquireLeader("leader-b", now_, kLeaseTtl);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_EQ(reconciler_->RunDue(now_).status().code(), StatusCode::kCommitConflict);
  EXPECT_EQ(Get(u.job_id).revision, u.revision);
  for (const auto& [result, n] : results_.Snapshot()) EXPECT_EQ(n, 0) << result;  // nothing was written
}

// A worker outlives its dispatcher (stopped, e.g. SIGSTOP or a frozen cgroup): the next leader
// leaves it alone until the attempt's durable deadline, then kills exactly that worker, proves
// termination by its lock and settles the job.
TEST_F(ReconcilerTest, OrphanedStoppedWorkerIsKilledAtItsDeadlineAndSettled) {
  std::optional<FileLock> lock;
  JobRecord running = Dispatch("ts_idx", &lock);
  const std::string lock_path = AttemptLockPath(path_, running.attempt->attempt_id);
  const pid_t worker = ForkStoppedWorker(&*lock);
  lock->Release();  // the dispatcher dies; the stopped worker still holds the lock
  ASSERT_TRUE(*FileLock::IsHeld(lock_path));
  ASSERT_TRUE(store_->cluster().RegisterNode("local", 2, "localhost", now_).ok());  // a new node epoch

  ASSERT_TRUE(reconciler_->RunDue(now_).ok());
  EXPECT_EQ(Get(running.job_id).state.execution, Execution::kRunning);  // it may still finish
  EXPECT_EQ(::kill(worker, 0), 0) << "the worker is left alone before its deadline";
  EXPECT_TRUE(*FileLock::IsHeld(lock_path));

  now_ = running.attempt->deadline_at_ms + 1;
  ASSERT_TRUE(reconciler_->RunDue(now_, /*all=*/true).ok());
  int status = 0;
  ASSERT_EQ(::waitpid(worker, &status, 0), worker);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  JobRecord settled = Get(running.job_id);
  EXPECT_EQ(settled.error_code, "LOST_RESPONSE");
  EXPECT_EQ(settled.state.outcome, Outcome::kNotCommitted);  // nothing carries the attempt id
  EXPECT_EQ(settled.state.reconcile, ReconcileState::kStoppedTerminationProven);
}

// Past the deadline, a worker this leader cannot stop (another host's, or another boot's)
// leaves the job UNKNOWN without a proof: resolvable by an operator, never RUNNING for ever.
TEST_F(ReconcilerTest, UnfencedOrphanedWorkerOfAnotherHostIsUnknownAndResolvableAtItsDeadline) {
  Unfenced();
  std::optional<FileLock> lock;
  JobRecord running = Dispatch("ts_idx", &lock);
  const std::string lock_path = AttemptLockPath(path_, running.attempt->attempt_id);
  const pid_t worker = ::fork();
  if (worker == 0) {
    ::raise(SIGSTOP);
    ::_exit(0);
  }
  ASSERT_GT(worker, 0);
  ProcessIdentity elsewhere = *IdentifyProcess(worker);
  elsewhere.boot_id = "another-host";
  ASSERT_TRUE(RecordAttemptProcess(lock->fd(), elsewhere).ok());
  lock->Release();
  ASSERT_TRUE(store_->cluster().RegisterNode("local", 2, "localhost", now_).ok());
  now_ = running.attempt->deadline_at_ms + 1;
  ASSERT_TRUE(reconciler_->RunDue(now_, /*all=*/true).ok());
  JobRecord unknown = Get(running.job_id);
  EXPECT_EQ(DerivedState(unknown.state), "OUTCOME_UNKNOWN");
  EXPECT_EQ(unknown.state.reconcile, ReconcileState::kWatching);
  EXPECT_EQ(::kill(worker, 0), 0) << "not this leader's to kill";
  ::kill(worker, SIGKILL);
  ::waitpid(worker, nullptr, 0);
}

// The store refuses the claim of an attempt its job no longer runs: an UNKNOWN attempt is
// proven unable to commit by that fence alone, while its worker still holds the lock.
TEST_F(ReconcilerTest, AnUnknownAttemptIsProvenByTheFenceWhileItsWorkerHoldsTheLock) {
  std::optional<FileLock> lock;
  JobRecord running = Dispatch("ts_idx", &lock);
  JobRecord u = Unknown(running);
  now_ = *u.reconcile_next_at_ms;
  EXPECT_EQ(RunDue(), 1);
  JobRecord a = Get(u.job_id);
  EXPECT_EQ(a.state.outcome, Outcome::kNotCommitted);
  EXPECT_TRUE(a.termination_proven);
  EXPECT_NE(ProofDetail(a.job_id).find("CATALOG_FENCE"), std::string::npos) << ProofDetail(a.job_id);
  ASSERT_TRUE(lock.has_value());  // held throughout, as a worker that never exits would
  // Its late commit is refused: nothing of the attempt is published.
  const size_t versions = Dataset::ListVersions(path_)->size();
  ExecutionOutcome late = Provide(running);
  EXPECT_EQ(late.report.code, StatusCode::kFailedPrecondition) << late.message;
  EXPECT_EQ(Dataset::ListVersions(path_)->size(), versions);
  EXPECT_TRUE(index::ListIndexes(path_)->empty());
}

// A new leader settles the RUNNING attempts of an older leader epoch at once, live workers or
// not: the lease check refuses their claims. One committed before the lease lapsed (COMMITTED,
// from the catalog), one did not (NOT_COMMITTED; its stopped worker on this host is killed).
TEST_F(ReconcilerTest, RunningAttemptsOfAnOlderLeaderEpochAreSettledAtOnce) {
  std::optional<FileLock> committed_lock, idle_lock;
  JobRecord committed = Dispatch("ts_idx", &committed_lock);
  JobRecord idle = Dispatch("cat_idx", &idle_lock, "category", index::IndexType::kBitmap);
  RunProvider(committed);
  const uint64_t version = Dataset::ListVersions(path_)->back().version;
  const pid_t worker = ForkStoppedWorker(&*idle_lock);

  now_ += kLeaseTtl + 1;  // the old leader's lease lapses; leader-b takes it
  auto lease = store_->cluster().AcquireLeader("leader-b", now_, kLeaseTtl);
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  Reconciler next(store_.get(), "leader-b", lease->epoch);
  ASSERT_TRUE(next.Recover(now_).ok());

  JobRecord c = Get(committed.job_id);
  EXPECT_EQ(c.state.outcome, Outcome::kCommitted);
  EXPECT_EQ(c.committed_version, static_cast<int64_t>(version));
  EXPECT_EQ(c.error_code, "LOST_RESPONSE");
  EXPECT_NE(c.error_message.value_or("").find("no longer holds the lease"), std::string::npos);
  JobRecord n = Get(idle.job_id);
  EXPECT_EQ(n.state.outcome, Outcome::kNotCommitted);
  EXPECT_NE(ProofDetail(n.job_id).find("CATALOG_FENCE"), std::string::npos) << ProofDetail(n.job_id);
  int status = 0;
  ASSERT_EQ(::waitpid(worker, &status, 0), worker);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  // The test held both locks throughout (a live dispatcher): neither proof needed them.
  ExecutionOutcome late = Provide(idle);
  EXPECT_EQ(late.report.code, StatusCode::kFailedPrecondition) << late.message;
  EXPECT_EQ(Dataset::ListVersions(path_)->back().version, version);
}

TEST(AttemptLockTest, SignalExactProcessSparesAnotherProcessWithThePid) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_GT(child, 0);
  auto who = *IdentifyProcess(child);
  ProcessIdentity other = who;
  other.start_ticks += 1;  // the same pid, a different process
  EXPECT_FALSE(*SignalExactProcess(other, SIGKILL));
  other = who;
  other.boot_id = "another-boot";
  EXPECT_FALSE(*SignalExactProcess(other, SIGKILL));
  EXPECT_EQ(::kill(child, 0), 0);
  EXPECT_TRUE(*SignalExactProcess(who, SIGKILL));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_FALSE(*SignalExactProcess(who, SIGKILL));  // gone
}

TEST(AttemptLockTest, ProcessRecordRoundTripsThroughTheLockFile) {
  testing::TempDir dir;
  auto lock = FileLock::Acquire(AttemptLockPath(dir.path(), "att-1"));
  ASSERT_TRUE(lock.ok());
  EXPECT_FALSE(ReadAttemptProcess(lock->path())->has_value());
  auto me = *IdentifyProcess(::getpid());
  ASSERT_TRUE(RecordAttemptProcess(lock->fd(), me).ok());
  auto read = ReadAttemptProcess(lock->path());
  ASSERT_TRUE(read.ok() && read->has_value());
  EXPECT_EQ(**read, me);
  ASSERT_TRUE(WriteFileDurably(DefaultFileSystem(), dir.Join("bad.lock"), "pid x").ok());
  EXPECT_EQ(ReadAttemptProcess(dir.Join("bad.lock")).status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace vigil::jobs
