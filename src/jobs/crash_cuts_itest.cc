// Crash cuts C1-C11 (seed 000 appendix C, adapted to Vigil's provenance
// attribution of DESIGN.md section 5): in every test a real child process
// (fork; the child opens its own JobStore on the shared SQLite file) is killed
// with SIGKILL at a named failpoint or exact boundary, or races a second
// process; then this process opens the store afresh, starts a new leader
// (recovery pass, then a few rounds) and checks the replayed job, the
// same-name fence, the target guard (DROP TABLE), the watcher and the refresh
// state. Attempt locks are held by real child processes ("workers") where the
// cut needs an executor that may still run. Time is a fake clock.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testutil/fake_env.h"
#include "testutil/temp_dir.h"
#include "vigil/catalog/version_store.h"
#include "vigil/common/failpoint.h"
#include "vigil/common/file_lock.h"
#include "vigil/index/provider.h"
#include "vigil/ingest/datagen.h"
#include "vigil/jobs/admission.h"
#include "vigil/jobs/executor.h"
#include "vigil/jobs/job_control.h"
#include "vigil/jobs/leader.h"
#include "vigil/jobs/runner.h"
#include "vigil/storage/dataset.h"

namespace vigil::jobs {
namespace {

constexpr int64_t kTtl = 7 * 24 * 3'600'000LL;   // leases outlive every fake clock jump but C5's
constexpr char kOldLeader[] = "leader-old";      // a dispatcher that lost its attempt's response
constexpr char kChildLeader[] = "leader-child";  // the leader killed in a child process
constexpr char kNewLeader[] = "leader-new";      // the restarted leader in this process

// Exit codes of child bodies (a SIGKILL is the expected end of most).
constexpr int kChildNoStore = 90;
constexpr int kChildNotKilled = 91;
constexpr int kChildFailed = 92;
constexpr int kChildRefused = 93;  // a worker whose commit the version catalog refused

bool Killed(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL; }
int ExitCode(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }
std::string Describe(int status) {
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "exited with " + std::to_string(ExitCode(status));
}

struct Pipe {
  int r = -1;
  int w = -1;
  Pipe() {
    int fds[2];
    if (::pipe(fds) == 0) {
      r = fds[0];
      w = fds[1];
    }
  }
  ~Pipe() {
    CloseR();
    CloseW();
  }
  void CloseR() {
    if (r >= 0) ::close(r);
    r = -1;
  }
  void CloseW() {
    if (w >= 0) ::close(w);
    w = -1;
  }
};

// One byte, or false at end of file.
bool ReadByte(int fd, char* c) {
  ssize_t n;
  do {
    n = ::read(fd, c, 1);
  } while (n < 0 && errno == EINTR);
  return n == 1;
}
void WriteByte(int fd, char c) { (void)!::write(fd, &c, 1); }

// Counts execute requests in a file per job before delegating to the provider, so
// that a test can prove that nothing was sent (the file lives in the test directory
// and survives the process that wrote it).
class MarkingExecutor : public Executor {
 public:
  explicit MarkingExecutor(std::string dir) : dir_(std::move(dir)) {}
  ExecutionOutcome Execute(const ExecutionRequest& r) override {
    const std::string path = Path(dir_, r.job.job_id);
    int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      WriteByte(fd, 'x');
      ::fsync(fd);
      ::close(fd);
    }
    return inner_.Execute(r);
  }
  static int Sends(const std::string& dir, int64_t job_id) {
    struct stat st;
    return ::stat(Path(dir, job_id).c_str(), &st) == 0 ? static_cast<int>(st.st_size) : 0;
  }

