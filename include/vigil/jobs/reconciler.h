// The reconciler of UNKNOWN index jobs and the recovery pass of a new leader
// (seed 000 section 8.1 and appendix C; DESIGN.md sections 5 item 1 and 6).
// On a persisted backoff (30 s doubling to 30 min) it reopens the newest
// dataset version of each UNKNOWN job, records a changed version or index
// state (T9: refresh REQUIRED), and once the attempt is proven terminated
// makes the final read (T10) and attributes the outcome from the manifest
// history: a commit carrying the attempt id is COMMITTED, none is
// NOT_COMMITTED (Vigil's provenance attribution). It never attributes without
// a termination proof and never dispatches. Every write is a compare-and-set
// on the job's revision and the leader epoch; a job another actor moved is
// skipped and looked at again on a later pass.
//
// Termination proof (of the attempt's ability to commit, which is what the
// outcome depends on): for a provider whose commits the store fences
// (CommitsAreFenced: Vigil's own tables), the fence itself. An UNKNOWN job no
// longer runs its attempt, so the store refuses the attempt's claim, and a
// RUNNING attempt dispatched under an older leader epoch is refused by the
// lease check: such an attempt is recorded UNKNOWN at once, without waiting for
// its process, on any host; so is one running on another node (node_agent.h)
// once that node's epoch was replaced or its heartbeat is a lease old. For other providers: the attempt lock can be
// taken (no process of the attempt is alive); a held lock is never a proof, whatever the node epoch says, and only when
// the lock file is missing (it lives in the dataset's _staging folder, so e.g. the dataset moved) does a replaced node
// epoch of the attempt prove it. A worker of this host that can no longer
// commit is killed (exactly the recorded process) so it stops using resources.
// Thread safety: one thread drives a Reconciler; the store is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vigil/common/config.h"
#include "vigil/common/env.h"
#include "vigil/common/status.h"
#include "vigil/jobs/backoff.h"
#include "vigil/jobs/job_store.h"
#include "vigil/lance/lance_runner.h"

namespace vigil::jobs {

// What the reconciler's writes did, counted since the process started (GET /metrics shows them
// as vigil_index_job_reconcile_results_total). Only writes that took effect count; a job
// another actor moved first is not counted.
struct ReconcileResults {
  std::atomic<int64_t> lost_attempts{0};        // RUNNING attempts recorded UNKNOWN (T8)
  std::atomic<int64_t> changes_observed{0};     // a new version or index state recorded (T9)
  std::atomic<int64_t> watched{0};              // looked at, nothing proven yet: checked again later
  std::atomic<int64_t> terminations_proven{0};  // the attempt can no longer commit
  std::atomic<int64_t> committed{0};            // attributed COMMITTED from the history
  std::atomic<int64_t> not_committed{0};        // attributed NOT_COMMITTED from the history
  std::atomic<int64_t> errors{0};               // a job whose examination failed (logged)

  // Each count with its label, in a fixed order.
  std::vector<std::pair<std::string_view, int64_t>> Snapshot() const;
};

struct ReconcilerOptions {
  Backoff backoff;                  // jobs.reconcile_initial_backoff_seconds / reconcile_max_backoff_seconds
  int batch_limit = kMaxListLimit;  // jobs looked at per pass, 1..kMaxListLimit
  int kill_wait_polls = 500;        // 10 ms polls (sleeps of `env`) for a killed worker's lock to go
  Env* env = Env::Default();        // the clock of those polls and of catalog reads; the file system
                                    // an attributed commit is synced through
  // Whether a provider's commits are fenced by the store; tests of the lock-based proof, which
  // a provider outside the store's catalog needs, pass one that says no.
  std::function<bool(std::string_view provider)> commits_fenced = CommitsAreFenced;
  // The leader's own node: its attempts are judged by their attempt locks. An attempt of a
  // fenced provider that runs on another node (its agent's) is judged by that node's liveness:
  // lost once the node's epoch was replaced or its heartbeat is `node_ttl_ms` old on the lease
  // clock. Empty: every attempt is judged by its lock.
  std::string node_id;
  int64_t node_epoch = 0;
  int64_t node_ttl_ms = 30'000;
  // How an external Lance table's dataset is read (its newest version, its history).
  LanceConfig lance;
  // Where the results are counted; null: nowhere. Must outlive the reconciler.
  ReconcileResults* results = nullptr;
};

class Reconciler {
 public:
  // `leader_holder` is the actor of every write; `leader_epoch` is read before each pass.
  Reconciler(JobStore* store, std::string leader_holder, std::function<int64_t()> leader_epoch,
             ReconcilerOptions options = {});
  Reconciler(JobStore* store, std::string leader_holder, int64_t leader_epoch, ReconcilerOptions options = {});

