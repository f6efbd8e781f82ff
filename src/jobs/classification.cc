#include "vigil/jobs/classification.h"

namespace vigil::jobs {

Classification Classify(Operation operation, IfMode if_mode, const ExecutorReport& report) {
  if (report.failed_before_request) return {AttemptResult::kNotInvoked, false};
  if (!report.complete) return {AttemptResult::kUnknown, false};
  if (!report.invoked) {
    return {AttemptResult::kNotInvoked, report.code == StatusCode::kFailedPrecondition};
  }
  switch (report.code) {
    case StatusCode::kOk:
      return {AttemptResult::kCommitted, true};
    case StatusCode::kCommitConflict:
      return {AttemptResult::kNotCommittedChanged, true};
    case StatusCode::kAlreadyExists:
      if (if_mode == IfMode::kIfNotExists) return {AttemptResult::kNoop, true};
      return {AttemptResult::kNotCommittedChanged, true};
    case StatusCode::kNotFound:
      if (operation != Operation::kDrop) return {AttemptResult::kUnknown, false};
      if (if_mode == IfMode::kIfExists) return {AttemptResult::kNoop, true};
      return {AttemptResult::kNotCommittedChanged, true};
    case StatusCode::kFailedPrecondition:
      return {AttemptResult::kNotCommittedChanged, true};
    default:
      return {AttemptResult::kUnknown, false};
  }
}

}  // namespace vigil::jobs
