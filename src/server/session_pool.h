// A bounded pool of SQL sessions on one root for the HTTP API: a request takes
// a session bound to its principal (Session::Reset) and gives it back when
// done; at most `size` requests run SQL at once, the rest wait up to a
// deadline. Sessions are opened on first need and kept, so each keeps its
// select engine and the generations it opened. A thread gets back the session
// it used last when that one is idle: the session's state stays in its core's
// caches instead of moving between cores with every request.
// Thread safety: thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "vigil/common/mutex.h"
#include "vigil/common/status.h"
#include "vigil/jobs/authorization.h"
#include "vigil/sql/session.h"

namespace vigil::server {

class SessionPool {
 public:
  class Lease;

  SessionPool(std::string root_dir, sql::SessionOptions options, size_t size);

  // A session bound to `principal`; Busy when none frees up within `wait`.
  Result<Lease> Acquire(const jobs::Principal& principal, std::chrono::milliseconds wait);
  size_t size() const { return size_; }
  // Sessions opened so far (in use or idle); never more than size().
  size_t open_count() {
    MutexLock lock(&mu_);
    return open_;
  }

 private:
  void Release(std::unique_ptr<sql::Session> session);

  struct Idle {
    std::unique_ptr<sql::Session> session;
    std::thread::id last_user;
  };

  const std::string root_dir_;
  const sql::SessionOptions options_;
  const size_t size_;
  Mutex mu_;
  std::condition_variable freed_;
  std::vector<Idle> idle_ VIGIL_GUARDED_BY(mu_);  // the most recently released last
  size_t open_ VIGIL_GUARDED_BY(mu_) = 0;         // sessions in use or idle
};

// A session taken from the pool; returned when the lease is destroyed.
class SessionPool::Lease {
 public:
  Lease(SessionPool* pool, std::unique_ptr<sql::Session> session) : pool_(pool), session_(std::move(session)) {}
  Lease(Lease&& other) noexcept = default;
  Lease& operator=(Lease&&) = delete;
  ~Lease() {
    if (session_) pool_->Release(std::move(session_));
  }
  sql::Session* operator->() const { return session_.get(); }
  sql::Session& operator*() const { return *session_; }

 private:
  SessionPool* pool_;
  std::unique_ptr<sql::Session> session_;
};

}  // namespace vigil::server
