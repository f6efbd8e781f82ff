// The model-based property test of the index-job lifecycle (issue 4; seed 000
// sections 7.1-7.3, 8.1-8.2 and appendix C). Random sequences of admissions
// (CREATE / DROP, IF modes, pre-dispatch NOOP), CANCEL and a half-done cancel,
// dispatches whose scripted executor returns a result of every class (success,
// proven non-invocation, CommitConflict / AlreadyExists / NotFound / IO error
// after invocation, a lost response with the worker dead or still alive, the
// leader demoted during the attempt), leader crashes and restarts (recovery
// pass with a new epoch), refresh runs and failures, reconciliation passes,
// worker exits, RESOLVE ACK / FORCE_RELEASE / FORCE_RELEASE WITHOUT REFRESH,
// archival, stale callbacks and DROP TABLE run against the real JobStore on a
// fresh SQLite file per sequence, the real JobRunner, Leader::Start, Reconciler
// and JobControl over one real dataset. After every step it checks, for every
// job (archived ones too): CheckLegal, the derived state (and that listing by
// it finds exactly those jobs), I1 (a dispatched job has its full attempt
// identity, durable and locked before the executor ran), I2 (no job executed or
// DISPATCHED twice), fence and guard rows exactly while HoldsFence, that a live
// worker's job still counts as possibly committing and keeps its fence unless
// FORCE released it, the event log (one seq per revision, from/to states
// continuous and legal, append-only), that an outcome never changes except
// UNKNOWN through attribution after TERMINATION_PROVEN, that a fence is only
// released by a complete result or FORCE while an executor may commit, and the
// expected effect of the step itself (e.g. DROP TABLE succeeds iff no job of the
// table holds its fence; after a recovery pass or refresh run nothing is left
// REQUIRED, RUNNING or due; a demoted leader changes nothing).
//
// RC_PARAMS (e.g. "max_success=500 max_size=80 seed=...") overrides the default budget.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <iostream>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "testutil/temp_dir.h"
#include "vigil/jobs/admission.h"
#include "vigil/jobs/classification.h"
#include "vigil/jobs/executor.h"
#include "vigil/jobs/job_control.h"
#include "vigil/jobs/job_store.h"
#include "vigil/jobs/leader.h"
#include "vigil/jobs/reconciler.h"
#include "vigil/jobs/runner.h"
#include "vigil/storage/datagen.h"
#include "vigil/storage/dataset.h"
#include "vigil/storage/file_lock.h"

