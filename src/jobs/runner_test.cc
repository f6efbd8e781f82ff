#include "vigil/jobs/runner.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "testutil/fake_env.h"
#include "testutil/temp_dir.h"
#include "vigil/common/failpoint.h"
#include "vigil/index/provider.h"
#include "vigil/ingest/datagen.h"
#include "vigil/jobs/admission.h"

namespace vigil::jobs {
namespace {

// Admission, dispatch, classification and refresh end to end on SQLite, with
// the in-process executor calling the real provider on a real dataset.
class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DatagenOptions o;
    o.rows = 600;
    o.dim = 8;
    o.latent_dim = 2;
    o.words_per_body = 8;
    auto gen = *DataGenerator::Make(o);
    path_ = dir_.Join("db/docs.vgl");
    auto ds = *Dataset::Create(path_, gen->schema(), {});
    auto reader = gen->NewReader();
    ASSERT_TRUE(ds->Append(reader.get(), {}).ok());
    JobStoreOptions so;
    so.uri = "sqlite://" + dir_.Join("meta.db");
    store_ = *JobStore::Open(so);
    ASSERT_TRUE(store_->catalog().RegisterTable("local", "db", "docs", path_, now_).ok());
    runner_ = std::make_unique<JobRunner>(store_.get(), &executor_, RunnerOptions{});
    ASSERT_TRUE(runner_->Start(now_).ok());
  }
  void TearDown() override { failpoint::DisarmAll(); }

  CreateIndexStatement Create(const std::string& name, const std::string& column, index::IndexType type) {
    CreateIndexStatement s;
    s.target = {"local", "db", "docs"};
    s.index_name = name;
    s.column = column;
    s.type = type;
    return s;
  }

  // A second table, db.other, of 300 generated rows.
  void AddOtherTable() {
    DatagenOptions o;
    o.rows = 300;
    o.dim = 8;
    o.latent_dim = 2;
    auto gen = *DataGenerator::Make(o);
    const std::string other = dir_.Join("db/other.vgl");
    auto ds = *Dataset::Create(other, gen->schema(), {});
    ASSERT_TRUE(ds->Append(gen->NewReader().get(), {}).ok());
    ASSERT_TRUE(store_->catalog().RegisterTable("local", "db", "other", other, now_).ok());
  }

  // Runs every pending job and every refresh; returns the job as persisted.
  JobRecord RunAll(int64_t job_id) {
    for (;;) {
      auto ran = runner_->RunOnePending(now_);
      EXPECT_TRUE(ran.ok()) << ran.status().ToString();
      if (!ran.ok() || !*ran) break;
    }
    EXPECT_TRUE(runner_->RunRefreshes(now_).ok());
    return *store_->Get(job_id);
  }

  testing::TempDir dir_;
  std::string path_;
  int64_t now_ = 1'000'000;
  std::unique_ptr<JobStore> store_;
  InProcessExecutor executor_;
  std::unique_ptr<JobRunner> runner_;
};

