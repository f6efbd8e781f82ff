// The job runner with the real executor: every attempt runs in a launched
// vigil-worker (found by worker::DefaultWorkerPath(): the build tree's
// src/worker/vigil-worker, which CMake builds before jobs_itest). Admission,
// dispatch, classification and refresh on SQLite over a real dataset.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include "testutil/temp_dir.h"
#include "vigil/catalog/version_store.h"
#include "vigil/common/failpoint.h"
#include "vigil/common/file_lock.h"
#include "vigil/index/provider.h"
#include "vigil/ingest/datagen.h"
#include "vigil/jobs/admission.h"
#include "vigil/jobs/runner.h"
#include "vigil/jobs/worker_executor.h"

namespace vigil::jobs {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class WorkerExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DatagenOptions o;
    o.rows = 1500;
    o.dim = 16;
    o.latent_dim = 4;
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
  }
  void TearDown() override { failpoint::DisarmAll(); }

  // Starts a runner over a WorkerExecutor with `options` (worker stderr to worker.log).
  void StartRunner(WorkerExecutorOptions options = {}) {
    options.supervisor.stderr_path = dir_.Join("worker.log");
    auto ex = WorkerExecutor::Create(std::move(options));
    ASSERT_TRUE(ex.ok()) << ex.status().ToString();
    executor_ = std::move(*ex);
    runner_ = std::make_unique<JobRunner>(store_.get(), executor_.get(), RunnerOptions{});
    ASSERT_TRUE(runner_->Start(now_).ok());
  }

  CreateIndexStatement Create(const std::string& name, const std::string& column, index::IndexType type) {
    CreateIndexStatement s;
    s.target = {"local", "db", "docs"};
    s.index_name = name;
    s.column = column;
    s.type = type;
    if (type == index::IndexType::kIvfPq) {
      s.properties = {{"index_type", "IVF_PQ"}, {"metric", "l2"}, {"num_partitions", "8"}, {"num_sub_vectors", "4"}};
    }
    return s;
  }

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
  std::unique_ptr<WorkerExecutor> executor_;
  std::unique_ptr<JobRunner> runner_;
};

TEST_F(WorkerExecutorTest, CreateRunsInAWorkerCommitsAndRefreshes) {
  StartRunner();
  Admission admission(store_.get(), {});
  auto job = admission.Create(Create("emb_idx", "emb", index::IndexType::kIvfPq), "admin", now_);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  JobRecord done = RunAll(job->job_id);
  EXPECT_EQ(DerivedState(done.state), "FINISHED");
  EXPECT_EQ(done.state.outcome, Outcome::kCommitted);
  EXPECT_TRUE(done.invoked);
  ASSERT_TRUE(done.committed_version.has_value());
  auto versions = *Dataset::ListVersions(path_);
  EXPECT_EQ(versions.back().version, static_cast<uint64_t>(*done.committed_version));
  EXPECT_EQ(versions.back().txn.attempt_id, done.attempt->attempt_id);
  const worker::LaunchResult& launch = executor_->last_launch();
  EXPECT_TRUE(launch.reaped);
  EXPECT_NE(launch.pid, ::getpid());
  // The attempt lock went with the reaped worker, and with a known outcome its file is removed.
  EXPECT_EQ(FileLock::IsHeld(AttemptLockPath(path_, done.attempt->attempt_id)).status().code(), StatusCode::kNotFound);
  // The worker committed through the table's version catalog, which the supervisor answered.
  auto row = catalog::StoreVersionCatalog(&store_->catalog(), done.spec.table_incarnation, [this] {
               return now_;
             }).FindAttempt(done.attempt->attempt_id);
  ASSERT_TRUE(row.ok() && row->has_value()) << row.status().ToString();
  EXPECT_EQ((*row)->version, static_cast<uint64_t>(*done.committed_version));
}