namespace vigil::jobs {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000;
constexpr int64_t kLeaseTtlMs = 24LL * 3'600'000;  // longer than any clock jump but a TTL wait
constexpr int64_t kReconcileJumpMs = 31LL * 60'000;  // past the 30 min maximum watcher backoff
constexpr const char* kNames[] = {"idx_a", "idx_b", "Idx_C", "IDX_A"};  // IDX_A collides with idx_a by case
constexpr int kNameCount = 4;
constexpr const char* kNote = "model resolution";

// ---- Commands: plain values so that rapidcheck shrinks them ----

enum class Op {
  kAdmitCreate,      // Admission::Create, flag: IF NOT EXISTS
  kAdmitDrop,        // JobStore::Admit of a DROP spec (the index "exists"), flag: IF EXISTS
  kAdmitDropNoop,    // Admission::Drop IF EXISTS of a missing index: a pre-dispatch NOOP
  kCancel,           // JobControl::Cancel
  kBeginCancel,      // only the first CAS of CANCEL (crash cut C3)
  kDispatch,         // JobRunner::RunOnePending with the scripted result
  kRunRefreshes,     // JobRunner::RunRefreshes
  kRefreshFailure,   // RefreshStart + RefreshDone(ok=false) by the leader
  kReconcile,        // clock +31 min, Reconciler::RunDue
  kWorkerExit,       // a still-running worker exits (its attempt lock is released)
  kResolve,          // JobControl::Resolve, action: ACK / FORCE / FORCE WITHOUT REFRESH
  kDropTable,        // JobControl::DropTable, re-registered on success
  kArchive,          // JobStore::Archive of everything finished so far
  kAdvanceClock,     // action: 1 s / 45 s / 40 min
  kStaleCallback,    // results / refresh completions with a wrong attempt, epoch or generation
  kCrash,            // flag: workers die too; action odd: wait out the lease instead of takeover
  kRefreshThenCrash, // RefreshStart, then the leader dies before RefreshDone (crash cut C9)
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

struct Cmd {
  Op op = Op::kAdmitCreate;
  int name = 0;    // index into kNames
  int job = 0;     // index into the candidates of the command (modulo their count)
  int script = 0;  // Script
  int action = 0;  // ResolveAction, clock step, crash mode
  bool flag = false;
};

const char* OpName(Op op) {
  switch (op) {
    case Op::kAdmitCreate: return "AdmitCreate";
    case Op::kAdmitDrop: return "AdmitDrop";
    case Op::kAdmitDropNoop: return "AdmitDropNoop";
    case Op::kCancel: return "Cancel";
    case Op::kBeginCancel: return "BeginCancel";
    case Op::kDispatch: return "Dispatch";
    case Op::kRunRefreshes: return "RunRefreshes";
    case Op::kRefreshFailure: return "RefreshFailure";
    case Op::kReconcile: return "Reconcile";
    case Op::kWorkerExit: return "WorkerExit";
    case Op::kResolve: return "Resolve";
    case Op::kDropTable: return "DropTable";
    case Op::kArchive: return "Archive";
    case Op::kAdvanceClock: return "AdvanceClock";
    case Op::kStaleCallback: return "StaleCallback";
    case Op::kCrash: return "Crash";
    case Op::kRefreshThenCrash: return "RefreshThenCrash";
  }
  return "?";
}

const char* ScriptName(int s) {
  static const char* const kScriptNames[kScriptCount] = {
      "Success",  "NotInvoked", "NotInvokedStale", "BeforeRequest", "Conflict",   "AlreadyExists",
      "NotFound", "IoError",    "Lost",            "LostAlive",     "LeaderLost", "LeaderLostAlive"};
  return s >= 0 && s < kScriptCount ? kScriptNames[s] : "?";
}

void showValue(const Cmd& c, std::ostream& os) {
  os << OpName(c.op);
  switch (c.op) {
    case Op::kAdmitCreate:
    case Op::kAdmitDrop:
    case Op::kAdmitDropNoop: os << "(" << kNames[c.name] << (c.flag ? ", IF" : "") << ")"; break;
    case Op::kDispatch: os << "(" << ScriptName(c.script) << ")"; break;
    case Op::kResolve:
      os << "(" << (c.flag ? "fenced " : "") << "job#" << c.job << ", " << Name(static_cast<ResolveAction>(c.action))
         << ")";
      break;
    case Op::kCrash: os << "(" << (c.flag ? "workers die" : "workers live") << (c.action % 2 ? ", wait TTL" : "") << ")"; break;
    case Op::kAdvanceClock: os << "(" << c.action << ")"; break;
    case Op::kDropTable:
    case Op::kArchive:
    case Op::kRunRefreshes:
    case Op::kReconcile: break;
    default: os << "(job#" << c.job << ")"; break;
  }
}

rc::Gen<Cmd> GenCmd() {
  return rc::gen::build<Cmd>(
      rc::gen::set(&Cmd::op, rc::gen::weightedElement<Op>({{8, Op::kAdmitCreate},
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
                                                           {1, Op::kRefreshThenCrash}})),
      rc::gen::set(&Cmd::name, rc::gen::inRange(0, kNameCount)),
      rc::gen::set(&Cmd::job, rc::gen::inRange(0, 8)),
      rc::gen::set(&Cmd::script, rc::gen::inRange(0, kScriptCount)),
      rc::gen::set(&Cmd::action, rc::gen::inRange(0, 3)),
      rc::gen::set(&Cmd::flag, rc::gen::arbitrary<bool>()));
}

// ---- The shared dataset: created once per process, never modified ----

struct SharedDataset {
  testing::TempDir dir;
  std::string path;
  int64_t version = 0;
  std::string fingerprint;
};

const SharedDataset& Data() {
  static std::unique_ptr<SharedDataset> d = [] {
    auto s = std::make_unique<SharedDataset>();
    DatagenOptions o;
    o.rows = 200;
    o.dim = 8;
    o.latent_dim = 2;
    o.words_per_body = 4;
    auto gen = *DataGenerator::Make(o);
    s->path = s->dir.Join("db/docs.vgl");
    auto ds = *Dataset::Create(s->path, gen->schema(), {});
    auto reader = gen->NewReader();
    VIGIL_CHECK(ds->Append(reader.get(), {}).ok());
    auto opened = *Dataset::Open(s->path);
    s->version = static_cast<int64_t>(opened->version());
    s->fingerprint = opened->schema()->fingerprint();
    return s;
  }();
  return *d;
}

#define MODEL_CHECK(cond, msg)                                                                   \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      std::ostringstream model_check_os_;                                                        \
      model_check_os_ << "line " << __LINE__ << ": " << #cond << ": " << msg;                    \
      RC_FAIL(model_check_os_.str());                                                            \
    }                                                                                            \
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

bool KnownOutcome(Outcome o) {
  return o == Outcome::kCommitted || o == Outcome::kNotCommitted || o == Outcome::kNoop;
}

// ---- The scripted executor: a stand-in for the worker processes of every leader ----

class ScriptedExecutor : public Executor {
 public:
  struct Call {
    int64_t job_id = 0;
    std::string attempt_id;
  };

  ~ScriptedExecutor() override { KillAll(); }