 private:
  static std::string Path(const std::string& dir, int64_t job_id) { return dir + "/sent-" + std::to_string(job_id); }
  std::string dir_;
  InProcessExecutor inner_;
};

class CrashCutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DatagenOptions o;
    o.rows = 600;
    o.dim = 8;
    o.latent_dim = 2;
    o.words_per_body = 8;
    gen_ = *DataGenerator::Make(o);
    path_ = dir_.Join("db/docs.vgl");
    auto ds = Dataset::Create(path_, gen_->schema(), {});
    ASSERT_TRUE(ds.ok()) << ds.status().ToString();
    auto reader = gen_->NewReader();
    ASSERT_TRUE((*ds)->Append(reader.get(), {}).ok());
    store_ = OpenStore();
    ASSERT_NE(store_, nullptr);
    auto table = store_->catalog().RegisterTable("local", "db", "docs", path_, clock_.NowMs());
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    table_ = *table;
  }

  void TearDown() override {
    for (pid_t p : live_) {
      ::kill(p, SIGKILL);
      ::waitpid(p, nullptr, 0);
    }
    store_.reset();
    failpoint::DisarmAll();
  }

  std::unique_ptr<JobStore> OpenStore() {
    JobStoreOptions so;
    so.uri = "sqlite://" + dir_.Join("meta.db");
    auto store = JobStore::Open(so);
    return store.ok() ? std::move(store).value() : nullptr;
  }
  // What a restarted process does: a new JobStore object on the same file.
  void Reopen() {
    store_.reset();
    store_ = OpenStore();
    ASSERT_NE(store_, nullptr);
  }

  // Forks a child that runs `body` and _exits with its result. With `with_store` the
  // child opens a JobStore of its own after the fork. This process's store is closed
  // across the fork (no SQLite connection crosses it) and reopened afresh afterwards.
  pid_t Fork(const std::function<int(JobStore*)>& body, bool with_store = true) {
    store_.reset();
    pid_t pid = ::fork();
    if (pid == 0) {
      std::unique_ptr<JobStore> own;
      if (with_store) {
        own = OpenStore();
        if (own == nullptr) ::_exit(kChildNoStore);
      }
      ::_exit(body(own.get()));
    }
    store_ = OpenStore();
    EXPECT_GT(pid, 0);
    if (pid > 0) live_.push_back(pid);
    return pid;
  }
  int Wait(pid_t pid) {
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    live_.erase(std::remove(live_.begin(), live_.end(), pid), live_.end());
    return status;
  }
  int RunChild(const std::function<int(JobStore*)>& body) { return Wait(Fork(body)); }

  // Forks one child per body; each opens its own store and reports ready, and all
  // start together once every one is ready. Returns their wait statuses.
  std::vector<int> Race(const std::vector<std::function<int(JobStore*)>>& bodies) {
    Pipe gate;
    Pipe ready;
    store_.reset();
    std::vector<pid_t> pids;
    for (const auto& body : bodies) {
      pid_t pid = ::fork();
      if (pid == 0) {
        ::close(gate.w);
        ::close(ready.r);
        std::unique_ptr<JobStore> own = OpenStore();
        if (own == nullptr) ::_exit(kChildNoStore);
        WriteByte(ready.w, 'r');
        char c;
        (void)ReadByte(gate.r, &c);  // end of file: go
        ::_exit(body(own.get()));
      }
      EXPECT_GT(pid, 0);
      if (pid > 0) {
        pids.push_back(pid);
        live_.push_back(pid);
      }
    }
    ready.CloseW();
    for (size_t i = 0; i < pids.size(); ++i) {
      char c;
      EXPECT_TRUE(ReadByte(ready.r, &c));
    }
    gate.CloseW();
    std::vector<int> statuses;
    for (pid_t p : pids) statuses.push_back(Wait(p));
    store_ = OpenStore();
    return statuses;
  }

  LeaderOptions LeaderOpts(const std::string& holder, const std::string& dead_holder) {
    LeaderOptions o;
    o.runner.node_id = "local";
    o.runner.leader_holder = holder;
    o.runner.lease_ttl_ms = kTtl;
    o.idle_exit_ms = 0;
    if (!dead_holder.empty()) {
      o.holder_is_dead = [dead_holder](const LeaderLease& l) { return l.holder == dead_holder; };
    }
    return o;
  }
  std::unique_ptr<Leader> MakeLeader(JobStore* store, Executor* executor, const std::string& holder,
                                     const std::string& dead_holder) {
    return std::make_unique<Leader>(store, executor, LeaderOpts(holder, dead_holder), &clock_);
  }
  // The restarted process's leader on the freshly opened store: its recovery pass, then `ticks` rounds.
  std::unique_ptr<Leader> Restart(Executor* executor, const std::string& dead_holder, int ticks = 3) {
    auto leader = MakeLeader(store_.get(), executor, kNewLeader, dead_holder);
    Status st = leader->Start();
    EXPECT_TRUE(st.ok()) << st.ToString();
    Tick(leader.get(), ticks);
    return leader;
  }
  void Tick(Leader* leader, int ticks) {
    for (int i = 0; i < ticks; ++i) {
      auto r = leader->Tick();
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      leader->WaitForAttempts();  // attempts run on their own threads; the next tick records them
    }
  }
  // A child leader: arms `fp` to kill, starts (recovery pass) and runs rounds until killed.
  int ChildLeader(JobStore* store, Executor* executor, const std::string& fp, const std::string& dead_holder = "") {
    if (!fp.empty()) failpoint::Arm(fp, failpoint::Action::kKill);
    auto leader = MakeLeader(store, executor, kChildLeader, dead_holder);
    if (!leader->Start().ok()) return kChildFailed;
    for (int i = 0; i < 3; ++i) {
      if (!leader->Tick().ok()) return kChildFailed;
      leader->WaitForAttempts();
    }
    return kChildNotKilled;
  }

  CreateIndexStatement Statement(const std::string& name, const std::string& table = "docs") {
    CreateIndexStatement s;
    s.target = {"local", "db", table};
    s.index_name = name;
    s.column = "category";
    s.type = index::IndexType::kBitmap;
    return s;
  }
  JobRecord Admit(const std::string& name) {
    auto job = Admission(store_.get(), {}).Create(Statement(name), "admin", clock_.NowMs());
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() ? *job : JobRecord{};
  }
  // Whether a same-name job can be admitted now. OR REPLACE, so that an index that exists
  // does not refuse it: only the fence does. An admitted probe is cancelled at once.
  Status ProbeName(const std::string& name) {
    CreateIndexStatement s = Statement(name);
    s.or_replace = true;
    auto job = Admission(store_.get(), {}).Create(s, "admin", clock_.NowMs());
    if (!job.ok()) return job.status();
    return store_->Cancel({job->job_id, job->revision, std::nullopt, "admin", clock_.NowMs()}).status();
  }
  JobControl Control() {
    return JobControl(store_.get(), [this] { return clock_.NowMs(); });
  }
  // DROP TABLE docs; only called where it must be refused.
  Status DropTable() { return Control().DropTable("local", "db", "docs", auth::Principal::LocalAdmin()); }
  // A target-changing DDL that changes nothing: OK exactly when no job guards the table.
  Status NoopDdl() {
    return Control().GuardedTableChange("local", "db", "docs", auth::Principal::LocalAdmin(),
                                        [](meta::Transaction&) { return Status::OK(); });
  }

  JobRecord Get(int64_t id) {
    auto r = store_->Get(id);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : JobRecord{};
  }
  std::vector<JobEvent> Events(int64_t id) {
    auto e = store_->Events(id);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? *e : std::vector<JobEvent>{};
  }
  // The detail of the job's first event of `kind` ("" when there is none).
  std::string Detail(int64_t id, std::string_view kind) {
    for (const JobEvent& e : Events(id)) {
      if (e.kind == kind) return e.detail_json;
    }
    return "";
  }
  std::vector<std::string> Kinds(int64_t id) {
    std::vector<std::string> out;
    for (const JobEvent& e : Events(id)) out.push_back(e.kind);
    return out;
  }
  int Count(int64_t id, std::string_view kind) {
    std::vector<std::string> k = Kinds(id);
    return static_cast<int>(std::count(k.begin(), k.end(), std::string(kind)));
  }
  bool Row(const char* table, int64_t job_id) {
    auto conn = store_->database().Acquire();
    EXPECT_TRUE(conn.ok());
    if (!conn.ok()) return false;
    auto rows = (*conn)->Query(std::string("SELECT count(*) FROM ") + table + " WHERE job_id = $1", {job_id});
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() && *(*rows)[0].Int(0) == 1;
  }
  bool FenceHeld(int64_t job_id) { return Row("index_fences", job_id); }
  bool GuardHeld(int64_t job_id) { return Row("index_target_guards", job_id); }
  size_t Versions() {
    auto v = Dataset::ListVersions(path_);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? v->size() : 0;
  }
  VersionInfo Newest() {
    auto v = Dataset::ListVersions(path_);
    EXPECT_TRUE(v.ok() && !v->empty());
    return v.ok() && !v->empty() ? v->back() : VersionInfo{};
  }
  int64_t TableGeneration() {
    auto g = store_->GetRefreshGeneration(table_.table_incarnation);
    EXPECT_TRUE(g.ok()) << g.status().ToString();
    return g.ok() ? *g : -1;
  }
  bool HasIndex(const std::string& name) {
    auto idx = index::ListIndexes(path_);
    EXPECT_TRUE(idx.ok()) << idx.status().ToString();
    if (!idx.ok()) return false;
    return std::any_of(idx->begin(), idx->end(), [&](const index::LogicalIndexInfo& i) { return i.name == name; });
  }

  // A worker of `attempt_id` in a child process without a store: takes the attempt lock
  // (as a launched worker inherits it), reports on `ready`, then waits for a byte on `go`.
  // With `commit` it then runs the provider for the attempt (the commit carries job id and
  // attempt id), with `hang_after_commit` hanging right after that commit until killed, and
  // exits; without, it waits until killed.
  pid_t ForkWorker(const JobRecord& job, const std::string& attempt_id, Pipe& ready, Pipe& go, bool commit,
                   bool hang_after_commit) {
    const int ready_w = ready.w;
    const int go_r = go.r;
    return Fork([&, ready_w, go_r](JobStore* s) -> int {
      auto lock = FileLock::Acquire(AttemptLockPath(path_, attempt_id));
      if (!lock.ok()) return kChildFailed;
      WriteByte(ready_w, 'r');
      char c;
      if (!ReadByte(go_r, &c) || !commit) {
        for (;;) ::pause();
      }
      if (hang_after_commit) failpoint::Arm("provider.after_commit", failpoint::Action::kHang);
      // It commits through the table's version catalog, as a worker's supervisor answers it.
      ExecutionRequest req;
      req.job = job;
      req.attempt.attempt_id = attempt_id;
      req.versions = catalog::TableDatasetOptions(&s->catalog(), table_.table_incarnation, [this] {
                       return clock_.NowMs();
                     }).versions;
      ExecutionOutcome out = InProcessExecutor().Execute(req);
      if (out.report.code == StatusCode::kFailedPrecondition) return kChildRefused;
      return out.report.code == StatusCode::kOk ? 0 : kChildFailed;
    });
  }

  // The first dispatcher (this process, as leader kOldLeader) dispatches `job` with
  // `attempt_id` (T3) and loses the response (T8: UNKNOWN): its worker outlived the
  // deadline unreaped and still holds the attempt lock. `while_running` runs between the two.
  JobRecord DispatchLost(const JobRecord& job, const std::string& attempt_id,
                         const std::function<void()>& while_running = nullptr) {
    auto lease = store_->cluster().AcquireLeader(kOldLeader, clock_.NowMs(), kTtl);
    EXPECT_TRUE(lease.ok()) << lease.status().ToString();
    auto node = store_->cluster().RegisterNode("local", ::getpid(), "localhost", clock_.NowMs());
    EXPECT_TRUE(node.ok()) << node.status().ToString();
    if (!lease.ok() || !node.ok()) return {};
    AttemptIdentity a;
    a.executor_node_id = "local";
    a.node_epoch = *node;
    a.attempt_id = attempt_id;
    a.leader_epoch = lease->epoch;
    a.deadline_at_ms = clock_.NowMs() + 3'600'000;
    auto running = store_->Dispatch({job.job_id, job.revision, lease->epoch, kOldLeader, clock_.NowMs()}, a);
    EXPECT_TRUE(running.ok()) << running.status().ToString();
    if (!running.ok()) return {};
    if (while_running) while_running();
    AttemptReport r;
    r.attempt_id = attempt_id;
    r.result = AttemptResult::kUnknown;
    r.invoked = false;
    r.error_code = "DEADLINE_EXCEEDED";
    r.error_message = "the worker outlived the attempt deadline and was not reaped";
    auto unknown = store_->RecordResult({job.job_id, running->revision, lease->epoch, kOldLeader, clock_.NowMs()}, r);
    EXPECT_TRUE(unknown.ok()) << unknown.status().ToString();
    return unknown.ok() ? *unknown : JobRecord{};
  }

  testing::TempDir dir_;
  std::shared_ptr<const DataGenerator> gen_;
  std::string path_;
  catalog::TableEntry table_;
  testing::FakeEnv clock_{1'700'000'000'000'000};
  std::unique_ptr<JobStore> store_;
  std::vector<pid_t> live_;
};