  // The pass every new leader runs first: RunDue(now_ms, /*all=*/true), so the attempts of a
  // dead dispatcher become UNKNOWN and every UNKNOWN job is examined now, not after its backoff.
  // A job that fails is logged and left to later passes; only a lost leadership
  // (CommitConflict) or an unreadable store fails the pass.
  Status Recover(int64_t now_ms);

  // Records RUNNING attempts whose dispatcher is gone as UNKNOWN (T8, error code LOST_RESPONSE):
  // a fenced attempt dispatched under an older leader epoch (e.g. a demoted leader's: crash cut
  // C5), or the attempt lock is free, or its file is missing and the attempt's node epoch was
  // replaced. Any other held lock (a live dispatcher) is left alone. Then
  // examines those and each UNKNOWN job whose check is due (every one with `all`). Returns how
  // many UNKNOWN jobs were examined. A job that fails is logged and the pass goes on; the first
  // such error is returned after the pass. CommitConflict at once when leadership was lost.
  Result<int> RunDue(int64_t now_ms, bool all = false);

  // Examines one job now, whatever its schedule: used right after an attempt ended
  // UNKNOWN, when the reap that freed its attempt lock already proves termination.
  // CommitConflict when leadership was lost.
  Status ExamineJob(int64_t job_id, int64_t now_ms);

 private:
  struct Observation {
    int64_t version = 0;
    std::string fingerprint;
  };

  // The newest version and a fingerprint of its identity and index segments.
  Result<Observation> ReadNewest(const JobSpec& spec);
  // RunDue without failing on a job: the first job's error goes to *job_error.
  Result<int> Pass(int64_t now_ms, bool all, Status* job_error);
  // The lost attempts of RunDue, recorded as UNKNOWN.
  Result<std::vector<JobRecord>> SettleLostAttempts(int64_t now_ms);
  // Why a RUNNING attempt's dispatcher is gone (the UNKNOWN message), or nothing while it may
  // be alive. A worker of this host that can no longer commit is killed first (KillWorker); an
  // orphan of an unfenced provider past its deadline is killed and waited for (StopWorker).
  Result<std::optional<std::string>> LostReason(const JobRecord& job, int64_t now_ms);
  Status Examine(JobRecord job, int64_t now_ms);
  Status Attribute(JobRecord* job, int64_t now_ms);
  // An external Lance table: its newest version and indexes, and the attribution of an
  // attempt from the dataset's history (lance::Attribute); an unproven one stays UNKNOWN.
  Result<Observation> ReadNewestLance(const JobSpec& spec);
  Status AttributeLance(JobRecord* job, int64_t now_ms);
  lance::LanceRunnerOptions LanceRunner() const;
  // Whether the store fences the commits of `job`'s attempts (a Lance table's never are).
  bool Fenced(const JobRecord& job) const;
  // The termination proof of an UNKNOWN job's attempt, or nothing yet (see the top of this
  // file). An orphaned worker of an unfenced provider (its dispatcher's node epoch gone) still
  // holding the lock past the attempt's durable deadline is killed first.
  Result<std::optional<TerminationProof>> Terminated(const JobRecord& job, int64_t now_ms);
  // Kills the worker recorded in `lock` if it runs on this host and boot (logged with `why`);
  // returns whether it did. A worker that can no longer commit is only killed, not waited for
  // (its stopped supervisor may hold the lock, and a zombie stays until reaped).
  Result<bool> KillWorker(const JobRecord& job, const std::string& lock, std::string_view why);
  // KillWorker, then waits for the lock. Returns whether the lock is still held.
  Result<bool> StopWorker(const JobRecord& job, const std::string& lock, std::string_view why);
  Result<bool> NodeReplaced(const AttemptIdentity& attempt);
  // Why the node running another node's attempt can no longer run it (replaced, unregistered
  // or silent for a lease), or nothing while it heartbeats.
  Result<std::optional<std::string>> NodeGone(const AttemptIdentity& attempt, int64_t now_ms);
  Result<std::optional<int64_t>> FindAttemptCommit(const JobRecord& job);
  Status Watch(JobRecord* job, int64_t now_ms, const Observation* seen, const std::string& error);
  // Adds one to `count` of options_.results when there is one.
  void Count(std::atomic<int64_t> ReconcileResults::*count) const;
  // One leader CAS on *job, reloaded from its result. False when another actor moved the job;
  // CommitConflict when leadership was lost.
  Result<bool> Write(JobRecord* job, int64_t now_ms, const std::function<Result<JobRecord>(const Cas&)>& op);

  JobStore* store_;
  std::string holder_;
  std::function<int64_t()> leader_epoch_fn_;
  ReconcilerOptions options_;
  int64_t epoch_ = 0;  // of the running pass
};

}  // namespace vigil::jobs