  ExecutionOutcome Execute(const ExecutionRequest& req) override {
    calls.push_back({req.job.job_id, req.attempt.attempt_id});
    // I1: RUNNING with this attempt identity is durable, and its attempt lock held, before any send.
    Result<JobRecord> stored = store->Get(req.job.job_id);
    if (!stored.ok() || stored->state.execution != Execution::kRunning || !stored->attempt ||
        !(*stored->attempt == req.attempt) || !(req.job.attempt && *req.job.attempt == req.attempt)) {
      violations.push_back("job " + std::to_string(req.job.job_id) + " was not durably RUNNING with its attempt");
    }
    Result<bool> held = FileLock::IsHeld(AttemptLockPath(req.job.spec.locator, req.attempt.attempt_id));
    if (!held.ok() || !*held || req.attempt_lock_fd < 0) {
      violations.push_back("job " + std::to_string(req.job.job_id) + " ran without its attempt lock");
    }
    const Script s = script;
    ExecutionOutcome out;
    ExecutorReport& r = out.report;
    r.complete = true;
    r.invoked = true;
    switch (s) {
      case Script::kSuccess:
        out.committed_version = req.job.spec.start_version + 1;
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
      case Script::kConflict: r.code = StatusCode::kCommitConflict; break;
      case Script::kAlreadyExists: r.code = StatusCode::kAlreadyExists; break;
      case Script::kNotFound: r.code = StatusCode::kNotFound; break;
      case Script::kIoError: r.code = StatusCode::kIOError; break;
      case Script::kLost:
      case Script::kLostAlive:
      case Script::kLeaderLost:
      case Script::kLeaderLostAlive:
        r.complete = false;
        r.invoked = false;
        break;
    }
    if (s != Script::kSuccess) out.message = std::string("scripted ") + ScriptName(static_cast<int>(s));
    if (s == Script::kLostAlive || s == Script::kLeaderLostAlive) {
      // The worker inherited the attempt lock and outlives the dispatcher's descriptor.
      int fd = ::fcntl(req.attempt_lock_fd, F_DUPFD_CLOEXEC, 0);
      if (fd < 0) violations.push_back("cannot keep the attempt lock of a live worker");
      alive[req.job.job_id] = fd;
    }
    if (s == Script::kLeaderLost || s == Script::kLeaderLostAlive) {
      // Another process proves this leader dead and takes the lease: the result CAS must lose (C5).
      Result<LeaderLease> lease = store->GetLeader();
      Result<LeaderLease> stolen =
          lease.ok() ? store->TakeOverLeader("usurper", *lease, clock(), kLeaseTtlMs) : lease.status();
      if (!stolen.ok()) violations.push_back("cannot take the lease: " + stolen.status().ToString());
    }
    return out;
  }

  void Exit(int64_t job_id) {
    auto it = alive.find(job_id);
    if (it == alive.end()) return;
    if (it->second >= 0) ::close(it->second);
    alive.erase(it);
  }
  void KillAll() {
    while (!alive.empty()) Exit(alive.begin()->first);
  }

  JobStore* store = nullptr;
  std::function<int64_t()> clock;
  Script script = Script::kSuccess;
  std::vector<Call> calls;
  std::vector<std::string> violations;
  std::map<int64_t, int> alive;  // job id -> the live worker's attempt-lock descriptor
};

// ---- The world: the real store, leader, runner, reconciler and commands, plus the model ----

struct Snapshot {
  std::map<int64_t, JobRecord> jobs;
  std::map<int64_t, std::vector<JobEvent>> events;
};

class World {
 public:
  World() {
    data_ = &Data();
    executor_.clock = [this] { return now_; };
    OpenStore();
    table_ = MustOk(store_->RegisterTable("local", "db", "docs", data_->path, now_), "register table");
    StartLeader(/*takeover=*/true);
    Check();
  }
  ~World() {
    for (const auto& kv : snap_.events) {
      for (const JobEvent& e : kv.second) ++Coverage()[e.kind];
    }
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
      case Op::kAdmitCreate: AdmitCreate(c); break;
      case Op::kAdmitDrop: AdmitDrop(c); break;
      case Op::kAdmitDropNoop: AdmitDropNoop(c); break;
      case Op::kCancel: Cancel(c); break;
      case Op::kBeginCancel: BeginCancel(c); break;
      case Op::kDispatch: DispatchOne(c); break;
      case Op::kRunRefreshes: RunRefreshes(); break;
      case Op::kRefreshFailure: RefreshFailure(c); break;
      case Op::kReconcile: Reconcile(); break;
      case Op::kWorkerExit: WorkerExit(c); break;
      case Op::kResolve: Resolve(c); break;
      case Op::kDropTable: DropTable(); break;
      case Op::kArchive: Archive(); break;
      case Op::kAdvanceClock: AdvanceClock(c.action == 0 ? 1'000 : c.action == 1 ? 45'000 : 40LL * 60'000); break;
      case Op::kStaleCallback: StaleCallback(c); break;
      case Op::kCrash: Crash(c.flag, c.action % 2 == 1); break;
      case Op::kRefreshThenCrash: RefreshThenCrash(c); break;
    }
    Check();
  }

 private:
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
    executor_.store = nullptr;
    store_.reset();
  }