// C1: job, fence and guard are durable, the client's OK is lost (killed right after T1).
TEST_F(CrashCutTest, C1_AdmittedJobSurvivesTheLostReplyAndRunsOnce) {
  const int status = RunChild([this](JobStore* s) {
    failpoint::Arm("admission.after_commit", failpoint::Action::kKill);
    (void)Admission(s, {}).Create(Statement("cat_idx"), "admin", clock_.NowMs());
    return kChildNotKilled;
  });
  ASSERT_TRUE(Killed(status)) << Describe(status);

  // The client finds its job through SHOW.
  auto listed = Control().List({}, auth::Principal::LocalAdmin());
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 1u);
  const int64_t id = (*listed)[0].job_id;
  auto shown = Control().Show(id, auth::Principal::LocalAdmin());
  ASSERT_TRUE(shown.ok()) << shown.status().ToString();
  EXPECT_EQ(DerivedState(shown->job.state), "PENDING");
  EXPECT_EQ(shown->job.spec.index_name, "cat_idx");
  EXPECT_EQ(Kinds(id), std::vector<std::string>{"ADMITTED"});
  // Fence and guard are in force.
  EXPECT_TRUE(FenceHeld(id));
  EXPECT_EQ(Admission(store_.get(), {}).Create(Statement("cat_idx"), "admin", clock_.NowMs()).status().code(),
            StatusCode::kAlreadyExists);
  Status drop = DropTable();
  EXPECT_EQ(drop.code(), StatusCode::kFailedPrecondition) << drop.ToString();
  EXPECT_NE(drop.message().find(kTableGuarded), std::string::npos) << drop.ToString();

  // A new leader schedules it exactly once.
  MarkingExecutor executor(dir_.path());
  auto leader = Restart(&executor, "", 4);
  JobRecord done = Get(id);
  EXPECT_EQ(DerivedState(done.state), "FINISHED");
  EXPECT_EQ(done.state.outcome, Outcome::kCommitted);
  ASSERT_TRUE(done.attempt.has_value());
  EXPECT_EQ(done.attempt->attempt_number, 1);
  EXPECT_EQ(Count(id, event::kDispatched), 1);
  EXPECT_EQ(MarkingExecutor::Sends(dir_.path(), id), 1);
  EXPECT_TRUE(HasIndex("cat_idx"));
  EXPECT_EQ(Newest().txn.attempt_id, done.attempt->attempt_id);
  EXPECT_FALSE(FenceHeld(id));
  EXPECT_TRUE(NoopDdl().ok());
}

// C2 (target DDL): admission and DROP TABLE race from two processes; the target guard and
// the table row select exactly one durable side, and the loser changes nothing.
TEST_F(CrashCutTest, C2_AdmissionRacesDropTable) {
  int admissions_won = 0;
  for (int round = 0; round < 12; ++round) {
    const std::string table = "race" + std::to_string(round);
    auto entry = store_->catalog().RegisterTable("local", "db", table, path_, clock_.NowMs());
    ASSERT_TRUE(entry.ok()) << entry.status().ToString();
    const std::string incarnation = entry->table_incarnation;
    std::vector<int> st = Race({
        [this, table](JobStore* s) {
          auto job = Admission(s, {}).Create(Statement("idx", table), "admin", clock_.NowMs());
          if (job.ok()) return 0;
          return job.status().code() == StatusCode::kNotFound ? 1 : 50 + static_cast<int>(job.status().code());
        },
        [this, table](JobStore* s) {
          JobControl control(s, [this] { return clock_.NowMs(); });
          Status drop = control.DropTable("local", "db", table, auth::Principal::LocalAdmin());
          if (drop.ok()) return 0;
          return drop.message().find(kTableGuarded) != std::string::npos ? 1 : 50 + static_cast<int>(drop.code());
        },
    });
    ASSERT_EQ(st.size(), 2u);
    const int admit = ExitCode(st[0]);
    const int drop = ExitCode(st[1]);
    ASSERT_TRUE((admit == 0 && drop == 1) || (admit == 1 && drop == 0))
        << "round " << round << ": admission " << Describe(st[0]) << ", drop " << Describe(st[1]);
    JobFilter f;
    f.table_name = table;
    f.include_archived = true;
    auto jobs = store_->List(f);
    ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
    auto registered = store_->catalog().LookupTable("local", "db", table);
    ASSERT_TRUE(registered.ok());
    if (admit == 0) {
      ++admissions_won;
      ASSERT_TRUE(registered->has_value()) << "round " << round;
      EXPECT_EQ((*registered)->table_incarnation, incarnation);
      ASSERT_EQ(jobs->size(), 1u);
      EXPECT_EQ((*jobs)[0].spec.table_incarnation, incarnation);
      EXPECT_EQ(DerivedState((*jobs)[0].state), "PENDING");
      EXPECT_TRUE(GuardHeld((*jobs)[0].job_id));
    } else {
      EXPECT_FALSE(registered->has_value()) << "round " << round;
      EXPECT_TRUE(jobs->empty()) << "round " << round << ": a job exists without its table";
    }
  }
  std::printf("admission won %d of 12 rounds against DROP TABLE\n", admissions_won);
}