// The supervisor decides a worker's claims for the attempt it launched only: a claim for
// another attempt is refused and nothing is published.
TEST_F(WorkerExecutorTest, AWorkerClaimingForAnotherAttemptCommitsNothing) {
  StartRunner();
  Admission admission(store_.get(), {});
  auto job = *admission.Create(Create("ts_idx", "ts", index::IndexType::kBtree), "admin", now_);
  const uint64_t before = Dataset::ListVersions(path_)->back().version;
  failpoint::Arm("worker.claim_identity", failpoint::Action::kError);  // evaluated only in the worker
  JobRecord done = RunAll(job.job_id);
  EXPECT_EQ(DerivedState(done.state), "FAILED");
  EXPECT_EQ(done.state.outcome, Outcome::kNotCommitted);
  EXPECT_EQ(done.error_code, "FAILED_PRECONDITION");
  EXPECT_NE(done.error_message.value_or("").find("its own attempt only"), std::string::npos)
      << done.error_message.value_or("");
  EXPECT_EQ(Dataset::ListVersions(path_)->back().version, before);
  EXPECT_TRUE(index::ListIndexes(path_)->empty());
}

TEST_F(WorkerExecutorTest, ProgressIsForwardedAndTheReportIsComplete) {
  StartRunner();
  Admission admission(store_.get(), {});
  auto job = *admission.Create(Create("emb_idx", "emb", index::IndexType::kIvfPq), "admin", now_);
  AttemptIdentity attempt;
  attempt.executor_node_id = "n";
  attempt.attempt_id = std::to_string(job.job_id) + "-direct";
  std::vector<std::string> phases;
  ExecutionRequest req{job, attempt, [&](std::string_view phase, uint64_t, uint64_t) { phases.emplace_back(phase); },
                       -1};
  ExecutionOutcome out = executor_->Execute(req);
  EXPECT_TRUE(out.report.complete);
  EXPECT_TRUE(out.report.invoked);
  EXPECT_EQ(out.report.code, StatusCode::kOk) << out.message;
  EXPECT_TRUE(out.committed_version.has_value());
  EXPECT_FALSE(phases.empty());
  EXPECT_NE(std::find(phases.begin(), phases.end(), "committing"), phases.end());
}

TEST_F(WorkerExecutorTest, FailpointsArmedInTheParentAreForwardedToTheWorker) {
  StartRunner();
  Admission admission(store_.get(), {});
  auto job = *admission.Create(Create("ts_idx", "ts", index::IndexType::kBtree), "admin", now_);
  failpoint::Arm("worker.before_invoke", failpoint::Action::kError);  // evaluated only in the worker
  JobRecord done = RunAll(job.job_id);
  EXPECT_EQ(DerivedState(done.state), "FAILED");
  EXPECT_FALSE(done.invoked);
  EXPECT_EQ(done.error_code, "IO_ERROR");
  EXPECT_TRUE(index::ListIndexes(path_)->empty());
}

TEST_F(WorkerExecutorTest, SilentKillBeforeInvocationIsUnknown) {
  WorkerExecutorOptions o;
  o.worker_failpoints = "worker.before_invoke=kill";
  StartRunner(o);
  Admission admission(store_.get(), {});
  auto job = *admission.Create(Create("ts_idx", "ts", index::IndexType::kBtree), "admin", now_);
  JobRecord done = RunAll(job.job_id);
  EXPECT_EQ(DerivedState(done.state), "OUTCOME_UNKNOWN");
  EXPECT_FALSE(done.invoked);
  EXPECT_EQ(done.error_code, "UNKNOWN_OUTCOME");
  EXPECT_TRUE(executor_->last_launch().reaped);
  EXPECT_TRUE(WIFSIGNALED(executor_->last_launch().wait_status));
  EXPECT_FALSE(*runner_->RunOnePending(now_));  // never redispatched
}

