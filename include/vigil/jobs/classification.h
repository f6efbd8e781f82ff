// Classification of an executor's report into a job result (seed 000 section
// 7.4, with Vigil's provider contract): what the supervisor knows about one
// attempt becomes exactly one AttemptResult for the state machine. Message
// text is never classified; only the typed code and whether the provider was
// invoked. Pure functions; thread-safe.
#pragma once

#include <optional>

#include "vigil/common/status.h"
#include "vigil/jobs/job_record.h"
#include "vigil/jobs/job_state.h"

namespace vigil::jobs {

// What the supervisor learned about one attempt.
struct ExecutorReport {
  // False when no complete, identity-matched response arrived after the
  // request was accepted (EOF, signal, OOM, deadline, protocol corruption,
  // identity mismatch): the outcome cannot be known.
  bool complete = false;
  // From a complete response: whether the provider call was entered.
  bool invoked = false;
  // From a complete response: the provider's typed result (OK on success).
  StatusCode code = StatusCode::kOk;
  // A launch or handshake failure before the request was delivered: proves no invocation.
  bool failed_before_request = false;
};

struct Classification {
  AttemptResult result = AttemptResult::kUnknown;
  // Whether the outcome needs the table refreshed (T4/T7 observed change, T5 success).
  bool observed_change = false;
};

// Classifies `report` for a job of `operation` with `if_mode`:
//   - before request delivery, or a complete invoked=false response: not invoked
//     (NOT_COMMITTED), with a refresh when the refusal was a stale admission;
//   - success: COMMITTED;
//   - CommitConflict after invocation: NOT_COMMITTED with refresh;
//   - AlreadyExists after invocation (Vigil's provider refuses a taken name before
//     writing anything): NOT_COMMITTED with refresh, or NOOP for IF NOT EXISTS;
//   - NotFound after invocation: DROP -> NOT_COMMITTED with refresh (NOOP for
//     IF EXISTS); CREATE/REPLACE/BUILD -> UNKNOWN;
//   - FailedPrecondition after invocation (schema no longer the admitted one):
//     NOT_COMMITTED with refresh (STALE_ADMISSION);
//   - any other code after invocation, or an incomplete report: UNKNOWN.
Classification Classify(Operation operation, IfMode if_mode, const ExecutorReport& report);

}  // namespace vigil::jobs