// C2 (reservation/dispatch): CANCEL and the dispatcher race from two processes; the
// expected-state CAS selects one side. A cancelled job was never sent; a dispatched one
// has no cancel request.
TEST_F(CrashCutTest, C2_CancelRacesDispatch) {
  int cancels_won = 0;
  for (int round = 0; round < 12; ++round) {
    JobRecord job = Admit("c" + std::to_string(round));
    const int64_t id = job.job_id;
    std::vector<int> st = Race({
        [this, id](JobStore* s) {
          auto r = JobControl(s, [this] { return clock_.NowMs(); }).Cancel(id, auth::Principal::LocalAdmin());
          if (r.ok()) return r->state.outcome == Outcome::kCancelledBeforeDispatch ? 0 : 2;
          return r.status().message().find(kNotCancellableAfterDispatch) != std::string::npos
                     ? 1
                     : 50 + static_cast<int>(r.status().code());
        },
        [this, id](JobStore* s) {
          MarkingExecutor executor(dir_.path());
          RunnerOptions o;
          o.leader_holder = "dispatcher";
          o.lease_ttl_ms = kTtl;
          JobRunner runner(s, &executor, o);
          if (!runner.Start(clock_.NowMs()).ok()) return kChildFailed;
          auto ran = runner.RunOnePending(clock_.NowMs());
          if (ran.ok()) return *ran == id ? 0 : (*ran ? 3 : 1);
          return ran.status().code() == StatusCode::kCommitConflict ? 1 : 50 + static_cast<int>(ran.status().code());
        },
    });
    ASSERT_EQ(st.size(), 2u);
    const int cancel = ExitCode(st[0]);
    const int dispatch = ExitCode(st[1]);
    ASSERT_TRUE((cancel == 0 && dispatch == 1) || (cancel == 1 && dispatch == 0))
        << "round " << round << ": cancel " << Describe(st[0]) << ", dispatch " << Describe(st[1]);
    JobRecord after = Get(id);
    if (cancel == 0) {
      ++cancels_won;
      EXPECT_EQ(after.state.outcome, Outcome::kCancelledBeforeDispatch);
      EXPECT_FALSE(after.attempt.has_value());
      EXPECT_EQ(Count(id, event::kDispatched), 0);
      EXPECT_EQ(MarkingExecutor::Sends(dir_.path(), id), 0) << "a cancelled job was sent";
      EXPECT_FALSE(FenceHeld(id));
    } else {
      EXPECT_NE(after.state.outcome, Outcome::kCancelledBeforeDispatch);
      EXPECT_EQ(after.state.execution, Execution::kTerminal);
      EXPECT_EQ(Count(id, event::kDispatched), 1);
      EXPECT_EQ(Count(id, event::kCancelRequested), 0);
      EXPECT_EQ(MarkingExecutor::Sends(dir_.path(), id), 1);
    }
  }
  std::printf("cancel won %d of 12 rounds against dispatch\n", cancels_won);
}

// C3: CANCELLING is durable, the terminal cancel is not. The next leader's recovery
// completes CANCELLED_BEFORE_DISPATCH; nothing was ever sent; the fence is released.
TEST_F(CrashCutTest, C3_DurableCancellingCompletesWithoutDispatch) {
  const int64_t id = Admit("cat_idx").job_id;
  const int status = RunChild([this, id](JobStore* s) {
    failpoint::Arm("jobs.cancel.after_cancelling", failpoint::Action::kKill);
    (void)JobControl(s, [this] { return clock_.NowMs(); }).Cancel(id, auth::Principal::LocalAdmin());
    return kChildNotKilled;
  });
  ASSERT_TRUE(Killed(status)) << Describe(status);
  JobRecord mid = Get(id);
  EXPECT_EQ(mid.state.execution, Execution::kCancelling);
  EXPECT_EQ(DerivedState(mid.state), "PENDING");
  EXPECT_TRUE(FenceHeld(id));
  EXPECT_EQ(DropTable().code(), StatusCode::kFailedPrecondition);

  MarkingExecutor executor(dir_.path());
  auto leader = MakeLeader(store_.get(), &executor, kNewLeader, "");
  ASSERT_TRUE(leader->Start().ok());
  JobRecord done = Get(id);  // settled by the recovery pass itself
  EXPECT_EQ(done.state.outcome, Outcome::kCancelledBeforeDispatch);
  EXPECT_EQ(DerivedState(done.state), "CANCELLED");
  Tick(leader.get(), 3);
  EXPECT_EQ(Get(id).revision, done.revision);
  EXPECT_EQ(Kinds(id), (std::vector<std::string>{"ADMITTED", "CANCEL_REQUESTED", "CANCELLED"}));
  EXPECT_FALSE(done.attempt.has_value());
  EXPECT_EQ(MarkingExecutor::Sends(dir_.path(), id), 0);
  EXPECT_FALSE(FenceHeld(id));
  EXPECT_FALSE(GuardHeld(id));
  EXPECT_TRUE(ProbeName("cat_idx").ok());
  EXPECT_TRUE(NoopDdl().ok());
}

// C4: RUNNING is durable and the dispatcher dies before or during the execute send. The
// next leader records UNKNOWN (LOST_RESPONSE); the free attempt lock proves termination,
// the manifest history has no commit of the attempt: NOT_COMMITTED. Never redispatched.
class CrashCutC4 : public CrashCutTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(CrashCutC4, LostDispatchIsUnknownThenNotCommittedAndNeverRedispatched) {
  const int64_t id = Admit("cat_idx").job_id;
  const size_t versions = Versions();
  const std::string fp = GetParam();
  const int status = RunChild([this, fp](JobStore* s) {
    MarkingExecutor executor(dir_.path());
    return ChildLeader(s, &executor, fp);
  });
  ASSERT_TRUE(Killed(status)) << Describe(status);
  JobRecord running = Get(id);
  ASSERT_EQ(running.state.execution, Execution::kRunning);
  ASSERT_TRUE(running.attempt.has_value());
  EXPECT_EQ(MarkingExecutor::Sends(dir_.path(), id), fp == std::string("runner.after_dispatch") ? 0 : 1);
  EXPECT_TRUE(FenceHeld(id));
  EXPECT_EQ(DropTable().code(), StatusCode::kFailedPrecondition);