TEST_F(WorkerExecutorTest, KillAfterCommitIsUnknownWithTheAttemptInTheManifest) {
  WorkerExecutorOptions o;
  o.worker_failpoints = "worker.after_provider=kill";
  StartRunner(o);
  Admission admission(store_.get(), {});
  auto job = *admission.Create(Create("cat_idx", "category", index::IndexType::kBitmap), "admin", now_);
  JobRecord done = RunAll(job.job_id);
  EXPECT_EQ(DerivedState(done.state), "OUTCOME_UNKNOWN");
  auto versions = *Dataset::ListVersions(path_);
  EXPECT_EQ(versions.back().txn.attempt_id, done.attempt->attempt_id);
}

TEST_F(WorkerExecutorTest, DeadlineKillsAndReapsAndIsUnknown) {
  WorkerExecutorOptions o;
  o.worker_failpoints = "worker.before_invoke=hang";
  o.attempt_timeout = std::chrono::milliseconds(3000);
  StartRunner(o);
  Admission admission(store_.get(), {});
  auto job = *admission.Create(Create("cat_idx", "category", index::IndexType::kBitmap), "admin", now_);
  JobRecord done = RunAll(job.job_id);
  EXPECT_EQ(DerivedState(done.state), "OUTCOME_UNKNOWN");
  EXPECT_TRUE(executor_->last_launch().deadline_exceeded);
  EXPECT_TRUE(executor_->last_launch().reaped);
  EXPECT_FALSE(*FileLock::IsHeld(AttemptLockPath(path_, done.attempt->attempt_id)));
}

TEST_F(WorkerExecutorTest, CredentialsNeverReachTheStoreEventsLogsOrTheWorkerProcess) {
  const std::string secret = "vigilSecretToken-7f3a9c";
  WorkerExecutorOptions o;
  o.credentials = [&](const JobRecord&) { return std::optional<std::string>(secret); };
  std::string cmdline, environ;
  o.on_launched = [&](pid_t pid) {
    cmdline = ReadAll("/proc/" + std::to_string(pid) + "/cmdline");
    environ = ReadAll("/proc/" + std::to_string(pid) + "/environ");
  };
  StartRunner(o);
  Admission admission(store_.get(), {});
  auto ok_job = *admission.Create(Create("cat_idx", "category", index::IndexType::kBitmap), "admin", now_);
  EXPECT_EQ(DerivedState(RunAll(ok_job.job_id).state), "FINISHED");
  // A failing job too, so that a message is persisted.
  failpoint::Arm("worker.before_invoke", failpoint::Action::kError, 0, StatusCode::kPermissionDenied);
  auto bad_job = *admission.Create(Create("ts_idx", "ts", index::IndexType::kBtree), "admin", now_);
  JobRecord bad = RunAll(bad_job.job_id);
  EXPECT_EQ(DerivedState(bad.state), "FAILED");
  ASSERT_FALSE(cmdline.empty());
  EXPECT_EQ(cmdline.find(secret), std::string::npos);
  EXPECT_EQ(environ.find(secret), std::string::npos);
  for (int64_t id : {ok_job.job_id, bad_job.job_id}) {
    JobRecord r = *store_->Get(id);
    EXPECT_EQ(r.error_message.value_or("").find(secret), std::string::npos);
    auto events = store_->Events(id);
    ASSERT_TRUE(events.ok()) << events.status().ToString();
    for (const auto& e : *events) {
      EXPECT_EQ(e.detail_json.find(secret), std::string::npos);
      EXPECT_EQ(e.note.value_or("").find(secret), std::string::npos);
    }
  }
  for (const char* f : {"meta.db", "meta.db-wal", "meta.db-journal", "worker.log"}) {
    EXPECT_EQ(ReadAll(dir_.Join(f)).find(secret), std::string::npos) << f;
  }
}

TEST_F(WorkerExecutorTest, RequireCgroupIsCheckedBeforeAnyJob) {
  WorkerExecutorOptions o;
  o.supervisor.require_cgroup = true;
  o.supervisor.cgroup.parent = dir_.Join("no-cgroup-here");
  EXPECT_EQ(WorkerExecutor::Create(o).status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace vigil::jobs