  // A new leader process: Leader::Start (lease with a new epoch, recovery pass), then this
  // test's runner and reconciler under the same holder and epoch.
  void StartLeader(bool takeover) {
    ++generation_;
    holder_ = "leader-" + std::to_string(generation_);
    LeaderOptions lo;
    lo.runner.node_id = "local";
    lo.runner.leader_holder = holder_;
    lo.runner.lease_ttl_ms = kLeaseTtlMs;
    if (takeover) lo.holder_is_dead = [](const LeaderLease&) { return true; };
    leader_ = std::make_unique<Leader>(store_.get(), &executor_, lo, [this] { return now_; });
    const size_t calls = executor_.calls.size();
    Status st = leader_->Start();
    MODEL_CHECK(st.ok(), "leader start: " << st.ToString());
    MODEL_CHECK(executor_.calls.size() == calls, "the recovery pass dispatched a job");
    MODEL_CHECK(leader_->leader_epoch() > last_epoch_, "a new leader needs a new epoch: " << leader_->leader_epoch()
                                                                                           << " after " << last_epoch_);
    if (last_epoch_ > 0) old_epochs_.push_back(last_epoch_);
    RunnerOptions ro;
    ro.node_id = "model-node";
    ro.leader_holder = holder_;
    ro.lease_ttl_ms = kLeaseTtlMs;
    runner_ = std::make_unique<JobRunner>(store_.get(), &executor_, ro);
    st = runner_->Start(now_);
    MODEL_CHECK(st.ok(), "runner start: " << st.ToString());
    MODEL_CHECK(runner_->leader_epoch() == leader_->leader_epoch(), "runner and leader disagree on the epoch");
    last_epoch_ = runner_->leader_epoch();
    JobRunner* runner = runner_.get();
    reconciler_ = std::make_unique<Reconciler>(store_.get(), holder_, [runner] { return runner->leader_epoch(); });
    control_ = std::make_unique<JobControl>(store_.get(), [this] { return now_; });
    leader_live_ = true;
  }

  // The leader process dies (its objects are destroyed, the store is reopened from its file)
  // and a new one starts; workers are separate processes and survive unless `workers_die`.
  void Crash(bool workers_die, bool wait_ttl) {
    CloseStore();
    if (workers_die) executor_.KillAll();
    if (wait_ttl) now_ += kLeaseTtlMs + 1'000;
    OpenStore();
    StartLeader(/*takeover=*/!wait_ttl);
    ExpectRecovered("after the recovery pass");
  }

  void Heartbeat() {
    if (!leader_live_) return;
    Result<LeaderLease> r = store_->RenewLeader(holder_, last_epoch_, now_, kLeaseTtlMs);
    MODEL_CHECK(r.ok(), "heartbeat: " << r.status().ToString());
  }

  void AdvanceClock(int64_t ms) {
    now_ += ms;
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

  // The job holding the fence of `name` on the current table incarnation, if any.
  const JobRecord* FenceHolder(const std::string& name) const {
    for (const auto& kv : snap_.jobs) {
      const JobRecord& j = kv.second;
      if (j.spec.table_incarnation == table_.table_incarnation && HoldsFence(j.state) &&
          j.fence.normalized_name == NormalizeIndexNameV1(name)) {
        return &j;
      }
    }
    return nullptr;
  }

  bool Orphan(const JobRecord& j) const { return j.spec.table_incarnation != table_.table_incarnation; }

  JobRecord Load(int64_t id) { return MustOk(store_->Get(id), "get job"); }

  // An admission attempt of `name` with `admitted` its result.
  void ExpectAdmission(const std::string& name, const Result<JobRecord>& admitted) {
    const JobRecord* holder = FenceHolder(name);
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
    MODEL_CHECK(admitted->spec.table_incarnation == table_.table_incarnation, "admitted on an old incarnation");
  }

  // ---- Commands ----

  void AdmitCreate(const Cmd& c) {
    CreateIndexStatement s;
    s.target = {"local", "db", "docs"};
    s.index_name = kNames[c.name];
    s.column = "category";
    s.type = index::IndexType::kBitmap;
    s.if_not_exists = c.flag;
    Result<JobRecord> r = Admission(store_.get(), {}).Create(s, "admin", now_);
    ExpectAdmission(s.index_name, r);
    if (!r.ok()) return;
    MODEL_CHECK(r->revision == 1 && r->state == JobState{}, "a new job is PENDING at revision 1");
    MODEL_CHECK(r->spec.start_version == data_->version, "start version " << r->spec.start_version);
  }

  void AdmitDrop(const Cmd& c) {
    JobSpec spec;
    spec.catalog_name = table_.catalog_name;
    spec.database_name = table_.database_name;
    spec.table_name = table_.table_name;
    spec.catalog_incarnation = table_.catalog_incarnation;
    spec.table_incarnation = table_.table_incarnation;
    spec.locator = table_.locator;
    spec.index_name = kNames[c.name];
    spec.operation = Operation::kDrop;
    spec.if_mode = c.flag ? IfMode::kIfExists : IfMode::kNone;
    spec.columns = {"category"};
    spec.start_version = data_->version;
    spec.schema_fingerprint = data_->fingerprint;
    Result<JobRecord> r = store_->Admit(spec, "admin", now_);
    ExpectAdmission(spec.index_name, r);
    if (!r.ok()) return;
    MODEL_CHECK(r->revision == 1 && r->state == JobState{}, "a new job is PENDING at revision 1");
  }

  void AdmitDropNoop(const Cmd& c) {
    DropIndexStatement s{{"local", "db", "docs"}, kNames[c.name], true};
    Result<JobRecord> r = Admission(store_.get(), {}).Drop(s, "admin", now_);
    ExpectAdmission(s.index_name, r);
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
      MODEL_CHECK(r->state.outcome == Outcome::kCancelledBeforeDispatch && DerivedState(r->state) == "CANCELLED" &&
                      !r->attempt,
                  "cancelled: " << StateText(r->state));
    } else if (pre.state.outcome == Outcome::kCancelledBeforeDispatch) {
      MODEL_CHECK(r.ok() && r->revision == pre.revision, "repeated CANCEL changes nothing");
      expect_unchanged_ = true;
    } else {
      MODEL_CHECK(!r.ok() && r.status().code() == StatusCode::kFailedPrecondition &&
                      r.status().message().rfind(std::string(kNotCancellableAfterDispatch), 0) == 0,
                  "CANCEL after dispatch of " << StateText(pre.state) << ": "
                                              << (r.ok() ? "ok" : r.status().ToString()));
      expect_unchanged_ = true;
    }
  }

