#include "worker/fork_thread.h"

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>

namespace vigil::worker {

Supervisor::ForkThread::ForkThread() : thread_([this] { Loop(); }) {}

Supervisor::ForkThread::~ForkThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Result<pid_t> Supervisor::ForkThread::Fork(const ChildPlan& plan) {
  std::unique_lock<std::mutex> lock(mu_);
  Task task{&plan};
  tasks_.push_back(&task);
  cv_.notify_all();
  cv_.wait(lock, [&] { return task.done; });
  if (task.pid < 0) return Status::FromErrno(task.err, "fork of vigil-worker");
  running_.insert(task.pid);
  return task.pid;
}

bool Supervisor::ForkThread::TryAcquire(int concurrency) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_runs_ || active_ >= std::max(concurrency, 1)) return false;
  ++active_;
  return true;
}

void Supervisor::ForkThread::Release() {
  std::lock_guard<std::mutex> lock(mu_);
  --active_;
  cv_.notify_all();
}

void Supervisor::ForkThread::Reaped(pid_t pid) {
  std::lock_guard<std::mutex> lock(mu_);
  running_.erase(pid);
}

void Supervisor::ForkThread::KillAllAndWait() {
  std::unique_lock<std::mutex> lock(mu_);
  stop_runs_ = true;
  for (pid_t pid : running_) ::kill(pid, SIGKILL);
  cv_.wait(lock, [&] { return active_ == 0; });
}

void Supervisor::ForkThread::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
    if (tasks_.empty()) return;
    Task* t = tasks_.front();
    tasks_.pop_front();
    pid_t pid = ::fork();
    if (pid == 0) ChildMain(*t->plan);
    t->err = errno;
    t->pid = pid;
    t->done = true;
    cv_.notify_all();
  }
}

}  // namespace vigil::worker
