#include "vigil/common/env.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "vigil/common/file_system.h"

namespace vigil {

namespace {

constexpr int64_t kMaxWaitMicros = int64_t{1} << 50;  // 35 years

class PosixEnv final : public Env {
 public:
  int64_t NowMicros() override {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  int64_t MonotonicMicros() override {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  void SleepForMicros(int64_t micros) override {
    if (micros > 0) std::this_thread::sleep_for(std::chrono::microseconds(micros));
  }

  bool WaitFor(MutexLock& lock, std::condition_variable& cv, int64_t micros,
               const std::function<bool()>& done) override {
    if (micros <= 0) return done();
    // Bounded far beyond any timeout so that the clock's sum cannot overflow.
    return lock.WaitFor(cv, std::chrono::microseconds(std::min<int64_t>(micros, kMaxWaitMicros)), done);
  }

  FileSystem* fs() override { return DefaultFileSystem(); }
};

}  // namespace

Env* Env::Default() {
  static Env* env = new PosixEnv();
  return env;
}

}  // namespace vigil