  void BeginCancel(const Cmd& c) {
    const JobRecord* j =
        Pick(c.job, [](const JobRecord& r) { return r.state.execution == Execution::kPending; });
    if (j == nullptr) return;
    Result<JobRecord> r = store_->Apply({j->job_id, j->revision, std::nullopt, "admin", now_},
                                        [](const JobRecord& cur, Transition* t) -> Status {
                                          VIGIL_ASSIGN_OR_RETURN(t->next.state, jobs::BeginCancel(cur.state));
                                          t->events.push_back({std::string(event::kCancelRequested), {}, {}, {}});
                                          return Status::OK();
                                        });
    MODEL_CHECK(r.ok() && r->state.execution == Execution::kCancelling, "begin cancel: " << r.status().ToString());
  }

  void DispatchOne(const Cmd& c) {
    executor_.script = static_cast<Script>(c.script);
    std::optional<int64_t> next;
    for (const auto& kv : snap_.jobs) {
      if (kv.second.state.execution == Execution::kPending && !next) next = kv.first;
    }
    const size_t calls = executor_.calls.size();
    Result<std::optional<int64_t>> r = runner_->RunOnePending(now_);
    if (!leader_live_) {
      MODEL_CHECK(!r.ok() && r.status().code() == StatusCode::kCommitConflict,
                  "a demoted leader dispatched: " << (r.ok() ? "ok" : r.status().ToString()));
      MODEL_CHECK(executor_.calls.size() == calls, "a demoted leader called the executor");
      expect_unchanged_ = true;
      return;
    }
    if (!next) {
      MODEL_CHECK(r.ok() && !*r, "dispatch without a pending job: " << (r.ok() ? "ran one" : r.status().ToString()));
      MODEL_CHECK(executor_.calls.size() == calls, "the executor ran without a pending job");
      expect_unchanged_ = true;
      return;
    }
    MODEL_CHECK(executor_.calls.size() == calls + 1 && executor_.calls.back().job_id == *next,
                "the oldest PENDING job " << *next << " must be executed exactly once");
    const JobRecord pre = snap_.jobs.at(*next);
    JobRecord now = Load(*next);
    MODEL_CHECK(now.attempt && now.attempt->attempt_id == executor_.calls.back().attempt_id,
                "the executed attempt is the persisted one");
    const Script s = executor_.script;
    if (s == Script::kLeaderLost || s == Script::kLeaderLostAlive) {
      MODEL_CHECK(!r.ok() && r.status().code() == StatusCode::kCommitConflict,
                  "a demoted leader recorded a result: " << (r.ok() ? "ok" : r.status().ToString()));
      MODEL_CHECK(now.state.execution == Execution::kRunning, "a lost result leaves RUNNING: " << StateText(now.state));
      leader_live_ = false;
      return;
    }
    MODEL_CHECK(r.ok() && *r == *next, "dispatch: " << (r.ok() ? "another job" : r.status().ToString()));
    // The expected state: the pure state machine over the classification of the scripted report.
    ExecutorReport report;
    report.complete = true;
    report.invoked = true;
    switch (s) {
      case Script::kNotInvoked: report.invoked = false; report.code = StatusCode::kIOError; break;
      case Script::kNotInvokedStale: report.invoked = false; report.code = StatusCode::kFailedPrecondition; break;
      case Script::kBeforeRequest: report = {false, false, StatusCode::kOk, true}; break;
      case Script::kConflict: report.code = StatusCode::kCommitConflict; break;
      case Script::kAlreadyExists: report.code = StatusCode::kAlreadyExists; break;
      case Script::kNotFound: report.code = StatusCode::kNotFound; break;
      case Script::kIoError: report.code = StatusCode::kIOError; break;
      case Script::kLost:
      case Script::kLostAlive: report = {false, false, StatusCode::kOk, false}; break;
      default: break;
    }
    Classification cls = Classify(pre.spec.operation, pre.spec.if_mode, report);
    Result<JobState> want = FinishAttempt(*jobs::Dispatch(pre.state), cls.result, cls.observed_change);
    MODEL_CHECK(want.ok(), "pure transition: " << want.status().ToString());
    MODEL_CHECK(now.state == *want, "after " << ScriptName(c.script) << " of " << Name(pre.spec.operation) << ": got "
                                             << StateText(now.state) << ", want " << StateText(*want));
    MODEL_CHECK(now.invoked == (report.complete && report.invoked), "invoked flag");
    if (s == Script::kSuccess) {
      MODEL_CHECK(now.committed_version == pre.spec.start_version + 1, "committed version");
    }
  }

