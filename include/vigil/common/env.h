// The environment seam: everything Vigil asks of the operating system besides
// computing (the wall and monotonic clocks, sleeping, waiting with a timeout,
// and through fs() every file operation) goes through an Env, as in LevelDB.
// Each layer takes an Env* in its options, defaulting to Env::Default(); tests
// pass a FakeEnv (src/testutil/fake_env.h) whose time moves only when told to.
// A wait for an event of another thread needs no Env (a condition variable
// without a timeout); a wait bounded by time goes through WaitFor, so that a
// fake Env decides when its timeout passes.
// Thread safety: every Env is thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>

#include "vigil/common/mutex.h"

namespace vigil {

class FileSystem;

class Env {
 public:
  virtual ~Env() = default;

  // Wall-clock time: microseconds since the Unix epoch. May jump.
  virtual int64_t NowMicros() = 0;
  // A clock that never goes back, for measuring intervals and deadlines; its
  // epoch is arbitrary (compare readings of one Env only).
  virtual int64_t MonotonicMicros() = 0;
  // Blocks the calling thread for `micros` (returns at once when <= 0).
  virtual void SleepForMicros(int64_t micros) = 0;
  // Waits on `cv` until `done()` holds or `micros` of this Env's monotonic time passed, with
  // `lock` (of the mutex whose holder changes what done() reads, then notifies `cv`) released
  // while blocked and held again on return, as condition variables do. Returns done()'s value.
  // done() runs with the lock held.
  virtual bool WaitFor(MutexLock& lock, std::condition_variable& cv, int64_t micros,
                       const std::function<bool()>& done) = 0;
  // The file system. Owned by the Env and valid as long as it.
  virtual FileSystem* fs() = 0;

  // Wall-clock time in Unix milliseconds.
  int64_t NowMs() { return NowMicros() / 1000; }
  // The monotonic clock in milliseconds.
  int64_t MonotonicMs() { return MonotonicMicros() / 1000; }
  void SleepForMs(int64_t ms) { SleepForMicros(ms * 1000); }
  bool WaitForMs(MutexLock& lock, std::condition_variable& cv, int64_t ms, const std::function<bool()>& done) {
    return WaitFor(lock, cv, ms * 1000, done);
  }

  // The real clocks, sleeps and POSIX file system. Shared process-wide; never destroyed.
  static Env* Default();
};

}  // namespace vigil
