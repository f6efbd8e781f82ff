#include "vigil/jobs/reconciler.h"

#include <algorithm>
#include <csignal>
#include <limits>
#include <vector>

#include "vigil/catalog/version_store.h"
#include "vigil/common/checksum.h"
#include "vigil/common/failpoint.h"
#include "vigil/common/file_lock.h"
#include "vigil/common/logging.h"
#include "vigil/jobs/executor.h"
#include "vigil/lance/lance_table.h"
#include "vigil/storage/dataset.h"
#include "vigil/storage/filename.h"

namespace vigil::jobs {

namespace {

constexpr char kLostResponse[] = "LOST_RESPONSE";

bool Watching(ReconcileState r) { return r == ReconcileState::kWatching || r == ReconcileState::kRetryPending; }

}  // namespace

Reconciler::Reconciler(JobStore* store, std::string leader_holder, std::function<int64_t()> leader_epoch,
                       ReconcilerOptions options)
    : store_(store), holder_(std::move(leader_holder)), leader_epoch_fn_(std::move(leader_epoch)), options_(options) {}

Reconciler::Reconciler(JobStore* store, std::string leader_holder, int64_t leader_epoch, ReconcilerOptions options)
    : Reconciler(
          store, std::move(leader_holder), [leader_epoch] { return leader_epoch; }, options) {}

std::vector<std::pair<std::string_view, int64_t>> ReconcileResults::Snapshot() const {
  return {{"lost_attempt", lost_attempts.load()},
          {"change_observed", changes_observed.load()},
          {"watched", watched.load()},
          {"termination_proven", terminations_proven.load()},
          {"committed", committed.load()},
          {"not_committed", not_committed.load()},
          {"error", errors.load()}};
}

void Reconciler::Count(std::atomic<int64_t> ReconcileResults::*count) const {
  if (options_.results != nullptr) ++(options_.results->*count);
}

Status Reconciler::Recover(int64_t now_ms) {
  Status job_error;
  return Pass(now_ms, /*all=*/true, &job_error).status();
}

bool Reconciler::Fenced(const JobRecord& job) const {
  // An external Lance table commits through LanceDB, which no store fences.
  return job.spec.engine == index::TableEngine::kVigil && options_.commits_fenced(job.provider);
}

Result<int> Reconciler::RunDue(int64_t now_ms, bool all) {
  Status job_error;
  VIGIL_ASSIGN_OR_RETURN(int examined, Pass(now_ms, all, &job_error));
  if (!job_error.ok()) return job_error;
  return examined;
}

Result<int> Reconciler::Pass(int64_t now_ms, bool all, Status* job_error) {
  epoch_ = leader_epoch_fn_();
  VIGIL_ASSIGN_OR_RETURN(std::vector<JobRecord> jobs, SettleLostAttempts(now_ms));
  const int64_t due_by = all ? std::numeric_limits<int64_t>::max() : now_ms;
  VIGIL_ASSIGN_OR_RETURN(std::vector<JobRecord> due, store_->ListReconcileDue(due_by, options_.batch_limit));
  // A settled attempt's termination is already proven by its free lock: examine it now too.
  for (JobRecord& job : due) {
    const int64_t id = job.job_id;
    if (std::none_of(jobs.begin(), jobs.end(), [id](const JobRecord& j) { return j.job_id == id; })) {
      jobs.push_back(std::move(job));
    }
  }
  for (JobRecord& job : jobs) {
    const int64_t id = job.job_id;
    Status st = Examine(std::move(job), now_ms);
    if (st.ok()) continue;
    if (st.code() == StatusCode::kCommitConflict) return st;  // leadership lost: stop the pass
    VIGIL_LOG_WARN("reconciler: job {}: {}", id, st.ToString());
    Count(&ReconcileResults::errors);
    if (job_error->ok()) *job_error = st;
  }
  return static_cast<int>(jobs.size());
}

Status Reconciler::ExamineJob(int64_t job_id, int64_t now_ms) {
  epoch_ = leader_epoch_fn_();
  VIGIL_ASSIGN_OR_RETURN(JobRecord job, store_->Get(job_id));
  Status st = Examine(std::move(job), now_ms);
  if (!st.ok() && st.code() != StatusCode::kCommitConflict) Count(&ReconcileResults::errors);
  return st;
}

Result<std::vector<JobRecord>> Reconciler::SettleLostAttempts(int64_t now_ms) {
  JobFilter filter;
  filter.state = "RUNNING";
  filter.limit = kMaxListLimit;
  std::vector<JobRecord> running;
  VIGIL_RETURN_IF_ERROR(store_->ForEach(filter, [&running](const JobRecord& j) {
    running.push_back(j);
    return Status::OK();
  }));
  std::vector<JobRecord> settled;
  for (JobRecord& job : running) {
    if (job.state.execution != Execution::kRunning || !job.attempt) continue;
    VIGIL_ASSIGN_OR_RETURN(std::optional<std::string> lost, LostReason(job, now_ms));
    if (!lost) continue;
    AttemptReport report;
    report.attempt_id = job.attempt->attempt_id;
    report.result = AttemptResult::kUnknown;
    report.error_code = kLostResponse;
    report.error_message = *lost;
    report.reconcile_backoff_s = options_.backoff.initial_s;
    const AttemptReport& r = report;
    VIGIL_ASSIGN_OR_RETURN(bool wrote,
                           Write(&job, now_ms, [&](const Cas& cas) { return store_->RecordResult(cas, r); }));
    if (!wrote) continue;
    Count(&ReconcileResults::lost_attempts);
    settled.push_back(std::move(job));
  }
  return settled;
}

Result<std::optional<std::string>> Reconciler::LostReason(const JobRecord& job, int64_t now_ms) {
  if (Fenced(job) && job.attempt->leader_epoch < epoch_) {
    // Its claim would be refused (its epoch no longer holds the lease): no need to wait for
    // its process. A worker of this host still running is stopped; it can only waste work.
    const std::string lock = AttemptLockPath(job.spec, job.attempt->attempt_id);
    Result<bool> held = FileLock::IsHeld(lock);
    if (held.ok() && *held) (void)KillWorker(job, lock, "its leader epoch lost the lease");
    return std::optional<std::string>("the attempt was dispatched under leader epoch " +
                                      std::to_string(job.attempt->leader_epoch) +
                                      ", which no longer holds the lease: the store refuses its commit");
  }
  const AttemptIdentity& attempt = *job.attempt;
  const bool elsewhere = attempt.executor_node_id != options_.node_id || attempt.node_epoch != options_.node_epoch;
  if (Fenced(job) && !options_.node_id.empty() && elsewhere) {
    // Another node's agent runs it: recording it UNKNOWN is what fences its commit, so it is
    // done once that node is gone, whatever its lock says (a frozen node may still hold it).
    VIGIL_ASSIGN_OR_RETURN(std::optional<std::string> gone, NodeGone(attempt, now_ms));
    if (!gone) return gone;
    const std::string lock = AttemptLockPath(job.spec, attempt.attempt_id);
    Result<bool> held = FileLock::IsHeld(lock);
    if (held.ok() && *held) (void)KillWorker(job, lock, "its node is gone");
    return std::optional<std::string>(*gone + ": the store refuses its commit");
  }
  const std::string gone = "the dispatcher of the attempt is gone without a recorded result";
  const std::string lock = AttemptLockPath(job.spec, job.attempt->attempt_id);
  Result<bool> held = FileLock::IsHeld(lock);
  if (held.ok() && !*held) return std::optional<std::string>(gone);
  if (held.ok()) {
    // A live lock whose dispatcher's node epoch is gone (its worker stopped, or in a frozen
    // cgroup) is waited for until the attempt's durable deadline; then the worker is killed
    // when it is exactly the recorded process of this host, and otherwise the job becomes
    // UNKNOWN without a proof, for an operator to resolve (seed 000 section 8).
    if (now_ms < job.attempt->deadline_at_ms) return std::optional<std::string>();
    VIGIL_ASSIGN_OR_RETURN(bool orphaned, NodeReplaced(*job.attempt));
    if (!orphaned) return std::optional<std::string>();
    VIGIL_RETURN_IF_ERROR(StopWorker(job, lock, "its dispatcher is gone, past the attempt's deadline").status());
    return std::optional<std::string>(gone);
  }
  if (held.status().code() == StatusCode::kNotFound) {
    // A missing lock file proves nothing by itself (the dataset may have moved).
    VIGIL_ASSIGN_OR_RETURN(bool replaced, NodeReplaced(*job.attempt));
    return replaced ? std::optional<std::string>(gone) : std::optional<std::string>();
  }
  VIGIL_LOG_WARN("reconciler: job {}: cannot probe {}: {}", job.job_id, lock, held.status().ToString());
  return std::optional<std::string>();
}

Result<bool> Reconciler::Write(JobRecord* job, int64_t now_ms, const std::function<Result<JobRecord>(const Cas&)>& op) {
  Cas cas{job->job_id, job->revision, epoch_, holder_, now_ms};
  Result<JobRecord> r = op(cas);
  if (r.ok()) {
    *job = std::move(r).value();
    return true;
  }
  if (r.status().code() != StatusCode::kCommitConflict) return r.status();
  VIGIL_ASSIGN_OR_RETURN(LeaderLease lease, store_->cluster().GetLeader());
  if (lease.epoch != epoch_ || lease.holder != holder_ || lease.expires_at_ms <= now_ms) {
    return Status::CommitConflict("reconciler: leader epoch " + std::to_string(epoch_) + " of " + holder_ +
                                  " is no longer live: " + r.status().message());
  }
  return false;  // another actor moved the job; a later pass reloads it
}

Result<Reconciler::Observation> Reconciler::ReadNewest(const JobSpec& spec) {
  if (spec.engine == index::TableEngine::kLance) return ReadNewestLance(spec);
  // The newest committed version or an error: an older good version is not an authoritative read.
  VIGIL_ASSIGN_OR_RETURN(std::shared_ptr<Dataset> ds,
                         Dataset::Open(spec.locator, std::nullopt,
                                       catalog::TableDatasetOptions(&store_->catalog(), spec.table_incarnation)));
  const Manifest& m = ds->manifest();
  std::vector<std::string> segments;
  segments.reserve(m.segments.size());
  for (const IndexSegmentMeta& s : m.segments) {
    segments.push_back(s.name + '\x1f' + s.uuid.ToString() + '\x1f' + s.index_type);
  }
  std::sort(segments.begin(), segments.end());
  std::string state = m.dataset_id.ToString();
  for (const std::string& s : segments) state += '\x1e' + s;
  Observation o;
  o.version = static_cast<int64_t>(m.version);
  o.fingerprint = std::to_string(segments.size()) + ":" + ChecksumToHex(Checksum64(state));
  return o;
}

Result<bool> Reconciler::NodeReplaced(const AttemptIdentity& attempt) {
  VIGIL_ASSIGN_OR_RETURN(std::optional<NodeInfo> node, store_->cluster().GetNode(attempt.executor_node_id));
  return node.has_value() && node->epoch != attempt.node_epoch;
}

Result<std::optional<TerminationProof>> Reconciler::Terminated(const JobRecord& job, int64_t now_ms) {
  using Proof = std::optional<TerminationProof>;
  const std::string lock = AttemptLockPath(job.spec, job.attempt->attempt_id);
  Result<bool> held = FileLock::IsHeld(lock);
  if (Fenced(job)) {
    // The job no longer runs the attempt, and its claim reads the job row in the claim's own
    // transaction: whatever its process still does, nothing of it can commit from now on.
    if (held.ok() && *held) (void)KillWorker(job, lock, "its job no longer runs the attempt");
    return Proof(TerminationProof::kCatalogFence);
  }
  if (held.ok() && *held && now_ms >= job.attempt->deadline_at_ms) {
    VIGIL_ASSIGN_OR_RETURN(bool orphaned, NodeReplaced(*job.attempt));
    if (orphaned) held = StopWorker(job, lock, "its dispatcher is gone, past the attempt's deadline");
  }
  if (held.ok()) return *held ? Proof() : Proof(TerminationProof::kLockFree);
  if (held.status().code() == StatusCode::kNotFound) {
    VIGIL_ASSIGN_OR_RETURN(bool replaced, NodeReplaced(*job.attempt));
    return replaced ? Proof(TerminationProof::kNodeReplaced) : Proof();
  }
  VIGIL_LOG_WARN("reconciler: job {}: cannot probe {}: {}", job.job_id, lock, held.status().ToString());
  return Proof();
}

Result<bool> Reconciler::KillWorker(const JobRecord& job, const std::string& lock, std::string_view why) {
  Result<std::optional<ProcessIdentity>> who = ReadAttemptProcess(lock, options_.env->fs());
  if (!who.ok() || !*who) return false;  // nothing recorded: nothing this leader can stop
  VIGIL_ASSIGN_OR_RETURN(bool killed, SignalExactProcess(**who, SIGKILL));
  if (killed) VIGIL_LOG_WARN("reconciler: job {}: killed worker {}: {}", job.job_id, (*who)->pid, why);
  return killed;  // false: another host's or boot's worker
}

Result<bool> Reconciler::StopWorker(const JobRecord& job, const std::string& lock, std::string_view why) {
  VIGIL_ASSIGN_OR_RETURN(bool killed, KillWorker(job, lock, why));
  if (!killed) return true;
  for (int i = 0; i < options_.kill_wait_polls; ++i) {
    Result<bool> held = FileLock::IsHeld(lock);
    if (!held.ok() || !*held) return held;
    // A poll of another process on the reconciler's clock (a fake one takes no real time).
    options_.env->SleepForMicros(10'000);
  }
  return FileLock::IsHeld(lock);
}

Status Reconciler::Watch(JobRecord* job, int64_t now_ms, const Observation* seen, const std::string& error) {
  WatchCheck check;
  check.read_ok = seen != nullptr;
  if (seen) {
    check.version = seen->version;
    check.fingerprint = seen->fingerprint;
  }
  check.error = error;
  check.backoff_s = options_.backoff.Next(job->reconcile_backoff_s);
  VIGIL_ASSIGN_OR_RETURN(bool wrote,
                         Write(job, now_ms, [&](const Cas& cas) { return store_->RecordWatch(cas, check); }));
  if (wrote) Count(&ReconcileResults::watched);
  return Status::OK();
}

Status Reconciler::Examine(JobRecord job, int64_t now_ms) {
  if (job.state.outcome != Outcome::kUnknown || !job.attempt) return Status::OK();
  auto changed = [&job](const Observation& o) {
    return o.version != job.last_observed_version.value_or(job.spec.start_version) ||
           (job.last_observed_fingerprint && *job.last_observed_fingerprint != o.fingerprint);
  };
  // Records a changed observation (T9); false when the job moved under us.
  auto observe = [&](const Observation& o) -> Result<bool> {
    if (!changed(o)) return true;
    VIGIL_ASSIGN_OR_RETURN(bool wrote, Write(&job, now_ms, [&](const Cas& cas) {
                             return store_->ObserveChange(cas, o.version, o.fingerprint);
                           }));
    if (wrote) Count(&ReconcileResults::changes_observed);
    return wrote;
  };

  if (Watching(job.state.reconcile)) {
    Result<Observation> seen = ReadNewest(job.spec);
    if (!seen.ok()) return Watch(&job, now_ms, nullptr, seen.status().ToString());
    VIGIL_ASSIGN_OR_RETURN(bool current, observe(*seen));
    if (!current) return Status::OK();
    VIGIL_ASSIGN_OR_RETURN(std::optional<TerminationProof> proof, Terminated(job, now_ms));
    if (!proof) return Watch(&job, now_ms, &*seen, "");
    const std::string attempt_id = job.attempt->attempt_id;
    VIGIL_ASSIGN_OR_RETURN(current, Write(&job, now_ms, [&](const Cas& cas) {
                             return store_->ProveTermination(cas, attempt_id, *proof);
                           }));
    if (!current) return Status::OK();
    Count(&ReconcileResults::terminations_proven);
    VIGIL_FAILPOINT("reconcile.after_termination_proof");
  }
  if (job.state.reconcile == ReconcileState::kFinalReadPending) {
    // The final authoritative read comes after the proof: nothing of the attempt can commit now.
    Result<Observation> final_read = ReadNewest(job.spec);
    if (!final_read.ok()) return Watch(&job, now_ms, nullptr, final_read.status().ToString());
    VIGIL_ASSIGN_OR_RETURN(bool current, observe(*final_read));
    if (!current) return Status::OK();
    const Observation& o = *final_read;
    VIGIL_ASSIGN_OR_RETURN(current, Write(&job, now_ms, [&](const Cas& cas) {
                             return store_->FinishFinalRead(cas, o.version, o.fingerprint);
                           }));
    if (!current) return Status::OK();
    VIGIL_FAILPOINT("reconcile.after_final_read");
  }
  if (job.state.reconcile == ReconcileState::kStoppedTerminationProven) return Attribute(&job, now_ms);
  return Status::OK();
}

Result<std::optional<std::string>> Reconciler::NodeGone(const AttemptIdentity& attempt, int64_t now_ms) {
  const std::string& id = attempt.executor_node_id;
  VIGIL_ASSIGN_OR_RETURN(std::optional<NodeInfo> node, store_->cluster().GetNode(id));
  if (!node) return std::optional<std::string>("node " + id + " that ran the attempt is no longer registered");
  if (node->epoch != attempt.node_epoch) {
    return std::optional<std::string>("node " + id + " restarted (epoch " + std::to_string(attempt.node_epoch) +
                                      ", now " + std::to_string(node->epoch) + ") while running the attempt");
  }
  VIGIL_ASSIGN_OR_RETURN(const int64_t lease_now, store_->cluster().LeaseClockMs(now_ms));
  if (node->heartbeat_at_ms + options_.node_ttl_ms > lease_now) return std::optional<std::string>();
  return std::optional<std::string>("node " + id + " running the attempt has not heartbeat for " +
                                    std::to_string(lease_now - node->heartbeat_at_ms) + " ms (lease " +
                                    std::to_string(options_.node_ttl_ms) + " ms)");
}

Result<std::optional<int64_t>> Reconciler::FindAttemptCommit(const JobRecord& job) {
  // The catalog records the attempt of every commit made through it; a commit made before the
  // table's catalog existed is in the manifest history of its committed versions.
  catalog::StoreVersionCatalog catalog(&store_->catalog(), job.spec.table_incarnation,
                                       [env = options_.env] { return env->NowMs(); });
  VIGIL_ASSIGN_OR_RETURN(std::optional<catalog::StoredVersion> claimed, catalog.FindAttempt(job.attempt->attempt_id));
  if (claimed) return std::optional<int64_t>(static_cast<int64_t>(claimed->version));
  const DatasetOptions committed = catalog::TableDatasetOptions(&store_->catalog(), job.spec.table_incarnation);
  std::vector<uint64_t> corrupt;
  VIGIL_ASSIGN_OR_RETURN(std::vector<VersionInfo> versions,
                         Dataset::ListVersions(job.spec.locator, committed, &corrupt));
  const auto start = static_cast<uint64_t>(job.spec.start_version);
  const std::string& attempt_id = job.attempt->attempt_id;
  uint64_t newest = start;
  std::vector<uint64_t> seen;
  for (const VersionInfo& v : versions) {
    if (v.version <= start) continue;
    if (v.txn.attempt_id == attempt_id && (!v.txn.job_id || *v.txn.job_id == job.job_id)) {
      return std::optional<int64_t>(static_cast<int64_t>(v.version));
    }
    seen.push_back(v.version);
    newest = std::max(newest, v.version);
  }
  // Absence is a proof only over a complete, readable history after the admitted version.
  for (uint64_t c : corrupt) {
    if (c > start) {
      return Status::Corruption("version " + std::to_string(c) +
                                " is unreadable; the attempt's commit cannot be ruled out");
    }
  }
  if (seen.size() != newest - start) {
    return Status::NotFound("versions after " + std::to_string(start) +
                            " are missing from the history; the attempt's commit cannot be ruled out");
  }
  if (job.last_observed_version && static_cast<int64_t>(newest) < *job.last_observed_version) {
    return Status::NotFound("the history ends before the final read's version " +
                            std::to_string(*job.last_observed_version));
  }
  return std::optional<int64_t>();
}

Status Reconciler::Attribute(JobRecord* job, int64_t now_ms) {
  // Only Vigil's own provider writes the attempt id into its commits, and a Lance table's
  // history proves some outcomes; a pending ACK/FORCE refresh is left to finish first.
  // Otherwise the job stays UNKNOWN for RESOLVE.
  if (!jobs::Attribute(job->state, true).ok()) return Status::OK();
  if (job->spec.engine == index::TableEngine::kLance) return AttributeLance(job, now_ms);
  if (job->provider != kProviderDirectory) return Status::OK();
  Result<std::optional<int64_t>> found = FindAttemptCommit(*job);
  if (!found.ok()) return Watch(job, now_ms, nullptr, found.status().ToString());
  if (*found) {
    // The worker may have died before its own fsync: make the commit durable before we say so.
    const std::string manifest = JoinPath(job->spec.locator, ManifestPath(static_cast<uint64_t>(**found)));
    Status durable = options_.env->fs()->SyncFile(manifest);
    if (durable.ok()) durable = options_.env->fs()->SyncDir(DirName(manifest));
    if (!durable.ok()) return Watch(job, now_ms, nullptr, durable.ToString());
  }
  const std::optional<int64_t> version = *found;
  VIGIL_ASSIGN_OR_RETURN(bool attributed, Write(job, now_ms, [&](const Cas& cas) {
                           return store_->Attribute(cas, version.has_value(), version);
                         }));
  if (!attributed) return Status::OK();
  Count(version ? &ReconcileResults::committed : &ReconcileResults::not_committed);
  RemoveAttemptLock(job->spec, job->attempt->attempt_id, options_.env->fs());  // the proof is spent
  return Status::OK();
}

Result<Reconciler::Observation> Reconciler::ReadNewestLance(const JobSpec& spec) {
  VIGIL_ASSIGN_OR_RETURN(lance::LanceSnapshot snap, lance::Inspect(spec.locator, LanceRunner()));
  std::vector<std::string> indexes;
  for (const lance::LanceIndex& i : snap.indexes) indexes.push_back(i.name + '\x1f' + i.uuid + '\x1f' + i.index_type);
  std::sort(indexes.begin(), indexes.end());
  std::string state = lance::SchemaFingerprint(snap.fields);
  for (const std::string& i : indexes) state += '\x1e' + i;
  Observation o;
  o.version = snap.version;
  o.fingerprint = std::to_string(indexes.size()) + ":" + ChecksumToHex(Checksum64(state));
  return o;
}

Status Reconciler::AttributeLance(JobRecord* job, int64_t now_ms) {
  VIGIL_ASSIGN_OR_RETURN(index::JobRequest request, ProviderJob(*job));
  Result<std::vector<lance::LanceVersion>> history =
      lance::History(job->spec.locator, job->spec.start_version, LanceRunner());
  if (!history.ok()) return Watch(job, now_ms, nullptr, history.status().ToString());
  const lance::Attribution found = lance::Attribute(request, *history);
  if (found.evidence == lance::Evidence::kUnproven) {
    (void)failpoint::Hit("reconciler.lance_unproven");  // tests: a pass read the history and proved nothing
    // Nothing later can prove more: it stays UNKNOWN for ACK / FORCE_RELEASE, with the reason.
    return Watch(job, now_ms, nullptr, "the Lance history proves no outcome: " + found.reason);
  }
  VIGIL_ASSIGN_OR_RETURN(bool attributed, Write(job, now_ms, [&](const Cas& cas) {
                           return store_->Attribute(cas, /*committed=*/false, std::nullopt);
                         }));
  if (attributed) {
    Count(&ReconcileResults::not_committed);
    VIGIL_LOG_INFO("reconciler: job {}: NOT_COMMITTED ({})", job->job_id, found.reason);
    RemoveAttemptLock(job->spec, job->attempt->attempt_id, options_.env->fs());
  }
  return Status::OK();
}

lance::LanceRunnerOptions Reconciler::LanceRunner() const {
  return lance::RunnerOptions(options_.lance, std::chrono::milliseconds(600'000));
}

}  // namespace vigil::jobs
