// A mutex whose use Clang checks (-Wthread-safety, on in every clang build):
// members declared VIGIL_GUARDED_BY(mu_) may only be touched with mu_ held,
// functions declared VIGIL_REQUIRES(mu_) only called with it held. libstdc++'s
// std::mutex carries no annotations, hence this thin wrapper; GCC ignores the
// attributes. Thread safety: Mutex and MutexLock are as std::mutex and
// std::unique_lock.
#pragma once

#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define VIGIL_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define VIGIL_THREAD_ANNOTATION_(x)
#endif

#define VIGIL_CAPABILITY(x) VIGIL_THREAD_ANNOTATION_(capability(x))
#define VIGIL_SCOPED_CAPABILITY VIGIL_THREAD_ANNOTATION_(scoped_lockable)
#define VIGIL_GUARDED_BY(x) VIGIL_THREAD_ANNOTATION_(guarded_by(x))
#define VIGIL_PT_GUARDED_BY(x) VIGIL_THREAD_ANNOTATION_(pt_guarded_by(x))
#define VIGIL_REQUIRES(...) VIGIL_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define VIGIL_EXCLUDES(...) VIGIL_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
#define VIGIL_ACQUIRE(...) VIGIL_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define VIGIL_RELEASE(...) VIGIL_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define VIGIL_NO_THREAD_SAFETY_ANALYSIS VIGIL_THREAD_ANNOTATION_(no_thread_safety_analysis)

namespace vigil {

class VIGIL_CAPABILITY("mutex") Mutex {
 public:
  void Lock() VIGIL_ACQUIRE() { mu_.lock(); }
  void Unlock() VIGIL_RELEASE() { mu_.unlock(); }
  // For std::condition_variable waits through MutexLock::Wait.
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

// Holds a Mutex for its scope; Wait releases it while blocked, as condition variables do.
class VIGIL_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) VIGIL_ACQUIRE(mu) : lock_(mu->native()) {}
  ~MutexLock() VIGIL_RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // cv.wait(lock, pred) with the mutex held again on return.
  template <typename Pred>
  void Wait(std::condition_variable& cv, Pred pred) {
    cv.wait(lock_, pred);
  }
  // cv.wait_for(lock, timeout, pred); the value of pred on return.
  template <typename Duration, typename Pred>
  bool WaitFor(std::condition_variable& cv, Duration timeout, Pred pred) {
    return cv.wait_for(lock_, timeout, pred);
  }
  // cv.wait_for(lock, timeout) without a predicate: true when woken before the timeout
  // (notified or spuriously), false when it passed.
  template <typename Duration>
  bool WaitFor(std::condition_variable& cv, Duration timeout) {
    return cv.wait_for(lock_, timeout) == std::cv_status::no_timeout;
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace vigil
