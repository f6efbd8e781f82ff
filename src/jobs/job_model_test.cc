// The model-based property test of the index-job lifecycle (issues 4 and 13; seed
// 000 sections 7.1-7.3, 8.1-8.2 and appendix C). Random sequences of admissions
// (CREATE / DROP, IF modes, pre-dispatch NOOP), CANCEL and a half-done cancel,
// dispatches whose scripted executor returns a result of every class (success,
// proven non-invocation, CommitConflict / AlreadyExists / NotFound / IO error
// after invocation, a lost response with the worker dead or still alive, the
// leader demoted during the attempt), leader crashes and restarts (recovery
// pass with a new epoch), refresh runs and failures, reconciliation passes,
// worker exits, RESOLVE ACK / FORCE_RELEASE / FORCE_RELEASE WITHOUT REFRESH,
// archival, stale callbacks and DROP TABLE run against the real JobStore on a
// fresh SQLite file per sequence, the real JobRunner, Leader, Reconciler and
// JobControl over real datasets. After every step it checks, for every job
// (archived ones too): CheckLegal, the derived state (and that listing by it
// finds exactly those jobs), I1 (a dispatched job has its full attempt
// identity, durable and locked before the executor ran), I2 (no job executed or
// DISPATCHED twice), fence and guard rows exactly while HoldsFence, that a live
// worker's job still counts as possibly committing and keeps its fence while
// the store would accept its claim (an UNKNOWN job, or one dispatched under a
// replaced leader epoch, is settled at once: the store refuses its claim),
// the event log (one seq per revision, from/to states
// continuous and legal, append-only), that an outcome never changes except
// UNKNOWN through attribution after TERMINATION_PROVEN, that a fence is only
// released by a complete result or FORCE while an executor may commit, at most
// one RUNNING attempt per table and at most `concurrency` per runner (node
// epoch), and the expected effect of the step itself (e.g. DROP TABLE succeeds
// iff no job of the table holds its fence; a dispatch takes the oldest PENDING
// jobs of tables without a running attempt; after a recovery pass or refresh
// run nothing is left REQUIRED, RUNNING or due; a demoted leader changes nothing).
//
// RandomCommandSequencesKeepEveryInvariant runs one table and the synchronous
// RunOnePending. ConcurrentAttemptsKeepTheInvariants (issue 13) runs three tables
// and two dispatchers of the leader process with concurrency 2: Leader::Tick and a
// JobRunner's StartPending. Their attempts wait inside the executor until a step
// releases them (one, or all of a runner at once, with any scripts), so the steps
// choose the interleavings. A leader process can crash with attempts in flight
// (nothing of them is recorded, its lock descriptors close, their workers live on
// or die), or a new leader can take over while the old process still runs (a
// zombie, whose attempts and passes must change nothing). An attempt in flight
// must stay its job's persisted attempt, possibly committing and fenced (unless
// FORCE), and RUNNING while its process is the leader's.
//
// RC_PARAMS (e.g. "max_success=500 max_size=80 seed=...") overrides the default budget.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "testutil/fake_env.h"
#include "testutil/temp_dir.h"
#include "vigil/common/failpoint.h"
#include "vigil/common/file_lock.h"
#include "vigil/ingest/datagen.h"
#include "vigil/jobs/admission.h"
#include "vigil/jobs/classification.h"
#include "vigil/jobs/executor.h"
#include "vigil/jobs/job_control.h"
#include "vigil/jobs/job_store.h"
#include "vigil/jobs/leader.h"
#include "vigil/jobs/reconciler.h"
#include "vigil/jobs/runner.h"
#include "vigil/storage/dataset.h"