  void RunRefreshes() {
    Result<int> r = runner_->RunRefreshes(now_);
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
    Result<JobRecord> started =
        store_->RefreshStart({pre.job_id, pre.revision, last_epoch_, holder_, now_});
    if (!leader_live_) {
      MODEL_CHECK(!started.ok() && started.status().code() == StatusCode::kCommitConflict,
                  "a demoted leader started a refresh");
      expect_unchanged_ = true;
      return;
    }
    MODEL_CHECK(started.ok() && started->state.refresh == RefreshState::kRunning &&
                    started->refresh_generation == pre.refresh_generation + 1,
                "refresh start: " << started.status().ToString());
    Result<JobRecord> failed = store_->RefreshDone({pre.job_id, started->revision, last_epoch_, holder_, now_},
                                                   started->refresh_generation, false, "model refresh failure");
    MODEL_CHECK(failed.ok(), "refresh failure: " << failed.status().ToString());
    JobState want = *FinishRefresh(*StartRefresh(pre.state), false);
    MODEL_CHECK(failed->state == want, "failed refresh: " << StateText(failed->state));
    MODEL_CHECK(failed->refresh_next_at_ms && *failed->refresh_next_at_ms > now_, "a retry is scheduled");
  }

  void Reconcile() {
    now_ += kReconcileJumpMs;
    Heartbeat();
    const size_t calls = executor_.calls.size();
    Result<int> r = reconciler_->RunDue(now_);
    MODEL_CHECK(executor_.calls.size() == calls, "the reconciler dispatched");
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
    if (executor_.alive.empty()) return;
    auto it = executor_.alive.begin();
    std::advance(it, static_cast<size_t>(c.job) % executor_.alive.size());
    executor_.Exit(it->first);
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
    MODEL_CHECK(r->job.state == *pure, Name(action) << ": got " << StateText(r->job.state) << ", want "
                                                    << StateText(*pure));
    MODEL_CHECK(r->job.state.outcome == pre.state.outcome, "a resolution never changes the outcome");
    if (action == ResolveAction::kForceReleaseWithoutRefresh) {
      MODEL_CHECK(r->warnings.size() == 2, "FORCE WITHOUT REFRESH warns twice");
      MODEL_CHECK(r->job.refresh_generation == pre.refresh_generation + 1, "FORCE WITHOUT REFRESH bumps the generation");
    }
  }

  void DropTable() {
    std::vector<int64_t> guards;
    for (const auto& kv : snap_.jobs) {
      if (kv.second.spec.table_incarnation == table_.table_incarnation && HoldsFence(kv.second.state)) {
        guards.push_back(kv.first);
      }
    }
    Status st = control_->DropTable("local", "db", "docs", admin_);
    if (!guards.empty()) {
      MODEL_CHECK(st.code() == StatusCode::kFailedPrecondition &&
                      st.message().rfind(std::string(kTableGuarded), 0) == 0 &&
                      st.message().find(std::to_string(guards.front())) != std::string::npos,
                  "DROP TABLE while job " << guards.front() << " guards it: " << st.ToString());
      expect_unchanged_ = true;
      return;
    }
    MODEL_CHECK(st.ok(), "DROP TABLE of an unguarded table: " << st.ToString());
    auto gone = MustOk(store_->LookupTable("local", "db", "docs"), "lookup");
    MODEL_CHECK(!gone, "the dropped table is still registered");
    const std::string old = table_.table_incarnation;
    table_ = MustOk(store_->RegisterTable("local", "db", "docs", data_->path, now_), "re-register table");
    MODEL_CHECK(table_.table_incarnation != old, "a re-created table gets a new incarnation");
  }

