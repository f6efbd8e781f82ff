#include "vigil/jobs/node_agent.h"

#include <set>
#include <utility>

#include "vigil/common/file_lock.h"
#include "vigil/common/logging.h"
#include "vigil/jobs/attempt_lock.h"

namespace vigil::jobs {

NodeAgent::NodeAgent(JobStore* store, ExecutorFactory make_executor, NodeAgentOptions options)
    : store_(store), make_executor_(std::move(make_executor)), options_(std::move(options)) {
  heartbeat_ok_ms_.store(options_.env->NowMs());
}

NodeAgent::~NodeAgent() { Stop(); }

Status NodeAgent::Open() {
  if (options_.claimed == nullptr) return Status::InvalidArgument("a node agent needs the process's claimed attempts");
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, make_executor_());
  MutexLock lock(&mu_);
  executor_ = executor.get();
  executors_.push_back(std::move(executor));
  return Status::OK();
}

Status NodeAgent::Start() {
  VIGIL_RETURN_IF_ERROR(Open());
  loop_ = std::thread([this] { Loop(); });
  return Status::OK();
}

void NodeAgent::Stop() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (loop_.joinable()) loop_.join();
  WaitForAttempts();
}

void NodeAgent::Loop() {
  for (;;) {
    if (!FenceIfLapsed()) {
      Result<std::vector<int64_t>> started = Poll();
      if (!started.ok())
        VIGIL_LOG_WARN("node {}: looking for assigned attempts: {}", options_.node_id, started.status().ToString());
    }
    std::vector<std::thread> done;
    {
      MutexLock lock(&mu_);
      done.swap(done_threads_);
    }
    for (std::thread& t : done) t.join();
    // The poll interval on the agent's clock; Stop ends the wait at once.
    MutexLock lock(&mu_);
    if (options_.env->WaitForMs(lock, wake_, options_.poll_interval_ms,
                                [this]() VIGIL_REQUIRES(mu_) { return stop_; })) {
      return;
    }
  }
}

void NodeAgent::HeartbeatSucceeded(int64_t sent_ms) {
  int64_t prev = heartbeat_ok_ms_.load();
  while (sent_ms > prev && !heartbeat_ok_ms_.compare_exchange_weak(prev, sent_ms)) {
  }
}

bool NodeAgent::FenceIfLapsed() {
  const int64_t ttl = options_.lease_ttl_ms;
  const int64_t since = options_.env->NowMs() - heartbeat_ok_ms_.load();
  const bool lapsed = since >= ttl - std::max<int64_t>(ttl / 6, 10);
  MutexLock lock(&mu_);
  if (lapsed && !fenced_) {
    VIGIL_LOG_ERROR(
        "node {}: no heartbeat succeeded for {} ms (lease {} ms): its workers are killed and it takes "
        "no attempt until a heartbeat succeeds",
        options_.node_id, since, ttl);
    fenced_ = true;
    if (executor_ != nullptr) executor_->Fence();
    executor_ = nullptr;
  } else if (!lapsed && fenced_) {
    Result<std::unique_ptr<Executor>> fresh = make_executor_();
    if (!fresh.ok()) {
      VIGIL_LOG_WARN("node {}: a new executor: {}", options_.node_id, fresh.status().ToString());
      return true;
    }
    VIGIL_LOG_INFO("node {}: heartbeats succeed again; it takes attempts again", options_.node_id);
    fenced_ = false;
    executor_ = fresh->get();
    executors_.push_back(std::move(*fresh));
  }
  return fenced_;
}

Result<std::vector<int64_t>> NodeAgent::Poll() {
  std::vector<int64_t> started;
  {
    MutexLock lock(&mu_);
    if (fenced_ || executor_ == nullptr) return started;
  }
  const uint64_t mark = options_.claimed->Mark();
  JobFilter filter;
  filter.state = "RUNNING";
  filter.order = JobOrder::kOldestFirst;
  filter.limit = kMaxListLimit;
  std::set<std::string> running_ids;
  std::vector<JobRecord> mine;
  VIGIL_RETURN_IF_ERROR(store_->ForEach(filter, [&](const JobRecord& j) {
    if (j.state.execution != Execution::kRunning || !j.attempt) return Status::OK();
    running_ids.insert(j.attempt->attempt_id);
    if (j.attempt->executor_node_id == options_.node_id && j.attempt->node_epoch == options_.node_epoch) {
      mine.push_back(j);
    }
    return Status::OK();
  }));
  options_.claimed->Forget(running_ids, mark);
  for (const JobRecord& j : mine) {
    if (running() >= static_cast<size_t>(std::max(options_.concurrency, 1))) break;
    if (!options_.claimed->Claim(j.attempt->attempt_id)) continue;
    Status st = StartAttempt(j);
    if (!st.ok()) {
      options_.claimed->Finished(j.attempt->attempt_id);
      VIGIL_LOG_WARN("node {}: job {}: {}", options_.node_id, j.job_id, st.ToString());
      continue;
    }
    started.push_back(j.job_id);
  }
  return started;
}

Status NodeAgent::StartAttempt(const JobRecord& job) {
  VIGIL_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(AttemptLockPath(job.spec, job.attempt->attempt_id)));
  AttemptRun run;
  run.running = job;
  run.lock = std::move(lock);
  run.actor = "node:" + options_.node_id + ":" + std::to_string(options_.node_epoch);
  run.reconcile_backoff_s = options_.reconcile_backoff.initial_s;
  run.due_now = true;
  run.env = options_.env;
  MutexLock guard(&mu_);
  if (executor_ == nullptr) return Status::Busy("the node is fenced");
  Executor* executor = executor_;
  const int64_t job_id = job.job_id;
  VIGIL_LOG_INFO("node {}: running job {} (attempt {})", options_.node_id, job_id, job.attempt->attempt_id);
  threads_.emplace(job_id, std::thread([this, executor, job_id, run = std::move(run)]() mutable {
                     const std::string attempt_id = run.running.attempt->attempt_id;
                     Result<JobRecord> done = ExecuteAttempt(store_, executor, std::move(run));
                     options_.claimed->Finished(attempt_id);
                     if (!done.ok()) {
                       VIGIL_LOG_WARN("node {}: the result of job {} is refused: {}", options_.node_id, job_id,
                                      done.status().ToString());
                     }
                     MutexLock lock(&mu_);
                     auto it = threads_.find(job_id);
                     done_threads_.push_back(std::move(it->second));
                     threads_.erase(it);
                     attempt_ended_.notify_all();
                   }));
  return Status::OK();
}

size_t NodeAgent::running() const {
  MutexLock lock(&mu_);
  return threads_.size();
}

void NodeAgent::WaitForAttempts() {
  // This waits for other threads, not for time: each one's end is notified.
  std::vector<std::thread> done;
  {
    MutexLock lock(&mu_);
    lock.Wait(attempt_ended_, [this]() VIGIL_REQUIRES(mu_) { return threads_.empty(); });
    done.swap(done_threads_);
  }
  for (std::thread& t : done) t.join();
}

}  // namespace vigil::jobs