namespace vigil::jobs {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000;
constexpr int64_t kLeaseTtlMs = 24LL * 3'600'000;                       // longer than any clock jump but a TTL wait
constexpr int64_t kReconcileJumpMs = 31LL * 60'000;                     // past the 30 min maximum watcher backoff
constexpr const char* kNames[] = {"idx_a", "idx_b", "Idx_C", "IDX_A"};  // IDX_A collides with idx_a by case
constexpr int kNameCount = 4;
constexpr const char* kTables[] = {"docs", "notes", "logs"};  // each its own dataset
constexpr int kTableCount = 3;
constexpr const char* kNote = "model resolution";
// The two dispatchers of a leader process: its Leader's runner and the model's runner.
constexpr const char* kLeaderNode = "local";
constexpr const char* kModelNode = "model-node";
constexpr auto kWaitLimit = std::chrono::seconds(120);  // for an attempt thread (TSan is slow)

// ---- Commands: plain values so that rapidcheck shrinks them ----

enum class Op {
  kAdmitCreate,       // Admission::Create, flag: IF NOT EXISTS
  kAdmitDrop,         // JobStore::Admit of a DROP spec (the index "exists"), flag: IF EXISTS
  kAdmitDropNoop,     // Admission::Drop IF EXISTS of a missing index: a pre-dispatch NOOP
  kCancel,            // JobControl::Cancel
  kBeginCancel,       // only the first CAS of CANCEL (crash cut C3)
  kDispatch,          // JobRunner::RunOnePending with the scripted result
  kRunRefreshes,      // JobRunner::RunRefreshes
  kRefreshFailure,    // RefreshStart + RefreshDone(ok=false) by the leader
  kReconcile,         // clock +31 min, Reconciler::RunDue
  kWorkerExit,        // a still-running worker exits (its attempt lock is released)
  kResolve,           // JobControl::Resolve, action: ACK / FORCE / FORCE WITHOUT REFRESH
  kDropTable,         // JobControl::DropTable, re-registered on success
  kArchive,           // JobStore::Archive of everything finished so far
  kAdvanceClock,      // action: 1 s / 45 s / 40 min
  kStaleCallback,     // results / refresh completions with a wrong attempt, epoch or generation
  kCrash,             // flag: workers die too; action odd: wait out the lease instead of takeover
  kRefreshThenCrash,  // RefreshStart, then the leader dies before RefreshDone (crash cut C9)
  // The concurrent property only:
  kStartPending,       // the model's JobRunner::StartPending; the attempts wait inside the executor
  kTick,               // Leader::Tick: takes finished attempts, starts pending ones, refreshes, reconciles
  kRelease,            // held attempts end with scripts: one of a model runner's (!flag), or all of a runner's
  kTakeover,           // a new leader takes the lease while the old process still runs (a zombie)
  kZombie,             // action: a zombie's StartPending / Tick / reconcile pass
  kReleaseDuringTick,  // the current process's attempts end while its Leader ticks (a race)
};

enum class Script {
  kSuccess,          // complete, invoked, OK, committed version
  kNotInvoked,       // complete, invoked=false (e.g. the worker refused before the provider)
  kNotInvokedStale,  // complete, invoked=false, FailedPrecondition (stale admission: refresh)
  kBeforeRequest,    // launch failed before the request was delivered
  kConflict,         // CommitConflict after invocation
  kAlreadyExists,    // AlreadyExists after invocation
  kNotFound,         // NotFound after invocation
  kIoError,          // IO error after invocation
  kLost,             // no complete response; the worker is gone
  kLostAlive,        // no complete response; the worker still runs (may still commit)
  kLeaderLost,       // the leader is demoted while the attempt runs; the worker is gone
  kLeaderLostAlive,  // the leader is demoted while the attempt runs; the worker still runs
};
constexpr int kScriptCount = 12;

bool Demotes(Script s) { return s == Script::kLeaderLost || s == Script::kLeaderLostAlive; }

struct Cmd {
  Op op = Op::kAdmitCreate;
  int name = 0;    // index into kNames
  int job = 0;     // index into the candidates of the command (modulo their count)
  int script = 0;  // Script
  int action = 0;  // ResolveAction, clock step, crash mode, script spread of a release, zombie pass
  bool flag = false;
  int table = 0;  // index into the registered tables (modulo their count)
};

const char* OpName(Op op) {
  switch (op) {
    case Op::kAdmitCreate:
      return "AdmitCreate";
    case Op::kAdmitDrop:
      return "AdmitDrop";
    case Op::kAdmitDropNoop:
      return "AdmitDropNoop";
    case Op::kCancel:
      return "Cancel";
    case Op::kBeginCancel:
      return "BeginCancel";
    case Op::kDispatch:
      return "Dispatch";
    case Op::kRunRefreshes:
      return "RunRefreshes";
    case Op::kRefreshFailure:
      return "RefreshFailure";
    case Op::kReconcile:
      return "Reconcile";
    case Op::kWorkerExit:
      return "WorkerExit";
    case Op::kResolve:
      return "Resolve";
    case Op::kDropTable:
      return "DropTable";
    case Op::kArchive:
      return "Archive";
    case Op::kAdvanceClock:
      return "AdvanceClock";
    case Op::kStaleCallback:
      return "StaleCallback";
    case Op::kCrash:
      return "Crash";
    case Op::kRefreshThenCrash:
      return "RefreshThenCrash";
    case Op::kStartPending:
      return "StartPending";
    case Op::kTick:
      return "Tick";
    case Op::kRelease:
      return "Release";
    case Op::kTakeover:
      return "Takeover";
    case Op::kZombie:
      return "Zombie";
    case Op::kReleaseDuringTick:
      return "ReleaseDuringTick";
  }
  return "?";
}

const char* ScriptName(int s) {
  static const char* const kScriptNames[kScriptCount] = {
      "Success", "NotInvoked", "NotInvokedStale", "BeforeRequest", "Conflict",       "AlreadyExists", "NotFound",
      "IoError", "Lost",       "LostAlive",       "LeaderLost",    "LeaderLostAlive"};
  return s >= 0 && s < kScriptCount ? kScriptNames[s] : "?";
}

void showValue(const Cmd& c, std::ostream& os) {
  os << OpName(c.op);
  switch (c.op) {
    case Op::kAdmitCreate:
    case Op::kAdmitDrop:
    case Op::kAdmitDropNoop:
      os << "(table#" << c.table << ", " << kNames[c.name] << (c.flag ? ", IF" : "") << ")";
      break;
    case Op::kDispatch:
      os << "(" << ScriptName(c.script) << ")";
      break;
    case Op::kResolve:
      os << "(" << (c.flag ? "fenced " : "") << "job#" << c.job << ", " << Name(static_cast<ResolveAction>(c.action))
         << ")";
      break;
    case Op::kCrash:
      os << "(" << (c.flag ? "workers die" : "workers live") << (c.action % 2 ? ", wait TTL" : "") << ")";
      break;
    case Op::kAdvanceClock:
      os << "(" << c.action << ")";
      break;
    case Op::kDropTable:
      os << "(table#" << c.table << ")";
      break;
    case Op::kRelease:
      os << "(held#" << c.job << ", " << ScriptName(c.script)
         << (c.flag ? ", all of its runner, spread " + std::to_string(c.action) : std::string()) << ")";
      break;
    case Op::kReleaseDuringTick:
      os << "(" << ScriptName(c.script) << ", spread " << c.action << ")";
      break;
    case Op::kZombie:
      os << "(zombie#" << c.job << ", " << (c.action == 0 ? "StartPending" : c.action == 1 ? "Tick" : "RunDue") << ")";
      break;
    case Op::kArchive:
    case Op::kRunRefreshes:
    case Op::kReconcile:
    case Op::kStartPending:
    case Op::kTick:
    case Op::kTakeover:
      break;
    default:
      os << "(job#" << c.job << ")";
      break;
  }
}

rc::Gen<Cmd> BuildCmd(rc::Gen<Op> op) {
  return rc::gen::build<Cmd>(
      rc::gen::set(&Cmd::op, std::move(op)), rc::gen::set(&Cmd::name, rc::gen::inRange(0, kNameCount)),
      rc::gen::set(&Cmd::job, rc::gen::inRange(0, 8)), rc::gen::set(&Cmd::script, rc::gen::inRange(0, kScriptCount)),
      rc::gen::set(&Cmd::action, rc::gen::inRange(0, 3)), rc::gen::set(&Cmd::flag, rc::gen::arbitrary<bool>()),
      rc::gen::set(&Cmd::table, rc::gen::inRange(0, kTableCount)));
}

rc::Gen<Cmd> GenCmd() {
  return BuildCmd(rc::gen::weightedElement<Op>({{8, Op::kAdmitCreate},
                                                {3, Op::kAdmitDrop},
                                                {1, Op::kAdmitDropNoop},
                                                {2, Op::kCancel},
                                                {1, Op::kBeginCancel},
                                                {10, Op::kDispatch},
                                                {4, Op::kRunRefreshes},
                                                {3, Op::kRefreshFailure},
                                                {4, Op::kReconcile},
                                                {2, Op::kWorkerExit},
                                                {5, Op::kResolve},
                                                {2, Op::kDropTable},
                                                {1, Op::kArchive},
                                                {2, Op::kAdvanceClock},
                                                {2, Op::kStaleCallback},
                                                {3, Op::kCrash},
                                                {1, Op::kRefreshThenCrash}}));
}

rc::Gen<Cmd> GenConcurrentCmd() {
  return BuildCmd(rc::gen::weightedElement<Op>({{16, Op::kAdmitCreate},    {3, Op::kAdmitDrop},
                                                {1, Op::kAdmitDropNoop},   {2, Op::kCancel},
                                                {1, Op::kBeginCancel},     {2, Op::kDispatch},
                                                {10, Op::kStartPending},   {6, Op::kTick},
                                                {12, Op::kRelease},        {4, Op::kReleaseDuringTick},
                                                {2, Op::kTakeover},        {2, Op::kZombie},
                                                {2, Op::kRunRefreshes},    {1, Op::kRefreshFailure},
                                                {3, Op::kReconcile},       {2, Op::kWorkerExit},
                                                {3, Op::kResolve},         {2, Op::kDropTable},
                                                {1, Op::kArchive},         {2, Op::kAdvanceClock},
                                                {2, Op::kStaleCallback},   {3, Op::kCrash},
                                                {1, Op::kRefreshThenCrash}}));
}

// One sequence's metadata store folder, in memory where the machine has /dev/shm: the model
// crashes processes, not machines, so the store's fsyncs buy nothing and cost most of the time.
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl =
        (::access("/dev/shm", W_OK) == 0 ? std::string("/dev/shm") : fallback_.path()) + "/vigil-model-XXXXXX";
    VIGIL_CHECK(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  testing::TempDir fallback_;
  std::string path_;
};

// ---- The shared datasets: created once per process, never modified ----

struct SharedTable {
  std::string path;
  int64_t version = 0;
  std::string fingerprint;
};

struct SharedDataset {
  testing::TempDir dir;
  std::vector<SharedTable> tables;  // one per kTables entry
};

const SharedDataset& Data() {
  static std::unique_ptr<SharedDataset> d = [] {
    auto s = std::make_unique<SharedDataset>();
    DatagenOptions o;
    o.rows = 200;
    o.dim = 8;
    o.latent_dim = 2;
    o.words_per_body = 4;
    for (const char* name : kTables) {
      auto gen = *DataGenerator::Make(o);
      SharedTable t;
      t.path = s->dir.Join(std::string("db/") + name + ".vgl");
      auto ds = *Dataset::Create(t.path, gen->schema(), {});
      auto reader = gen->NewReader();
      VIGIL_CHECK(ds->Append(reader.get(), {}).ok());
      auto opened = *Dataset::Open(t.path);
      t.version = static_cast<int64_t>(opened->version());
      t.fingerprint = opened->schema()->fingerprint();
      s->tables.push_back(std::move(t));
    }
    return s;
  }();
  return *d;
}

#define MODEL_CHECK(cond, msg)                                                \
  do {                                                                        \
    if (!(cond)) {                                                            \
      std::ostringstream model_check_os_;                                     \
      model_check_os_ << "line " << __LINE__ << ": " << #cond << ": " << msg; \
      RC_FAIL(model_check_os_.str());                                         \
    }                                                                         \
  } while (0)

template <typename T>
T MustOk(Result<T> r, const char* what) {
  MODEL_CHECK(r.ok(), what << ": " << r.status().ToString());
  return std::move(r).value();
}

std::string StateText(const JobState& s) {
  return std::string(Name(s.execution)) + "/" + std::string(Name(s.outcome)) + "/" + std::string(Name(s.refresh)) +
         "/" + std::string(Name(s.reconcile)) + "/" + std::string(Name(s.disposition));
}

std::optional<JobState> ParseState(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t slash = text.find('/', start);
    parts.push_back(text.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (parts.size() != 5) return std::nullopt;
  auto e = ParseExecution(parts[0]);
  auto o = ParseOutcome(parts[1]);
  auto r = ParseRefreshState(parts[2]);
  auto c = ParseReconcileState(parts[3]);
  auto d = ParseDisposition(parts[4]);
  if (!e.ok() || !o.ok() || !r.ok() || !c.ok() || !d.ok()) return std::nullopt;
  return JobState{*e, *o, *r, *c, *d};
}

bool KnownOutcome(Outcome o) { return o == Outcome::kCommitted || o == Outcome::kNotCommitted || o == Outcome::kNoop; }

// What the worker reports for each script.
ExecutorReport ScriptedReport(Script s) {
  ExecutorReport r;
  r.complete = true;
  r.invoked = true;
  switch (s) {
    case Script::kSuccess:
      break;
    case Script::kNotInvoked:
      r.invoked = false;
      r.code = StatusCode::kIOError;
      break;
    case Script::kNotInvokedStale:
      r.invoked = false;
      r.code = StatusCode::kFailedPrecondition;
      break;
    case Script::kBeforeRequest:
      r.complete = false;
      r.invoked = false;
      r.failed_before_request = true;
      break;
    case Script::kConflict:
      r.code = StatusCode::kCommitConflict;
      break;
    case Script::kAlreadyExists:
      r.code = StatusCode::kAlreadyExists;
      break;
    case Script::kNotFound:
      r.code = StatusCode::kNotFound;
      break;
    case Script::kIoError:
      r.code = StatusCode::kIOError;
      break;
    case Script::kLost:
    case Script::kLostAlive:
    case Script::kLeaderLost:
    case Script::kLeaderLostAlive:
      r.complete = false;
      r.invoked = false;
      break;
  }
  return r;
}

// ---- The scripted executor: a stand-in for the worker processes of every leader ----

// Attempts called on the driving thread (RunOnePending) end at once with `script`. Attempts
// on a runner's threads (StartPending) are held until the model releases them with a script.
// Thread-safe.
class ScriptedExecutor : public Executor {
 public:
  struct Call {
    int64_t job_id = 0;
    std::string attempt_id;
  };

  ~ScriptedExecutor() override { KillAll(); }

  ExecutionOutcome Execute(const ExecutionRequest& req) override {
    const int64_t id = req.job.job_id;
    CheckDurablyRunning(req);
    Enter(req);
    Script s = Script::kSuccess;
    if (std::this_thread::get_id() == driver_) {
      s = script;
    } else {
      std::unique_lock<std::mutex> lock(mu_);
      if (release_all_) {
        s = *release_all_;
      } else {
        held_[id] = HeldAttempt{req.attempt, std::nullopt};
        cv_.notify_all();
        cv_.wait(lock, [&] { return release_all_ || held_.at(id).release; });
        s = held_.at(id).release ? *held_.at(id).release : *release_all_;
        held_.erase(id);
      }
    }
    Leave(req);
    return Finish(req, s);
  }

  // Held attempts by job id.
  std::map<int64_t, AttemptIdentity> Held() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::map<int64_t, AttemptIdentity> out;
    for (const auto& kv : held_) out.emplace(kv.first, kv.second.attempt);
    return out;
  }
  // Waits until the attempts of `jobs` are held; false after the wait limit.
  bool AwaitHeld(const std::vector<int64_t>& jobs) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWaitLimit, [&] {
      return std::all_of(jobs.begin(), jobs.end(), [&](int64_t id) { return held_.count(id) > 0; });
    });
  }
  void Release(int64_t job_id, Script s) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = held_.find(job_id);
    if (it != held_.end()) it->second.release = s;
    cv_.notify_all();
  }
  // Ends every held attempt and every one that arrives until ReleaseNone.
  void ReleaseAll(Script s) {
    std::lock_guard<std::mutex> lock(mu_);
    release_all_ = s;
    cv_.notify_all();
  }
  void ReleaseNone() {
    std::lock_guard<std::mutex> lock(mu_);
    release_all_.reset();
  }

  std::vector<Call> Calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  std::vector<std::string> Violations() const {
    std::lock_guard<std::mutex> lock(mu_);
    return violations_;
  }
  std::set<int64_t> AliveWorkers() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::set<int64_t> out;
    for (const auto& kv : alive_) out.insert(kv.first);
    return out;
  }
  // A still-running worker exits: its attempt-lock descriptor closes.
  void Exit(int64_t job_id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = alive_.find(job_id);
    if (it == alive_.end()) return;
    if (it->second >= 0) ::close(it->second);
    alive_.erase(it);
  }
  void KillAll() {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& kv : alive_) {
      if (kv.second >= 0) ::close(kv.second);
    }
    alive_.clear();
  }

  // Set while no attempt runs.
  int concurrency = 1;
  JobStore* store = nullptr;
  std::function<int64_t()> clock;
  Script script = Script::kSuccess;  // the driving thread's next attempt

 private:
  struct HeldAttempt {
    AttemptIdentity attempt;
    std::optional<Script> release;
  };

  void Violation(std::string what) {
    std::lock_guard<std::mutex> lock(mu_);
    violations_.push_back(std::move(what));
  }

  // While attempts overlap inside the executor: at most `concurrency` of one runner (node id
  // and epoch), and never two of one process (leader epoch) on one table.
  void Enter(const ExecutionRequest& req) {
    std::lock_guard<std::mutex> lock(mu_);
    const AttemptIdentity& a = req.attempt;
    int of_runner = 1;
    for (const auto& kv : inside_) {
      if (kv.second.executor_node_id == a.executor_node_id && kv.second.node_epoch == a.node_epoch) ++of_runner;
      if (kv.second.leader_epoch == a.leader_epoch && inside_tables_.at(kv.first) == req.job.spec.table_incarnation) {
        violations_.push_back("jobs " + std::to_string(kv.first) + " and " + std::to_string(req.job.job_id) +
                              " execute at once on one table");
      }
    }
    if (of_runner > concurrency) {
      violations_.push_back(std::to_string(of_runner) + " attempts of runner " + a.executor_node_id + " epoch " +
                            std::to_string(a.node_epoch) + " execute at once");
    }
    inside_[req.job.job_id] = a;
    inside_tables_[req.job.job_id] = req.job.spec.table_incarnation;
  }
  void Leave(const ExecutionRequest& req) {
    std::lock_guard<std::mutex> lock(mu_);
    inside_.erase(req.job.job_id);
    inside_tables_.erase(req.job.job_id);
  }

  // I1: RUNNING with this attempt identity is durable, and its attempt lock held, before any send.
  void CheckDurablyRunning(const ExecutionRequest& req) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.push_back({req.job.job_id, req.attempt.attempt_id});
    }
    Result<JobRecord> stored = store->Get(req.job.job_id);
    if (!stored.ok() || stored->state.execution != Execution::kRunning || !stored->attempt ||
        !(*stored->attempt == req.attempt) || !(req.job.attempt && *req.job.attempt == req.attempt)) {
      Violation("job " + std::to_string(req.job.job_id) + " was not durably RUNNING with its attempt");
    }
    Result<bool> held = FileLock::IsHeld(AttemptLockPath(req.job.spec.locator, req.attempt.attempt_id));
    if (!held.ok() || !*held || req.attempt_lock_fd < 0) {
      Violation("job " + std::to_string(req.job.job_id) + " ran without its attempt lock");
    }
  }

  ExecutionOutcome Finish(const ExecutionRequest& req, Script s) {
    ExecutionOutcome out;
    out.report = ScriptedReport(s);
    if (s == Script::kSuccess) out.committed_version = req.job.spec.start_version + 1;
    if (s != Script::kSuccess) out.message = std::string("scripted ") + ScriptName(static_cast<int>(s));
    if (s == Script::kLostAlive || s == Script::kLeaderLostAlive) {
      // The worker inherited the attempt lock and outlives the dispatcher's descriptor.
      int fd = ::fcntl(req.attempt_lock_fd, F_DUPFD_CLOEXEC, 0);
      if (fd < 0) Violation("cannot keep the attempt lock of a live worker");
      std::lock_guard<std::mutex> lock(mu_);
      alive_[req.job.job_id] = fd;
    }
    if (Demotes(s)) {
      // Another process proves this leader dead and takes the lease: the result CAS must lose (C5).
      std::string usurper;
      {
        std::lock_guard<std::mutex> lock(mu_);
        usurper = "usurper-" + std::to_string(++usurpers_);
      }
      Result<LeaderLease> lease = store->cluster().GetLeader();
      Result<LeaderLease> stolen =
          lease.ok() ? store->cluster().TakeOverLeader(usurper, *lease, clock(), kLeaseTtlMs) : lease.status();
      if (!stolen.ok()) Violation("cannot take the lease: " + stolen.status().ToString());
    }
    return out;
  }

  const std::thread::id driver_ = std::this_thread::get_id();
  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_:
  std::map<int64_t, HeldAttempt> held_;
  std::map<int64_t, AttemptIdentity> inside_;     // attempts in Execute, by job id
  std::map<int64_t, std::string> inside_tables_;  // their table incarnations
  std::optional<Script> release_all_;
  std::vector<Call> calls_;
  std::vector<std::string> violations_;
  std::map<int64_t, int> alive_;  // job id -> the live worker's attempt-lock descriptor
  int usurpers_ = 0;
};