  void Archive() {
    const int64_t before = now_ + 1;
    ArchiveResult r = MustOk(store_->Archive(before, now_), "archive");
    int64_t archived = 0;
    int64_t tombstoned = 0;
    for (const auto& kv : snap_.jobs) {
      const JobRecord& pre = kv.second;
      const JobRecord now = Load(kv.first);
      const bool eligible = !pre.archived_at_ms && pre.state.execution == Execution::kTerminal &&
                            pre.finished_at_ms && *pre.finished_at_ms < before;
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
    Result<JobRecord> r = store_->RecordResult({pre.job_id, pre.revision, last_epoch_, holder_, now_}, wrong);
    MODEL_CHECK(!r.ok() && r.status().code() == StatusCode::kCommitConflict,
                "a result for another attempt: " << (r.ok() ? "accepted" : r.status().ToString()));
    if (!old_epochs_.empty()) {
      AttemptReport right = wrong;
      right.attempt_id = pre.attempt->attempt_id;
      const int64_t old = old_epochs_[static_cast<size_t>(c.action) % old_epochs_.size()];
      r = store_->RecordResult({pre.job_id, pre.revision, old, holder_, now_}, right);
      MODEL_CHECK(!r.ok() && r.status().code() == StatusCode::kCommitConflict,
                  "a result under old epoch " << old << ": " << (r.ok() ? "accepted" : r.status().ToString()));
    }
    if (pre.refresh_generation > 0) {
      r = store_->RefreshDone({pre.job_id, pre.revision, last_epoch_, holder_, now_}, pre.refresh_generation - 1, true);
      MODEL_CHECK(!r.ok() && (r.status().code() == StatusCode::kCommitConflict),
                  "an older refresh generation's completion: " << (r.ok() ? "accepted" : r.status().ToString()));
    }
  }

  void RefreshThenCrash(const Cmd& c) {
    const JobRecord* j = Pick(c.job, RefreshStartable);
    if (j != nullptr && leader_live_) {
      Result<JobRecord> started = store_->RefreshStart({j->job_id, j->revision, last_epoch_, holder_, now_});
      MODEL_CHECK(started.ok(), "refresh start: " << started.status().ToString());
    }
    Crash(c.flag, c.action % 2 == 1);
  }

  // ---- Expected quiescence after the leader's passes ----

  // After a refresh run by a live leader nothing is left REQUIRED or due for a retry (T11, C9,
  // C10); after a recovery pass not even a RUNNING refresh of the dead leader.
  void ExpectNoRefreshDue(const char* when, bool running_ok) {
    for (const JobRecord& j : MustOk(store_->List(AllJobs()), "list")) {
      MODEL_CHECK(j.state.refresh != RefreshState::kRequired,
                  when << ": job " << j.job_id << " still needs its refresh: " << StateText(j.state)
                       << (j.archived_at_ms ? " (archived)" : ""));
      MODEL_CHECK(running_ok || j.state.refresh != RefreshState::kRunning,
                  when << ": job " << j.job_id << " keeps the dead leader's RUNNING refresh: " << StateText(j.state));
      MODEL_CHECK(j.state.refresh != RefreshState::kRetryPending || (j.refresh_next_at_ms && *j.refresh_next_at_ms > now_),
                  when << ": job " << j.job_id << " has a due refresh retry: " << StateText(j.state));
    }
  }

  // After a reconcile pass (every watcher due) or a recovery pass (which also ran the refreshes,
  // so a pending ACK may have completed before its attribution).
  void ExpectReconciled(const char* when, bool refreshed) {
    for (const JobRecord& j : MustOk(store_->List(AllJobs()), "list")) {
      const bool alive = executor_.alive.count(j.job_id) > 0;
      if (j.state.execution == Execution::kRunning) {
        MODEL_CHECK(alive, when << ": job " << j.job_id << " is RUNNING but its dispatcher and worker are gone");
      }
      if (j.state.outcome != Outcome::kUnknown) continue;
      const ReconcileState r = j.state.reconcile;
      const Disposition d = j.state.disposition;
      if (alive) {
        MODEL_CHECK(r == ReconcileState::kWatching || r == ReconcileState::kStoppedByForce,
                    when << ": job " << j.job_id << " with a live worker: " << StateText(j.state));
        continue;
      }
      // Terminated: proven and read; attributed unless a resolution waits for its refresh.
      const bool waits = d == Disposition::kAckRefreshPending || d == Disposition::kForceRefreshPending ||
                         (refreshed && d == Disposition::kAcknowledged);
      MODEL_CHECK(r == ReconcileState::kStoppedByForce || (r == ReconcileState::kStoppedTerminationProven && waits),
                  when << ": job " << j.job_id << " with a dead worker is still " << StateText(j.state)
                       << (j.tombstone ? " (tombstone)" : ""));
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
    MODEL_CHECK(executor_.violations.empty(), executor_.violations.front());
    Snapshot next;
    for (JobRecord& j : MustOk(store_->List(AllJobs()), "list")) {
      const int64_t id = j.job_id;
      next.jobs.emplace(id, std::move(j));
    }
    for (const auto& kv : snap_.jobs) {
      MODEL_CHECK(next.jobs.count(kv.first) == 1, "job " << kv.first << " vanished");
    }
    std::map<std::string, std::set<int64_t>> by_state;
    std::map<int64_t, int> executed;
    for (const auto& call : executor_.calls) executed[call.job_id]++;
    for (const auto& kv : next.jobs) {
      const JobRecord& j = kv.second;
      const JobState& s = j.state;
      const std::string where = "job " + std::to_string(j.job_id) + " " + StateText(s);
      Status legal = CheckLegal(s);
      MODEL_CHECK(legal.ok(), where << ": " << legal.ToString());
      by_state[std::string(DerivedState(s))].insert(j.job_id);
      const bool refresh_pending = s.refresh == RefreshState::kRequired || s.refresh == RefreshState::kRunning ||
                                   s.refresh == RefreshState::kRetryPending;
      MODEL_CHECK(IsFinal(s) == (s.execution == Execution::kTerminal &&
                                 (s.outcome == Outcome::kUnknown || !refresh_pending)),
                  where << ": IsFinal " << IsFinal(s) << " for " << DerivedState(s));

      std::vector<JobEvent> events = MustOk(store_->Events(j.job_id), "events");
      CheckEvents(j, events);
      // I2: executed at most once, and only the persisted attempt.
      const int runs = executed.count(j.job_id) ? executed[j.job_id] : 0;
      MODEL_CHECK(runs <= 1, where << ": executed " << runs << " times");
      for (const auto& call : executor_.calls) {
        if (call.job_id == j.job_id) {
          MODEL_CHECK(j.attempt && call.attempt_id == j.attempt->attempt_id, where << ": executed another attempt");
        }
      }
      // I1: a dispatched job carries its full attempt identity.
      const bool dispatched = std::any_of(events.begin(), events.end(),
                                          [](const JobEvent& e) { return e.kind == event::kDispatched; });
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
      // I5: a live worker's job still counts as possibly committing; its fence holds unless FORCE.
      if (executor_.alive.count(j.job_id)) {
        MODEL_CHECK(ExecutorMayCommit(s), where << ": the worker still runs but the store thinks it cannot commit");
        MODEL_CHECK(HoldsFence(s) || s.disposition == Disposition::kForceReleased,
                    where << ": fence released while the worker may commit");
      }
      if (ExecutorMayCommit(s) && !HoldsFence(s)) {
        MODEL_CHECK(s.disposition == Disposition::kForceReleased, where << ": fence released while an executor may commit");
      }
      MODEL_CHECK(!j.tombstone || j.archived_at_ms, where << ": a tombstone is archived");
      // Stays archived; the admitted fields never change.
      auto prev = snap_.jobs.find(j.job_id);
      if (prev != snap_.jobs.end()) {
        const JobRecord& p = prev->second;
        MODEL_CHECK(j.revision >= p.revision, where << ": revision went back");
        MODEL_CHECK(!p.archived_at_ms || j.archived_at_ms == p.archived_at_ms, where << ": archival undone");
        MODEL_CHECK(j.spec == p.spec && j.fence == p.fence && j.creator == p.creator, where << ": admitted fields changed");
        MODEL_CHECK(!p.attempt || (j.attempt && *j.attempt == *p.attempt), where << ": the attempt identity changed");
        if (expect_unchanged_) {
          MODEL_CHECK(j == p, where << ": a step that must change nothing changed the job (was "
                                    << StateText(p.state) << " rev " << p.revision << ")");
        }
      }
      next.events.emplace(j.job_id, std::move(events));
    }
    if (expect_unchanged_) {
      MODEL_CHECK(next.jobs.size() == snap_.jobs.size(), "a step that must change nothing created a job");
    }
    // Listing by derived state finds exactly the jobs in that state.
    for (const auto& kv : by_state) {
      JobFilter f = AllJobs();
      f.state = kv.first;
      std::set<int64_t> listed;
      for (const JobRecord& j : MustOk(store_->List(f), "list by state")) listed.insert(j.job_id);
      MODEL_CHECK(listed == kv.second, "listing state " << kv.first << " found " << listed.size() << " jobs, want "
                                                        << kv.second.size());
    }
    CheckFences(next);
    snap_ = std::move(next);
    expect_unchanged_ = false;
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
      MODEL_CHECK(MustOk(row.Text(1), "c") == k.catalog_incarnation && MustOk(row.Text(2), "t") == k.table_incarnation &&
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
        MODEL_CHECK(f.outcome == Outcome::kNone ||
                        (f.outcome == Outcome::kUnknown && has(event::kAttributed) && proven &&
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
        MODEL_CHECK(e.seq == seq + 1 && e.part == 0, where << ": seq " << e.seq << " part " << e.part << " after seq "
                                                            << seq);
        if (seq >= 1) MODEL_CHECK(from_text == last_to_text, where << ": seq " << e.seq << " starts at " << from_text
                                                                   << " but the job was " << last_to_text);
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
    MODEL_CHECK(last_to && *last_to == j.state, where << ": the last event ends at " << last_to_text << " but the job is "
                                                      << StateText(j.state));
    MODEL_CHECK(dispatched <= 1, where << ": DISPATCHED " << dispatched << " times");
  }

  testing::TempDir dir_;
  const SharedDataset* data_ = nullptr;
  int64_t now_ = kT0;
  ScriptedExecutor executor_;
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<Leader> leader_;
  std::unique_ptr<JobRunner> runner_;
  std::unique_ptr<Reconciler> reconciler_;
  std::unique_ptr<JobControl> control_;
  TableEntry table_;
  std::string holder_;
  int generation_ = 0;
  int64_t last_epoch_ = 0;
  std::vector<int64_t> old_epochs_;
  bool leader_live_ = false;
  bool expect_unchanged_ = false;
  Snapshot snap_;
  const Principal admin_ = Principal::LocalAdmin();
};

// Counterexamples the property found (shrunk), replayed deterministically.
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
  };
  for (const auto& seq : found) {
    rc::detail::TestParams params;
    params.maxSuccess = 1;
    params.disableShrinking = true;
    rc::detail::TestMetadata meta;
    const auto result = rc::detail::checkTestable(
        [&seq] {
          World world;
          for (const Cmd& c : seq) world.Step(c);
        },
        meta, params);
    std::ostringstream os;
    rc::detail::printResultMessage(result, os);
    EXPECT_TRUE(result.template is<rc::detail::SuccessResult>()) << os.str();
  }
}

TEST(JobModelTest, RandomCommandSequencesKeepEveryInvariant) {
  Data();  // create the dataset outside the timed property
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  if (std::getenv("RC_PARAMS") == nullptr) {
    params.maxSuccess = 60;
    params.maxSize = 60;
  }
  rc::detail::TestMetadata meta;
  meta.id = meta.description = "job lifecycle model";
  const auto result = rc::detail::checkTestable(
      [] {
        const auto cmds = *rc::gen::container<std::vector<Cmd>>(GenCmd());
        World world;
        for (const Cmd& c : cmds) world.Step(c);
      },
      meta, params);
  std::ostringstream os;
  rc::detail::printResultMessage(result, os);
  EXPECT_TRUE(result.template is<rc::detail::SuccessResult>()) << os.str();
  std::ostringstream kinds;
  for (const auto& kv : World::Coverage()) kinds << " " << kv.first << "=" << kv.second;
  std::cout << "events over all sequences:" << kinds.str() << std::endl;
}

}  // namespace
}  // namespace vigil::jobs
