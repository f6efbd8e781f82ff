#include "server/session_pool.h"

#include <algorithm>
#include <iterator>

namespace vigil::server {

SessionPool::SessionPool(std::string root_dir, sql::SessionOptions options, size_t size)
    : root_dir_(std::move(root_dir)), options_(std::move(options)), size_(size == 0 ? 1 : size) {}

Result<SessionPool::Lease> SessionPool::Acquire(const jobs::Principal& principal, std::chrono::milliseconds wait) {
  std::unique_ptr<sql::Session> session;
  {
    MutexLock lock(&mu_);
    const bool ready =
        lock.WaitFor(freed_, wait, [this]() VIGIL_REQUIRES(mu_) { return !idle_.empty() || open_ < size_; });
    if (!ready) {
      return Status::Busy("all " + std::to_string(size_) + " SQL sessions are busy; retry later");
    }
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
      freed_.notify_one();
      return opened.status();
    }
    session = std::move(*opened);
  }
  session->Reset(principal);
  return Lease(this, std::move(session));
}

void SessionPool::Release(std::unique_ptr<sql::Session> session) {
  session->Reset(jobs::Principal{});  // no principal lingers on an idle session
  MutexLock lock(&mu_);
  idle_.push_back(Idle{std::move(session), std::this_thread::get_id()});
  freed_.notify_one();
}

}  // namespace vigil::server