  MarkingExecutor executor(dir_.path());
  auto leader = Restart(&executor, kChildLeader, 3);
  JobRecord done = Get(id);
  EXPECT_EQ(done.state.outcome, Outcome::kNotCommitted);
  EXPECT_EQ(done.state.reconcile, ReconcileState::kStoppedTerminationProven);
  EXPECT_EQ(done.error_code, "LOST_RESPONSE");
  EXPECT_TRUE(done.termination_proven);
  EXPECT_TRUE(IsFinal(done.state));
  EXPECT_EQ(done.attempt, running.attempt);
  EXPECT_EQ(Count(id, event::kDispatched), 1);
  std::vector<std::string> kinds = Kinds(id);
  const std::vector<std::string> tail{"RESULT", "TERMINATION_PROVEN", "FINAL_READ", "ATTRIBUTED"};
  ASSERT_GE(kinds.size(), 2 + tail.size());
  EXPECT_EQ(std::vector<std::string>(kinds.begin() + 2, kinds.begin() + 2 + tail.size()), tail);
  auto events = Events(id);
  EXPECT_NE(events[2].detail_json.find("UNKNOWN"), std::string::npos) << events[2].detail_json;
  EXPECT_EQ(MarkingExecutor::Sends(dir_.path(), id), fp == std::string("runner.after_dispatch") ? 0 : 1);
  EXPECT_EQ(Versions(), versions);
  EXPECT_FALSE(HasIndex("cat_idx"));
  EXPECT_FALSE(FenceHeld(id));
  EXPECT_TRUE(NoopDdl().ok());
  EXPECT_TRUE(ProbeName("cat_idx").ok());
}

INSTANTIATE_TEST_SUITE_P(CrashCut, CrashCutC4, ::testing::Values("runner.after_dispatch", "executor.before_invoke"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return info.index == 0 ? std::string("AfterDispatch") : std::string("BeforeInvoke");
                         });

// C5: two processes race for the leader lease, exactly one wins; a demoted leader whose
// attempt is still running (it holds the attempt lock) has its callbacks, its sends and its
// commit rejected by epoch. The new leader does not wait for it: the lease check refuses the
// claim of an attempt dispatched under an older epoch, so it settles the job NOT_COMMITTED at
// once (the seed keeps it UNKNOWN with its fence until the old process is proven gone).
TEST_F(CrashCutTest, C5_LeaseRaceAndDemotedLeader) {
  int64_t epoch = store_->cluster().GetLeader()->epoch;
  for (int round = 0; round < 6; ++round) {
    clock_.AdvanceMs(kTtl + 1);  // the previous round's lease has lapsed
    auto racer = [this](const std::string& holder) {
      return [this, holder](JobStore* s) {
        InProcessExecutor executor;
        Leader leader(s, &executor, LeaderOpts(holder, ""), &clock_);
        Status st = leader.Start();
        if (st.ok()) return 0;
        return st.code() == StatusCode::kBusy ? 1 : 50 + static_cast<int>(st.code());
      };
    };
    std::vector<int> st = Race({racer("racer-a"), racer("racer-b")});
    const int a = ExitCode(st[0]);
    const int b = ExitCode(st[1]);
    ASSERT_TRUE((a == 0 && b == 1) || (a == 1 && b == 0))
        << "round " << round << ": " << Describe(st[0]) << ", " << Describe(st[1]);
    auto lease = store_->cluster().GetLeader();
    ASSERT_TRUE(lease.ok());
    EXPECT_EQ(lease->holder, a == 0 ? "racer-a" : "racer-b");
    EXPECT_EQ(lease->epoch, epoch + 1) << "exactly one acquisition per round";
    epoch = lease->epoch;
  }

  // The old leader dispatches J1 and its executor blocks (the send may have executed).
  clock_.AdvanceMs(kTtl + 1);
  const int64_t j1 = Admit("j1_idx").job_id;
  Pipe ready, go, report;
  const int ready_w = ready.w, go_r = go.r, report_w = report.w;
  const int64_t old_now = clock_.NowMs();
  // Blocks after the send until `go`, then (as the demoted leader) tries to dispatch the
  // other pending job with its old epoch, reports that code, and lets the provider commit.
  class StaleExecutor : public Executor {
   public:
    StaleExecutor(JobStore* s, int ready_w, int go_r, int report_w, int64_t now)
        : s_(s), ready_w_(ready_w), go_r_(go_r), report_w_(report_w), now_(now) {}
    ExecutionOutcome Execute(const ExecutionRequest& r) override {
      WriteByte(ready_w_, 'r');
      char c;
      (void)ReadByte(go_r_, &c);
      JobFilter f;
      f.state = "PENDING";
      auto pending = s_->List(f);
      StatusCode code = StatusCode::kInternal;
      if (pending.ok()) {
        for (const JobRecord& j : *pending) {
          if (j.job_id == r.job.job_id) continue;
          AttemptIdentity a = r.attempt;
          a.attempt_id = std::to_string(j.job_id) + "-stale";
          code = s_->Dispatch({j.job_id, j.revision, r.attempt.leader_epoch, kOldLeader, now_}, a).status().code();
        }
      }
      WriteByte(report_w_, static_cast<char>(code));
      return inner_.Execute(r);
    }

   private:
    JobStore* s_;
    int ready_w_, go_r_, report_w_;
    int64_t now_;
    InProcessExecutor inner_;
  };
  const pid_t old_leader = Fork([&, ready_w, go_r, report_w, old_now](JobStore* s) -> int {
    StaleExecutor executor(s, ready_w, go_r, report_w, old_now);
    RunnerOptions o;
    o.leader_holder = kOldLeader;
    o.lease_ttl_ms = kTtl;
    o.attempt_deadline_ms = 100 * kTtl;  // still running within its deadline when the lease lapses
    JobRunner runner(s, &executor, o);
    if (!runner.Start(old_now).ok()) return kChildFailed;
    auto ran = runner.RunOnePending(old_now);  // the result callback comes back with the old epoch
    WriteByte(report_w, static_cast<char>(ran.status().code()));
    return 0;
  });
  ready.CloseW();
  go.CloseR();
  report.CloseW();
  char c;
  ASSERT_TRUE(ReadByte(ready.r, &c)) << "the old leader did not dispatch";
  JobRecord running = Get(j1);
  ASSERT_EQ(running.state.execution, Execution::kRunning);
  const int64_t old_epoch = running.attempt->leader_epoch;

  // Its lease lapses; a new leader takes over and settles J1 by the fence, though the old
  // process still holds the attempt lock.
  clock_.AdvanceMs(kTtl + 1);
  InProcessExecutor executor;
  auto leader = Restart(&executor, "", 3);
  EXPECT_GT(leader->leader_epoch(), old_epoch);
  JobRecord j1_done = Get(j1);
  EXPECT_EQ(j1_done.state.outcome, Outcome::kNotCommitted);
  EXPECT_EQ(DerivedState(j1_done.state), "FAILED");
  EXPECT_EQ(j1_done.error_code, "LOST_RESPONSE");
  EXPECT_NE(Detail(j1, event::kTerminationProven).find("CATALOG_FENCE"), std::string::npos);
  EXPECT_FALSE(FenceHeld(j1));
  EXPECT_EQ(::kill(old_leader, 0), 0) << "the demoted leader still runs its attempt";

  // The demoted leader's dispatch of J2 and its result for J1 are both rejected.
  const JobRecord j2 = Admit("j2_idx");
  WriteByte(go.w, 'g');
  char dispatch_code = 0, record_code = 0;
  ASSERT_TRUE(ReadByte(report.r, &dispatch_code));
  ASSERT_TRUE(ReadByte(report.r, &record_code));
  const int exit_status = Wait(old_leader);
  EXPECT_EQ(ExitCode(exit_status), 0) << Describe(exit_status);
  EXPECT_EQ(static_cast<StatusCode>(dispatch_code), StatusCode::kCommitConflict);
  EXPECT_EQ(static_cast<StatusCode>(record_code), StatusCode::kCommitConflict);
  EXPECT_EQ(Get(j2.job_id).revision, j2.revision);
  EXPECT_FALSE(Get(j2.job_id).attempt.has_value());
  EXPECT_EQ(Get(j1).revision, j1_done.revision);
  // The old executor's send executed, but the catalog refused its claim: the job no longer
  // runs its attempt, and the epoch it was dispatched under no longer holds the lease.
  EXPECT_NE(Newest().txn.attempt_id, running.attempt->attempt_id);
  EXPECT_FALSE(HasIndex("j1_idx"));

  // The new leader runs J2; J1 stays settled.
  Tick(leader.get(), 3);
  EXPECT_EQ(Get(j1).revision, j1_done.revision);
  EXPECT_EQ(Count(j1, event::kDispatched), 1);
  JobRecord j2_done = Get(j2.job_id);
  EXPECT_EQ(DerivedState(j2_done.state), "FINISHED");
  ASSERT_TRUE(j2_done.attempt.has_value());
  EXPECT_EQ(j2_done.attempt->leader_epoch, leader->leader_epoch());
  EXPECT_TRUE(NoopDdl().ok());
}

