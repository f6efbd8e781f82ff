// statement_timeout of the SELECT running on this thread. The engine arms a
// deadline for one statement; SQLite's progress handler (every few VM steps,
// so between any two cursor calls) and the cursors' block reads
// (TakeRowsBlocked) check it. It is thread-local because a cursor cannot reach
// the engine, and an engine runs one statement at a time on the calling thread.
#pragma once

#include <cstdint>

#include "vigil/common/env.h"
#include "vigil/common/status.h"

namespace vigil::sql::internal {

// Arms a deadline `timeout_ms` from now on this thread (0: none) until destroyed;
// the previously armed deadline, if any, is restored then. Time is env's monotonic clock.
class ScopedStatementDeadline {
 public:
  explicit ScopedStatementDeadline(uint64_t timeout_ms, Env* env = Env::Default());
  ~ScopedStatementDeadline();
  ScopedStatementDeadline(const ScopedStatementDeadline&) = delete;
  ScopedStatementDeadline& operator=(const ScopedStatementDeadline&) = delete;

 private:
  struct State {
    bool armed = false;
    Env* env = nullptr;
    int64_t deadline_micros = 0;  // env->MonotonicMicros()
    uint64_t timeout_ms = 0;
  };
  friend Status CheckStatementDeadline();
  static thread_local State current_;
  State saved_;
};

// DeadlineExceeded "statement timeout of 5s exceeded (statement_timeout)" once the
// deadline armed on this thread has passed; Cancelled once this thread's request was
// cancelled (ScopedCancellation); OK otherwise.
Status CheckStatementDeadline();

}  // namespace vigil::sql::internal
