// Process-level tests of `vigil supervise`: a background leader dispatches and
// refreshes admitted jobs and exits when idle; a second one steps aside; a
// leader killed with SIGKILL in the middle of a job (at the provider's
// failpoints) leaves the job RUNNING, and the next leader's recovery pass
// settles it from the manifest history (crash cuts C4 and C6); a worker killed
// after its commit is settled by the same supervisor.
#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testutil/run_command.h"
#include "testutil/temp_dir.h"
#include "vigil/jobs/admission.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/storage/dataset.h"

namespace vigil {
namespace {

using ::testing::HasSubstr;

struct Ran {
  int exit_code = -1;
  bool killed = false;
  std::string output;
};

// Runs `env [ENV] vigil ARGS` and collects its output.
Ran RunVigil(const std::string& env, const std::string& args) {
  std::string cmd = "env -u VIGIL_ROOT " + env + " " + std::string(VIGIL_CLI_BINARY) + " " + args + " 2>&1";
  Ran r;
  testing::CommandResult ran = testing::RunCommand(cmd);
  r.exit_code = ran.exit_code;
  r.output = std::move(ran.output);
  // env execs vigil; the shell reports a signal death as 128 + signal.
  r.killed = r.exit_code == 128 + SIGKILL;
  return r;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class SuperviseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_dir_ = dir_.Join("root");
    ASSERT_EQ(RunVigil("", "init " + root_dir_).exit_code, 0);
    // A .fvecs import creates (id BIGINT NOT NULL, vector VECTOR(FLOAT32, 8) NOT NULL).
    std::ofstream fvecs(dir_.Join("t.fvecs"), std::ios::binary);
    for (int i = 0; i < 200; ++i) {
      const int32_t dim = 8;
      fvecs.write(reinterpret_cast<const char*>(&dim), sizeof(dim));
      for (int d = 0; d < dim; ++d) {
        const float x = static_cast<float>((i * 7 + d * 3) % 11);
        fvecs.write(reinterpret_cast<const char*>(&x), sizeof(x));
      }
    }
    fvecs.close();
    Ran imported = RunVigil("", "--root " + root_dir_ + " import db.t " + dir_.Join("t.fvecs") + " --create");
    ASSERT_EQ(imported.exit_code, 0) << imported.output;
    root_ = std::make_unique<Root>(*Root::Open(root_dir_));
    auto store = jobs::OpenRootJobStore(*root_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    ASSERT_TRUE(store_->catalog().LookupTable("local", "db", "t")->has_value())
        << "import --create registers the table";
  }

  jobs::JobRecord Admit(const std::string& name, const std::string& table = "t") {
    jobs::CreateIndexStatement s;
    s.target = {"local", "db", table};
    s.index_name = name;
    s.column = "id";
    s.type = index::IndexType::kBtree;
    auto job = jobs::Admission(store_.get(), {}).Create(s, "test", NowMs());
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return *job;
  }

  // Polls the job until `done` holds or 60 s pass.
  template <typename Pred>
  jobs::JobRecord WaitFor(int64_t job_id, Pred done) {
    jobs::JobRecord job;
    for (int i = 0; i < 600; ++i) {
      job = *store_->Get(job_id);
      if (done(job)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return job;
  }

  // When the job's event of `kind` happened.
  int64_t EventAt(int64_t job_id, std::string_view kind) {
    auto events = store_->Events(job_id);
    if (!events.ok()) {
      ADD_FAILURE() << events.status().ToString();
      return 0;
    }
    for (const jobs::JobEvent& e : *events) {
      if (e.kind == kind) return e.at_ms;
    }
    ADD_FAILURE() << "job " << job_id << " has no " << kind << " event";
    return 0;
  }

  // Two jobs on two tables run by one supervisor with `concurrency` (jobs.concurrency_per_node):
  // whether their attempts overlapped (each dispatched before the other's result).
  bool AttemptsOverlap(int concurrency) {
    Ran imported = RunVigil("", "--root " + root_dir_ + " import db.u " + dir_.Join("t.fvecs") + " --create");
    EXPECT_EQ(imported.exit_code, 0) << imported.output;
    std::ofstream(root_dir_ + "/vigil.toml") << "[jobs]\nconcurrency_per_node = " << concurrency << "\n";
    jobs::JobRecord a = Admit("id_idx", "t");
    jobs::JobRecord b = Admit("id_idx", "u");
    Ran run = RunVigil("", "--root " + root_dir_ + " supervise --foreground --idle-exit 1");
    EXPECT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(jobs::DerivedState(store_->Get(a.job_id)->state), "FINISHED");
    EXPECT_EQ(jobs::DerivedState(store_->Get(b.job_id)->state), "FINISHED");
    return EventAt(b.job_id, jobs::event::kDispatched) < EventAt(a.job_id, jobs::event::kResult) &&
           EventAt(a.job_id, jobs::event::kDispatched) < EventAt(b.job_id, jobs::event::kResult);
  }

  bool LeaderLive() {
    jobs::LeaderLease l = *store_->cluster().GetLeader();
    return !l.holder.empty() && l.expires_at_ms > NowMs();
  }

  testing::TempDir dir_;
  std::string root_dir_;
  std::unique_ptr<Root> root_;
  std::unique_ptr<jobs::JobStore> store_;
};

TEST_F(SuperviseTest, ConcurrencyPerNodeRunsTablesInParallel) { EXPECT_TRUE(AttemptsOverlap(2)); }

TEST_F(SuperviseTest, ConcurrencyPerNodeOfOneRunsOneAttemptAtATime) { EXPECT_FALSE(AttemptsOverlap(1)); }

// A killed leader leaves a RUNNING job; the next `vigil sql` statement of any kind finds
// work waiting, starts a leader, and its recovery pass settles the job within seconds.
TEST_F(SuperviseTest, AnyStatementAfterAKilledLeaderStartsOneThatSettlesTheJob) {
  std::ofstream(root_dir_ + "/vigil.toml") << "[jobs]\nsupervise_idle_exit_seconds = 1\n";
  jobs::JobRecord job = Admit("id_idx");
  Ran killed = RunVigil("VIGIL_FAILPOINTS=runner.after_dispatch=kill",
                        "--root " + root_dir_ + " supervise --foreground --idle-exit 1");
  ASSERT_TRUE(killed.killed) << killed.exit_code << " " << killed.output;
  ASSERT_EQ(store_->Get(job.job_id)->state.execution, jobs::Execution::kRunning);
  Ran select = RunVigil("", "--root " + root_dir_ + " sql --csv -c \"SELECT count(*) AS n FROM db.t\"");
  ASSERT_EQ(select.exit_code, 0) << select.output;
  EXPECT_THAT(select.output, HasSubstr("n\n200\n"));
  jobs::JobRecord settled = WaitFor(job.job_id, [](const jobs::JobRecord& j) {
    return jobs::IsFinal(j.state) && j.state.outcome != jobs::Outcome::kUnknown;
  });
  EXPECT_EQ(jobs::DerivedState(settled.state), "FAILED");  // never sent: proven not committed
  EXPECT_EQ(settled.state.outcome, jobs::Outcome::kNotCommitted);
  for (int i = 0; i < 300 && LeaderLive(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

// vigil.toml edits reach a running supervisor through --restart; doctor says when one is needed.
TEST_F(SuperviseTest, DoctorAsksForARestartAfterAConfigEditAndRestartAppliesIt) {
  std::ofstream(root_dir_ + "/vigil.toml") << "[jobs]\nconcurrency_per_node = 1\n";
  ASSERT_EQ(RunVigil("", "--root " + root_dir_ + " supervise --idle-exit 0").exit_code, 0);
  // The daemon has started; it leads once it holds the leader lock.
  for (int i = 0; i < 600 && !LeaderLive(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  Ran doctor = RunVigil("", "--root " + root_dir_ + " doctor");
  EXPECT_THAT(doctor.output, HasSubstr("uses the settings above"));
  std::ofstream(root_dir_ + "/vigil.toml") << "[jobs]\nconcurrency_per_node = 2\n";
  doctor = RunVigil("", "--root " + root_dir_ + " doctor");
  EXPECT_THAT(doctor.output, HasSubstr("started with an older vigil.toml"));
  EXPECT_THAT(doctor.output, HasSubstr("vigil supervise --restart"));
  Ran restarted = RunVigil("", "--root " + root_dir_ + " supervise --restart --idle-exit 0");
  ASSERT_EQ(restarted.exit_code, 0) << restarted.output;
  EXPECT_THAT(restarted.output, HasSubstr("supervisor stopped"));
  EXPECT_THAT(restarted.output, HasSubstr("supervisor started"));
  for (int i = 0; i < 600 && !LeaderLive(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  doctor = RunVigil("", "--root " + root_dir_ + " doctor");
  EXPECT_THAT(doctor.output, HasSubstr("uses the settings above"));
  Ran stopped = RunVigil("", "--root " + root_dir_ + " supervise --stop");
  ASSERT_EQ(stopped.exit_code, 0) << stopped.output;
  EXPECT_THAT(stopped.output, HasSubstr("supervisor stopped"));
  EXPECT_THAT(RunVigil("", "--root " + root_dir_ + " doctor").output, HasSubstr("no supervisor runs"));
  EXPECT_THAT(RunVigil("", "--root " + root_dir_ + " supervise --stop").output, HasSubstr("no supervisor runs"));
}

TEST_F(SuperviseTest, BackgroundLeaderRunsJobsAndExitsWhenIdle) {
  jobs::JobRecord job = Admit("id_idx");
  Ran started = RunVigil("", "--root " + root_dir_ + " supervise --idle-exit 2");
  ASSERT_EQ(started.exit_code, 0) << started.output;
  EXPECT_THAT(started.output, HasSubstr("supervisor started"));
  // A second leader steps aside at once while the first holds the lease.
  Ran second = RunVigil("", "--root " + root_dir_ + " supervise --foreground --idle-exit 0");
  EXPECT_EQ(second.exit_code, 0) << second.output;

  jobs::JobRecord done = WaitFor(job.job_id, [](const jobs::JobRecord& j) { return jobs::IsFinal(j.state); });
  EXPECT_EQ(jobs::DerivedState(done.state), "FINISHED");
  EXPECT_EQ(done.attempt->attempt_number, 1);
  // Idle for two seconds: the supervisor exits and hands the lease back.
  for (int i = 0; i < 300 && LeaderLive(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(LeaderLive());
}

TEST_F(SuperviseTest, WorkerKilledAfterCommitIsAttributedCommitted) {
  // Crash cut C6 in the worker: it commits and dies before its response. The supervisor
  // survives, records UNKNOWN, proves termination by the reap (the attempt lock is free) and
  // finds the attempt id in the manifest history.
  jobs::JobRecord job = Admit("id_idx");
  Ran run = RunVigil("VIGIL_FAILPOINTS=worker.after_provider=kill",
                     "--root " + root_dir_ + " supervise --foreground --idle-exit 1");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  jobs::JobRecord settled = *store_->Get(job.job_id);
  EXPECT_EQ(settled.state.outcome, jobs::Outcome::kCommitted);
  EXPECT_EQ(jobs::DerivedState(settled.state), "FINISHED");
  EXPECT_EQ(settled.error_code, "UNKNOWN_OUTCOME");  // the lost response is on record
  auto versions = *Dataset::ListVersions(job.spec.locator);
  EXPECT_EQ(versions.back().txn.attempt_id, settled.attempt->attempt_id);
}

TEST_F(SuperviseTest, SupervisorKilledBeforeRecordingIsSettledByTheNextLeader) {
  jobs::JobRecord job = Admit("id_idx");
  Ran killed = RunVigil("VIGIL_FAILPOINTS=runner.before_record=kill",
                        "--root " + root_dir_ + " supervise --foreground --idle-exit 1");
  ASSERT_TRUE(killed.killed) << killed.exit_code << " " << killed.output;
  jobs::JobRecord lost = *store_->Get(job.job_id);
  ASSERT_EQ(lost.state.execution, jobs::Execution::kRunning);
  // The dead supervisor's lease is still unexpired: the next one takes it over at once (it holds
  // the root's leader lock), and its recovery pass settles the job from the manifest history.
  ASSERT_EQ(RunVigil("", "--root " + root_dir_ + " supervise --foreground --idle-exit 1").exit_code, 0);
  jobs::JobRecord settled = *store_->Get(job.job_id);
  EXPECT_EQ(settled.state.outcome, jobs::Outcome::kCommitted);
  EXPECT_EQ(jobs::DerivedState(settled.state), "FINISHED");
  EXPECT_EQ(settled.attempt->attempt_id, lost.attempt->attempt_id);  // never redispatched
}

TEST_F(SuperviseTest, SupervisorKilledAfterDispatchIsAttributedNotCommitted) {
  jobs::JobRecord job = Admit("id_idx");
  Ran killed = RunVigil("VIGIL_FAILPOINTS=runner.after_dispatch=kill",
                        "--root " + root_dir_ + " supervise --foreground --idle-exit 1");
  ASSERT_TRUE(killed.killed) << killed.exit_code << " " << killed.output;
  ASSERT_EQ(store_->Get(job.job_id)->state.execution, jobs::Execution::kRunning);  // C4
  ASSERT_EQ(RunVigil("", "--root " + root_dir_ + " supervise --foreground --idle-exit 1").exit_code, 0);
  jobs::JobRecord settled = *store_->Get(job.job_id);
  EXPECT_EQ(settled.state.outcome, jobs::Outcome::kNotCommitted);
  EXPECT_EQ(jobs::DerivedState(settled.state), "FAILED");
  auto versions = *Dataset::ListVersions(job.spec.locator);
  for (const auto& v : versions) EXPECT_NE(v.txn.attempt_id, settled.attempt->attempt_id);
  Admit("id_idx");  // the fence is released: the name can be admitted again
}

}  // namespace
}  // namespace vigil
