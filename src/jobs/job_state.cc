#include "vigil/jobs/job_state.h"

#include <algorithm>
#include <array>
#include <utility>

#include "enum_names.h"

namespace vigil::jobs {

namespace {

using internal::NameOf;
using internal::ParseOf;

constexpr std::array<std::pair<Execution, std::string_view>, 4> kExecution{{
    {Execution::kPending, "PENDING"},
    {Execution::kCancelling, "CANCELLING"},
    {Execution::kRunning, "RUNNING"},
    {Execution::kTerminal, "TERMINAL"},
}};
constexpr std::array<std::pair<Outcome, std::string_view>, 6> kOutcome{{
    {Outcome::kNone, "NONE"},
    {Outcome::kCommitted, "COMMITTED"},
    {Outcome::kNotCommitted, "NOT_COMMITTED"},
    {Outcome::kNoop, "NOOP"},
    {Outcome::kCancelledBeforeDispatch, "CANCELLED_BEFORE_DISPATCH"},
    {Outcome::kUnknown, "UNKNOWN"},
}};
constexpr std::array<std::pair<RefreshState, std::string_view>, 6> kRefresh{{
    {RefreshState::kNotRequired, "NOT_REQUIRED"},
    {RefreshState::kRequired, "REQUIRED"},
    {RefreshState::kRunning, "RUNNING"},
    {RefreshState::kDone, "DONE"},
    {RefreshState::kRetryPending, "RETRY_PENDING"},
    {RefreshState::kSkippedByForce, "SKIPPED_BY_FORCE"},
}};
constexpr std::array<std::pair<ReconcileState, std::string_view>, 6> kReconcile{{
    {ReconcileState::kNone, "NONE"},
    {ReconcileState::kWatching, "WATCHING"},
    {ReconcileState::kRetryPending, "RETRY_PENDING"},
    {ReconcileState::kFinalReadPending, "FINAL_READ_PENDING"},
    {ReconcileState::kStoppedTerminationProven, "STOPPED_TERMINATION_PROVEN"},
    {ReconcileState::kStoppedByForce, "STOPPED_BY_FORCE"},
}};
constexpr std::array<std::pair<Disposition, std::string_view>, 5> kDisposition{{
    {Disposition::kNone, "NONE"},
    {Disposition::kAckRefreshPending, "ACK_REFRESH_PENDING"},
    {Disposition::kAcknowledged, "ACKNOWLEDGED"},
    {Disposition::kForceRefreshPending, "FORCE_REFRESH_PENDING"},
    {Disposition::kForceReleased, "FORCE_RELEASED"},
}};

std::string Describe(const JobState& s) {
  return std::string(Name(s.execution)) + "/" + std::string(Name(s.outcome)) + "/" + std::string(Name(s.refresh)) +
         "/" + std::string(Name(s.reconcile)) + "/" + std::string(Name(s.disposition));
}

Status Illegal(std::string_view transition, const JobState& s) {
  return Status::FailedPrecondition(std::string(transition) + " is not allowed from " + Describe(s));
}

bool KnownOutcome(Outcome o) { return o == Outcome::kCommitted || o == Outcome::kNotCommitted || o == Outcome::kNoop; }

bool Rule(bool holds, const char* rule, const JobState& s, Status* out) {
  if (!holds && out->ok()) *out = Status::Internal(std::string("illegal job state ") + Describe(s) + ": " + rule);
  return holds;
}

// Applies `next` after checking it is legal (a transition bug is an internal error, not a state).
Result<JobState> Checked(const JobState& next) {
  VIGIL_RETURN_IF_ERROR(CheckLegal(next));
  return next;
}

}  // namespace

std::string_view Name(Execution v) { return NameOf(v, kExecution); }
std::string_view Name(Outcome v) { return NameOf(v, kOutcome); }
std::string_view Name(RefreshState v) { return NameOf(v, kRefresh); }
std::string_view Name(ReconcileState v) { return NameOf(v, kReconcile); }
std::string_view Name(Disposition v) { return NameOf(v, kDisposition); }
Result<Execution> ParseExecution(std::string_view s) { return ParseOf(s, kExecution, "execution state"); }
Result<Outcome> ParseOutcome(std::string_view s) { return ParseOf(s, kOutcome, "outcome"); }
Result<RefreshState> ParseRefreshState(std::string_view s) { return ParseOf(s, kRefresh, "refresh state"); }
Result<ReconcileState> ParseReconcileState(std::string_view s) {
  return ParseOf(s, kReconcile, "reconciliation state");
}
Result<Disposition> ParseDisposition(std::string_view s) { return ParseOf(s, kDisposition, "disposition"); }

Status CheckLegal(const JobState& s) {
  Status st;
  const bool terminal = s.execution == Execution::kTerminal;
  const bool unknown = s.outcome == Outcome::kUnknown;
  Rule(terminal || (s.outcome == Outcome::kNone && s.refresh == RefreshState::kNotRequired &&
                    s.reconcile == ReconcileState::kNone && s.disposition == Disposition::kNone),
       "a job that is not terminal has no outcome, refresh, watcher or disposition", s, &st);
  Rule(!terminal || s.outcome != Outcome::kNone, "a terminal job has an outcome", s, &st);
  Rule(!(s.reconcile == ReconcileState::kWatching || s.reconcile == ReconcileState::kRetryPending ||
         s.reconcile == ReconcileState::kFinalReadPending) ||
           unknown,
       "watching and the final read apply only to UNKNOWN", s, &st);
  Rule(!unknown || s.reconcile != ReconcileState::kNone, "an UNKNOWN outcome has a watcher state", s, &st);
  Rule(!(s.disposition == Disposition::kAckRefreshPending || s.disposition == Disposition::kAcknowledged ||
         s.disposition == Disposition::kForceRefreshPending) ||
           unknown,
       "ACK and ordinary FORCE apply only to UNKNOWN", s, &st);
  Rule(s.refresh != RefreshState::kSkippedByForce || s.disposition == Disposition::kForceReleased,
       "SKIPPED_BY_FORCE requires FORCE_RELEASED", s, &st);
  Rule((s.reconcile == ReconcileState::kStoppedByForce) == (s.disposition == Disposition::kForceReleased),
       "STOPPED_BY_FORCE goes with FORCE_RELEASED", s, &st);
  Rule(s.outcome != Outcome::kCancelledBeforeDispatch ||
           (s.refresh == RefreshState::kNotRequired && s.reconcile == ReconcileState::kNone &&
            s.disposition == Disposition::kNone),
       "a job cancelled before dispatch has nothing to refresh, watch or resolve", s, &st);
  Rule(!(s.disposition == Disposition::kAckRefreshPending || s.disposition == Disposition::kForceRefreshPending) ||
           s.refresh == RefreshState::kRequired || s.refresh == RefreshState::kRunning ||
           s.refresh == RefreshState::kRetryPending,
       "a pending resolution waits for its refresh", s, &st);
  return st;
}

std::string_view DerivedState(const JobState& s) {
  switch (s.execution) {
    case Execution::kPending:
    case Execution::kCancelling:
      return "PENDING";
    case Execution::kRunning:
      return "RUNNING";
    case Execution::kTerminal:
      break;
  }
  if (s.outcome == Outcome::kUnknown) return "OUTCOME_UNKNOWN";
  if (s.outcome == Outcome::kCancelledBeforeDispatch) return "CANCELLED";
  const bool committed = s.outcome != Outcome::kNotCommitted;  // COMMITTED or NOOP
  switch (s.refresh) {
    case RefreshState::kNotRequired:
    case RefreshState::kDone:
      return committed ? "FINISHED" : "FAILED";
    case RefreshState::kRequired:
    case RefreshState::kRunning:
      return "REFRESHING";
    case RefreshState::kRetryPending:
      return committed ? "COMMITTED_REFRESH_PENDING" : "FAILED_REFRESH_PENDING";
    case RefreshState::kSkippedByForce:
      return committed ? "COMMITTED_REFRESH_SKIPPED" : "FAILED_REFRESH_SKIPPED";
  }
  return "?";
}

bool IsFinal(const JobState& s) { return IsFinalStateName(DerivedState(s)); }

bool IsFinalStateName(std::string_view d) {
  const std::vector<std::string_view>& final = FinalStateNames();
  return std::find(final.begin(), final.end(), d) != final.end();
}

bool IsSettledStateName(std::string_view derived, std::string_view disposition) {
  if (!IsFinalStateName(derived)) return false;
  return derived != "OUTCOME_UNKNOWN" || disposition == Name(Disposition::kForceReleased);
}

bool HoldsFence(const JobState& s) {
  if (s.execution != Execution::kTerminal) return true;
  if (s.disposition == Disposition::kForceReleased) return false;
  if (s.outcome == Outcome::kUnknown) return true;
  if (s.outcome == Outcome::kCancelledBeforeDispatch) return false;
  return !(s.refresh == RefreshState::kNotRequired || s.refresh == RefreshState::kDone ||
           s.refresh == RefreshState::kSkippedByForce);
}

bool ExecutorMayCommit(const JobState& s) {
  if (s.execution == Execution::kRunning) return true;
  return s.outcome == Outcome::kUnknown && s.reconcile != ReconcileState::kFinalReadPending &&
         s.reconcile != ReconcileState::kStoppedTerminationProven;
}

bool IsResolvable(const JobState& s) { return RequestAck(s).ok() || RequestForce(s).ok(); }

const std::vector<JobState>& LegalStates() {
  static const std::vector<JobState> kAll = [] {
    std::vector<JobState> out;
    for (const auto& [e, en] : kExecution) {
      for (const auto& [o, on] : kOutcome) {
        for (const auto& [r, rn] : kRefresh) {
          for (const auto& [c, cn] : kReconcile) {
            for (const auto& [d, dn] : kDisposition) {
              const JobState s{e, o, r, c, d};
              if (CheckLegal(s).ok()) out.push_back(s);
            }
          }
        }
      }
    }
    return out;
  }();
  return kAll;
}

const std::vector<std::string_view>& DerivedStateNames() {
  static const std::vector<std::string_view> kAll = {"PENDING",
                                                     "RUNNING",
                                                     "REFRESHING",
                                                     "OUTCOME_UNKNOWN",
                                                     "FINISHED",
                                                     "FAILED",
                                                     "CANCELLED",
                                                     "COMMITTED_REFRESH_PENDING",
                                                     "FAILED_REFRESH_PENDING",
                                                     "COMMITTED_REFRESH_SKIPPED",
                                                     "FAILED_REFRESH_SKIPPED"};
  return kAll;
}

const std::vector<std::string_view>& FinalStateNames() {
  static const std::vector<std::string_view> kFinal = {
      "OUTCOME_UNKNOWN", "FINISHED", "FAILED", "CANCELLED", "COMMITTED_REFRESH_SKIPPED", "FAILED_REFRESH_SKIPPED"};
  return kFinal;
}

namespace {

// The derived states (in DerivedStateNames' order) of which some legal state satisfies `pred`.
std::vector<std::string_view> StatesWhere(bool (*pred)(const JobState&)) {
  std::vector<std::string_view> out;
  for (std::string_view name : DerivedStateNames()) {
    const std::vector<JobState>& all = LegalStates();
    if (std::any_of(all.begin(), all.end(), [&](const JobState& s) { return DerivedState(s) == name && pred(s); })) {
      out.push_back(name);
    }
  }
  return out;
}

bool Contains(const std::vector<std::string_view>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

const std::vector<std::string_view>& FenceHoldingStateNames() {
  static const std::vector<std::string_view> kHolding = StatesWhere(&HoldsFence);
  return kHolding;
}

const std::vector<std::string_view>& ResolvableStateNames() {
  static const std::vector<std::string_view> kResolvable = StatesWhere(&IsResolvable);
  return kResolvable;
}

bool HoldsFenceStateName(std::string_view derived, std::string_view disposition) {
  return disposition != Name(Disposition::kForceReleased) && Contains(FenceHoldingStateNames(), derived);
}

bool IsResolvableStateName(std::string_view derived, std::string_view disposition) {
  return (disposition == Name(Disposition::kNone) || disposition == Name(Disposition::kAcknowledged)) &&
         Contains(ResolvableStateNames(), derived);
}

Result<JobState> Admit() { return JobState{}; }

Result<JobState> BeginCancel(const JobState& s) {
  if (s.execution != Execution::kPending) return Illegal("CANCEL", s);
  JobState n = s;
  n.execution = Execution::kCancelling;
  return Checked(n);
}

Result<JobState> FinishCancel(const JobState& s) {
  if (s.execution != Execution::kCancelling) return Illegal("CANCEL completion", s);
  JobState n = s;
  n.execution = Execution::kTerminal;
  n.outcome = Outcome::kCancelledBeforeDispatch;
  return Checked(n);
}

Result<JobState> Dispatch(const JobState& s) {
  if (s.execution != Execution::kPending) return Illegal("dispatch", s);
  JobState n = s;
  n.execution = Execution::kRunning;
  return Checked(n);
}

Result<JobState> FinishBeforeDispatch(const JobState& s, AttemptResult r, bool observed_change) {
  if (s.execution != Execution::kPending) return Illegal("pre-dispatch completion", s);
  if (r != AttemptResult::kNoop && r != AttemptResult::kNotInvoked) return Illegal("pre-dispatch completion", s);
  JobState n = s;
  n.execution = Execution::kTerminal;
  n.outcome = r == AttemptResult::kNoop ? Outcome::kNoop : Outcome::kNotCommitted;
  n.refresh = observed_change ? RefreshState::kRequired : RefreshState::kNotRequired;
  return Checked(n);
}

Result<JobState> FinishAttempt(const JobState& s, AttemptResult r, bool observed_change) {
  if (s.execution != Execution::kRunning) return Illegal("attempt result", s);
  JobState n = s;
  n.execution = Execution::kTerminal;
  switch (r) {
    case AttemptResult::kNotInvoked:  // T4
      n.outcome = Outcome::kNotCommitted;
      n.refresh = observed_change ? RefreshState::kRequired : RefreshState::kNotRequired;
      break;
    case AttemptResult::kCommitted:  // T5
      n.outcome = Outcome::kCommitted;
      n.refresh = RefreshState::kRequired;
      break;
    case AttemptResult::kNotCommitted:  // T6
      n.outcome = Outcome::kNotCommitted;
      n.refresh = observed_change ? RefreshState::kRequired : RefreshState::kNotRequired;
      break;
    case AttemptResult::kNotCommittedChanged:  // T7
      n.outcome = Outcome::kNotCommitted;
      n.refresh = RefreshState::kRequired;
      break;
    case AttemptResult::kNoop:  // T7
      n.outcome = Outcome::kNoop;
      n.refresh = RefreshState::kRequired;
      break;
    case AttemptResult::kUnknown:  // T8
      n.outcome = Outcome::kUnknown;
      n.reconcile = ReconcileState::kWatching;
      n.refresh = observed_change ? RefreshState::kRequired : RefreshState::kNotRequired;
      break;
  }
  return Checked(n);
}

Result<JobState> ObserveChange(const JobState& s) {
  if (s.outcome != Outcome::kUnknown || s.refresh == RefreshState::kSkippedByForce ||
      s.reconcile == ReconcileState::kStoppedByForce || s.reconcile == ReconcileState::kStoppedTerminationProven) {
    return Illegal("watcher observation", s);
  }
  JobState n = s;
  if (n.refresh != RefreshState::kRunning) n.refresh = RefreshState::kRequired;
  return Checked(n);
}

Result<JobState> ProveTermination(const JobState& s) {
  if (s.outcome != Outcome::kUnknown ||
      (s.reconcile != ReconcileState::kWatching && s.reconcile != ReconcileState::kRetryPending)) {
    return Illegal("termination proof", s);
  }
  JobState n = s;
  n.reconcile = ReconcileState::kFinalReadPending;
  return Checked(n);
}

Result<JobState> FinishFinalRead(const JobState& s) {
  if (s.reconcile != ReconcileState::kFinalReadPending) return Illegal("final read", s);
  JobState n = s;
  n.reconcile = ReconcileState::kStoppedTerminationProven;
  return Checked(n);
}

Result<JobState> Attribute(const JobState& s, bool committed) {
  if (s.outcome != Outcome::kUnknown ||
      (s.reconcile != ReconcileState::kFinalReadPending && s.reconcile != ReconcileState::kStoppedTerminationProven) ||
      (s.disposition != Disposition::kNone && s.disposition != Disposition::kAcknowledged)) {
    return Illegal("provenance attribution", s);
  }
  JobState n = s;
  n.outcome = committed ? Outcome::kCommitted : Outcome::kNotCommitted;
  n.reconcile = ReconcileState::kStoppedTerminationProven;
  n.disposition = Disposition::kNone;
  n.refresh = RefreshState::kRequired;
  return Checked(n);
}

Result<JobState> StartRefresh(const JobState& s) {
  if (s.execution != Execution::kTerminal ||
      (s.refresh != RefreshState::kRequired && s.refresh != RefreshState::kRetryPending)) {
    return Illegal("refresh start", s);
  }
  JobState n = s;
  n.refresh = RefreshState::kRunning;
  return Checked(n);
}

Result<JobState> FinishRefresh(const JobState& s, bool ok) {
  if (s.refresh != RefreshState::kRunning) return Illegal("refresh completion", s);
  JobState n = s;
  if (!ok) {
    n.refresh = RefreshState::kRetryPending;
    return Checked(n);
  }
  n.refresh = RefreshState::kDone;
  if (n.disposition == Disposition::kAckRefreshPending) n.disposition = Disposition::kAcknowledged;  // T12
  if (n.disposition == Disposition::kForceRefreshPending) {                                          // T13
    n.disposition = Disposition::kForceReleased;
    n.reconcile = ReconcileState::kStoppedByForce;
  }
  return Checked(n);
}

Result<JobState> RequestAck(const JobState& s) {
  if (s.outcome != Outcome::kUnknown || s.disposition != Disposition::kNone) return Illegal("ACK", s);
  JobState n = s;
  n.disposition = Disposition::kAckRefreshPending;
  if (n.refresh != RefreshState::kRunning && n.refresh != RefreshState::kRetryPending) {
    n.refresh = RefreshState::kRequired;
  }
  return Checked(n);
}

Result<JobState> RequestForce(const JobState& s) {
  if (s.outcome != Outcome::kUnknown ||
      (s.disposition != Disposition::kNone && s.disposition != Disposition::kAcknowledged)) {
    return Illegal("FORCE_RELEASE", s);
  }
  JobState n = s;
  n.disposition = Disposition::kForceRefreshPending;
  if (n.refresh != RefreshState::kRunning && n.refresh != RefreshState::kRetryPending) {
    n.refresh = RefreshState::kRequired;
  }
  return Checked(n);
}

Result<JobState> ForceWithoutRefresh(const JobState& s) {
  if (s.execution != Execution::kTerminal || !HoldsFence(s)) return Illegal("FORCE_RELEASE WITHOUT REFRESH", s);
  if (!(s.outcome == Outcome::kUnknown || KnownOutcome(s.outcome))) return Illegal("FORCE_RELEASE WITHOUT REFRESH", s);
  JobState n = s;
  n.disposition = Disposition::kForceReleased;
  n.refresh = RefreshState::kSkippedByForce;
  n.reconcile = ReconcileState::kStoppedByForce;
  return Checked(n);
}

}  // namespace vigil::jobs
