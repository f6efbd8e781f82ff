// Attempts spread over nodes: the runner assigns attempts to the least loaded live,
// undrained node with a free slot (only fenced providers leave the leader's node); a
// node agent runs what is assigned to its node epoch, once, and never what its own
// process's runner runs; the reconciler settles the attempt of a node that died.
#include "vigil/jobs/node_agent.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "testutil/fake_env.h"
#include "testutil/temp_dir.h"
#include "vigil/ingest/datagen.h"
#include "vigil/jobs/admission.h"
#include "vigil/jobs/reconciler.h"
#include "vigil/jobs/runner.h"
#include "vigil/storage/dataset.h"

namespace vigil::jobs {
namespace {

// Holds every attempt inside Execute until released.
class HeldExecutor : public Executor {
 public:
  ExecutionOutcome Execute(const ExecutionRequest& request) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++calls_;
      cv_.notify_all();
      cv_.wait(lock, [this] { return open_; });
    }
    return inner_.Execute(request);
  }
  void AwaitCalls(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return calls_ >= n; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  InProcessExecutor inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  int calls_ = 0;
  bool open_ = false;
};

// An executor owned by the agent that runs attempts through one the test owns.
class Forward : public Executor {
 public:
  explicit Forward(Executor* to) : to_(to) {}
  ExecutionOutcome Execute(const ExecutionRequest& request) override { return to_->Execute(request); }

 private:
  Executor* to_;
};

class NodeAgentTest : public ::testing::Test {
 protected:
  static constexpr int64_t kTtl = 30'000;

  void SetUp() override {
    DatagenOptions o;
    o.rows = 300;
    o.dim = 8;
    o.latent_dim = 2;
    o.words_per_body = 8;
    auto gen = *DataGenerator::Make(o);
    JobStoreOptions so;
    so.uri = "sqlite://" + dir_.Join("meta.db");
    store_ = *JobStore::Open(so);
    for (const char* table : {"t0", "t1", "t2"}) {
      const std::string path = dir_.Join(std::string("db/") + table + ".vgl");
      auto ds = *Dataset::Create(path, gen->schema(), {});
      ASSERT_TRUE(ds->Append(gen->NewReader().get(), {}).ok());
      ASSERT_TRUE(store_->catalog().RegisterTable("local", "db", table, path, now_).ok());
    }
  }

  // A runner of node "local" with one slot, sharing `claimed_`.
  std::unique_ptr<JobRunner> StartRunner(Executor* executor, RunnerOptions ro = {}) {
    ro.node_id = "local";
    ro.lease_ttl_ms = kTtl;
    ro.claimed = &claimed_;
    auto runner = std::make_unique<JobRunner>(store_.get(), executor, ro);
    EXPECT_TRUE(runner->Start(now_).ok());
    return runner;
  }

  int64_t Admit(const std::string& table, const std::string& name) {
    CreateIndexStatement s;
    s.target = {"local", "db", table};
    s.index_name = name;
    s.column = "category";
    s.type = index::IndexType::kBitmap;
    auto job = Admission(store_.get(), {}).Create(s, "admin", now_);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() ? job->job_id : 0;
  }

  JobRecord Get(int64_t id) { return *store_->Get(id); }

  NodeAgentOptions AgentOptions(const std::string& node, int64_t epoch) {
    NodeAgentOptions o;
    o.node_id = node;
    o.node_epoch = epoch;
    o.lease_ttl_ms = kTtl;
    o.claimed = &claimed_;
    o.env = &env_;
    return o;
  }

  static NodeAgent::ExecutorFactory InProcess() {
    return [] { return Result<std::unique_ptr<Executor>>(std::make_unique<InProcessExecutor>()); };
  }

