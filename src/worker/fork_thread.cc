#include "worker/fork_thread.h"

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>

namespace vigil::worker {

Supervisor::ForkThread::ForkThread() : thread_([this] { Loop(); }) {}

Supervisor::ForkThread::~ForkThread() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Result<pid_t> Supervisor::ForkThread::Fork(const ChildPlan& plan) {
  MutexLock lock(&mu_);
  Task task{&plan};  // filled in by Loop under mu_
  tasks_.push_back(&task);
  cv_.notify_all();
  lock.Wait(cv_, [&]() VIGIL_REQUIRES(mu_) { return task.done; });
  if (task.pid < 0) return Status::FromErrno(task.err, "fork of vigil-worker");
  running_.insert(task.pid);
  // A kill of every worker that came while this one was forked reaches it too.
  if (stop_runs_) ::kill(task.pid, SIGKILL);
  return task.pid;
}

bool Supervisor::ForkThread::TryAcquire(int concurrency) {
  MutexLock lock(&mu_);
  if (stop_runs_ || active_ >= std::max(concurrency, 1)) return false;
  ++active_;
  return true;
}

void Supervisor::ForkThread::Release() {
  MutexLock lock(&mu_);
  --active_;
  cv_.notify_all();
}

void Supervisor::ForkThread::Reaped(pid_t pid) {
  MutexLock lock(&mu_);
  running_.erase(pid);
}

void Supervisor::ForkThread::KillAllAndWait() {
  MutexLock lock(&mu_);
  stop_runs_ = true;
  for (pid_t pid : running_) ::kill(pid, SIGKILL);
  lock.Wait(cv_, [this]() VIGIL_REQUIRES(mu_) { return active_ == 0; });
}

void Supervisor::ForkThread::Loop() {
  MutexLock lock(&mu_);
  for (;;) {
    lock.Wait(cv_, [this]() VIGIL_REQUIRES(mu_) { return stop_ || !tasks_.empty(); });
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
