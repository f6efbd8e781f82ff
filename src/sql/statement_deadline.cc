#include "sql/statement_deadline.h"

#include <chrono>

#include "vigil/common/config.h"

namespace vigil::sql::internal {

namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

thread_local ScopedStatementDeadline::State ScopedStatementDeadline::current_;

ScopedStatementDeadline::ScopedStatementDeadline(uint64_t timeout_ms) : saved_(current_) {
  current_ = State{};
  if (timeout_ms == 0) return;
  current_.armed = true;
  current_.timeout_ms = timeout_ms;
  current_.deadline_ns = NowNs() + static_cast<int64_t>(timeout_ms) * 1'000'000;
}

ScopedStatementDeadline::~ScopedStatementDeadline() { current_ = saved_; }

Status CheckStatementDeadline() {
  const auto& s = ScopedStatementDeadline::current_;
  if (!s.armed || NowNs() < s.deadline_ns) return Status::OK();
  return Status::DeadlineExceeded("statement timeout of " + FormatDurationMs(s.timeout_ms) +
                                  " exceeded (statement_timeout)");
}

}  // namespace vigil::sql::internal
