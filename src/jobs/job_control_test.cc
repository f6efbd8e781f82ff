#include "vigil/jobs/job_control.h"

#include <gtest/gtest.h>

#include <thread>

#include "testutil/fake_env.h"
#include "testutil/temp_dir.h"
#include "vigil/common/failpoint.h"
#include "vigil/ingest/datagen.h"
#include "vigil/jobs/admission.h"
#include "vigil/jobs/runner.h"
#include "vigil/storage/dataset.h"

namespace vigil::jobs {
namespace {

// The job commands with their authorization on SQLite over a real dataset; the
// in-process executor and the runner play the leader.
class JobControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DatagenOptions o;
    o.rows = 300;
    o.dim = 8;
    o.latent_dim = 2;
    o.words_per_body = 4;
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
    control_ = std::make_unique<JobControl>(store_.get(), [this] { return now_; });
  }
  void TearDown() override { failpoint::DisarmAll(); }

  JobRecord Admit(const std::string& name) {
    CreateIndexStatement s;
    s.target = {"local", "db", "docs"};
    s.index_name = name;
    s.column = "category";
    s.type = index::IndexType::kBitmap;
    auto job = Admission(store_.get(), {}).Create(s, "admin", now_);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return *job;
  }
  // A dispatched job whose executor failed after invocation: OUTCOME_UNKNOWN, fence held.
  JobRecord Unknown(const std::string& name) {
    JobRecord job = Admit(name);
    failpoint::Arm("provider.after_segment_write", failpoint::Action::kError);
    EXPECT_TRUE(runner_->RunOnePending(now_).ok());
    failpoint::DisarmAll();
    return *store_->Get(job.job_id);
  }
  bool NameIsFree(const std::string& name) {
    CreateIndexStatement s;
    s.target = {"local", "db", "docs"};
    s.index_name = name;
    s.column = "id";
    s.type = index::IndexType::kBtree;
    auto job = Admission(store_.get(), {}).Create(s, "admin", now_);
    if (!job.ok()) return false;
    EXPECT_TRUE(store_->Cancel({job->job_id, job->revision, std::nullopt, "admin", now_}).ok());
    return true;
  }
  static auth::Principal Grant(std::string object, std::set<auth::Privilege> privileges) {
    auth::Principal p;
    p.name = "analyst";
    p.grants[std::move(object)] = std::move(privileges);
    return p;
  }

  testing::TempDir dir_;
  std::string path_;
  int64_t now_ = 1'000'000;
  std::unique_ptr<JobStore> store_;
  InProcessExecutor executor_;
  std::unique_ptr<JobRunner> runner_;
  std::unique_ptr<JobControl> control_;
  const auth::Principal admin_ = auth::Principal::LocalAdmin();
};

TEST_F(JobControlTest, CancelOnlyWhilePending) {
  JobRecord pending = Admit("a_idx");
  auto cancelled = control_->Cancel(pending.job_id, admin_);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().ToString();
  EXPECT_EQ(DerivedState(cancelled->state), "CANCELLED");
  EXPECT_TRUE(NameIsFree("a_idx"));  // the fence was released with the cancel
  // Cancelling again reports the cancelled job, nothing changes.
  EXPECT_EQ(control_->Cancel(pending.job_id, admin_)->revision, cancelled->revision);

  JobRecord unknown = Unknown("b_idx");
  auto refused = control_->Cancel(unknown.job_id, admin_);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().message().rfind(std::string(kNotCancellableAfterDispatch), 0), 0u)
      << refused.status().message();
  EXPECT_EQ(store_->Get(unknown.job_id)->revision, unknown.revision);
}

TEST_F(JobControlTest, CancelCompletesADurableCancelling) {
  JobRecord job = Admit("a_idx");
  // Crash cut C3: CANCELLING is durable but the terminal cancel is not.
  auto cancelling = store_->Apply({job.job_id, job.revision, std::nullopt, "admin", now_},
                                  [](const JobRecord& cur, Transition* t) -> Status {
                                    VIGIL_ASSIGN_OR_RETURN(t->next.state, BeginCancel(cur.state));
                                    t->events.push_back({std::string(event::kCancelRequested), {}, {}, {}});
                                    return Status::OK();
                                  });
  ASSERT_TRUE(cancelling.ok()) << cancelling.status().ToString();
  EXPECT_FALSE(*runner_->RunOnePending(now_));  // a CANCELLING job is never dispatched
  auto done = control_->Cancel(job.job_id, admin_);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->state.outcome, Outcome::kCancelledBeforeDispatch);
}

