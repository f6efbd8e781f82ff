#include "server/session_pool.h"

#include <algorithm>
#include <iterator>

#include "vigil/common/cancellation.h"

namespace vigil::server {

namespace {

// How often a request waiting for a session looks whether it was cancelled (the pool's clock).
constexpr int64_t kCancelCheckMicros = 100'000;

}  // namespace

SessionPool::SessionPool(std::string root_dir, sql::SessionOptions options, size_t size, Env* env)
    : root_dir_(std::move(root_dir)), options_(std::move(options)), size_(size == 0 ? 1 : size), env_(env) {}

Result<SessionPool::Lease> SessionPool::Acquire(const auth::Principal& principal, std::chrono::milliseconds wait) {
  std::unique_ptr<sql::Session> session;
  const std::string& user = principal.name;
  {
    MutexLock lock(&mu_);
    const auto free = [&]() VIGIL_REQUIRES(mu_) { return !idle_.empty() || open_ < size_; };
    const auto within_share = [&]() VIGIL_REQUIRES(mu_) {
      auto it = in_use_.find(user);
      return it == in_use_.end() || it->second < share();
    };
    const int64_t deadline =
        env_->MonotonicMicros() + std::chrono::duration_cast<std::chrono::microseconds>(wait).count();
    bool ready = free() && within_share();
    if (!ready) {
      ++waiting_;
      // Waits in slices, so a request cancelled meanwhile (its client left) stops waiting.
      Status cancelled;
      while (!(ready = free() && within_share())) {
        cancelled = CheckCancellation();
        const int64_t now = env_->MonotonicMicros();
        if (!cancelled.ok() || now >= deadline) break;
        env_->WaitFor(lock, freed_, std::min(deadline - now, kCancelCheckMicros),
                      [&]() VIGIL_REQUIRES(mu_) { return free() && within_share(); });
      }
      --waiting_;
      if (!ready && !cancelled.ok()) return cancelled;
    }
    if (!ready && !within_share()) {
      return Status::Busy("user " + user + " holds " + std::to_string(share()) +
                          " SQL sessions, its share (half of [server] sessions = " + std::to_string(size_) +
                          "); retry when one of its requests ends");
    }
    if (!ready) {
      return Status::Busy("all " + std::to_string(size_) + " SQL sessions are busy; retry later");
    }
    ++in_use_[user];
    if (!idle_.empty()) {
      const std::thread::id me = std::this_thread::get_id();
      auto it = std::find_if(idle_.rbegin(), idle_.rend(), [me](const Idle& i) { return i.last_user == me; });
      if (it == idle_.rend()) it = idle_.rbegin();
      session = std::move(it->session);
      idle_.erase(std::next(it).base());
    } else {
      ++open_;  // reserved: opened below, outside the lock
    }
  }
  if (!session) {
    Result<std::unique_ptr<sql::Session>> opened = sql::Session::Open(root_dir_, options_);
    if (!opened.ok()) {
      MutexLock lock(&mu_);
      --open_;
      if (--in_use_[user] == 0) in_use_.erase(user);
      freed_.notify_all();
      return opened.status();
    }
    session = std::move(*opened);
  }
  session->Reset(principal);
  return Lease(this, std::move(session), user);
}

void SessionPool::Release(std::unique_ptr<sql::Session> session, const std::string& user) {
  session->Reset(auth::Principal{});  // no principal lingers on an idle session
  MutexLock lock(&mu_);
  idle_.push_back(Idle{std::move(session), std::this_thread::get_id()});
  if (--in_use_[user] == 0) in_use_.erase(user);
  // Waiters differ in whose share they need: each looks again.
  freed_.notify_all();
}

}  // namespace vigil::server