// C6: the worker commits and the response is lost (killed right after the provider's
// commit, or after the executor returned but before the result was recorded). UNKNOWN,
// then attributed COMMITTED from the manifest's attempt id; refresh DONE; FINISHED.
class CrashCutC6 : public CrashCutTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(CrashCutC6, CommitWithLostResponseIsAttributedCommitted) {
  const int64_t id = Admit("cat_idx").job_id;
  const std::string fp = GetParam();
  const int status = RunChild([this, fp](JobStore* s) {
    InProcessExecutor executor;
    return ChildLeader(s, &executor, fp);
  });
  ASSERT_TRUE(Killed(status)) << Describe(status);
  JobRecord running = Get(id);
  ASSERT_EQ(running.state.execution, Execution::kRunning);
  const VersionInfo committed = Newest();
  EXPECT_EQ(committed.txn.attempt_id, running.attempt->attempt_id);
  EXPECT_EQ(committed.txn.job_id, id);
  const size_t versions = Versions();
  const int64_t generation = TableGeneration();
  EXPECT_TRUE(FenceHeld(id));

  InProcessExecutor executor;
  auto leader = Restart(&executor, kChildLeader, 3);
  JobRecord done = Get(id);
  EXPECT_EQ(DerivedState(done.state), "FINISHED");
  EXPECT_EQ(done.state.outcome, Outcome::kCommitted);
  EXPECT_EQ(done.state.refresh, RefreshState::kDone);
  EXPECT_EQ(done.committed_version, static_cast<int64_t>(committed.version));
  EXPECT_EQ(Count(id, event::kDispatched), 1);
  std::vector<std::string> kinds = Kinds(id);
  const std::vector<std::string> expected{"ADMITTED",        "DISPATCHED",         "RESULT",
                                          "CHANGE_OBSERVED", "TERMINATION_PROVEN", "FINAL_READ",
                                          "ATTRIBUTED",      "REFRESH_STARTED",    "REFRESH_DONE"};
  EXPECT_EQ(kinds, expected);
  EXPECT_EQ(Versions(), versions);  // attribution reads, it never replays the mutation
  EXPECT_EQ(TableGeneration(), generation + 1);
  EXPECT_TRUE(HasIndex("cat_idx"));
  EXPECT_FALSE(FenceHeld(id));
  EXPECT_TRUE(NoopDdl().ok());
}

INSTANTIATE_TEST_SUITE_P(CrashCut, CrashCutC6, ::testing::Values("provider.after_commit", "runner.before_record"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return info.index == 0 ? std::string("AfterProviderCommit") : std::string("BeforeRecord");
                         });

// C7: the attempt's hard deadline passed without a reap proof (its worker holds the attempt
// lock). The seed keeps such a job watching until the worker is seen to die; Vigil's catalog
// fence is a proof already: the job no longer runs the attempt, so the store refuses its
// claim. The next leader settles it NOT_COMMITTED at once, and the worker's late commit,
// when it wakes, publishes nothing.
TEST_F(CrashCutTest, C7_DeadlineWithoutReapIsSettledByTheFence) {
  const JobRecord job = Admit("cat_idx");
  const std::string attempt_id = std::to_string(job.job_id) + "-attempt";
  Pipe ready, go;
  const pid_t worker = ForkWorker(job, attempt_id, ready, go, /*commit=*/true, false);
  char c;
  ASSERT_TRUE(ReadByte(ready.r, &c));
  JobRecord unknown = DispatchLost(job, attempt_id);
  ASSERT_EQ(unknown.state.outcome, Outcome::kUnknown);
  const size_t versions = Versions();

  clock_.SetMs(unknown.attempt->deadline_at_ms + 1);
  Reopen();
  InProcessExecutor executor;
  auto leader = Restart(&executor, kOldLeader, 3);
  JobRecord done = Get(job.job_id);
  EXPECT_EQ(done.state.outcome, Outcome::kNotCommitted);
  EXPECT_TRUE(done.termination_proven);
  EXPECT_TRUE(IsFinal(done.state));
  EXPECT_EQ(DerivedState(done.state), "FAILED");
  EXPECT_NE(Detail(job.job_id, event::kTerminationProven).find("CATALOG_FENCE"), std::string::npos);
  EXPECT_FALSE(FenceHeld(job.job_id));
  EXPECT_EQ(::kill(worker, 0), 0) << "the proof did not need the worker to stop";

  // The worker wakes and commits: the store refuses its claim.
  WriteByte(go.w, 'g');
  const int status = Wait(worker);
  EXPECT_EQ(ExitCode(status), kChildRefused) << Describe(status);
  EXPECT_EQ(Versions(), versions);
  EXPECT_FALSE(HasIndex("cat_idx"));
  EXPECT_TRUE(ProbeName("cat_idx").ok());
  EXPECT_TRUE(NoopDdl().ok());
}

