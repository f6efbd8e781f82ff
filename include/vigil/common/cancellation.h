// The cancellation of what the calling thread does for one request. A server
// marks a request cancelled (its client went away, or the server's shutdown
// grace ran out); the long loops on the request's thread (a SELECT's virtual
// machine steps, block reads) ask CheckCancellation() and end with Cancelled.
// Thread safety: the scope is per thread; the flag it names is an atomic that
// another thread (the server's watchdog) sets.
#pragma once

#include <atomic>

#include "vigil/common/status.h"

namespace vigil {

// Makes `flag` (may be null: nothing cancels) the calling thread's cancellation until destroyed;
// the previous one is restored then.
class ScopedCancellation {
 public:
  explicit ScopedCancellation(const std::atomic<bool>* flag);
  ~ScopedCancellation();
  ScopedCancellation(const ScopedCancellation&) = delete;
  ScopedCancellation& operator=(const ScopedCancellation&) = delete;

 private:
  const std::atomic<bool>* saved_;
};

// Cancelled once the calling thread's flag is set; OK otherwise (or without a scope).
Status CheckCancellation();

}  // namespace vigil
