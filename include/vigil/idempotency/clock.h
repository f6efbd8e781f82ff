// The time source of the idempotency store, injectable so tests control
// expiry and staleness without sleeping. Times are Unix milliseconds.
// Thread-safe: every Clock may be read from any thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace vigil::idempotency {

class Clock {
 public:
  virtual ~Clock() = default;
  // Current wall-clock time in Unix milliseconds.
  virtual int64_t NowMs() const = 0;
};

// The system wall clock.
class SystemClock final : public Clock {
 public:
  int64_t NowMs() const override;
  // A process-wide instance.
  static const Clock* Default();
};

// A clock that only moves when told to (tests).
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ms) : now_ms_(start_ms) {}
  int64_t NowMs() const override { return now_ms_.load(); }
  void Set(int64_t ms) { now_ms_.store(ms); }
  void Advance(int64_t delta_ms) { now_ms_.fetch_add(delta_ms); }

 private:
  std::atomic<int64_t> now_ms_;
};

}  // namespace vigil::idempotency