// C8: a termination proof arrives for a watched UNKNOWN job whose worker committed (under its
// leader's lease) and still lives: a proof for another attempt does not match; the catalog's
// fence does, so TERMINATION_PROVEN, the final authoritative read, then attribution, in order,
// while the worker still hangs.
TEST_F(CrashCutTest, C8_MatchingTerminationProofThenFinalReadThenAttribution) {
  const JobRecord job = Admit("cat_idx");
  const std::string attempt_id = std::to_string(job.job_id) + "-attempt";
  Pipe ready, go;
  const pid_t worker = ForkWorker(job, attempt_id, ready, go, /*commit=*/true, /*hang_after_commit=*/true);
  char c;
  ASSERT_TRUE(ReadByte(ready.r, &c));
  // The worker commits while its job runs the attempt, then hangs holding its lock; the
  // response is lost.
  JobRecord unknown = DispatchLost(job, attempt_id, [&] {
    WriteByte(go.w, 'g');
    for (int i = 0; i < 3000 && Newest().txn.attempt_id != attempt_id; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  ASSERT_EQ(unknown.state.outcome, Outcome::kUnknown);
  ASSERT_EQ(unknown.state.reconcile, ReconcileState::kWatching);
  const VersionInfo committed = Newest();
  ASSERT_EQ(committed.txn.attempt_id, attempt_id);
  // A proof for another attempt does not match.
  const int64_t epoch = store_->cluster().GetLeader()->epoch;
  EXPECT_EQ(store_
                ->ProveTermination({unknown.job_id, unknown.revision, epoch, kOldLeader, clock_.NowMs()}, "other",
                                   TerminationProof::kCatalogFence)
                .status()
                .code(),
            StatusCode::kCommitConflict);
  EXPECT_EQ(Get(job.job_id).revision, unknown.revision);

  Reopen();
  InProcessExecutor executor;
  auto leader = Restart(&executor, kOldLeader, 2);
  JobRecord done = Get(job.job_id);
  EXPECT_EQ(done.state.outcome, Outcome::kCommitted);
  EXPECT_EQ(done.committed_version, static_cast<int64_t>(committed.version));
  EXPECT_EQ(done.last_observed_version, static_cast<int64_t>(committed.version));
  EXPECT_EQ(DerivedState(done.state), "FINISHED");
  EXPECT_EQ(::kill(worker, 0), 0) << "the worker still hangs after its commit";
  // The commit was observed (it preceded the lost response); the proof, the final read and
  // the attribution follow one another.
  std::vector<JobEvent> events = Events(job.job_id);
  size_t observed = 0, i = 0;
  while (observed < events.size() && events[observed].kind != event::kChangeObserved) ++observed;
  while (i < events.size() && events[i].kind != event::kTerminationProven) ++i;
  ASSERT_LT(observed, i);
  ASSERT_LT(i + 2, events.size());
  EXPECT_EQ(events[i + 1].kind, event::kFinalRead);
  EXPECT_EQ(events[i + 2].kind, event::kAttributed);
  for (size_t k = i; k < i + 2; ++k) EXPECT_EQ(events[k + 1].seq, events[k].seq + 1);
  EXPECT_NE(events[i].detail_json.find(attempt_id), std::string::npos) << events[i].detail_json;
  EXPECT_NE(events[i].detail_json.find("CATALOG_FENCE"), std::string::npos) << events[i].detail_json;
  EXPECT_NE(events[i + 1].detail_json.find(std::to_string(committed.version)), std::string::npos);
  EXPECT_FALSE(FenceHeld(job.job_id));
  ::kill(worker, SIGKILL);
  EXPECT_TRUE(Killed(Wait(worker)));
}

// C9: the outcome and REQUIRED are durable but the refresh is not done (killed before the
// refresh started, or after RefreshStart). The next leader retries the refresh only and
// reaches DONE; the mutation is never replayed.
TEST_F(CrashCutTest, C9_OutcomeDurableRefreshNotStarted) {
  const int64_t id = Admit("cat_idx").job_id;
  const int status = RunChild([this](JobStore* s) {
    InProcessExecutor executor;
    RunnerOptions o;
    o.leader_holder = kChildLeader;
    o.lease_ttl_ms = kTtl;
    JobRunner runner(s, &executor, o);
    if (!runner.Start(clock_.NowMs()).ok() || !runner.RunOnePending(clock_.NowMs()).ok()) return kChildFailed;
    ::kill(::getpid(), SIGKILL);  // the result is recorded; the refresh has not started
    return kChildNotKilled;
  });
  ASSERT_TRUE(Killed(status)) << Describe(status);
  JobRecord mid = Get(id);
  EXPECT_EQ(mid.state.outcome, Outcome::kCommitted);
  EXPECT_EQ(mid.state.refresh, RefreshState::kRequired);
  EXPECT_EQ(DerivedState(mid.state), "REFRESHING");
  EXPECT_TRUE(FenceHeld(id));
  EXPECT_EQ(DropTable().code(), StatusCode::kFailedPrecondition);
  const size_t versions = Versions();
  const int64_t generation = TableGeneration();

  InProcessExecutor executor;
  auto leader = Restart(&executor, kChildLeader, 2);
  JobRecord done = Get(id);
  EXPECT_EQ(DerivedState(done.state), "FINISHED");
  EXPECT_EQ(done.state.refresh, RefreshState::kDone);
  EXPECT_EQ(done.committed_version, mid.committed_version);
  EXPECT_EQ(Versions(), versions);
  EXPECT_EQ(TableGeneration(), generation + 1);
  EXPECT_EQ(Count(id, event::kDispatched), 1);
  EXPECT_EQ(Count(id, event::kRefreshStarted), 1);
  EXPECT_EQ(Count(id, event::kRefreshDone), 1);
  EXPECT_FALSE(FenceHeld(id));
  EXPECT_TRUE(NoopDdl().ok());
}

TEST_F(CrashCutTest, C9_RefreshStartedNotDoneIsRetriedOnly) {
  const int64_t id = Admit("cat_idx").job_id;
  const int status = RunChild([this](JobStore* s) {
    InProcessExecutor executor;
    return ChildLeader(s, &executor, "runner.after_refresh_start");
  });
  ASSERT_TRUE(Killed(status)) << Describe(status);
  JobRecord mid = Get(id);
  EXPECT_EQ(mid.state.outcome, Outcome::kCommitted);
  EXPECT_EQ(mid.state.refresh, RefreshState::kRunning);
  EXPECT_EQ(DerivedState(mid.state), "REFRESHING");
  EXPECT_TRUE(FenceHeld(id));
  EXPECT_EQ(DropTable().code(), StatusCode::kFailedPrecondition);
  const size_t versions = Versions();
  const int64_t generation = TableGeneration();

  InProcessExecutor executor;
  auto leader = Restart(&executor, kChildLeader, 2);
  JobRecord done = Get(id);
  EXPECT_EQ(DerivedState(done.state), "FINISHED");
  EXPECT_EQ(done.state.refresh, RefreshState::kDone);
  EXPECT_EQ(done.refresh_generation, mid.refresh_generation);  // the same refresh, completed
  EXPECT_EQ(Versions(), versions);
  EXPECT_EQ(TableGeneration(), generation + 1);
  EXPECT_EQ(Count(id, event::kDispatched), 1);
  EXPECT_EQ(Count(id, event::kRefreshStarted), 1);
  EXPECT_EQ(Count(id, event::kRefreshDone), 1);
  EXPECT_FALSE(FenceHeld(id));
  EXPECT_TRUE(NoopDdl().ok());
}

// C10: FORCE_RELEASE is pending and its refresh was started, but the final CAS is not
// durable. The next leader replays the same refresh generation and final CAS with the same
// resolution id; fence and guard stay until that record.
TEST_F(CrashCutTest, C10_PendingForceRefreshReplaysTheSameFinalCas) {
  const JobRecord job = Admit("cat_idx");
  const std::string attempt_id = std::to_string(job.job_id) + "-attempt";
  Pipe ready, go;
  ForkWorker(job, attempt_id, ready, go, /*commit=*/false, false);  // may still commit: no attribution
  char c;
  ASSERT_TRUE(ReadByte(ready.r, &c));
  ASSERT_EQ(DispatchLost(job, attempt_id).state.outcome, Outcome::kUnknown);
  auto requested = Control().Resolve(job.job_id, ResolveAction::kForceRelease, "operator accepts the risk",
                                     auth::Principal::LocalAdmin());
  ASSERT_TRUE(requested.ok()) << requested.status().ToString();
  ASSERT_EQ(requested->job.state.disposition, Disposition::kForceRefreshPending);
  const std::string resolution = requested->job.resolution_id.value_or("");
  ASSERT_FALSE(resolution.empty());
  const int64_t generation = TableGeneration();

  const int status = RunChild([this](JobStore* s) {
    InProcessExecutor executor;
    return ChildLeader(s, &executor, "runner.after_refresh_start", kOldLeader);
  });
  ASSERT_TRUE(Killed(status)) << Describe(status);
  JobRecord mid = Get(job.job_id);
  EXPECT_EQ(mid.state.outcome, Outcome::kUnknown);
  EXPECT_EQ(mid.state.refresh, RefreshState::kRunning);
  EXPECT_EQ(mid.state.disposition, Disposition::kForceRefreshPending);
  EXPECT_EQ(mid.resolution_id, resolution);
  EXPECT_EQ(TableGeneration(), generation);
  EXPECT_TRUE(FenceHeld(job.job_id));
  EXPECT_TRUE(GuardHeld(job.job_id));
  EXPECT_EQ(DropTable().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ProbeName("cat_idx").code(), StatusCode::kAlreadyExists);

  InProcessExecutor executor;
  auto leader = Restart(&executor, kChildLeader, 2);
  JobRecord done = Get(job.job_id);
  EXPECT_EQ(done.state.outcome, Outcome::kUnknown);
  EXPECT_EQ(done.state.disposition, Disposition::kForceReleased);
  EXPECT_EQ(done.state.reconcile, ReconcileState::kStoppedByForce);
  EXPECT_EQ(done.state.refresh, RefreshState::kDone);
  EXPECT_EQ(done.refresh_generation, mid.refresh_generation);
  EXPECT_EQ(TableGeneration(), generation + 1);
  EXPECT_EQ(Count(job.job_id, event::kRefreshStarted), 1);
  EXPECT_EQ(Count(job.job_id, event::kRefreshDone), 1);
  int completions = 0;
  for (const JobEvent& e : Events(job.job_id)) {
    if (e.kind == event::kForceRequested || e.kind == event::kForceCompleted) {
      EXPECT_EQ(e.resolution_id, resolution) << e.kind;
    }
    completions += e.kind == event::kForceCompleted;
  }
  EXPECT_EQ(completions, 1);
  EXPECT_FALSE(FenceHeld(job.job_id));
  EXPECT_FALSE(GuardHeld(job.job_id));
  EXPECT_TRUE(NoopDdl().ok());
}

// C11: FORCE_RELEASE is durable and the leader dies before anything else; the old executor
// tries to commit later with its attempt id, and the version catalog refuses it in the
// claim's transaction (the job no longer runs that attempt): no version, no index. Guards
// replay as released from the record, the outcome stays UNKNOWN / FORCE_RELEASED (the
// operator's decision stands), a same-name job can be admitted, and REFRESH TABLE bumps the
// table's refresh generation.
TEST_F(CrashCutTest, C11_LateCommitAfterForceIsRefused) {
  const JobRecord job = Admit("cat_idx");
  const std::string attempt_id = std::to_string(job.job_id) + "-attempt";
  Pipe ready, go;
  const pid_t worker = ForkWorker(job, attempt_id, ready, go, /*commit=*/true, false);
  char c;
  ASSERT_TRUE(ReadByte(ready.r, &c));
  ASSERT_EQ(DispatchLost(job, attempt_id).state.outcome, Outcome::kUnknown);
  auto requested = Control().Resolve(job.job_id, ResolveAction::kForceRelease, "worker host is being reimaged",
                                     auth::Principal::LocalAdmin());
  ASSERT_TRUE(requested.ok()) << requested.status().ToString();

  // The leader completes the FORCE (refresh and final CAS) and is killed right after.
  const int status = RunChild([this](JobStore* s) {
    InProcessExecutor executor;
    auto leader = MakeLeader(s, &executor, kChildLeader, kOldLeader);
    if (!leader->Start().ok()) return kChildFailed;
    ::kill(::getpid(), SIGKILL);
    return kChildNotKilled;
  });
  ASSERT_TRUE(Killed(status)) << Describe(status);
  JobRecord released = Get(job.job_id);
  EXPECT_EQ(released.state.outcome, Outcome::kUnknown);
  EXPECT_EQ(released.state.disposition, Disposition::kForceReleased);
  EXPECT_EQ(DerivedState(released.state), "OUTCOME_UNKNOWN");
  EXPECT_FALSE(FenceHeld(job.job_id));
  EXPECT_FALSE(GuardHeld(job.job_id));
  const int64_t generation = TableGeneration();
  const size_t versions = Versions();

  // The old executor tries to commit late, with the old attempt id: refused, nothing published.
  WriteByte(go.w, 'g');
  const int worker_status = Wait(worker);
  ASSERT_EQ(ExitCode(worker_status), kChildRefused) << Describe(worker_status);
  EXPECT_EQ(Versions(), versions);
  EXPECT_NE(Newest().txn.attempt_id, attempt_id);
  EXPECT_FALSE(HasIndex("cat_idx"));

  InProcessExecutor executor;
  auto leader = Restart(&executor, kChildLeader, 3);
  clock_.AdvanceMs(3'600'000);  // long after every backoff
  Tick(leader.get(), 2);
  JobRecord after = Get(job.job_id);
  EXPECT_EQ(after.revision, released.revision) << "nothing touches a force-released job";
  EXPECT_EQ(after.state.outcome, Outcome::kUnknown);
  EXPECT_EQ(after.state.disposition, Disposition::kForceReleased);
  EXPECT_EQ(Count(job.job_id, event::kAttributed), 0);
  EXPECT_FALSE(FenceHeld(job.job_id));
  EXPECT_TRUE(NoopDdl().ok());
  EXPECT_EQ(TableGeneration(), generation) << "a late commit is not refreshed by itself";
  // A new same-name job is admitted.
  EXPECT_TRUE(ProbeName("cat_idx").ok());
  auto refreshed = Control().RefreshTable("local", "db", "docs", auth::Principal::LocalAdmin());
  ASSERT_TRUE(refreshed.ok()) << refreshed.status().ToString();
  EXPECT_EQ(*refreshed, generation + 1);
  EXPECT_EQ(TableGeneration(), generation + 1);
}

}  // namespace
}  // namespace vigil::jobs
