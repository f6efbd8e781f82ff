// The index-job state machine (seed 000 sections 7.1-7.3, DESIGN.md section 5):
// the five persisted state dimensions, their legal combinations, the derived
// SHOW `State`, whether the same-name fence is held, and every transition
// T1-T14 (plus Vigil's provenance attribution) as a pure function from one
// JobState to the next. Persistence (compare-and-set on revision, leader
// epoch and expected states, one `revision+1` event per transition) lives in
// the job store; nothing outside this file decides what a transition may do.
// It is also the one home of the derived-state vocabulary every surface uses
// (SQL, the HTTP API's job JSON and /v1/config, the remote shell, the console
// and the Python package): which states are final, which may hold the fence,
// which a RESOLVE applies to.
// Pure values and functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/status.h"

namespace vigil::jobs {

enum class Execution { kPending, kCancelling, kRunning, kTerminal };
enum class Outcome { kNone, kCommitted, kNotCommitted, kNoop, kCancelledBeforeDispatch, kUnknown };
enum class RefreshState { kNotRequired, kRequired, kRunning, kDone, kRetryPending, kSkippedByForce };
enum class ReconcileState {
  kNone,
  kWatching,
  kRetryPending,
  kFinalReadPending,
  kStoppedTerminationProven,
  kStoppedByForce
};
enum class Disposition { kNone, kAckRefreshPending, kAcknowledged, kForceRefreshPending, kForceReleased };

std::string_view Name(Execution v);
std::string_view Name(Outcome v);
std::string_view Name(RefreshState v);
std::string_view Name(ReconcileState v);
std::string_view Name(Disposition v);
// Parse the names above; Corruption for unknown text (they come from storage).
Result<Execution> ParseExecution(std::string_view s);
Result<Outcome> ParseOutcome(std::string_view s);
Result<RefreshState> ParseRefreshState(std::string_view s);
Result<ReconcileState> ParseReconcileState(std::string_view s);
Result<Disposition> ParseDisposition(std::string_view s);

struct JobState {
  Execution execution = Execution::kPending;
  Outcome outcome = Outcome::kNone;
  RefreshState refresh = RefreshState::kNotRequired;
  ReconcileState reconcile = ReconcileState::kNone;
  Disposition disposition = Disposition::kNone;

  bool operator==(const JobState&) const = default;
};

// OK when the combination is legal (seed 000 section 7.1); Internal naming the rule otherwise.
Status CheckLegal(const JobState& s);

// The SHOW `State` column: PENDING, RUNNING, REFRESHING, FINISHED, FAILED,
// FAILED_REFRESH_PENDING, COMMITTED_REFRESH_PENDING, COMMITTED_REFRESH_SKIPPED,
// FAILED_REFRESH_SKIPPED, CANCELLED, OUTCOME_UNKNOWN.
std::string_view DerivedState(const JobState& s);
// Whether the derived state is final (WAIT INDEX JOB returns).
bool IsFinal(const JobState& s);
// Whether a derived state's name (DerivedState's text, as SHOW prints it) is final.
bool IsFinalStateName(std::string_view derived);
// Whether a job shown in `derived` state with `disposition` (Name(Disposition)) can change no
// more: final, and not an OUTCOME_UNKNOWN that the reconciler or a RESOLVE may still settle
// (only FORCE_RELEASE ends one for good). Event streams end there.
bool IsSettledStateName(std::string_view derived, std::string_view disposition);
// Whether the same-name fence (and the target guard) must still be held (I5):
// an UNKNOWN outcome holds it until FORCE_RELEASED; a known outcome until its
// required refresh is DONE (or skipped by force); an active job always.
bool HoldsFence(const JobState& s);
// Whether an executor may still be running or committing for this job.
bool ExecutorMayCommit(const JobState& s);
// Whether an operator's RESOLVE ACKNOWLEDGED or FORCE_RELEASE would be taken (T12/T13): an
// UNKNOWN outcome neither force-released nor waiting for an acknowledgement's refresh. (An
// ADMIN's FORCE_RELEASE WITHOUT REFRESH also applies to a terminal job that HoldsFence.)
bool IsResolvable(const JobState& s);

// ---- The derived-state vocabulary, by name (DerivedState's text) ----
// Every derived state, in the order a listing offers them.
const std::vector<std::string_view>& DerivedStateNames();
// The final ones (IsFinalStateName).
const std::vector<std::string_view>& FinalStateNames();
// The states in which a job may hold its fence: a job in any other never does, so a search
// for a fence's holder lists these only.
const std::vector<std::string_view>& FenceHoldingStateNames();
// The states in which a job may be resolvable (IsResolvable).
const std::vector<std::string_view>& ResolvableStateNames();
// HoldsFence and IsResolvable of a job shown in `derived` state with `disposition`
// (Name(Disposition)): what a listing row or SHOW INDEX JOB's items tell, exactly.
bool HoldsFenceStateName(std::string_view derived, std::string_view disposition);
bool IsResolvableStateName(std::string_view derived, std::string_view disposition);
// Every legal JobState (CheckLegal), for the lists above and their tests.
const std::vector<JobState>& LegalStates();

// What a finished attempt reported, after classification (seed 000 section 7.4).
enum class AttemptResult {
  kNotInvoked,           // T4: proof that the provider was never called
  kCommitted,            // T5
  kNotCommitted,         // T6: no commit, nothing changed
  kNotCommittedChanged,  // T7: no commit, but a conflict/existence change needs a refresh
  kNoop,                 // T7: IF EXISTS / IF NOT EXISTS found nothing to do
  kUnknown,              // T8
};

// Each transition returns the next state, or FailedPrecondition naming the
// transition and the state it cannot start from.
Result<JobState> Admit();                          // T1
Result<JobState> BeginCancel(const JobState& s);   // T2 (PENDING -> CANCELLING)
Result<JobState> FinishCancel(const JobState& s);  // T2 (-> CANCELLED_BEFORE_DISPATCH)
Result<JobState> Dispatch(const JobState& s);      // T3
Result<JobState> FinishBeforeDispatch(const JobState& s, AttemptResult r,
                                      bool observed_change);  // NOOP/NOT_COMMITTED from PENDING
Result<JobState> FinishAttempt(const JobState& s, AttemptResult r,
                               bool observed_change);  // T4-T8
Result<JobState> ObserveChange(const JobState& s);     // T9
Result<JobState> ProveTermination(const JobState& s);  // T10 (-> FINAL_READ_PENDING)
Result<JobState> FinishFinalRead(const JobState& s);   // T10 (-> STOPPED_TERMINATION_PROVEN)
// Vigil's provenance attribution: after termination proof and the final read,
// the manifest history proves COMMITTED (attempt id found) or NOT_COMMITTED.
Result<JobState> Attribute(const JobState& s, bool committed);
Result<JobState> StartRefresh(const JobState& s);            // T11 (REQUIRED|RETRY_PENDING -> RUNNING)
Result<JobState> FinishRefresh(const JobState& s, bool ok);  // T11 (-> DONE | RETRY_PENDING); T12/T13 complete
Result<JobState> RequestAck(const JobState& s);              // T12
Result<JobState> RequestForce(const JobState& s);            // T13
Result<JobState> ForceWithoutRefresh(const JobState& s);     // T14

}  // namespace vigil::jobs
