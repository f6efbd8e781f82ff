#include "testutil/fake_env.h"

#include <algorithm>
#include <chrono>

#include "vigil/common/file_system.h"

namespace vigil::testing {

FakeEnv::FakeEnv(int64_t start_micros, FileSystem* fs)
    : fs_(fs != nullptr ? fs : DefaultFileSystem()), now_micros_(start_micros), monotonic_micros_(start_micros) {}

int64_t FakeEnv::NowMicros() {
  MutexLock l(&mu_);
  return now_micros_;
}

int64_t FakeEnv::MonotonicMicros() {
  MutexLock l(&mu_);
  return monotonic_micros_;
}

void FakeEnv::SleepForMicros(int64_t micros) {
  {
    MutexLock l(&mu_);
    if (micros > 0) {
      now_micros_ += micros;
      monotonic_micros_ += micros;
    }
    ++sleeps_;
  }
  slept_.notify_all();
}

bool FakeEnv::WaitFor(MutexLock& lock, std::condition_variable& cv, int64_t micros, const std::function<bool()>& done) {
  int64_t deadline;
  {
    MutexLock l(&mu_);
    deadline = monotonic_micros_ + std::max<int64_t>(micros, 0);
    ++waits_;
  }
  slept_.notify_all();
  for (;;) {
    if (done()) return true;
    if (MonotonicMicros() >= deadline) return false;
    // Woken by the caller's notification, or a millisecond later to look at fake time again.
    (void)lock.WaitFor(cv, std::chrono::milliseconds(1));
  }
}

void FakeEnv::Advance(int64_t micros) {
  MutexLock l(&mu_);
  if (micros <= 0) return;
  now_micros_ += micros;
  monotonic_micros_ += micros;
}

void FakeEnv::Set(int64_t micros) {
  MutexLock l(&mu_);
  now_micros_ = micros;
}

int64_t FakeEnv::sleeps() {
  MutexLock l(&mu_);
  return sleeps_;
}

int64_t FakeEnv::waits() {
  MutexLock l(&mu_);
  return waits_;
}

void FakeEnv::WaitForWaits(int64_t n) {
  MutexLock l(&mu_);
  l.Wait(slept_, [&]() VIGIL_REQUIRES(mu_) { return waits_ >= n; });
}

void FakeEnv::WaitForSleeps(int64_t n) {
  MutexLock l(&mu_);
  l.Wait(slept_, [&]() VIGIL_REQUIRES(mu_) { return sleeps_ >= n; });
}

}  // namespace vigil::testing
