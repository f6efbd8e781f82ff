// Test helper: an Env whose clocks move only when told to. SleepForMicros
// advances fake time by the requested amount and returns at once, so code that
// polls or backs off runs its whole schedule without real waiting; a test can
// block until the code under test has slept (WaitForSleeps) to order threads.
// WaitFor, by contrast, does not move time: it returns when its condition holds
// or once the test moved fake time past its timeout (Advance), so a test
// decides when a wait times out; WaitForWaits blocks until the code under test
// has begun a wait, so the test advances time only once it waits. A waiter
// notices a change of fake time within a millisecond of real time (it looks
// again each millisecond: nothing is notified across the caller's mutex).
// File operations go to the FileSystem given at construction, e.g. a
// FaultInjectionFileSystem for file faults.
// Thread safety: thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>

#include "vigil/common/env.h"
#include "vigil/common/mutex.h"

namespace vigil::testing {

class FakeEnv final : public Env {
 public:
  // Starts at `start_micros` of wall time (and as much monotonic time); files
  // go to `fs` (not owned; nullptr: the real file system).
  explicit FakeEnv(int64_t start_micros = kDefaultStartMicros, FileSystem* fs = nullptr);

  int64_t NowMicros() override;
  int64_t MonotonicMicros() override;
  // Advances both clocks by `micros` and wakes WaitForSleeps callers; never blocks.
  void SleepForMicros(int64_t micros) override;
  // Returns done() once it holds, or false once fake monotonic time reached the timeout; never
  // moves time itself.
  bool WaitFor(MutexLock& lock, std::condition_variable& cv, int64_t micros,
               const std::function<bool()>& done) override;
  FileSystem* fs() override { return fs_; }

  // Moves both clocks forward.
  void Advance(int64_t micros);
  void AdvanceMs(int64_t ms) { Advance(ms * 1000); }
  // Sets the wall clock (which may go back); the monotonic clock is not changed.
  void Set(int64_t micros);
  void SetMs(int64_t ms) { Set(ms * 1000); }

  // Calls of SleepForMicros so far.
  int64_t sleeps();
  // Blocks (really) until SleepForMicros has been called `n` times in all.
  void WaitForSleeps(int64_t n);
  // Calls of WaitFor begun so far.
  int64_t waits();
  // Blocks (really) until WaitFor has been called `n` times in all.
  void WaitForWaits(int64_t n);

  // 2026-01-01T00:00:00Z.
  static constexpr int64_t kDefaultStartMicros = 1'767'225'600'000'000;

 private:
  FileSystem* const fs_;
  Mutex mu_;
  std::condition_variable slept_;
  int64_t now_micros_ VIGIL_GUARDED_BY(mu_);
  int64_t monotonic_micros_ VIGIL_GUARDED_BY(mu_);
  int64_t sleeps_ VIGIL_GUARDED_BY(mu_) = 0;
  int64_t waits_ VIGIL_GUARDED_BY(mu_) = 0;
};

}  // namespace vigil::testing