// ---- The world: the real store, leader, runners, reconciler and commands, plus the model ----

struct Snapshot {
  std::map<int64_t, JobRecord> jobs;
  std::map<int64_t, std::vector<JobEvent>> events;
};

struct ModelConfig {
  int tables = 1;       // registered tables, the first of kTables
  int concurrency = 1;  // RunnerOptions::concurrency of both dispatchers
};

class World {
 public:
  explicit World(ModelConfig config = {}) : config_(config) {
    data_ = &Data();
    executor_.clock = [this] { return clock_.NowMs(); };
    executor_.concurrency = config_.concurrency;
    OpenStore();
    for (int t = 0; t < config_.tables; ++t) {
      tables_.push_back(
          MustOk(store_->catalog().RegisterTable("local", "db", kTables[t], data_->tables[t].path, clock_.NowMs()),
                 "register table"));
    }
    StartLeader(/*takeover=*/true);
    Check();
  }
  ~World() {
    for (const auto& kv : snap_.events) {
      for (const JobEvent& e : kv.second) ++Coverage()[e.kind];
    }
    AbandonAttempts(/*workers_die=*/true);
    executor_.KillAll();
    CloseStore();
  }

  // How often each event kind occurred over all sequences (printed once, to show what ran).
  static std::map<std::string, int64_t>& Coverage() {
    static std::map<std::string, int64_t> kinds;
    return kinds;
  }

