// A bounded pool of SQL sessions on one root for the HTTP API: a request takes
// a session bound to its principal (Session::Reset) and gives it back when
// done; at most `size` requests run SQL at once, the rest wait up to a
// deadline (or until their request is cancelled). One user holds at most half
// of the sessions (at least one), so a user's slow statements never take every
// session from the others. Sessions are opened on first need and kept, so each keeps its
// select engine and the generations it opened. A thread gets back the session
// it used last when that one is idle: the session's state stays in its core's
// caches instead of moving between cores with every request.
// Thread safety: thread-safe.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "vigil/auth/principal.h"
#include "vigil/common/env.h"
#include "vigil/common/mutex.h"
#include "vigil/common/status.h"
#include "vigil/sql/session.h"

namespace vigil::server {

class SessionPool {
 public:
  class Lease;

  // Waits for a session are timed on `env` (which outlives the pool).
  SessionPool(std::string root_dir, sql::SessionOptions options, size_t size, Env* env = Env::Default());

  // A session bound to `principal`; Busy when none frees up within `wait` (or the user holds
  // its share), Cancelled when the calling thread's request is cancelled meanwhile.
  Result<Lease> Acquire(const auth::Principal& principal, std::chrono::milliseconds wait);
  size_t size() const { return size_; }
  // How many sessions one user may hold at once: half of size(), at least one.
  size_t share() const { return std::max<size_t>(1, size_ / 2); }
  // Sessions opened so far (in use or idle); never more than size().
  size_t open_count() {
    MutexLock lock(&mu_);
    return open_;
  }
  // Sessions serving a request now.
  size_t in_use_count() {
    MutexLock lock(&mu_);
    size_t n = 0;
    for (const auto& [user, count] : in_use_) n += count;
    return n;
  }
  // Requests waiting for a session now (the pool is full, or their user holds its share).
  size_t waiting_count() {
    MutexLock lock(&mu_);
    return waiting_;
  }

 private:
  void Release(std::unique_ptr<sql::Session> session, const std::string& user);

  struct Idle {
    std::unique_ptr<sql::Session> session;
    std::thread::id last_user;
  };

  const std::string root_dir_;
  const sql::SessionOptions options_;
  const size_t size_;
  Env* const env_;
  Mutex mu_;
  std::condition_variable freed_;
  std::vector<Idle> idle_ VIGIL_GUARDED_BY(mu_);                // the most recently released last
  size_t open_ VIGIL_GUARDED_BY(mu_) = 0;                       // sessions in use or idle
  size_t waiting_ VIGIL_GUARDED_BY(mu_) = 0;                    // requests in Acquire's wait
  std::map<std::string, size_t> in_use_ VIGIL_GUARDED_BY(mu_);  // by user name; none at 0
};

// A session taken from the pool; returned when the lease is destroyed.
class SessionPool::Lease {
 public:
  Lease(SessionPool* pool, std::unique_ptr<sql::Session> session, std::string user)
      : pool_(pool), session_(std::move(session)), user_(std::move(user)) {}
  Lease(Lease&& other) noexcept = default;
  Lease& operator=(Lease&&) = delete;
  ~Lease() {
    if (session_) pool_->Release(std::move(session_), user_);
  }
  sql::Session* operator->() const { return session_.get(); }
  sql::Session& operator*() const { return *session_; }

 private:
  SessionPool* pool_;
  std::unique_ptr<sql::Session> session_;
  std::string user_;
};

}  // namespace vigil::server