  testing::TempDir dir_;
  int64_t now_ = 1'000'000;
  testing::FakeEnv env_{now_ * 1000};  // the agents' clock: the test's
  std::unique_ptr<JobStore> store_;
  ClaimedAttempts claimed_;
};

TEST_F(NodeAgentTest, AttemptsGoToTheLeastLoadedLiveUndrainedNodeWithAFreeSlot) {
  ASSERT_TRUE(store_->cluster().RegisterNode("peer", 2, "h:2", now_, 1).ok());
  ASSERT_TRUE(store_->cluster().RegisterNode("silent", 3, "h:3", now_ - kTtl, 4).ok());  // its heartbeat is a lease old
  ASSERT_TRUE(store_->cluster().RegisterNode("drained", 4, "h:4", now_, 4).ok());
  ASSERT_TRUE(store_->cluster().SetNodeDraining("drained", true).ok());
  ASSERT_TRUE(store_->cluster().RegisterNode("reader", 5, "h:5", now_, 0).ok());  // runs no one else's attempts
  HeldExecutor held;
  auto runner = StartRunner(&held);
  const int64_t a = Admit("t0", "a"), b = Admit("t1", "b"), c = Admit("t2", "c");
  auto started = runner->StartPending(now_);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  EXPECT_EQ(*started, (std::vector<int64_t>{a, b}));
  EXPECT_EQ(Get(a).attempt->executor_node_id, "local");  // a tie: this node first
  EXPECT_EQ(Get(b).attempt->executor_node_id, "peer");
  EXPECT_EQ(Get(b).attempt->node_epoch, 1);
  EXPECT_EQ(DerivedState(Get(c).state), "PENDING");  // every slot is taken
  held.AwaitCalls(1);
  EXPECT_EQ(runner->running(), 1u);  // only this node's attempt runs here
  held.Release();
  runner->WaitForAttempts();
  EXPECT_EQ(DerivedState(Get(a).state), "REFRESHING");
  EXPECT_EQ(DerivedState(Get(b).state), "RUNNING");  // the peer's agent runs it
}

TEST_F(NodeAgentTest, AnUnfencedProviderNeverLeavesTheLeadersNode) {
  ASSERT_TRUE(store_->cluster().RegisterNode("peer", 2, "h:2", now_, 1).ok());
  HeldExecutor held;
  RunnerOptions ro;
  ro.commits_fenced = [](std::string_view) { return false; };
  auto runner = StartRunner(&held, ro);
  const int64_t a = Admit("t0", "a"), b = Admit("t1", "b");
  auto started = runner->StartPending(now_);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  EXPECT_EQ(*started, (std::vector<int64_t>{a}));
  EXPECT_EQ(DerivedState(Get(b).state), "PENDING");
  held.Release();
}

TEST_F(NodeAgentTest, AnAgentRunsItsNodesAttemptOnceAndRecordsItUnderTheAttemptsLeaderEpoch) {
  auto peer_epoch = store_->cluster().RegisterNode("peer", 2, "h:2", now_, 1);
  ASSERT_TRUE(peer_epoch.ok());
  HeldExecutor held;
  auto runner = StartRunner(&held);
  const int64_t a = Admit("t0", "a"), b = Admit("t1", "b");
  ASSERT_TRUE(runner->StartPending(now_).ok());
  held.AwaitCalls(1);

  // The peer's agent (another process: its own claims) runs b, and only b.
  ClaimedAttempts peer_claims;
  NodeAgentOptions po = AgentOptions("peer", *peer_epoch);
  po.claimed = &peer_claims;
  NodeAgent peer(store_.get(), InProcess(), po);
  ASSERT_TRUE(peer.Open().ok());
  auto polled = peer.Poll();
  ASSERT_TRUE(polled.ok()) << polled.status().ToString();
  peer.WaitForAttempts();
  JobRecord done = Get(b);
  EXPECT_EQ(done.state.outcome, Outcome::kCommitted);
  std::vector<JobEvent> events = *store_->Events(b);
  EXPECT_EQ(events.back().actor, "node:peer:1");
  // Polling again runs nothing twice (b is no longer RUNNING, a is not the peer's).
  auto again = peer.Poll();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());

  // An agent of the runner's own process and node never runs what its runner runs.
  NodeAgent self(store_.get(), InProcess(), AgentOptions("local", runner->node_epoch()));
  ASSERT_TRUE(self.Open().ok());
  auto mine = self.Poll();
  ASSERT_TRUE(mine.ok());
  EXPECT_TRUE(mine->empty());
  EXPECT_EQ(DerivedState(Get(a).state), "RUNNING");
  held.Release();
  runner->WaitForAttempts();
  EXPECT_EQ(Get(a).state.outcome, Outcome::kCommitted);
  self.Stop();
  peer.Stop();
}

