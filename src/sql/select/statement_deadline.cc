#include "sql/select/statement_deadline.h"

#include "vigil/common/cancellation.h"
#include "vigil/common/config.h"

namespace vigil::sql::internal {

thread_local ScopedStatementDeadline::State ScopedStatementDeadline::current_;

ScopedStatementDeadline::ScopedStatementDeadline(uint64_t timeout_ms, Env* env) : saved_(current_) {
  current_ = State{};
  if (timeout_ms == 0) return;
  current_.armed = true;
  current_.timeout_ms = timeout_ms;
  current_.env = env;
  current_.deadline_micros = env->MonotonicMicros() + static_cast<int64_t>(timeout_ms) * 1000;
}

ScopedStatementDeadline::~ScopedStatementDeadline() { current_ = saved_; }

Status CheckStatementDeadline() {
  VIGIL_RETURN_IF_ERROR(CheckCancellation());
  const auto& s = ScopedStatementDeadline::current_;
  if (!s.armed || s.env->MonotonicMicros() < s.deadline_micros) return Status::OK();
  return Status::DeadlineExceeded("statement timeout of " + FormatDurationMs(s.timeout_ms) +
                                  " exceeded (statement_timeout)");
}

}  // namespace vigil::sql::internal