TEST_F(JobControlTest, DenialDoesNotLeakAndAlterIsChecked) {
  JobRecord job = Admit("a_idx");
  const std::string missing = control_->Show(987654, admin_).status().message();
  auth::Principal nobody = Grant("local.other.t", {auth::Privilege::kAlter});
  auto hidden = control_->Show(job.job_id, nobody);
  EXPECT_EQ(hidden.status().code(), StatusCode::kNotFound);
  // The denial reads exactly like a missing job apart from the id.
  std::string expected = control_->Show(987654, nobody).status().message();
  expected.replace(expected.find("987654"), 6, std::to_string(job.job_id));
  EXPECT_EQ(hidden.status().message(), expected);
  EXPECT_EQ(missing.find("docs"), std::string::npos);
  EXPECT_EQ(hidden.status().message().find("docs"), std::string::npos);
  EXPECT_EQ(control_->Cancel(job.job_id, nobody).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(control_->List({}, nobody)->empty());

  auth::Principal reader = Grant("local.db.docs", {auth::Privilege::kShow});
  ASSERT_TRUE(control_->Show(job.job_id, reader).ok());
  EXPECT_EQ(control_->List({}, reader)->size(), 1u);
  EXPECT_EQ(control_->Cancel(job.job_id, reader).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(store_->Get(job.job_id)->state.execution, Execution::kPending);

  auth::Principal db_writer = Grant("local.db.*", {auth::Privilege::kAlter});
  EXPECT_TRUE(control_->Cancel(job.job_id, db_writer).ok());
}

TEST_F(JobControlTest, OrphanJobsAreVisibleToAdminOnly) {
  JobRecord job = Admit("a_idx");
  ASSERT_TRUE(control_->Cancel(job.job_id, admin_).ok());
  ASSERT_TRUE(control_->DropTable("local", "db", "docs", admin_).ok());
  ASSERT_TRUE(store_->catalog().RegisterTable("local", "db", "docs", path_, now_).ok());  // a new incarnation
  auth::Principal writer = Grant("local.db.docs", {auth::Privilege::kAlter});
  EXPECT_EQ(control_->Show(job.job_id, writer).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(control_->List({}, writer)->empty());
  EXPECT_TRUE(control_->Show(job.job_id, admin_).ok());
  EXPECT_EQ(control_->List({}, admin_)->size(), 1u);
}

TEST_F(JobControlTest, AcknowledgeKeepsTheFenceAndRepeatsReturnTheSameEvents) {
  JobRecord job = Unknown("a_idx");
  EXPECT_EQ(control_->Resolve(job.job_id, ResolveAction::kAcknowledge, "   ", admin_).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(control_->Resolve(job.job_id, ResolveAction::kAcknowledge, std::string(1025, 'x'), admin_).status().code(),
            StatusCode::kInvalidArgument);
  auth::Principal reader = Grant("local.db.docs", {auth::Privilege::kShow});
  EXPECT_EQ(control_->Resolve(job.job_id, ResolveAction::kAcknowledge, "seen", reader).status().code(),
            StatusCode::kPermissionDenied);

  // RESOLVE waits for the leader's refresh and final CAS (a thread plays the leader once
  // the waiting request has polled).
  testing::FakeEnv env;
  std::thread leader([this, &env] {
    env.WaitForSleeps(1);
    EXPECT_TRUE(runner_->RunRefreshes(now_).ok());
  });
  auto acked = control_->Resolve(job.job_id, ResolveAction::kAcknowledge, "  checked the dataset\n ", admin_,
                                 {/*timeout_ms=*/0, 10});
  ASSERT_TRUE(acked.ok()) << acked.status().ToString();
  EXPECT_EQ(acked->job.state.disposition, Disposition::kAckRefreshPending);
  // Waiting on the same request joins it.
  WaitOptions wait{24 * 3'600'000, 10};
  JobControl waiting(store_.get(), &env);
  auto done = waiting.Resolve(job.job_id, ResolveAction::kAcknowledge, "checked the dataset", admin_, wait);
  leader.join();
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->job.state.disposition, Disposition::kAcknowledged);
  EXPECT_EQ(done->job.state.outcome, Outcome::kUnknown);
  EXPECT_TRUE(done->warnings.empty());
  bool noted = false;
  for (const JobEvent& e : done->events) noted |= e.kind == event::kAckRequested && e.note == "checked the dataset";
  EXPECT_TRUE(noted);
  EXPECT_FALSE(NameIsFree("a_idx"));  // ACK never releases the fence
  // A repeated completed ACK returns the existing events and changes nothing.
  auto again = control_->Resolve(job.job_id, ResolveAction::kAcknowledge, "checked the dataset", admin_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->job.revision, done->job.revision);
  EXPECT_EQ(again->events.size(), done->events.size());
}

TEST_F(JobControlTest, ForceReleaseNeedsTheRefreshThenReleasesWithWarnings) {
  JobRecord job = Unknown("a_idx");
  int64_t t = 0;
  JobControl control(store_.get(), [&] { return t += 10; });
  // Without a leader the wait ends with a typed incomplete-resolution error naming the request.
  auto incomplete = control.Resolve(job.job_id, ResolveAction::kForceRelease, "accept the risk", admin_, {200, 10});
  EXPECT_EQ(incomplete.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(incomplete.status().message().rfind(std::string(kResolutionIncomplete), 0), 0u);
  const JobRecord pending = *store_->Get(job.job_id);
  ASSERT_TRUE(pending.resolution_id.has_value());
  EXPECT_NE(incomplete.status().message().find(*pending.resolution_id), std::string::npos);
  EXPECT_FALSE(NameIsFree("a_idx"));

  ASSERT_TRUE(runner_->RunRefreshes(now_).ok());
  auth::Principal writer = Grant("local.db.docs", {auth::Privilege::kAlter});
  auto forced = control.Resolve(job.job_id, ResolveAction::kForceRelease, "accept the risk", writer, {1000, 10});
  ASSERT_TRUE(forced.ok()) << forced.status().ToString();
  EXPECT_EQ(forced->job.state.disposition, Disposition::kForceReleased);
  EXPECT_EQ(forced->job.state.outcome, Outcome::kUnknown);  // FORCE never changes the outcome
  ASSERT_EQ(forced->warnings.size(), 1u);
  EXPECT_NE(forced->warnings[0].find("old executor may still commit"), std::string::npos);
  EXPECT_TRUE(NameIsFree("a_idx"));
  // The detail keeps showing the warning.
  EXPECT_EQ(control.Show(job.job_id, admin_)->warnings.size(), 1u);
}

TEST_F(JobControlTest, ForceWithoutRefreshIsAdminOnlyAndImmediate) {
  JobRecord job = Unknown("a_idx");
  auth::Principal writer = Grant("local.db.docs", {auth::Privilege::kAlter});
  EXPECT_EQ(
      control_->Resolve(job.job_id, ResolveAction::kForceReleaseWithoutRefresh, "emergency", writer).status().code(),
      StatusCode::kPermissionDenied);
  ASSERT_TRUE(control_->Resolve(job.job_id, ResolveAction::kAcknowledge, "first", admin_).ok());  // pending ACK
  auto forced = control_->Resolve(job.job_id, ResolveAction::kForceReleaseWithoutRefresh, "emergency", admin_);
  ASSERT_TRUE(forced.ok()) << forced.status().ToString();
  EXPECT_EQ(forced->job.state.refresh, RefreshState::kSkippedByForce);
  EXPECT_EQ(forced->job.state.reconcile, ReconcileState::kStoppedByForce);
  EXPECT_EQ(forced->warnings.size(), 2u);
  bool superseded = false;
  for (const JobEvent& e : forced->events) superseded |= e.kind == event::kSupersededByEmergencyForce;
  EXPECT_TRUE(superseded);
  EXPECT_TRUE(NameIsFree("a_idx"));
}

TEST_F(JobControlTest, DropTableAndSchemaChangesAreRefusedWhileGuarded) {
  JobRecord job = Unknown("a_idx");
  bool ran = false;
  Status st = control_->GuardedTableChange("local", "db", "docs", admin_, [&](meta::Transaction&) {
    ran = true;
    return Status::OK();
  });
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message().rfind(std::string(kTableGuarded), 0), 0u) << st.message();
  EXPECT_NE(st.message().find(std::to_string(job.job_id)), std::string::npos);
  EXPECT_FALSE(ran);
  EXPECT_EQ(control_->DropTable("local", "db", "docs", admin_).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store_->catalog().LookupTable("local", "db", "docs")->has_value());
  auth::Principal reader = Grant("local.db.docs", {auth::Privilege::kShow});
  EXPECT_EQ(control_->DropTable("local", "db", "docs", reader).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(control_->DropTable("local", "db", "docs", auth::Principal{}).code(), StatusCode::kNotFound);

  ASSERT_TRUE(control_->Resolve(job.job_id, ResolveAction::kForceReleaseWithoutRefresh, "drop it", admin_).ok());
  EXPECT_TRUE(control_->DropTable("local", "db", "docs", admin_).ok());
  EXPECT_FALSE(store_->catalog().LookupTable("local", "db", "docs")->has_value());
}

TEST_F(JobControlTest, RefreshTableBumpsTheGenerationAndWaitSeesFinalStates) {
  auto entry = **store_->catalog().LookupTable("local", "db", "docs");
  const int64_t before = *store_->GetRefreshGeneration(entry.table_incarnation);
  auto bumped = control_->RefreshTable("local", "db", "docs", admin_);
  ASSERT_TRUE(bumped.ok()) << bumped.status().ToString();
  EXPECT_EQ(*bumped, before + 1);
  EXPECT_EQ(*store_->GetRefreshGeneration(entry.table_incarnation), before + 1);
  EXPECT_EQ(
      control_->RefreshTable("local", "db", "docs", Grant("local.db.docs", {auth::Privilege::kShow})).status().code(),
      StatusCode::kPermissionDenied);
  EXPECT_EQ(control_->RefreshTable("local", "db", "nope", admin_).status().code(), StatusCode::kNotFound);

  JobRecord job = Admit("a_idx");
  testing::FakeEnv env;
  JobControl control(store_.get(), &env);
  auto timed_out = control.Wait(job.job_id, admin_, {100, 1});
  EXPECT_EQ(timed_out.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(timed_out.status().message().find("PENDING"), std::string::npos);
  ASSERT_TRUE(runner_->RunOnePending(now_).ok());
  ASSERT_TRUE(runner_->RunRefreshes(now_).ok());
  auto finished = control.Wait(job.job_id, admin_, {100, 1});
  ASSERT_TRUE(finished.ok()) << finished.status().ToString();
  EXPECT_EQ(DerivedState(finished->state), "FINISHED");
}

// WAIT polls on the Env's clock: an hour of polling a job that never finishes takes fake
// time only, and ends with the deadline.
TEST_F(JobControlTest, WaitTimesOutOnFakeTimeWithoutSleeping) {
  JobRecord job = Admit("a_idx");
  testing::FakeEnv env;
  const int64_t start_ms = env.NowMs();
  const int64_t real_start = Env::Default()->MonotonicMicros();
  JobControl control(store_.get(), &env);
  auto timed_out = control.Wait(job.job_id, admin_, {/*timeout_ms=*/3'600'000, /*poll_ms=*/60'000});
  EXPECT_EQ(timed_out.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(env.sleeps(), 60);
  EXPECT_EQ(env.NowMs() - start_ms, 3'600'000);
  EXPECT_LT(Env::Default()->MonotonicMicros() - real_start, 60'000'000);  // well under the hour
}

}  // namespace
}  // namespace vigil::jobs