// The agent's own loop polls once per poll interval of its Env's time: on a fake clock it looks
// for assigned attempts only when the test moves time, and Stop ends its wait at once.
TEST_F(NodeAgentTest, TheAgentsLoopPollsOncePerPollIntervalOfItsClockAndStopEndsItsWait) {
  auto peer_epoch = store_->cluster().RegisterNode("peer", 2, "h:2", now_, 1);
  ASSERT_TRUE(peer_epoch.ok());
  HeldExecutor peer_held;
  ClaimedAttempts peer_claims;
  NodeAgentOptions po = AgentOptions("peer", *peer_epoch);
  po.claimed = &peer_claims;
  po.poll_interval_ms = 200;
  NodeAgent peer(
      store_.get(), [&] { return Result<std::unique_ptr<Executor>>(std::make_unique<Forward>(&peer_held)); }, po);
  ASSERT_TRUE(peer.Start().ok());
  env_.WaitForWaits(1);  // its first pass found nothing; it waits for the next

  HeldExecutor held;
  auto runner = StartRunner(&held);
  Admit("t0", "a");
  const int64_t b = Admit("t1", "b");
  ASSERT_TRUE(runner->StartPending(now_).ok());
  ASSERT_EQ(Get(b).attempt->executor_node_id, "peer");
  env_.AdvanceMs(199);  // not yet a poll interval
  EXPECT_EQ(peer.running(), 0u);
  EXPECT_EQ(env_.waits(), 1);
  env_.AdvanceMs(1);
  peer_held.AwaitCalls(1);  // the second pass started b
  env_.WaitForWaits(2);     // and the loop waits again
  EXPECT_EQ(peer.running(), 1u);
  peer_held.Release();
  held.Release();
  peer.Stop();  // ends the wait without moving time, and waits for b's record
  EXPECT_EQ(Get(b).state.outcome, Outcome::kCommitted);
  EXPECT_EQ(env_.NowMs(), now_ + 200);
  runner->WaitForAttempts();
}

TEST_F(NodeAgentTest, ANodeWithoutHeartbeatsForMostOfALeaseKillsItsWorkersAndTakesNothingUntilOneSucceeds) {
  auto peer_epoch = store_->cluster().RegisterNode("peer", 2, "h:2", now_, 1);
  ASSERT_TRUE(peer_epoch.ok());
  // Each executor the agent makes counts its fences (a fence kills the executor's workers).
  std::vector<int> fences;
  class Counting : public InProcessExecutor {
   public:
    explicit Counting(int* fences) : fences_(fences) {}
    void Fence() override { ++*fences_; }

   private:
    int* fences_;
  };
  fences.reserve(8);
  NodeAgentOptions o = AgentOptions("peer", *peer_epoch);
  o.lease_ttl_ms = 600;
  NodeAgent peer(
      store_.get(),
      [&] {
        fences.push_back(0);
        return Result<std::unique_ptr<Executor>>(std::make_unique<Counting>(&fences.back()));
      },
      o);
  ASSERT_TRUE(peer.Open().ok());
  peer.HeartbeatSucceeded(env_.NowMs());
  env_.AdvanceMs(499);  // the lease less a sixth has not passed
  EXPECT_FALSE(peer.FenceIfLapsed());
  env_.AdvanceMs(1);
  EXPECT_TRUE(peer.FenceIfLapsed());
  EXPECT_EQ(fences, (std::vector<int>{1}));
  // Fenced, it takes nothing: an attempt assigned to it stays RUNNING, unexecuted.
  HeldExecutor held;
  ASSERT_TRUE(store_->cluster().RegisterNode("peer", 2, "h:2", env_.NowMs(), 1).ok());  // the leader sees it alive
  auto runner = StartRunner(&held);
  Admit("t0", "a");
  const int64_t b = Admit("t1", "b");
  ASSERT_TRUE(runner->StartPending(now_).ok());
  ASSERT_EQ(Get(b).attempt->executor_node_id, "peer");
  NodeAgentOptions next = AgentOptions("peer", Get(b).attempt->node_epoch);
  next.lease_ttl_ms = 600;
  NodeAgent fenced(store_.get(), InProcess(), next);
  ASSERT_TRUE(fenced.Open().ok());
  env_.AdvanceMs(600);
  EXPECT_TRUE(fenced.FenceIfLapsed());
  auto none = fenced.Poll();
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  // A heartbeat succeeds: a new executor, and the attempt runs.
  fenced.HeartbeatSucceeded(env_.NowMs());
  EXPECT_FALSE(fenced.FenceIfLapsed());
  auto some = fenced.Poll();
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(*some, (std::vector<int64_t>{b}));
  fenced.WaitForAttempts();
  held.Release();
  runner->WaitForAttempts();
  // The peer recovers the same way: a second executor, not fenced.
  peer.HeartbeatSucceeded(env_.NowMs());
  EXPECT_FALSE(peer.FenceIfLapsed());
  EXPECT_EQ(fences, (std::vector<int>{1, 0}));
}