TEST_F(RunnerTest, CreateRunsCommitsRefreshesAndReleasesTheFence) {
  Admission admission(store_.get(), {});
  auto job = admission.Create(Create("cat_idx", "category", index::IndexType::kBitmap), "admin", now_);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(DerivedState(job->state), "PENDING");
  // The fence holds a second same-name job while the first is active; a case-only
  // variant of the name is refused as ambiguous.
  EXPECT_EQ(admission.Create(Create("cat_idx", "category", index::IndexType::kBitmap), "admin", now_).status().code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(admission.Create(Create("CAT_IDX", "category", index::IndexType::kBitmap), "admin", now_).status().code(),
            StatusCode::kInvalidArgument);
  JobRecord done = RunAll(job->job_id);
  EXPECT_EQ(DerivedState(done.state), "FINISHED");
  EXPECT_EQ(done.state.outcome, Outcome::kCommitted);
  ASSERT_TRUE(done.committed_version.has_value());
  auto versions = *Dataset::ListVersions(path_);
  EXPECT_EQ(versions.back().txn.job_id, job->job_id);
  EXPECT_EQ(versions.back().txn.attempt_id, done.attempt->attempt_id);
  EXPECT_GE(*store_->GetRefreshGeneration(done.spec.table_incarnation), 1);
  // With the fence released, the name is taken by the index itself now.
  EXPECT_EQ(admission.Create(Create("cat_idx", "category", index::IndexType::kBitmap), "admin", now_).status().code(),
            StatusCode::kAlreadyExists);
  // IF NOT EXISTS on an existing name is a durable NOOP that never dispatches.
  auto s = Create("cat_idx", "category", index::IndexType::kBitmap);
  s.if_not_exists = true;
  auto noop = admission.Create(s, "admin", now_);
  ASSERT_TRUE(noop.ok()) << noop.status().ToString();
  EXPECT_EQ(noop->state.outcome, Outcome::kNoop);
  EXPECT_FALSE(noop->attempt.has_value());
}

// A job that changes between the runner's listing and its dispatch (a CANCEL, or a NOOP
// concluded by its own admission) is skipped, not an error that stops the leader.
TEST_F(RunnerTest, AJobThatChangesBeforeItsDispatchIsSkippedAndTheRunnerGoesOn) {
  Admission admission(store_.get(), {});
  auto job = admission.Create(Create("cat_idx", "category", index::IndexType::kBitmap), "admin", now_);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  failpoint::Arm("runner.before_dispatch", failpoint::Action::kHang);
  Result<std::vector<int64_t>> started = std::vector<int64_t>{};
  std::thread leader([&] { started = runner_->StartPending(now_); });
  while (failpoint::HitCount("runner.before_dispatch") == 0) std::this_thread::yield();
  auto cancelled = store_->Cancel(Cas{job->job_id, job->revision, std::nullopt, "admin", now_});
  failpoint::Disarm("runner.before_dispatch");
  leader.join();
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().ToString();
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  EXPECT_TRUE(started->empty());
  EXPECT_EQ(DerivedState(store_->Get(job->job_id)->state), "CANCELLED");
  // The runner goes on with the next job.
  auto next = admission.Create(Create("cat_idx", "category", index::IndexType::kBitmap), "admin", now_);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(RunAll(next->job_id).state.outcome, Outcome::kCommitted);
}

TEST_F(RunnerTest, RefusalsHappenBeforeAnyJobExists) {
  Admission admission(store_.get(), {});
  auto both = Create("x", "category", index::IndexType::kBitmap);
  both.if_not_exists = both.or_replace = true;
  EXPECT_EQ(admission.Create(both, "admin", now_).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(admission.Create(Create("x", "emb", index::IndexType::kBitmap), "admin", now_).status().code(),
            StatusCode::kInvalidArgument);
  auto bad = Create("x", "emb", index::IndexType::kIvfPq);
  bad.properties = {{"index_type", "IVF_PQ"}, {"metric", "l2"}, {"num_partitions", "4"}, {"num_sub_vectors", "3"}};
  EXPECT_EQ(admission.Create(bad, "admin", now_).status().code(), StatusCode::kInvalidArgument);
  auto missing_table = Create("x", "category", index::IndexType::kBitmap);
  missing_table.target.table = "nope";
  EXPECT_EQ(admission.Create(missing_table, "admin", now_).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(admission.Drop({{"local", "db", "docs"}, "nope", false}, "admin", now_).status().code(),
            StatusCode::kNotFound);
  EXPECT_TRUE(store_->List({})->empty());
}

TEST_F(RunnerTest, ProvenNonInvocationIsNotCommitted) {
  Admission admission(store_.get(), {});
  auto job = *admission.Create(Create("ts_idx", "ts", index::IndexType::kBtree), "admin", now_);
  failpoint::Arm("executor.before_invoke", failpoint::Action::kError);
  JobRecord done = RunAll(job.job_id);
  EXPECT_EQ(DerivedState(done.state), "FAILED");
  EXPECT_FALSE(done.invoked);
  EXPECT_TRUE(index::ListIndexes(path_)->empty());
  // The fence is released: the same name can be admitted again.
  EXPECT_TRUE(admission.Create(Create("ts_idx", "ts", index::IndexType::kBtree), "admin", now_).ok());
}

TEST_F(RunnerTest, AnErrorAfterInvocationIsUnknownAndKeepsTheFence) {
  Admission admission(store_.get(), {});
  auto job = *admission.Create(Create("ts_idx", "ts", index::IndexType::kBtree), "admin", now_);
  failpoint::Arm("provider.after_segment_write", failpoint::Action::kError);  // an IO_ERROR after invocation
  JobRecord done = RunAll(job.job_id);
  EXPECT_EQ(DerivedState(done.state), "OUTCOME_UNKNOWN");
  EXPECT_EQ(done.state.reconcile, ReconcileState::kWatching);
  EXPECT_TRUE(done.invoked);
  EXPECT_EQ(done.error_code, "IO_ERROR");
  failpoint::DisarmAll();
  EXPECT_EQ(admission.Create(Create("ts_idx", "ts", index::IndexType::kBtree), "admin", now_).status().code(),
            StatusCode::kAlreadyExists);
  // Nothing dispatches it again (I2).
  EXPECT_FALSE(*runner_->RunOnePending(now_));
}

// jobs.reconcile_initial_backoff_seconds decides the first watcher check of an UNKNOWN result,
// and the time recorded is when the result was known (the runner's clock), not the dispatch.
TEST_F(RunnerTest, FirstReconcileOfAnUnknownResultUsesTheConfiguredBackoffAndTheResultTime) {
  Admission admission(store_.get(), {});
  auto job = *admission.Create(Create("ts_idx", "ts", index::IndexType::kBtree), "admin", now_);
  RunnerOptions ro;
  ro.reconcile_backoff.initial_s = 7;
  ro.lease_ttl_ms = 600'000;  // the lease outlives the 40 s build
  const int64_t dispatched_at = now_ + 10;
  const int64_t recorded_at = dispatched_at + 40'000;  // a 40 s build
  testing::FakeEnv env(recorded_at * 1000);
  ro.env = &env;
  runner_.reset();
  JobRunner runner(store_.get(), &executor_, ro);
  ASSERT_TRUE(runner.Start(dispatched_at).ok());
  failpoint::Arm("provider.after_segment_write", failpoint::Action::kError);
  ASSERT_TRUE(runner.RunOnePending(dispatched_at).ok());
  failpoint::DisarmAll();
  JobRecord done = *store_->Get(job.job_id);
  ASSERT_EQ(DerivedState(done.state), "OUTCOME_UNKNOWN");
  EXPECT_EQ(done.reconcile_backoff_s, 7);
  EXPECT_EQ(done.reconcile_next_at_ms, recorded_at + 7'000);
  EXPECT_EQ(done.started_at_ms, dispatched_at);
  EXPECT_EQ(done.finished_at_ms, recorded_at);
}

TEST(BackoffTest, DoublesWithinItsBounds) {
  Backoff b{5, 60};
  EXPECT_EQ(b.Next(0), 5);
  EXPECT_EQ(b.Next(5), 10);
  EXPECT_EQ(b.Next(40), 60);
  EXPECT_EQ(b.Next(60), 60);
  EXPECT_EQ(b.AfterFailures(1), 5);
  EXPECT_EQ(b.AfterFailures(3), 20);
  EXPECT_EQ(b.AfterFailures(50), 60);
  EXPECT_EQ(Backoff{}.AfterFailures(7), 1800);  // seed 000 8.1: 30 s doubling to 30 min
}

TEST_F(RunnerTest, DropAndDropIfExists) {
  Admission admission(store_.get(), {});
  auto create = *admission.Create(Create("cat_idx", "category", index::IndexType::kBitmap), "admin", now_);
  RunAll(create.job_id);
  auto drop = admission.Drop({{"local", "db", "docs"}, "CAT_IDX", false}, "admin", now_);
  ASSERT_TRUE(drop.ok()) << drop.status().ToString();
  EXPECT_EQ(drop->spec.index_name, "cat_idx");  // the exact stored name
  EXPECT_EQ(DerivedState(RunAll(drop->job_id).state), "FINISHED");
  EXPECT_TRUE(index::ListIndexes(path_)->empty());
  auto again = admission.Drop({{"local", "db", "docs"}, "cat_idx", true}, "admin", now_);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->state.outcome, Outcome::kNoop);
}

// Holds every Execute until `release()`; counts how many were inside at once.
class GateExecutor : public Executor {
 public:
  ExecutionOutcome Execute(const ExecutionRequest& request) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++inside_;
      max_inside_ = std::max(max_inside_, inside_);
      cv_.notify_all();
      cv_.wait(lock, [this] { return open_; });
    }
    ExecutionOutcome out = inner_.Execute(request);
    std::lock_guard<std::mutex> lock(mu_);
    --inside_;
    return out;
  }
  // Waits until `n` calls are inside at once.
  void AwaitInside(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return inside_ >= n; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  int max_inside() {
    std::lock_guard<std::mutex> lock(mu_);
    return max_inside_;
  }

 private:
  InProcessExecutor inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  int inside_ = 0;
  int max_inside_ = 0;
  bool open_ = false;
};

// jobs.concurrency_per_node: attempts on different tables run at once; a table never has two.
TEST_F(RunnerTest, ConcurrentAttemptsRunTablesInParallelOneAttemptPerTable) {
  ASSERT_NO_FATAL_FAILURE(AddOtherTable());
  Admission admission(store_.get(), {});
  auto a = *admission.Create(Create("cat_idx", "category", index::IndexType::kBitmap), "admin", now_);
  auto b = *admission.Create(Create("id_idx", "id", index::IndexType::kBtree), "admin", now_);
  CreateIndexStatement on_other = Create("cat_idx", "category", index::IndexType::kBitmap);
  on_other.target = {"local", "db", "other"};
  auto c = *admission.Create(on_other, "admin", now_);

  GateExecutor gate;
  RunnerOptions ro;
  ro.concurrency = 2;
  JobRunner parallel(store_.get(), &gate, ro);
  ASSERT_TRUE(parallel.Start(now_ += 1).ok());
  auto started = parallel.StartPending(now_);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  EXPECT_EQ(*started, (std::vector<int64_t>{a.job_id, c.job_id}));  // b waits for its table
  gate.AwaitInside(2);  // both attempts are inside the executor at the same time
  EXPECT_EQ(parallel.running(), 2u);
  EXPECT_TRUE(parallel.StartPending(now_)->empty());  // at the concurrency bound
  gate.Release();
  parallel.WaitForAttempts();
  auto finished = parallel.TakeFinished();
  ASSERT_EQ(finished.size(), 2u);
  for (const auto& f : finished) EXPECT_TRUE(f.status.ok()) << f.status.ToString();
  EXPECT_EQ(store_->Get(a.job_id)->state.outcome, Outcome::kCommitted);
  EXPECT_EQ(store_->Get(c.job_id)->state.outcome, Outcome::kCommitted);
  EXPECT_EQ(*parallel.StartPending(now_), (std::vector<int64_t>{b.job_id}));
  parallel.WaitForAttempts();
  EXPECT_EQ(store_->Get(b.job_id)->state.outcome, Outcome::kCommitted);
  EXPECT_EQ(gate.max_inside(), 2);
}

TEST_F(RunnerTest, ConcurrencyOneRunsOneAttemptAtATime) {
  Admission admission(store_.get(), {});
  ASSERT_TRUE(admission.Create(Create("cat_idx", "category", index::IndexType::kBitmap), "admin", now_).ok());
  GateExecutor gate;
  gate.Release();
  RunnerOptions ro;
  JobRunner serial(store_.get(), &gate, ro);
  ASSERT_TRUE(serial.Start(now_ += 1).ok());
  EXPECT_EQ(serial.StartPending(now_)->size(), 1u);
  serial.WaitForAttempts();
  EXPECT_EQ(gate.max_inside(), 1);
}

// jobs.concurrency_per_cluster and jobs.concurrency_per_catalog bound the attempts running at
// once beside each node's own bound (seed 000 section 10.2).
TEST_F(RunnerTest, TheClusterAndCatalogBoundsHoldJobsPendingBesideTheNodesOwn) {
  ASSERT_NO_FATAL_FAILURE(AddOtherTable());
  Admission admission(store_.get(), {});
  auto a = *admission.Create(Create("cat_idx", "category", index::IndexType::kBitmap), "admin", now_);
  CreateIndexStatement on_other = Create("cat_idx", "category", index::IndexType::kBitmap);
  on_other.target = {"local", "db", "other"};
  auto c = *admission.Create(on_other, "admin", now_);
  for (const bool by_catalog : {false, true}) {
    SCOPED_TRACE(by_catalog ? "catalog" : "cluster");
    GateExecutor gate;
    RunnerOptions ro;
    ro.concurrency = 2;
    (by_catalog ? ro.concurrency_per_catalog : ro.concurrency_per_cluster) = 1;
    JobRunner bounded(store_.get(), &gate, ro);
    ASSERT_TRUE(bounded.Start(now_ += 1).ok());
    auto started = bounded.StartPending(now_);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    ASSERT_EQ(started->size(), 1u);  // the node could run two
    EXPECT_TRUE(bounded.StartPending(now_)->empty());
    gate.Release();
    bounded.WaitForAttempts();
    if (by_catalog) break;
    EXPECT_EQ(*bounded.StartPending(now_), (std::vector<int64_t>{c.job_id}));
    bounded.WaitForAttempts();
    // Both done: the catalog pass needs jobs of its own.
    a = *admission.Create(Create("id_idx", "id", index::IndexType::kBtree), "admin", now_);
    on_other.index_name = "id_idx";
    on_other.column = "id";
    on_other.type = index::IndexType::kBtree;
    c = *admission.Create(on_other, "admin", now_);
  }
}

// jobs.max_pending_seconds: a job no node takes (the only node is drained) ends NOT_COMMITTED /
// NOT_REQUIRED with SCHEDULING_EXHAUSTED once it was PENDING that long, and its fence goes.
TEST_F(RunnerTest, AJobNoNodeTakesEndsSchedulingExhaustedAfterMaxPending) {
  Admission admission(store_.get(), {});
  auto job = *admission.Create(Create("cat_idx", "category", index::IndexType::kBitmap), "admin", now_);
  RunnerOptions ro;
  ro.max_pending_ms = 5'000;
  JobRunner drained(store_.get(), &executor_, ro);
  ASSERT_TRUE(drained.Start(now_).ok());
  ASSERT_TRUE(store_->cluster().SetNodeDraining(ro.node_id, true).ok());
  EXPECT_TRUE(drained.StartPending(now_ + 4'999)->empty());
  EXPECT_EQ(DerivedState(store_->Get(job.job_id)->state), "PENDING");
  EXPECT_TRUE(drained.StartPending(now_ + 5'000)->empty());
  const JobRecord ended = *store_->Get(job.job_id);
  EXPECT_EQ(DerivedState(ended.state), "FAILED");
  EXPECT_EQ(ended.state.outcome, Outcome::kNotCommitted);
  EXPECT_EQ(ended.state.refresh, RefreshState::kNotRequired);
  EXPECT_EQ(ended.error_code, std::optional<std::string>("SCHEDULING_EXHAUSTED"));
  EXPECT_FALSE(ended.invoked);
  EXPECT_FALSE(ended.attempt.has_value());
  EXPECT_FALSE(HoldsFence(ended.state));
  // The name is free: the same request is admitted again.
  EXPECT_TRUE(admission.Create(Create("cat_idx", "category", index::IndexType::kBitmap), "admin", now_).ok());
}

}  // namespace
}  // namespace vigil::jobs