  void Step(const Cmd& c) {
    expect_unchanged_ = false;
    switch (c.op) {
      case Op::kAdmitCreate:
        AdmitCreate(c);
        break;
      case Op::kAdmitDrop:
        AdmitDrop(c);
        break;
      case Op::kAdmitDropNoop:
        AdmitDropNoop(c);
        break;
      case Op::kCancel:
        Cancel(c);
        break;
      case Op::kBeginCancel:
        BeginCancel(c);
        break;
      case Op::kDispatch:
        DispatchOne(c);
        break;
      case Op::kRunRefreshes:
        RunRefreshes();
        break;
      case Op::kRefreshFailure:
        RefreshFailure(c);
        break;
      case Op::kReconcile:
        Reconcile();
        break;
      case Op::kWorkerExit:
        WorkerExit(c);
        break;
      case Op::kResolve:
        Resolve(c);
        break;
      case Op::kDropTable:
        DropTable(c);
        break;
      case Op::kArchive:
        Archive();
        break;
      case Op::kAdvanceClock:
        AdvanceClock(c.action == 0 ? 1'000 : c.action == 1 ? 45'000 : 40LL * 60'000);
        break;
      case Op::kStaleCallback:
        StaleCallback(c);
        break;
      case Op::kCrash:
        Crash(c.flag, c.action % 2 == 1);
        break;
      case Op::kRefreshThenCrash:
        RefreshThenCrash(c);
        break;
      case Op::kStartPending:
        StartPending();
        break;
      case Op::kTick:
        Tick();
        break;
      case Op::kRelease:
        Release(c);
        break;
      case Op::kTakeover:
        Takeover();
        break;
      case Op::kZombie:
        ZombieStep(c);
        break;
      case Op::kReleaseDuringTick:
        ReleaseDuringTick(c);
        break;
    }
    Check();
    const size_t held = executor_.Held().size();
    if (held >= 2) Saw("2+ attempts held after a step");
    if (held >= 3) Saw("3+ attempts held after a step");
  }

  // How often the situations worth covering came up over all sequences (printed once).
  static std::map<std::string, int64_t>& Situations() {
    static std::map<std::string, int64_t> seen;
    return seen;
  }

 private:
  // A leader process taken over while it still runs: demoted, its attempts still in flight.
  struct Zombie {
    int64_t epoch = 0;
    std::unique_ptr<Leader> leader;
    std::unique_ptr<JobRunner> runner;
    std::unique_ptr<Reconciler> reconciler;
  };

  // ---- Lifecycle ----

  void OpenStore() {
    JobStoreOptions so;
    so.uri = "sqlite://" + dir_.Join("meta.db");
    store_ = MustOk(JobStore::Open(so), "open store");
    executor_.store = store_.get();
  }
  void CloseStore() {
    control_.reset();
    reconciler_.reset();
    runner_.reset();
    leader_.reset();
    zombies_.clear();
    executor_.store = nullptr;
    store_.reset();
  }

  // A new leader process: Leader::Start (lease with a new epoch, recovery pass), then this
  // test's runner and reconciler under the same holder and epoch.
  void StartLeader(bool takeover) {
    ++generation_;
    holder_ = "leader-" + std::to_string(generation_);
    LeaderOptions lo;
    lo.runner.node_id = kLeaderNode;
    lo.runner.leader_holder = holder_;
    lo.runner.lease_ttl_ms = kLeaseTtlMs;
    lo.runner.concurrency = config_.concurrency;
    if (takeover) lo.holder_is_dead = [](const LeaderLease&) { return true; };
    leader_ = std::make_unique<Leader>(store_.get(), &executor_, lo, &clock_);
    const size_t calls = executor_.Calls().size();
    Status st = leader_->Start();
    MODEL_CHECK(st.ok(), "leader start: " << st.ToString());
    MODEL_CHECK(executor_.Calls().size() == calls, "the recovery pass dispatched a job");
    MODEL_CHECK(leader_->leader_epoch() > last_epoch_,
                "a new leader needs a new epoch: " << leader_->leader_epoch() << " after " << last_epoch_);
    if (last_epoch_ > 0) old_epochs_.push_back(last_epoch_);
    RunnerOptions ro;
    ro.node_id = kModelNode;
    ro.leader_holder = holder_;
    ro.lease_ttl_ms = kLeaseTtlMs;
    ro.concurrency = config_.concurrency;
    runner_ = std::make_unique<JobRunner>(store_.get(), &executor_, ro);
    st = runner_->Start(clock_.NowMs());
    MODEL_CHECK(st.ok(), "runner start: " << st.ToString());
    MODEL_CHECK(runner_->leader_epoch() == leader_->leader_epoch(), "runner and leader disagree on the epoch");
    last_epoch_ = runner_->leader_epoch();
    JobRunner* runner = runner_.get();
    reconciler_ = std::make_unique<Reconciler>(store_.get(), holder_, [runner] { return runner->leader_epoch(); });
    control_ = std::make_unique<JobControl>(store_.get(), &clock_);
    leader_live_ = true;
    leader_finished_.clear();
  }

  // Every leader process dies with its attempts in flight: nothing of them is recorded (crash
  // cut C6) and the processes' lock descriptors close; a worker that lives on keeps its own.
  // Never fails (it also runs while a failed step unwinds).
  void AbandonAttempts(bool workers_die) {
    failpoint::Arm("runner.before_record", failpoint::Action::kError);
    executor_.ReleaseAll(workers_die ? Script::kLost : Script::kLostAlive);
    auto drain = [](Leader* leader, JobRunner* runner) {
      if (leader != nullptr) leader->WaitForAttempts();
      if (runner != nullptr) {
        runner->WaitForAttempts();
        (void)runner->TakeFinished();
      }
    };
    drain(leader_.get(), runner_.get());
    for (Zombie& z : zombies_) drain(z.leader.get(), z.runner.get());
    failpoint::Disarm("runner.before_record");
    executor_.ReleaseNone();
  }

  // The leader processes die (their objects are destroyed, the store is reopened from its file)
  // and a new one starts; workers are separate processes and survive unless `workers_die`.
  void Crash(bool workers_die, bool wait_ttl) {
    if (!executor_.Held().empty()) Saw("crash with attempts in flight");
    AbandonAttempts(workers_die);
    CloseStore();
    if (workers_die) executor_.KillAll();
    if (wait_ttl) clock_.AdvanceMs(kLeaseTtlMs + 1'000);
    OpenStore();
    StartLeader(/*takeover=*/!wait_ttl);
    ExpectRecovered("after the recovery pass");
  }

  // A new leader takes over while this process still runs (e.g. it is frozen); the old one
  // keeps its objects and attempts in flight.
  void Takeover() {
    if (!executor_.Held().empty()) Saw("takeover with attempts in flight");
    zombies_.push_back(Zombie{last_epoch_, std::move(leader_), std::move(runner_), std::move(reconciler_)});
    StartLeader(/*takeover=*/true);
    ExpectRecovered("after a takeover");
  }

  static void Saw(const std::string& what) { ++Situations()[what]; }

  void Heartbeat() {
    if (!leader_live_) return;
    Result<LeaderLease> r = store_->cluster().RenewLeader(holder_, last_epoch_, clock_.NowMs(), kLeaseTtlMs);
    MODEL_CHECK(r.ok(), "heartbeat: " << r.status().ToString());
  }

  void AdvanceClock(int64_t ms) {
    clock_.AdvanceMs(ms);
    Heartbeat();
    expect_unchanged_ = true;
  }

  // ---- Helpers over the last snapshot ----

  const JobRecord* Pick(int index, const std::function<bool(const JobRecord&)>& pred) const {
    std::vector<const JobRecord*> c;
    for (const auto& kv : snap_.jobs) {
      if (pred(kv.second)) c.push_back(&kv.second);
    }
    if (c.empty()) return nullptr;
    return c[static_cast<size_t>(index) % c.size()];
  }

  int TableOf(const Cmd& c) const { return c.table % config_.tables; }

  // The job holding the fence of `name` on the current incarnation of table `t`, if any.
  const JobRecord* FenceHolder(int t, const std::string& name) const {
    for (const auto& kv : snap_.jobs) {
      const JobRecord& j = kv.second;
      if (j.spec.table_incarnation == tables_[t].table_incarnation && HoldsFence(j.state) &&
          j.fence.normalized_name == NormalizeIndexNameV1(name)) {
        return &j;
      }
    }
    return nullptr;
  }

  bool Orphan(const JobRecord& j) const {
    return std::none_of(tables_.begin(), tables_.end(),
                        [&j](const catalog::TableEntry& t) { return t.table_incarnation == j.spec.table_incarnation; });
  }

  JobRecord Load(int64_t id) { return MustOk(store_->Get(id), "get job"); }

  // The jobs a dispatcher with room for `room` attempts takes: the oldest PENDING ones, one per
  // table, skipping tables with a RUNNING attempt.
  std::vector<int64_t> Predict(int64_t room) const {
    std::set<std::string> busy;
    for (const auto& kv : snap_.jobs) {
      if (kv.second.state.execution == Execution::kRunning) busy.insert(kv.second.spec.table_incarnation);
    }
    std::vector<int64_t> out;
    for (const auto& kv : snap_.jobs) {
      if (static_cast<int64_t>(out.size()) >= room) break;
      const JobRecord& j = kv.second;
      if (j.state.execution != Execution::kPending || busy.count(j.spec.table_incarnation) > 0) continue;
      busy.insert(j.spec.table_incarnation);
      out.push_back(j.job_id);
    }
    return out;
  }

  // Held attempts of the dispatcher `node` of the process with leader epoch `epoch`.
  std::vector<int64_t> HeldBy(int64_t epoch, const std::string& node) const {
    std::vector<int64_t> out;
    for (const auto& kv : executor_.Held()) {
      if (kv.second.leader_epoch == epoch && kv.second.executor_node_id == node) out.push_back(kv.first);
    }
    return out;
  }

  // Jobs whose attempt may still run: a live worker, or an attempt held in the executor.
  std::set<int64_t> Running() const {
    std::set<int64_t> out = executor_.AliveWorkers();
    for (const auto& kv : executor_.Held()) out.insert(kv.first);
    return out;
  }

  // The state the pure machine gives a RUNNING job for the classification of `s`'s report.
  static JobState Finished(const JobRecord& running, Script s) {
    Classification cls = Classify(running.spec.operation, running.spec.if_mode, ScriptedReport(s));
    Result<JobState> want = FinishAttempt(running.state, cls.result, cls.observed_change);
    MODEL_CHECK(want.ok(), "pure transition: " << want.status().ToString());
    return *want;
  }

  // `now` is what `pre` (RUNNING) became when its attempt ended with `s` and was recorded.
  void ExpectRecordedAs(const JobRecord& pre, const JobRecord& now, Script s) {
    const JobState want = Finished(pre, s);
    MODEL_CHECK(now.state == want, "job " << now.job_id << " after " << ScriptName(static_cast<int>(s)) << " of "
                                          << Name(pre.spec.operation) << ": got " << StateText(now.state) << ", want "
                                          << StateText(want));
    const ExecutorReport report = ScriptedReport(s);
    MODEL_CHECK(now.invoked == (report.complete && report.invoked), "invoked flag of job " << now.job_id);
    if (s == Script::kSuccess) {
      MODEL_CHECK(now.committed_version == pre.spec.start_version + 1, "committed version of job " << now.job_id);
    }
  }

  // An admission attempt of `name` on table `t` with `admitted` its result.
  void ExpectAdmission(int t, const std::string& name, const Result<JobRecord>& admitted) {
    const JobRecord* holder = FenceHolder(t, name);
    if (holder != nullptr) {
      const StatusCode want =
          holder->spec.index_name == name ? StatusCode::kAlreadyExists : StatusCode::kInvalidArgument;
      MODEL_CHECK(!admitted.ok() && admitted.status().code() == want,
                  "admitting " << name << " while job " << holder->job_id << " holds '" << holder->spec.index_name
                               << "': " << (admitted.ok() ? "admitted" : admitted.status().ToString()));
      expect_unchanged_ = true;
      return;
    }
    MODEL_CHECK(admitted.ok(), "admitting free name " << name << ": " << admitted.status().ToString());
    MODEL_CHECK(snap_.jobs.count(admitted->job_id) == 0, "a reused job id " << admitted->job_id);
    MODEL_CHECK(admitted->spec.table_incarnation == tables_[t].table_incarnation, "admitted on another incarnation");
  }

  // ---- Commands ----

  void AdmitCreate(const Cmd& c) {
    const int t = TableOf(c);
    CreateIndexStatement s;
    s.target = {"local", "db", kTables[t]};
    s.index_name = kNames[c.name];
    s.column = "category";
    s.type = index::IndexType::kBitmap;
    s.if_not_exists = c.flag;
    Result<JobRecord> r = Admission(store_.get(), {}).Create(s, "admin", clock_.NowMs());
    ExpectAdmission(t, s.index_name, r);
    if (!r.ok()) return;
    MODEL_CHECK(r->revision == 1 && r->state == JobState{}, "a new job is PENDING at revision 1");
    MODEL_CHECK(r->spec.start_version == data_->tables[t].version, "start version " << r->spec.start_version);
  }

  void AdmitDrop(const Cmd& c) {
    const int t = TableOf(c);
    const catalog::TableEntry& table = tables_[t];
    JobSpec spec;
    spec.catalog_name = table.catalog_name;
    spec.database_name = table.database_name;
    spec.table_name = table.table_name;
    spec.catalog_incarnation = table.catalog_incarnation;
    spec.table_incarnation = table.table_incarnation;
    spec.locator = table.locator;
    spec.index_name = kNames[c.name];
    spec.operation = Operation::kDrop;
    spec.if_mode = c.flag ? IfMode::kIfExists : IfMode::kNone;
    spec.columns = {"category"};
    spec.start_version = data_->tables[t].version;
    spec.schema_fingerprint = data_->tables[t].fingerprint;
    Result<JobRecord> r = store_->Admit(spec, "admin", clock_.NowMs());
    ExpectAdmission(t, spec.index_name, r);
    if (!r.ok()) return;
    MODEL_CHECK(r->revision == 1 && r->state == JobState{}, "a new job is PENDING at revision 1");
  }

  void AdmitDropNoop(const Cmd& c) {
    const int t = TableOf(c);
    DropIndexStatement s{{"local", "db", kTables[t]}, kNames[c.name], true};
    Result<JobRecord> r = Admission(store_.get(), {}).Drop(s, "admin", clock_.NowMs());
    ExpectAdmission(t, s.index_name, r);
    if (!r.ok()) return;
    MODEL_CHECK(r->state.execution == Execution::kTerminal && r->state.outcome == Outcome::kNoop &&
                    r->state.refresh == RefreshState::kNotRequired && !r->attempt && r->revision == 2,
                "DROP IF EXISTS of a missing index is a durable NOOP: " << StateText(r->state));
  }

  void Cancel(const Cmd& c) {
    const JobRecord* j = Pick(c.job, [](const JobRecord&) { return true; });
    if (j == nullptr) return;
    const JobRecord pre = *j;
    Result<JobRecord> r = control_->Cancel(pre.job_id, admin_);
    if (Orphan(pre)) {
      MODEL_CHECK(!r.ok() && r.status().code() == StatusCode::kFailedPrecondition,
                  "CANCEL of an orphan: " << (r.ok() ? "ok" : r.status().ToString()));
      expect_unchanged_ = true;
      return;
    }
    if (pre.state.execution == Execution::kPending || pre.state.execution == Execution::kCancelling) {
      MODEL_CHECK(r.ok(), "CANCEL of a pending job: " << r.status().ToString());
      MODEL_CHECK(
          r->state.outcome == Outcome::kCancelledBeforeDispatch && DerivedState(r->state) == "CANCELLED" && !r->attempt,
          "cancelled: " << StateText(r->state));
    } else if (pre.state.outcome == Outcome::kCancelledBeforeDispatch) {
      MODEL_CHECK(r.ok() && r->revision == pre.revision, "repeated CANCEL changes nothing");
      expect_unchanged_ = true;
    } else {
      MODEL_CHECK(
          !r.ok() && r.status().code() == StatusCode::kFailedPrecondition &&
              r.status().message().rfind(std::string(kNotCancellableAfterDispatch), 0) == 0,
          "CANCEL after dispatch of " << StateText(pre.state) << ": " << (r.ok() ? "ok" : r.status().ToString()));
      expect_unchanged_ = true;
    }
  }

  void BeginCancel(const Cmd& c) {
    const JobRecord* j = Pick(c.job, [](const JobRecord& r) { return r.state.execution == Execution::kPending; });
    if (j == nullptr) return;
    Result<JobRecord> r = store_->Apply({j->job_id, j->revision, std::nullopt, "admin", clock_.NowMs()},
                                        [](const JobRecord& cur, Transition* t) -> Status {
                                          VIGIL_ASSIGN_OR_RETURN(t->next.state, jobs::BeginCancel(cur.state));
                                          t->events.push_back({std::string(event::kCancelRequested), {}, {}, {}});
                                          return Status::OK();
                                        });
    MODEL_CHECK(r.ok() && r->state.execution == Execution::kCancelling, "begin cancel: " << r.status().ToString());
  }

  // The synchronous path: RunOnePending of the model's runner, on this thread.
  void DispatchOne(const Cmd& c) {
    // Not mixed with attempts the same runner keeps in flight (RunOnePending ignores its bound).
    if (runner_->running() > 0) {
      expect_unchanged_ = true;
      return;
    }
    executor_.script = static_cast<Script>(c.script);
    const std::vector<int64_t> next = leader_live_ ? Predict(1) : std::vector<int64_t>{};
    const size_t calls = executor_.Calls().size();
    Result<std::optional<int64_t>> r = runner_->RunOnePending(clock_.NowMs());
    const std::vector<ScriptedExecutor::Call> after = executor_.Calls();
    if (!leader_live_) {
      MODEL_CHECK(!r.ok() && r.status().code() == StatusCode::kCommitConflict,
                  "a demoted leader dispatched: " << (r.ok() ? "ok" : r.status().ToString()));
      MODEL_CHECK(after.size() == calls, "a demoted leader called the executor");
      expect_unchanged_ = true;
      return;
    }
    if (next.empty()) {
      MODEL_CHECK(r.ok() && !*r,
                  "dispatch without a dispatchable job: " << (r.ok() ? "ran one" : r.status().ToString()));
      MODEL_CHECK(after.size() == calls, "the executor ran without a dispatchable job");
      expect_unchanged_ = true;
      return;
    }
    const int64_t id = next.front();
    MODEL_CHECK(after.size() == calls + 1 && after.back().job_id == id,
                "the oldest dispatchable PENDING job " << id << " must be executed exactly once");
    const JobRecord pre = snap_.jobs.at(id);
    JobRecord now = Load(id);
    MODEL_CHECK(now.attempt && now.attempt->attempt_id == after.back().attempt_id,
                "the executed attempt is the persisted one");
    const Script s = executor_.script;
    if (Demotes(s)) {
      MODEL_CHECK(!r.ok() && r.status().code() == StatusCode::kCommitConflict,
                  "a demoted leader recorded a result: " << (r.ok() ? "ok" : r.status().ToString()));
      MODEL_CHECK(now.state.execution == Execution::kRunning, "a lost result leaves RUNNING: " << StateText(now.state));
      leader_live_ = false;
      return;
    }
    MODEL_CHECK(r.ok() && *r == id, "dispatch: " << (r.ok() ? "another job" : r.status().ToString()));
    JobRecord running = pre;
    running.state = *jobs::Dispatch(pre.state);
    ExpectRecordedAs(running, now, s);
  }

  // The model's runner starts attempts; each waits inside the executor.
  void StartPending() {
    const std::vector<int64_t> in_flight = HeldBy(last_epoch_, kModelNode);
    const std::vector<int64_t> want =
        leader_live_ ? Predict(config_.concurrency - static_cast<int64_t>(in_flight.size())) : std::vector<int64_t>{};
    const size_t calls = executor_.Calls().size();
    Result<std::vector<int64_t>> r = runner_->StartPending(clock_.NowMs());
    if (!leader_live_) {
      MODEL_CHECK(!r.ok() && r.status().code() == StatusCode::kCommitConflict,
                  "a demoted leader started attempts: " << (r.ok() ? "ok" : r.status().ToString()));
      MODEL_CHECK(executor_.Calls().size() == calls, "a demoted leader called the executor");
      expect_unchanged_ = true;
      return;
    }
    MODEL_CHECK(r.ok(), "start pending: " << r.status().ToString());
    MODEL_CHECK(*r == want, "started " << r->size() << " attempts, want " << want.size() << " (the oldest PENDING jobs "
                                       << "of free tables, up to the concurrency)");
    MODEL_CHECK(executor_.AwaitHeld(*r), "started attempts never reached the executor");
    MODEL_CHECK(executor_.Calls().size() == calls + r->size(), "the executor ran other attempts");
    if (r->size() >= 2) Saw("StartPending started 2 attempts at once");
    if (r->empty()) expect_unchanged_ = true;
  }

  // One round of the leader: finished attempts examined, new ones started, refreshes, due reconciles.
  void Tick() {
    const std::vector<int64_t> in_flight = HeldBy(last_epoch_, kLeaderNode);
    const std::vector<int64_t> want =
        leader_live_ ? Predict(config_.concurrency - static_cast<int64_t>(in_flight.size())) : std::vector<int64_t>{};
    Result<bool> r = leader_->Tick();
    if (!leader_live_) {
      MODEL_CHECK(!r.ok() && r.status().code() == StatusCode::kCommitConflict,
                  "a demoted leader's tick: " << (r.ok() ? "ok" : r.status().ToString()));
      expect_unchanged_ = true;
      return;
    }
    MODEL_CHECK(r.ok(), "tick: " << r.status().ToString());
    std::vector<int64_t> started;
    for (const auto& kv : snap_.jobs) {
      if (kv.second.state.execution != Execution::kPending) continue;
      JobRecord now = Load(kv.first);
      if (!now.attempt) continue;
      MODEL_CHECK(now.attempt->executor_node_id == kLeaderNode && now.attempt->leader_epoch == last_epoch_,
                  "job " << kv.first << " was dispatched by another runner during a tick");
      started.push_back(kv.first);
    }
    MODEL_CHECK(started == want, "the tick started " << started.size() << " attempts, want " << want.size());
    MODEL_CHECK(executor_.AwaitHeld(started), "attempts started by the tick never reached the executor");
    if (!started.empty()) Saw("a tick started attempts");
    if (!leader_finished_.empty()) Saw("a tick took finished attempts");
    // The attempts it took as finished were examined at once: an UNKNOWN one is settled, its
    // worker alive or not (the store refuses its claim).
    for (int64_t id : leader_finished_) ExpectSettled(Load(id), "after a tick", true);
    leader_finished_.clear();
  }

  // Held attempts end: one of the model runner's (!flag), or all of one runner's at once (a
  // Leader's runner offers no wait for one attempt). Scripts spread by `action` over them.
  void Release(const Cmd& c) {
    const std::map<int64_t, AttemptIdentity> held = executor_.Held();
    if (held.empty()) return;
    const auto picked = std::next(held.begin(), static_cast<long>(static_cast<size_t>(c.job) % held.size()));
    const AttemptIdentity& a = picked->second;
    const bool current = a.leader_epoch == last_epoch_;
    // The dispatcher of the picked attempt: a Leader's runner or a model runner, of the current
    // process or of a zombie.
    Leader* leader = nullptr;
    JobRunner* runner = nullptr;
    auto owner = [&](Leader* l, JobRunner* r) {
      if (a.executor_node_id == kLeaderNode) {
        leader = l;
      } else {
        runner = r;
      }
    };
    if (current) owner(leader_.get(), runner_.get());
    for (Zombie& z : zombies_) {
      if (z.epoch == a.leader_epoch) owner(z.leader.get(), z.runner.get());
    }
    MODEL_CHECK(leader != nullptr || runner != nullptr, "a held attempt of no process: epoch " << a.leader_epoch);
    std::map<int64_t, Script> scripts;
    if (runner != nullptr && !c.flag) {
      scripts[picked->first] = static_cast<Script>(c.script);
    } else {
      int i = 0;
      for (const auto& kv : held) {
        if (kv.second.leader_epoch == a.leader_epoch && kv.second.executor_node_id == a.executor_node_id) {
          scripts[kv.first] = static_cast<Script>((c.script + i++ * c.action) % kScriptCount);
        }
      }
    }
    const bool live = current && leader_live_;
    const bool demotes = std::any_of(scripts.begin(), scripts.end(), [](const auto& kv) { return Demotes(kv.second); });
    if (scripts.size() >= 2) Saw("attempts released together");
    if (!current) Saw("a zombie's attempts released");
    for (const auto& kv : scripts) executor_.Release(kv.first, kv.second);
    std::map<int64_t, Status> statuses;
    if (leader != nullptr) {
      leader->WaitForAttempts();
    } else {
      std::set<int64_t> jobs;
      for (const auto& kv : scripts) jobs.insert(kv.first);
      statuses = AwaitFinished(runner, jobs);
    }
    if (demotes) leader_live_ = false;
    // Each result is recorded as the pure machine says while the leader is live, or not at all
    // (CommitConflict) once another process holds the lease; concurrent releases may go either way.
    for (const auto& [id, s] : scripts) {
      const JobRecord& pre = snap_.jobs.at(id);
      JobRecord now = Load(id);
      const bool recorded = now.revision != pre.revision;
      auto st = statuses.find(id);
      if (st != statuses.end()) {
        MODEL_CHECK(recorded == st->second.ok() && (recorded || st->second.code() == StatusCode::kCommitConflict),
                    "job " << id << " recorded " << recorded << " but the runner says " << st->second.ToString());
      }
      if (!recorded) {
        MODEL_CHECK(!live || demotes,
                    "the live leader did not record job " << id << " after " << ScriptName(static_cast<int>(s)));
        MODEL_CHECK(now == pre, "an unrecorded result changed job " << id);
        continue;
      }
      MODEL_CHECK(live && !Demotes(s), "job " << id << " recorded by a demoted leader: " << StateText(now.state));
      MODEL_CHECK(pre.state.execution == Execution::kRunning,
                  "job " << id << " recorded from " << StateText(pre.state));
      ExpectRecordedAs(pre, now, s);
      if (leader == leader_.get()) leader_finished_.insert(id);
    }
  }

  // Waits until `runner` reports each of `jobs` finished; their recording statuses.
  std::map<int64_t, Status> AwaitFinished(JobRunner* runner, const std::set<int64_t>& jobs) {
    std::map<int64_t, Status> statuses;
    const auto give_up = std::chrono::steady_clock::now() + kWaitLimit;
    while (statuses.size() < jobs.size()) {
      for (const FinishedAttempt& f : runner->TakeFinished()) {
        MODEL_CHECK(jobs.count(f.job_id) == 1, "job " << f.job_id << " finished without being released");
        statuses[f.job_id] = f.status;
      }
      if (statuses.size() == jobs.size()) break;
      MODEL_CHECK(std::chrono::steady_clock::now() < give_up, "released attempts did not finish");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return statuses;
  }

  // Every attempt of the current process ends while its Leader ticks, so the recordings race
  // the tick's examinations, dispatch and passes; the attempts the tick starts end too. Either
  // order is allowed, so each job's event log is checked: its result is recorded as the pure
  // machine says, by the live leader only, or not at all once the lease is lost.
  void ReleaseDuringTick(const Cmd& c) {
    std::map<int64_t, Script> scripts;
    std::set<int64_t> of_model_runner;
    int i = 0;
    auto next_script = [&] { return static_cast<Script>((c.script + i++ * c.action) % kScriptCount); };
    for (const auto& [id, a] : executor_.Held()) {
      if (a.leader_epoch != last_epoch_) continue;
      scripts[id] = next_script();
      if (a.executor_node_id == kModelNode) of_model_runner.insert(id);
    }
    const bool live = leader_live_;
    const std::set<int64_t> taken = std::exchange(leader_finished_, {});
    if (!scripts.empty()) Saw("attempts ended during a tick");
    for (const auto& kv : scripts) executor_.Release(kv.first, kv.second);
    Result<bool> r = leader_->Tick();
    std::vector<int64_t> started;
    for (const auto& kv : snap_.jobs) {
      if (kv.second.state.execution == Execution::kPending && Load(kv.first).attempt) started.push_back(kv.first);
    }
    MODEL_CHECK(executor_.AwaitHeld(started), "attempts started by the tick never reached the executor");
    for (int64_t id : started) {
      scripts[id] = next_script();
      executor_.Release(id, scripts[id]);
    }
    leader_->WaitForAttempts();
    const std::map<int64_t, Status> statuses = AwaitFinished(runner_.get(), of_model_runner);
    const bool demotes = std::any_of(scripts.begin(), scripts.end(), [](const auto& kv) { return Demotes(kv.second); });
    if (demotes) leader_live_ = false;
    if (live && !demotes) MODEL_CHECK(r.ok(), "a tick racing finished attempts: " << r.status().ToString());
    if (!live) MODEL_CHECK(!r.ok() && r.status().code() == StatusCode::kCommitConflict, "a demoted leader's tick");
    for (const auto& [id, s] : scripts) {
      const JobRecord& pre = snap_.jobs.at(id);
      JobRecord running = pre;
      if (pre.state.execution == Execution::kPending) running.state = *jobs::Dispatch(pre.state);
      const std::vector<JobEvent> events = MustOk(store_->Events(id), "events");
      auto result = std::find_if(events.begin(), events.end(), [&pre](const JobEvent& e) {
        return e.seq > pre.revision && e.kind == event::kResult;
      });
      auto st = statuses.find(id);
      if (st != statuses.end()) {
        MODEL_CHECK((result != events.end()) == st->second.ok(), "job "
                                                                     << id << ": recorded " << (result != events.end())
                                                                     << ", the runner says " << st->second.ToString());
      }
      if (result == events.end()) {
        MODEL_CHECK(!live || demotes,
                    "the live leader did not record job " << id << " after " << ScriptName(static_cast<int>(s)));
        continue;
      }
      MODEL_CHECK(live && !Demotes(s), "job " << id << " recorded by a demoted leader");
      const JobState want = Finished(running, s);
      const nlohmann::json detail = nlohmann::json::parse(result->detail_json, nullptr, false);
      const std::optional<JobState> to =
          detail.is_object() && detail.contains("to") ? ParseState(detail["to"].get<std::string>()) : std::nullopt;
      MODEL_CHECK(to && *to == want, "job " << id << " after " << ScriptName(static_cast<int>(s)) << ": recorded "
                                            << result->detail_json << ", want " << StateText(want));
    }
    // What finished before the tick was taken and examined first; what finished during it may be
    // taken now or by the next tick, so it is not followed.
    if (r.ok()) {
      for (int64_t id : taken) ExpectSettled(Load(id), "after a racing tick", true);
    }
  }

  // A zombie's dispatch, tick or reconcile pass changes nothing.
  void ZombieStep(const Cmd& c) {
    if (zombies_.empty()) return;
    Zombie& z = zombies_[static_cast<size_t>(c.job) % zombies_.size()];
    expect_unchanged_ = true;
    const size_t calls = executor_.Calls().size();
    if (c.action == 0) {
      Result<std::vector<int64_t>> r = z.runner->StartPending(clock_.NowMs());
      MODEL_CHECK(!r.ok() && r.status().code() == StatusCode::kCommitConflict,
                  "a zombie started attempts: " << (r.ok() ? "ok" : r.status().ToString()));
    } else if (c.action == 1) {
      Result<bool> r = z.leader->Tick();
      MODEL_CHECK(!r.ok() && r.status().code() == StatusCode::kCommitConflict,
                  "a zombie's tick: " << (r.ok() ? "ok" : r.status().ToString()));
    } else {
      Result<int> r = z.reconciler->RunDue(clock_.NowMs());
      MODEL_CHECK(r.ok() || r.status().code() == StatusCode::kCommitConflict,
                  "a zombie's reconcile pass: " << r.status().ToString());
    }
    MODEL_CHECK(executor_.Calls().size() == calls, "a zombie called the executor");
  }

  void RunRefreshes() {
    Result<int> r = runner_->RunRefreshes(clock_.NowMs());
    if (!leader_live_) {
      MODEL_CHECK(!r.ok() && r.status().code() == StatusCode::kCommitConflict,
                  "a demoted leader refreshed: " << (r.ok() ? "ok" : r.status().ToString()));
      expect_unchanged_ = true;
      return;
    }
    MODEL_CHECK(r.ok(), "refresh run: " << r.status().ToString());
    ExpectNoRefreshDue("after a refresh run", /*running_ok=*/true);
  }

  static bool RefreshStartable(const JobRecord& j) {
    return j.state.refresh == RefreshState::kRequired || j.state.refresh == RefreshState::kRetryPending;
  }

  void RefreshFailure(const Cmd& c) {
    const JobRecord* j = Pick(c.job, RefreshStartable);
    if (j == nullptr) return;
    const JobRecord pre = *j;
    Result<JobRecord> started = store_->RefreshStart({pre.job_id, pre.revision, last_epoch_, holder_, clock_.NowMs()});
    if (!leader_live_) {
      MODEL_CHECK(!started.ok() && started.status().code() == StatusCode::kCommitConflict,
                  "a demoted leader started a refresh");
      expect_unchanged_ = true;
      return;
    }
    MODEL_CHECK(started.ok() && started->state.refresh == RefreshState::kRunning &&
                    started->refresh_generation == pre.refresh_generation + 1,
                "refresh start: " << started.status().ToString());
    Result<JobRecord> failed =
        store_->RefreshDone({pre.job_id, started->revision, last_epoch_, holder_, clock_.NowMs()},
                            started->refresh_generation, false, "model refresh failure");
    MODEL_CHECK(failed.ok(), "refresh failure: " << failed.status().ToString());
    JobState want = *FinishRefresh(*StartRefresh(pre.state), false);
    MODEL_CHECK(failed->state == want, "failed refresh: " << StateText(failed->state));
    MODEL_CHECK(failed->refresh_next_at_ms && *failed->refresh_next_at_ms > clock_.NowMs(), "a retry is scheduled");
  }

  void Reconcile() {
    clock_.AdvanceMs(kReconcileJumpMs);
    Heartbeat();
    const size_t calls = executor_.Calls().size();
    Result<int> r = reconciler_->RunDue(clock_.NowMs());
    MODEL_CHECK(executor_.Calls().size() == calls, "the reconciler dispatched");
    if (!leader_live_) {
      MODEL_CHECK(r.ok() || r.status().code() == StatusCode::kCommitConflict,
                  "reconcile under a demoted leader: " << r.status().ToString());
      expect_unchanged_ = true;
      return;
    }
    MODEL_CHECK(r.ok(), "reconcile pass: " << r.status().ToString());
    ExpectReconciled("after a reconcile pass", /*refreshed=*/false);
  }

  void WorkerExit(const Cmd& c) {
    const std::set<int64_t> alive = executor_.AliveWorkers();
    if (alive.empty()) return;
    executor_.Exit(*std::next(alive.begin(), static_cast<long>(static_cast<size_t>(c.job) % alive.size())));
    expect_unchanged_ = true;
  }

  void Resolve(const Cmd& c) {
    // flag: a job that can be resolved (terminal, still fenced); otherwise any job.
    const bool resolvable = c.flag;
    const JobRecord* j = Pick(c.job, [resolvable](const JobRecord& r) {
      return !resolvable || (r.state.execution == Execution::kTerminal && HoldsFence(r.state));
    });
    if (j == nullptr) return;
    const JobRecord pre = *j;
    const auto action = static_cast<ResolveAction>(c.action);
    Result<JobDetail> r = control_->Resolve(pre.job_id, action, kNote, admin_, WaitOptions{});
    const Disposition d = pre.state.disposition;
    auto unchanged_ok = [&](const char* why) {
      MODEL_CHECK(r.ok() && r->job.revision == pre.revision,
                  why << ": " << (r.ok() ? "changed" : r.status().ToString()));
      expect_unchanged_ = true;
    };
    auto refused = [&](const char* why) {
      MODEL_CHECK(!r.ok() && r.status().code() == StatusCode::kFailedPrecondition,
                  why << " " << Name(action) << " from " << StateText(pre.state) << ": "
                      << (r.ok() ? "accepted" : r.status().ToString()));
      expect_unchanged_ = true;
    };
    Result<JobState> pure = Status::Internal("unset");
    switch (action) {
      case ResolveAction::kAcknowledge:
        if (Orphan(pre)) return refused("an orphan");  // only ADMIN's FORCE may touch it
        if (d == Disposition::kAcknowledged) return unchanged_ok("a completed ACK returns its events");
        if (d == Disposition::kAckRefreshPending) return unchanged_ok("an identical ACK joins the request");
        pure = RequestAck(pre.state);
        break;
      case ResolveAction::kForceRelease:
        if (d == Disposition::kForceReleased) return unchanged_ok("a completed FORCE returns its events");
        if (d == Disposition::kForceRefreshPending) return unchanged_ok("an identical FORCE joins the request");
        pure = RequestForce(pre.state);
        break;
      case ResolveAction::kForceReleaseWithoutRefresh:
        if (d == Disposition::kForceReleased) return unchanged_ok("a completed FORCE returns its events");
        pure = ForceWithoutRefresh(pre.state);
        break;
    }
    if (!pure.ok()) return refused("the state machine refuses");
    MODEL_CHECK(r.ok(), Name(action) << " from " << StateText(pre.state) << ": " << r.status().ToString());
    MODEL_CHECK(r->job.state == *pure, Name(action)
                                           << ": got " << StateText(r->job.state) << ", want " << StateText(*pure));
    MODEL_CHECK(r->job.state.outcome == pre.state.outcome, "a resolution never changes the outcome");
    if (action == ResolveAction::kForceReleaseWithoutRefresh) {
      MODEL_CHECK(r->warnings.size() == 2, "FORCE WITHOUT REFRESH warns twice");
      MODEL_CHECK(r->job.refresh_generation == pre.refresh_generation + 1,
                  "FORCE WITHOUT REFRESH bumps the generation");
    }
  }

  void DropTable(const Cmd& c) {
    const int t = TableOf(c);
    std::vector<int64_t> guards;
    for (const auto& kv : snap_.jobs) {
      if (kv.second.spec.table_incarnation == tables_[t].table_incarnation && HoldsFence(kv.second.state)) {
        guards.push_back(kv.first);
      }
    }
    Status st = control_->DropTable("local", "db", kTables[t], admin_);
    if (!guards.empty()) {
      MODEL_CHECK(st.code() == StatusCode::kFailedPrecondition &&
                      st.message().rfind(std::string(kTableGuarded), 0) == 0 &&
                      st.message().find(std::to_string(guards.front())) != std::string::npos,
                  "DROP TABLE while job " << guards.front() << " guards it: " << st.ToString());
      expect_unchanged_ = true;
      return;
    }
    MODEL_CHECK(st.ok(), "DROP TABLE of an unguarded table: " << st.ToString());
    auto gone = MustOk(store_->catalog().LookupTable("local", "db", kTables[t]), "lookup");
    MODEL_CHECK(!gone, "the dropped table is still registered");
    const std::string old = tables_[t].table_incarnation;
    tables_[t] =
        MustOk(store_->catalog().RegisterTable("local", "db", kTables[t], data_->tables[t].path, clock_.NowMs()),
               "re-register");
    MODEL_CHECK(tables_[t].table_incarnation != old, "a re-created table gets a new incarnation");
  }

  void Archive() {
    const int64_t before = clock_.NowMs() + 1;
    ArchiveResult r = MustOk(store_->Archive(before, clock_.NowMs()), "archive");
    int64_t archived = 0;
    int64_t tombstoned = 0;
    for (const auto& kv : snap_.jobs) {
      const JobRecord& pre = kv.second;
      const JobRecord now = Load(kv.first);
      const bool eligible = !pre.archived_at_ms && pre.state.execution == Execution::kTerminal && pre.finished_at_ms &&
                            *pre.finished_at_ms < before;
      const bool tomb = eligible && pre.state.outcome == Outcome::kUnknown && HoldsFence(pre.state);
      const bool arch = eligible && !HoldsFence(pre.state);
      archived += arch;
      tombstoned += tomb;
      MODEL_CHECK(now.archived_at_ms.has_value() == (pre.archived_at_ms.has_value() || arch || tomb),
                  "archival of job " << kv.first << " in " << StateText(pre.state));
      MODEL_CHECK(now.tombstone == (pre.tombstone || tomb), "tombstone of job " << kv.first);
      JobRecord same = now;
      same.archived_at_ms = pre.archived_at_ms;
      same.tombstone = pre.tombstone;
      same.progress_phase = pre.progress_phase;
      MODEL_CHECK(same == pre, "archival changed more than the archive fields of job " << kv.first);
    }
    MODEL_CHECK(r.archived == archived && r.tombstoned == tombstoned,
                "archive counts " << r.archived << "/" << r.tombstoned << ", want " << archived << "/" << tombstoned);
  }

  void StaleCallback(const Cmd& c) {
    const JobRecord* j = Pick(c.job, [](const JobRecord& r) { return r.attempt.has_value(); });
    if (j == nullptr) return;
    const JobRecord pre = *j;
    expect_unchanged_ = true;
    AttemptReport wrong;
    wrong.attempt_id = pre.attempt->attempt_id + "-stale";
    wrong.result = AttemptResult::kCommitted;
    wrong.observed_change = true;
    wrong.invoked = true;
    Result<JobRecord> r = store_->RecordResult({pre.job_id, pre.revision, last_epoch_, holder_, clock_.NowMs()}, wrong);
    MODEL_CHECK(!r.ok() && r.status().code() == StatusCode::kCommitConflict,
                "a result for another attempt: " << (r.ok() ? "accepted" : r.status().ToString()));
    if (!old_epochs_.empty()) {
      AttemptReport right = wrong;
      right.attempt_id = pre.attempt->attempt_id;
      const int64_t old = old_epochs_[static_cast<size_t>(c.action) % old_epochs_.size()];
      r = store_->RecordResult({pre.job_id, pre.revision, old, holder_, clock_.NowMs()}, right);
      MODEL_CHECK(!r.ok() && r.status().code() == StatusCode::kCommitConflict,
                  "a result under old epoch " << old << ": " << (r.ok() ? "accepted" : r.status().ToString()));
    }
    if (pre.refresh_generation > 0) {
      r = store_->RefreshDone({pre.job_id, pre.revision, last_epoch_, holder_, clock_.NowMs()},
                              pre.refresh_generation - 1, true);
      MODEL_CHECK(!r.ok() && (r.status().code() == StatusCode::kCommitConflict),
                  "an older refresh generation's completion: " << (r.ok() ? "accepted" : r.status().ToString()));
    }
  }

  void RefreshThenCrash(const Cmd& c) {
    const JobRecord* j = Pick(c.job, RefreshStartable);
    if (j != nullptr && leader_live_) {
      Result<JobRecord> started = store_->RefreshStart({j->job_id, j->revision, last_epoch_, holder_, clock_.NowMs()});
      MODEL_CHECK(started.ok(), "refresh start: " << started.status().ToString());
    }
    Crash(c.flag, c.action % 2 == 1);
  }

  // ---- Expected quiescence after the leader's passes ----

  // After a refresh run by a live leader nothing is left REQUIRED or due for a retry (T11, C9,
  // C10); after a recovery pass not even a RUNNING refresh of the dead leader.
  void ExpectNoRefreshDue(const char* when, bool running_ok) {
    for (const JobRecord& j : MustOk(store_->List(AllJobs()), "list")) {
      MODEL_CHECK(j.state.refresh != RefreshState::kRequired, when << ": job " << j.job_id
                                                                   << " still needs its refresh: " << StateText(j.state)
                                                                   << (j.archived_at_ms ? " (archived)" : ""));
      MODEL_CHECK(running_ok || j.state.refresh != RefreshState::kRunning,
                  when << ": job " << j.job_id << " keeps the dead leader's RUNNING refresh: " << StateText(j.state));
      MODEL_CHECK(j.state.refresh != RefreshState::kRetryPending ||
                      (j.refresh_next_at_ms && *j.refresh_next_at_ms > clock_.NowMs()),
                  when << ": job " << j.job_id << " has a due refresh retry: " << StateText(j.state));
    }
  }

  // An examined UNKNOWN job, whose attempt can no longer commit whether its worker lives or not
  // (the store's fence refuses the claim of an attempt its job no longer runs): proven and read,
  // and attributed unless a resolution waits for its refresh (or, `refreshed`, completed first).
  void ExpectSettled(const JobRecord& j, const char* when, bool refreshed) {
    if (j.state.outcome != Outcome::kUnknown) return;
    const ReconcileState r = j.state.reconcile;
    const Disposition d = j.state.disposition;
    const bool waits = d == Disposition::kAckRefreshPending || d == Disposition::kForceRefreshPending ||
                       (refreshed && d == Disposition::kAcknowledged);
    MODEL_CHECK(r == ReconcileState::kStoppedByForce || (r == ReconcileState::kStoppedTerminationProven && waits),
                when << ": job " << j.job_id << " with a dead worker is still " << StateText(j.state)
                     << (j.tombstone ? " (tombstone)" : ""));
  }

  // After a reconcile pass (every watcher due) or a recovery pass (which also ran the refreshes,
  // so a pending ACK may have completed before its attribution).
  void ExpectReconciled(const char* when, bool refreshed) {
    const std::set<int64_t> running = Running();
    for (const JobRecord& j : MustOk(store_->List(AllJobs()), "list")) {
      if (j.state.execution == Execution::kRunning) {
        MODEL_CHECK(running.count(j.job_id) > 0,
                    when << ": job " << j.job_id << " is RUNNING but its dispatcher and worker are gone");
        MODEL_CHECK(j.attempt->leader_epoch == last_epoch_,
                    when << ": job " << j.job_id << " is RUNNING under leader epoch " << j.attempt->leader_epoch
                         << ", which lost the lease to " << last_epoch_ << " (the store refuses its claim)");
      }
      ExpectSettled(j, when, refreshed);
    }
  }

  void ExpectRecovered(const char* when) {
    for (const JobRecord& j : MustOk(store_->List(AllJobs()), "list")) {
      MODEL_CHECK(j.state.execution != Execution::kCancelling, when << ": job " << j.job_id << " is still CANCELLING");
    }
    ExpectReconciled(when, /*refreshed=*/true);
    ExpectNoRefreshDue(when, /*running_ok=*/false);
  }

  static JobFilter AllJobs() {
    JobFilter f;
    f.include_archived = true;
    f.limit = kMaxListLimit;
    return f;
  }

  // ---- Invariants after every step ----

  void Check() {
    const std::vector<std::string> violations = executor_.Violations();
    MODEL_CHECK(violations.empty(), violations.front());
    Snapshot next;
    for (JobRecord& j : MustOk(store_->List(AllJobs()), "list")) {
      const int64_t id = j.job_id;
      next.jobs.emplace(id, std::move(j));
    }
    for (const auto& kv : snap_.jobs) {
      MODEL_CHECK(next.jobs.count(kv.first) == 1, "job " << kv.first << " vanished");
    }
    std::map<std::string, std::set<int64_t>> by_state;
    const std::vector<ScriptedExecutor::Call> calls = executor_.Calls();
    std::map<int64_t, int> executed;
    for (const auto& call : calls) executed[call.job_id]++;
    const std::set<int64_t> running = Running();
    std::map<std::string, int> running_on_table;
    std::map<std::pair<std::string, int64_t>, int> running_of_runner;
    for (const auto& kv : next.jobs) {
      const JobRecord& j = kv.second;
      const JobState& s = j.state;
      const std::string where = "job " + std::to_string(j.job_id) + " " + StateText(s);
      Status legal = CheckLegal(s);
      MODEL_CHECK(legal.ok(), where << ": " << legal.ToString());
      by_state[std::string(DerivedState(s))].insert(j.job_id);
      const bool refresh_pending = s.refresh == RefreshState::kRequired || s.refresh == RefreshState::kRunning ||
                                   s.refresh == RefreshState::kRetryPending;
      MODEL_CHECK(
          IsFinal(s) == (s.execution == Execution::kTerminal && (s.outcome == Outcome::kUnknown || !refresh_pending)),
          where << ": IsFinal " << IsFinal(s) << " for " << DerivedState(s));

      std::vector<JobEvent> events = MustOk(store_->Events(j.job_id), "events");
      CheckEvents(j, events);
      // I2: executed at most once, and only the persisted attempt.
      const int runs = executed.count(j.job_id) ? executed[j.job_id] : 0;
      MODEL_CHECK(runs <= 1, where << ": executed " << runs << " times");
      for (const auto& call : calls) {
        if (call.job_id == j.job_id) {
          MODEL_CHECK(j.attempt && call.attempt_id == j.attempt->attempt_id, where << ": executed another attempt");
        }
      }
      // I1: a dispatched job carries its full attempt identity.
      const bool dispatched =
          std::any_of(events.begin(), events.end(), [](const JobEvent& e) { return e.kind == event::kDispatched; });
      if (s.execution == Execution::kRunning || dispatched) {
        MODEL_CHECK(dispatched && j.attempt, where << ": RUNNING or dispatched without a durable attempt");
        const AttemptIdentity& a = *j.attempt;
        MODEL_CHECK(!a.attempt_id.empty() && !a.executor_node_id.empty() && a.node_epoch >= 1 && a.leader_epoch >= 1 &&
                        a.attempt_number >= 1 && a.dispatch_generation >= 1 && j.started_at_ms &&
                        a.deadline_at_ms > *j.started_at_ms,
                    where << ": incomplete attempt identity");
      } else {
        MODEL_CHECK(!j.attempt && runs == 0, where << ": an attempt without a dispatch");
      }
      // One running attempt per table; at most `concurrency` per runner (node id and epoch).
      if (s.execution == Execution::kRunning) {
        const int on_table = ++running_on_table[j.spec.table_incarnation];
        const int of_runner = ++running_of_runner[{j.attempt->executor_node_id, j.attempt->node_epoch}];
        MODEL_CHECK(on_table <= 1, where << ": a second RUNNING attempt on table " << j.spec.table_name);
        MODEL_CHECK(of_runner <= config_.concurrency,
                    where << ": more than " << config_.concurrency << " RUNNING attempts of runner "
                          << j.attempt->executor_node_id << " epoch " << j.attempt->node_epoch);
      }
      // I5: while its attempt may run (a live worker, or held in the executor) and the store
      // would accept its claim (the job runs it under the current leader epoch), a job counts as
      // possibly committing and keeps its fence. A live attempt the store refuses commits nothing.
      if (running.count(j.job_id) && s.execution == Execution::kRunning && j.attempt &&
          j.attempt->leader_epoch == last_epoch_) {
        MODEL_CHECK(ExecutorMayCommit(s), where << ": the attempt still runs but the store thinks it cannot commit");
        MODEL_CHECK(HoldsFence(s) || s.disposition == Disposition::kForceReleased,
                    where << ": fence released while the attempt may commit");
      }
      if (ExecutorMayCommit(s) && !HoldsFence(s)) {
        MODEL_CHECK(s.disposition == Disposition::kForceReleased,
                    where << ": fence released while an executor may commit");
      }
      MODEL_CHECK(!j.tombstone || j.archived_at_ms, where << ": a tombstone is archived");
      // Stays archived; the admitted fields never change.
      auto prev = snap_.jobs.find(j.job_id);
      if (prev != snap_.jobs.end()) {
        const JobRecord& p = prev->second;
        MODEL_CHECK(j.revision >= p.revision, where << ": revision went back");
        MODEL_CHECK(!p.archived_at_ms || j.archived_at_ms == p.archived_at_ms, where << ": archival undone");
        MODEL_CHECK(j.spec == p.spec && j.fence == p.fence && j.creator == p.creator,
                    where << ": admitted fields changed");
        MODEL_CHECK(!p.attempt || (j.attempt && *j.attempt == *p.attempt), where << ": the attempt identity changed");
        if (expect_unchanged_) {
          MODEL_CHECK(j == p, where << ": a step that must change nothing changed the job (was " << StateText(p.state)
                                    << " rev " << p.revision << ")");
        }
      }
      next.events.emplace(j.job_id, std::move(events));
    }
    if (expect_unchanged_) {
      MODEL_CHECK(next.jobs.size() == snap_.jobs.size(), "a step that must change nothing created a job");
    }
    CheckHeld(next);
    // Listing by derived state finds exactly the jobs in that state.
    for (const auto& kv : by_state) {
      JobFilter f = AllJobs();
      f.state = kv.first;
      std::set<int64_t> listed;
      for (const JobRecord& j : MustOk(store_->List(f), "list by state")) listed.insert(j.job_id);
      MODEL_CHECK(listed == kv.second,
                  "listing state " << kv.first << " found " << listed.size() << " jobs, want " << kv.second.size());
    }
    CheckFences(next);
    snap_ = std::move(next);
    expect_unchanged_ = false;
  }

  // An attempt in flight is its job's persisted attempt; while its process is the current one
  // (whose node epochs are not replaced) nothing settles it; each model runner reports exactly
  // its held attempts as running.
  void CheckHeld(const Snapshot& s) {
    for (const auto& [id, a] : executor_.Held()) {
      auto it = s.jobs.find(id);
      MODEL_CHECK(it != s.jobs.end() && it->second.attempt && *it->second.attempt == a,
                  "job " << id << " is held with an attempt that is not its persisted one");
      if (a.leader_epoch == last_epoch_) {
        MODEL_CHECK(it->second.state.execution == Execution::kRunning,
                    "job " << id << " " << StateText(it->second.state) << ": settled while its attempt runs");
      }
    }
    if (runner_) {
      MODEL_CHECK(runner_->running() == HeldBy(last_epoch_, kModelNode).size(),
                  "the model runner runs " << runner_->running() << " attempts");
    }
    for (const Zombie& z : zombies_) {
      MODEL_CHECK(z.runner->running() == HeldBy(z.epoch, kModelNode).size(),
                  "a zombie runner runs " << z.runner->running() << " attempts");
    }
  }

  // Fence and guard rows exist exactly for the jobs with HoldsFence, under their admitted key.
  void CheckFences(const Snapshot& s) {
    auto conn = MustOk(store_->database().Acquire(), "acquire");
    auto fences = MustOk(conn->Query("SELECT job_id, catalog_incarnation, table_incarnation, normalization_version,"
                                     " normalized_name FROM index_fences"),
                         "fences");
    std::set<int64_t> fenced;
    for (const meta::Row& row : fences) {
      const int64_t id = MustOk(row.Int(0), "fence job");
      fenced.insert(id);
      auto it = s.jobs.find(id);
      MODEL_CHECK(it != s.jobs.end(), "fence of unknown job " << id);
      const FenceKey& k = it->second.fence;
      MODEL_CHECK(
          MustOk(row.Text(1), "c") == k.catalog_incarnation && MustOk(row.Text(2), "t") == k.table_incarnation &&
              MustOk(row.Int(3), "v") == k.normalization_version && MustOk(row.Text(4), "n") == k.normalized_name,
          "fence row of job " << id << " differs from its key");
    }
    auto guards = MustOk(conn->Query("SELECT job_id, table_incarnation FROM index_target_guards"), "guards");
    std::set<int64_t> guarded;
    for (const meta::Row& row : guards) {
      const int64_t id = MustOk(row.Int(0), "guard job");
      guarded.insert(id);
      auto it = s.jobs.find(id);
      MODEL_CHECK(it != s.jobs.end() && MustOk(row.Text(1), "t") == it->second.spec.table_incarnation,
                  "guard row of job " << id);
    }
    for (const auto& kv : s.jobs) {
      const bool holds = HoldsFence(kv.second.state);
      MODEL_CHECK(fenced.count(kv.first) == (holds ? 1u : 0u),
                  "job " << kv.first << " " << StateText(kv.second.state) << ": fence row " << fenced.count(kv.first));
      MODEL_CHECK(guarded.count(kv.first) == (holds ? 1u : 0u),
                  "job " << kv.first << " " << StateText(kv.second.state) << ": guard row " << guarded.count(kv.first));
    }
  }

  // The event log: seq 1..revision, parts from 0, from/to states continuous and legal, append-only;
  // outcome changes only from NONE or by attribution after TERMINATION_PROVEN; a fence is released
  // while an executor may commit only by a complete result or by FORCE.
  void CheckEvents(const JobRecord& j, const std::vector<JobEvent>& events) {
    const std::string where = "job " + std::to_string(j.job_id);
    MODEL_CHECK(!events.empty() && events.front().kind == event::kAdmitted && events.front().seq == 1,
                where << ": the first event is ADMITTED at seq 1");
    auto prev = snap_.events.find(j.job_id);
    if (prev != snap_.events.end()) {
      MODEL_CHECK(events.size() >= prev->second.size(), where << ": events were removed");
      for (size_t i = 0; i < prev->second.size(); ++i) {
        MODEL_CHECK(events[i] == prev->second[i], where << ": event " << i << " changed");
      }
    }
    int64_t seq = 0;
    int64_t part = -1;
    std::optional<JobState> last_to;
    std::string last_to_text;
    bool proven = false;
    int dispatched = 0;
    std::vector<std::string> kinds_of_seq;
    std::optional<JobState> from_of_seq;
    std::optional<JobState> to_of_seq;
    auto finish_seq = [&]() {
      if (!from_of_seq || !to_of_seq) return;
      const JobState& f = *from_of_seq;
      const JobState& t = *to_of_seq;
      auto has = [&](std::string_view k) {
        return std::find(kinds_of_seq.begin(), kinds_of_seq.end(), std::string(k)) != kinds_of_seq.end();
      };
      const std::string at = where + " seq " + std::to_string(seq) + " " + StateText(f) + " -> " + StateText(t);
      if (f.outcome != t.outcome) {
        MODEL_CHECK(
            f.outcome == Outcome::kNone || (f.outcome == Outcome::kUnknown && has(event::kAttributed) && proven &&
                                            (f.reconcile == ReconcileState::kFinalReadPending ||
                                             f.reconcile == ReconcileState::kStoppedTerminationProven)),
            at << ": the outcome changed");
        MODEL_CHECK(!(f.outcome == Outcome::kUnknown && KnownOutcome(t.outcome) && t.outcome == Outcome::kCommitted),
                    at << ": attributed COMMITTED although the attempt never committed to the dataset");
      }
      MODEL_CHECK(!(!HoldsFence(f) && HoldsFence(t)), at << ": a released fence was taken again");
      if (HoldsFence(f) && !HoldsFence(t) && ExecutorMayCommit(f)) {
        const bool by_result = f.execution == Execution::kRunning && has(event::kResult);
        const bool by_force = has(event::kForceCompleted) || has(event::kEmergencyForceCompleted);
        MODEL_CHECK(by_result || by_force, at << ": fence released while an executor may commit");
      }
      if (f.disposition == Disposition::kForceReleased) {
        MODEL_CHECK(t.disposition == Disposition::kForceReleased && t.outcome == f.outcome,
                    at << ": FORCE_RELEASED is final and keeps the outcome");
      }
      if (has(event::kTerminationProven)) proven = true;
    };
    for (const JobEvent& e : events) {
      nlohmann::json detail = nlohmann::json::parse(e.detail_json, nullptr, false);
      MODEL_CHECK(detail.is_object() && detail.contains("from") && detail.contains("to"),
                  where << ": event detail " << e.detail_json);
      const std::string from_text = detail["from"].get<std::string>();
      const std::string to_text = detail["to"].get<std::string>();
      std::optional<JobState> from = ParseState(from_text);
      std::optional<JobState> to = ParseState(to_text);
      MODEL_CHECK(from && to, where << ": unparsable states " << from_text << " -> " << to_text);
      MODEL_CHECK(CheckLegal(*to).ok(), where << ": illegal event state " << to_text);
      if (e.seq != seq) {
        finish_seq();
        MODEL_CHECK(e.seq == seq + 1 && e.part == 0,
                    where << ": seq " << e.seq << " part " << e.part << " after seq " << seq);
        if (seq >= 1)
          MODEL_CHECK(from_text == last_to_text,
                      where << ": seq " << e.seq << " starts at " << from_text << " but the job was " << last_to_text);
        seq = e.seq;
        part = 0;
        kinds_of_seq.clear();
        from_of_seq = from;
        to_of_seq = to;
      } else {
        MODEL_CHECK(e.part == part + 1, where << ": seq " << seq << " part " << e.part << " after " << part);
        part = e.part;
        MODEL_CHECK(*from == *from_of_seq && *to == *to_of_seq, where << ": parts of one transition disagree");
      }
      kinds_of_seq.push_back(e.kind);
      if (e.kind == event::kDispatched) {
        ++dispatched;
        MODEL_CHECK(j.attempt && detail.value("attempt_id", "") == j.attempt->attempt_id,
                    where << ": DISPATCHED names another attempt");
      }
      last_to = to;
      last_to_text = to_text;
    }
    finish_seq();
    MODEL_CHECK(seq == j.revision, where << ": last event seq " << seq << " but revision " << j.revision);
    MODEL_CHECK(last_to && *last_to == j.state,
                where << ": the last event ends at " << last_to_text << " but the job is " << StateText(j.state));
    MODEL_CHECK(dispatched <= 1, where << ": DISPATCHED " << dispatched << " times");
  }

  const ModelConfig config_;
  ScratchDir dir_;
  const SharedDataset* data_ = nullptr;
  testing::FakeEnv clock_{kT0 * 1000};
  ScriptedExecutor executor_;
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<Leader> leader_;
  std::unique_ptr<JobRunner> runner_;
  std::unique_ptr<Reconciler> reconciler_;
  std::unique_ptr<JobControl> control_;
  std::vector<Zombie> zombies_;
  std::vector<catalog::TableEntry> tables_;
  std::string holder_;
  int generation_ = 0;
  int64_t last_epoch_ = 0;
  std::vector<int64_t> old_epochs_;
  bool leader_live_ = false;
  std::set<int64_t> leader_finished_;  // recorded by the Leader's runner, not yet taken by a Tick
  bool expect_unchanged_ = false;
  Snapshot snap_;
  const auth::Principal admin_ = auth::Principal::LocalAdmin();
};

// Replays one command sequence; the rapidcheck result message when it fails.
std::optional<std::string> Replay(const std::vector<Cmd>& seq, ModelConfig config) {
  rc::detail::TestParams params;
  params.maxSuccess = 1;
  params.disableShrinking = true;
  rc::detail::TestMetadata meta;
  const auto result = rc::detail::checkTestable(
      [&seq, config] {
        World world(config);
        for (const Cmd& c : seq) world.Step(c);
      },
      meta, params);
  if (result.template is<rc::detail::SuccessResult>()) return std::nullopt;
  std::ostringstream os;
  rc::detail::printResultMessage(result, os);
  return os.str();
}

// Runs the property over generated sequences (RC_PARAMS overrides the default budget).
void CheckProperty(const char* name, ModelConfig config, rc::Gen<Cmd> gen, int max_success, int max_size) {
  Data();  // create the datasets outside the timed property
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  if (std::getenv("RC_PARAMS") == nullptr) {
    params.maxSuccess = max_success;
    params.maxSize = max_size;
  }
  rc::detail::TestMetadata meta;
  meta.id = meta.description = name;
  const auto result = rc::detail::checkTestable(
      [config, &gen] {
        const auto cmds = *rc::gen::container<std::vector<Cmd>>(gen);
        World world(config);
        for (const Cmd& c : cmds) world.Step(c);
      },
      meta, params);
  std::ostringstream os;
  rc::detail::printResultMessage(result, os);
  EXPECT_TRUE(result.template is<rc::detail::SuccessResult>()) << os.str();
  std::ostringstream kinds;
  for (const auto& kv : World::Coverage()) kinds << " " << kv.first << "=" << kv.second;
  std::cout << "events over all sequences:" << kinds.str() << std::endl;
  World::Coverage().clear();
  if (!World::Situations().empty()) {
    std::ostringstream seen;
    for (const auto& kv : World::Situations()) seen << "\n  " << kv.first << ": " << kv.second;
    std::cout << "situations over all sequences:" << seen.str() << std::endl;
    World::Situations().clear();
  }
}

constexpr ModelConfig kConcurrent{kTableCount, 2};

// Counterexamples the properties found (shrunk), replayed deterministically.
TEST(JobModelTest, ShrunkCounterexamples) {
  const std::vector<std::vector<Cmd>> found = {
      // A tombstoned UNKNOWN job attributed by the recovery pass must still get its refresh.
      {{Op::kAdmitCreate}, {Op::kDispatch, 0, 0, int(Script::kNotFound)}, {Op::kArchive}, {Op::kCrash}},
      // A pending ACK whose refresh failed is retried once its backoff has passed.
      {{Op::kAdmitCreate},
       {Op::kDispatch, 0, 0, int(Script::kNotFound)},
       {Op::kResolve, 0, 0, 0, int(ResolveAction::kAcknowledge), true},
       {Op::kRefreshFailure},
       {Op::kCrash, 0, 0, 0, /*wait TTL*/ 1}},
      // A refresh left RUNNING by a dead leader is completed by the next one (C9).
      {{Op::kAdmitCreate}, {Op::kDispatch, 0, 0, int(Script::kSuccess)}, {Op::kRefreshThenCrash}},
      // A RUNNING attempt whose worker outlived two leaders keeps its table busy: the next
      // PENDING job of the table waits.
      {{Op::kAdmitCreate},
       {Op::kDispatch, 0, 0, int(Script::kLeaderLostAlive)},
       {Op::kCrash},
       {Op::kAdmitCreate, 1},
       {Op::kDispatch, 0, 0, int(Script::kSuccess)}},
  };
  for (const auto& seq : found) {
    const std::optional<std::string> failure = Replay(seq, ModelConfig{});
    EXPECT_FALSE(failure.has_value()) << *failure;
  }
}

// Seed 000 section 8.2 (T14): an ADMIN may FORCE RELEASE WITHOUT REFRESH a terminal job whose
// refresh failed while it still holds the fence, whatever its outcome.
TEST(JobModelTest, ForceWithoutRefreshOfAKnownOutcomeWhoseRefreshFailed) {
  ModelConfig strict;
  const std::vector<Cmd> seq = {{Op::kAdmitCreate},
                                {Op::kDispatch, 0, 0, int(Script::kSuccess)},
                                {Op::kRefreshFailure},
                                {Op::kResolve, 0, 0, 0, int(ResolveAction::kForceReleaseWithoutRefresh), true}};
  const std::optional<std::string> failure = Replay(seq, strict);
  EXPECT_FALSE(failure.has_value()) << *failure;
}

TEST(JobModelTest, RandomCommandSequencesKeepEveryInvariant) {
  CheckProperty("job lifecycle model", ModelConfig{}, GenCmd(), 60, 60);
}

TEST(JobModelTest, ConcurrentAttemptsKeepTheInvariants) {
  CheckProperty("job lifecycle model, concurrent attempts", kConcurrent, GenConcurrentCmd(), 30, 50);
}

}  // namespace
}  // namespace vigil::jobs