// The reconciler of leader "local" settles another node's attempt by that node's liveness:
// left alone while it heartbeats, UNKNOWN once its epoch was replaced or its heartbeat is a
// lease old, then NOT_COMMITTED by the store's fence: the late commit of an agent that was
// frozen meanwhile is refused, and so is its record.
TEST_F(NodeAgentTest, ADeadNodesAttemptIsSettledByTheFenceAndItsLateCommitRefused) {
  auto peer_epoch = store_->cluster().RegisterNode("peer", 2, "h:2", now_, 1);
  ASSERT_TRUE(peer_epoch.ok());
  ASSERT_TRUE(store_->cluster().RegisterNode("other", 3, "h:3", now_, 1).ok());
  HeldExecutor held;
  auto runner = StartRunner(&held);
  Admit("t0", "a");
  const int64_t c = Admit("t1", "c"), b = Admit("t2", "b");
  ASSERT_TRUE(runner->StartPending(now_).ok());
  // This node's slot first, then equally loaded peers by node id.
  ASSERT_EQ(Get(c).attempt->executor_node_id, "other");
  ASSERT_EQ(Get(b).attempt->executor_node_id, "peer");
  // The peer's agent is inside its attempt when the peer stops heartbeating.
  HeldExecutor peer_held;
  ClaimedAttempts peer_claims;
  NodeAgentOptions po = AgentOptions("peer", *peer_epoch);
  po.claimed = &peer_claims;
  NodeAgent peer(
      store_.get(), [&] { return Result<std::unique_ptr<Executor>>(std::make_unique<Forward>(&peer_held)); }, po);
  ASSERT_TRUE(peer.Open().ok());
  ASSERT_TRUE(peer.Poll().ok());
  peer_held.AwaitCalls(1);

  ReconcilerOptions ro;
  ro.node_id = "local";
  ro.node_epoch = runner->node_epoch();
  ro.node_ttl_ms = kTtl;
  Reconciler reconciler(store_.get(), "local-runner", runner->leader_epoch(), ro);
  ASSERT_TRUE(reconciler.RunDue(now_ + 1000).ok());
  EXPECT_EQ(DerivedState(Get(b).state), "RUNNING");
  EXPECT_EQ(DerivedState(Get(c).state), "RUNNING");

  ASSERT_TRUE(store_->cluster().RegisterNode("other", 6, "h:3", now_ + 2000, 1).ok());  // other restarted
  ASSERT_TRUE(reconciler.RunDue(now_ + 2000).ok());
  JobRecord restarted = Get(c);
  EXPECT_EQ(restarted.state.outcome, Outcome::kNotCommitted) << DerivedState(restarted.state);
  EXPECT_NE(restarted.error_message.value_or("").find("node other restarted (epoch 1, now 2)"), std::string::npos)
      << restarted.error_message.value_or("");
  EXPECT_EQ(DerivedState(Get(b).state), "RUNNING");

  ASSERT_TRUE(runner->RunRefreshes(now_ + 20'000).ok());  // the leader renews its lease
  ASSERT_TRUE(reconciler.RunDue(now_ + kTtl + 1).ok());   // the peer's heartbeat is a lease old
  JobRecord silent = Get(b);
  EXPECT_EQ(silent.state.outcome, Outcome::kNotCommitted) << DerivedState(silent.state);
  EXPECT_NE(silent.error_message.value_or("").find("node peer running the attempt has not heartbeat"),
            std::string::npos)
      << silent.error_message.value_or("");
  const std::vector<JobEvent> events = *store_->Events(b);
  std::string proofs;
  for (const JobEvent& e : events) proofs += e.detail_json;
  EXPECT_NE(proofs.find("CATALOG_FENCE"), std::string::npos) << proofs;

  // The peer wakes: its provider's commit is refused, its record too; nothing is committed.
  const uint64_t before = Dataset::ListVersions(Get(b).spec.locator)->back().version;
  env_.SetMs(now_ + kTtl + 2);
  peer_held.Release();
  peer.WaitForAttempts();
  EXPECT_EQ(Dataset::ListVersions(Get(b).spec.locator)->back().version, before);
  EXPECT_EQ(Get(b).state.outcome, Outcome::kNotCommitted);
  held.Release();
  runner->WaitForAttempts();
  peer.Stop();
}

}  // namespace
}  // namespace vigil::jobs
