#include "vigil/idempotency/clock.h"

#include <chrono>

namespace vigil::idempotency {

int64_t SystemClock::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const Clock* SystemClock::Default() {
  static const SystemClock clock;
  return &clock;
}

}  // namespace vigil::idempotency
