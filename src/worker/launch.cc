#include "worker/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <thread>

#include "vigil/common/config.h"
#include "vigil/common/logging.h"
#include "worker/fork_thread.h"

namespace vigil::worker {

namespace {

Status MakePipe(UniqueFd* read_end, UniqueFd* write_end) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return Status::FromErrno(errno, "pipe2");
  *read_end = UniqueFd(p[0]);
  *write_end = UniqueFd(p[1]);
  return Status::OK();
}

// Milliseconds from now to `deadline` (micros on env's monotonic clock), rounded up, as a poll
// timeout.
int RemainingMs(Env* env, int64_t deadline) {
  const int64_t left_micros = deadline - env->MonotonicMicros();
  if (left_micros <= 0) return 0;
  const int64_t left = (left_micros + 999) / 1000;
  return left > INT_MAX ? INT_MAX : static_cast<int>(left);
}

// Writes all of `bytes` to a non-blocking descriptor before `deadline`.
Status WriteUntil(Env* env, int fd, std::string_view bytes, int64_t deadline) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return Status::FromErrno(errno, "write to worker");
    struct pollfd pfd = {fd, POLLOUT, 0};
    int r = ::poll(&pfd, 1, RemainingMs(env, deadline));
    if (r == 0) return Status::DeadlineExceeded("worker did not read its input before the deadline");
    if (r < 0 && errno != EINTR) return Status::FromErrno(errno, "poll");
  }
  return Status::OK();
}

enum class ReadOutcome { kFrame, kEof, kTimeout };

// Reads until `reader` holds a complete frame, EOF, or `deadline`.
Result<ReadOutcome> ReadFrameUntil(Env* env, int fd, FrameReader* reader, int64_t deadline, Frame* out) {
  char buf[16384];
  for (;;) {
    VIGIL_ASSIGN_OR_RETURN(std::optional<Frame> f, reader->Next());
    if (f) {
      *out = std::move(*f);
      return ReadOutcome::kFrame;
    }
    struct pollfd pfd = {fd, POLLIN, 0};
    int r = ::poll(&pfd, 1, RemainingMs(env, deadline));
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "poll");
    }
    if (r == 0) return ReadOutcome::kTimeout;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Status::FromErrno(errno, "read from worker");
    }
    if (n == 0) return ReadOutcome::kEof;
    reader->Append(std::string_view(buf, static_cast<size_t>(n)));
  }
}

std::string DescribeExit(int status) {
  if (WIFSIGNALED(status)) return "worker killed by signal " + std::to_string(WTERMSIG(status));
  if (WIFEXITED(status)) return "worker exited with status " + std::to_string(WEXITSTATUS(status));
  return "worker ended with wait status " + std::to_string(status);
}

std::vector<char*> CStrings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

Supervisor::Launch::SigpipeBlock::SigpipeBlock() {
  sigemptyset(&pipe_);
  sigaddset(&pipe_, SIGPIPE);
  sigset_t pending;
  sigpending(&pending);
  was_pending_ = sigismember(&pending, SIGPIPE) == 1;
  pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
}

Supervisor::Launch::SigpipeBlock::~SigpipeBlock() {
  if (!was_pending_) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_, nullptr, &zero) == SIGPIPE) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

Supervisor::Launch::Slot::~Slot() {
  if (fork_thread_ != nullptr) fork_thread_->Release();
}

bool Supervisor::Launch::Slot::Acquire(ForkThread* fork_thread, int concurrency) {
  if (!fork_thread->TryAcquire(concurrency)) return false;
  fork_thread_ = fork_thread;
  return true;
}

Supervisor::Launch::Launch(Supervisor* supervisor, LaunchRequest* request)
    : supervisor_(*supervisor), options_(supervisor->options_), request_(*request) {}

Supervisor::Launch::~Launch() { ZeroizeString(&request_.secret); }

LaunchResult Supervisor::Launch::Run() {
  if (Status st = Admit(); !st.ok()) return FailedBeforeRequest(std::move(st));
  if (Status st = Plan(); !st.ok()) return FailedBeforeRequest(std::move(st));
  if (Status st = Fork(); !st.ok()) return FailedBeforeRequest(std::move(st));
  if (Status st = PlaceInCgroup(); !st.ok()) return FailedAfterFork(std::move(st));
  if (Status st = AwaitExec(); !st.ok()) return FailedAfterFork(std::move(st));
  if (Status st = Handshake(); !st.ok()) return FailedAfterFork(std::move(st));
  if (request_.on_launched) request_.on_launched(pid_);
  if (Status st = SendRequest(); !st.ok()) return FailedAfterFork(std::move(st));
  bool kill_now = false;
  Status incomplete = ReadResponses(&kill_now);
  Reap(kill_now);
  return Finished(incomplete);
}

Status Supervisor::Launch::Admit() {
  if (request_.secret.size() > kMaxSecretBytes) return Status::InvalidArgument("the secret is too long");
  if (!slot_.Acquire(supervisor_.fork_thread_.get(), options_.concurrency)) {
    return Status::Busy("the worker supervisor is at its concurrency limit");
  }
  start_ = options_.env->MonotonicMicros();
  deadline_ = start_ + std::chrono::duration_cast<std::chrono::microseconds>(request_.timeout).count();
  handshake_deadline_ = std::min(
      deadline_, start_ + std::chrono::duration_cast<std::chrono::microseconds>(options_.handshake_timeout).count());
  return Status::OK();
}

Status Supervisor::Launch::Plan() {
  static std::atomic<uint64_t> counter{0};
  cgroup_memory_ =
      options_.cgroup.memory_max_bytes != 0 ? options_.cgroup.memory_max_bytes : options_.address_space_bytes;
  if (supervisor_.cgroup_) {
    std::string name = "vigil-worker-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
    VIGIL_ASSIGN_OR_RETURN(WorkerCgroup created, WorkerCgroup::Create(*supervisor_.cgroup_, name, cgroup_memory_,
                                                                      options_.cgroup.pids_max, options_.env));
    cgroup_.emplace(std::move(created));
  }

  for (auto [r, w] : {std::pair{&in_r_, &in_w_}, std::pair{&out_r_, &out_w_}, std::pair{&secret_r_, &secret_w_},
                      std::pair{&status_r_, &status_w_}}) {
    VIGIL_RETURN_IF_ERROR(MakePipe(r, w));
  }
  if (cgroup_) VIGIL_RETURN_IF_ERROR(MakePipe(&go_r_, &go_w_));
  VIGIL_ASSIGN_OR_RETURN(devnull_, OpenDevNull());
  if (!options_.stderr_path.empty()) {
    VIGIL_ASSIGN_OR_RETURN(err_log_, OpenAppendLog(options_.stderr_path, 0600));
  }
  for (int fd : {in_w_.get(), secret_w_.get()}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);

  // Command line: descriptor numbers and the expected parent only.
  args_ = {options_.worker_path, "--in=" + std::to_string(kChildIn), "--out=" + std::to_string(kChildOut),
           "--secret=" + std::to_string(kChildSecret), "--parent=" + std::to_string(::getpid())};
  if (request_.attempt_lock_fd >= 0) args_.push_back("--lock=" + std::to_string(kChildLock));
  if (!options_.sandbox) args_.push_back("--no-sandbox");
  if (request_.request.job.engine == index::TableEngine::kLance) args_.push_back("--sandbox=lance");
  const char* path = std::getenv("PATH");
  env_.push_back(std::string("PATH=") + (path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin"));
  if (const char* lang = std::getenv("LANG")) env_.push_back(std::string("LANG=") + lang);
  env_.push_back("MALLOC_ARENA_MAX=2");
  env_.push_back("OPENBLAS_NUM_THREADS=1");
  env_.push_back("OMP_NUM_THREADS=" + std::to_string(std::max(options_.omp_threads, 1)));
  argv_ = CStrings(args_);
  envp_ = CStrings(env_);

  plan_.path = options_.worker_path.c_str();
  plan_.argv = argv_.data();
  plan_.envp = envp_.data();
  const int sources[kChildFds] = {devnull_.get(),
                                  devnull_.get(),
                                  err_log_.get() >= 0 ? err_log_.get() : devnull_.get(),
                                  in_r_.get(),
                                  out_w_.get(),
                                  secret_r_.get(),
                                  request_.attempt_lock_fd,
                                  status_w_.get()};
  std::copy(std::begin(sources), std::end(sources), plan_.fds);
  plan_.go_fd = go_r_.get();
  plan_.go_write_fd = go_w_.get();
  if (cgroup_) {
    for (const auto& m : cgroup_->membership_markers()) {
      if (plan_.markers_count == kMaxCgroupMarkers) break;
      plan_.markers[plan_.markers_count] = m.c_str();
      plan_.marker_lens[plan_.markers_count] = m.size();
      ++plan_.markers_count;
    }
  }
  plan_.parent = ::getpid();
  plan_.address_space = options_.address_space_bytes == 0 ? RLIM_INFINITY : options_.address_space_bytes;
  plan_.open_files = options_.open_files;
  return Status::OK();
}

Status Supervisor::Launch::Fork() {
  Result<pid_t> forked = supervisor_.fork_thread_->Fork(plan_);
  for (UniqueFd* child_end : {&in_r_, &out_w_, &secret_r_, &status_w_, &go_r_}) child_end->Close();
  if (!forked.ok()) return forked.status();
  pid_ = *forked;
  result_.pid = pid_;
  pidfd_ = UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0)));
  return Status::OK();
}

Status Supervisor::Launch::PlaceInCgroup() {
  if (!cgroup_) return Status::OK();
  // Stop/move/verify barrier: the child waits on the go pipe until it is in its cgroup.
  Status st = cgroup_->AddProcess(pid_);
  if (st.ok()) st = cgroup_->Verify(pid_);
  if (!st.ok()) {
    go_w_.Close();
    return Status::Internal("cannot place the worker in its cgroup: " + st.message());
  }
  char go = 1;
  if (::write(go_w_.get(), &go, 1) != 1) return Status::FromErrno(errno, "worker launch barrier");
  go_w_.Close();
  result_.in_cgroup = true;
  return Status::OK();
}

Status Supervisor::Launch::AwaitExec() {
  int err = 0;
  size_t got = 0;
  for (;;) {
    struct pollfd pfd = {status_r_.get(), POLLIN, 0};
    int r = ::poll(&pfd, 1, RemainingMs(options_.env, handshake_deadline_));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return Status::DeadlineExceeded("the worker did not exec in time");
    ssize_t n = ::read(status_r_.get(), reinterpret_cast<char*>(&err) + got, sizeof err - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::OK();
    got += static_cast<size_t>(n);
    if (got == sizeof err) return Status::FromErrno(err, "exec " + options_.worker_path);
  }
}

Status Supervisor::Launch::Handshake() {
  Status sent = WriteUntil(options_.env, in_w_.get(), EncodeHandshake({kProtocolVersion, std::string(BuildId())}),
                           handshake_deadline_);
  if (!sent.ok()) return sent.WithContext("handshake");
  Frame f;
  auto got = ReadFrameUntil(options_.env, out_r_.get(), &reader_, handshake_deadline_, &f);
  if (!got.ok()) return got.status().WithContext("handshake");
  if (*got == ReadOutcome::kEof) return Status::IOError("the worker closed the protocol before its handshake");
  if (*got == ReadOutcome::kTimeout) return Status::DeadlineExceeded("no worker handshake in time");
  if (f.type != MessageType::kHandshake) return Status::Corruption("the worker did not start with a handshake");
  VIGIL_ASSIGN_OR_RETURN(worker::Handshake hs, DecodeHandshake(f.payload));
  if (hs.protocol_version != kProtocolVersion || hs.build_id != BuildId()) {
    return Status::FailedPrecondition("worker handshake mismatch: protocol " + std::to_string(hs.protocol_version) +
                                      ", build '" + hs.build_id + "'");
  }
  result_.handshake_latency = std::chrono::microseconds(options_.env->MonotonicMicros() - start_);
  return Status::OK();
}

Status Supervisor::Launch::SendRequest() {
  // A frame that was not completely written cannot have been accepted (the worker
  // checks length and checksum), so a failure here is still proof of no invocation.
  request_.request.secret_follows = !request_.secret.empty();
  request_.request.version_catalog = static_cast<bool>(request_.on_catalog_call);
  Status sent = WriteUntil(options_.env, in_w_.get(), EncodeRequest(request_.request), deadline_);
  if (!sent.ok()) return sent.WithContext("request not delivered");
  if (!request_.on_catalog_call) in_w_.Close();  // else it carries the catalog's answers
  if (!request_.secret.empty()) {
    Status st = WriteUntil(options_.env, secret_w_.get(), request_.secret, deadline_);
    if (!st.ok()) VIGIL_LOG_WARN("worker {}: secret not delivered: {}", pid_, st.ToString());
  }
  ZeroizeString(&request_.secret);
  secret_w_.Close();
  return Status::OK();
}

Status Supervisor::Launch::ReadResponses(bool* kill_now) {
  *kill_now = true;
  for (;;) {
    Frame f;
    auto got = ReadFrameUntil(options_.env, out_r_.get(), &reader_, deadline_, &f);
    if (!got.ok()) return got.status();
    if (*got == ReadOutcome::kEof) {
      *kill_now = false;
      return Status::IOError("the worker ended without a complete response");
    }
    if (*got == ReadOutcome::kTimeout) {
      result_.deadline_exceeded = true;
      return Status::DeadlineExceeded("the worker ran past its deadline");
    }
    if (f.type == MessageType::kProgress) {
      VIGIL_ASSIGN_OR_RETURN(Progress p, DecodeProgress(f.payload));
      if (request_.on_progress) request_.on_progress(p);
      continue;
    }
    if (f.type == MessageType::kCatalogCall && request_.on_catalog_call) {
      VIGIL_ASSIGN_OR_RETURN(CatalogCall call, DecodeCatalogCall(f.payload));
      CatalogAnswer answer = request_.on_catalog_call(call);
      answer.message = SanitizeMessage(answer.message);
      VIGIL_RETURN_IF_ERROR(
          WriteUntil(options_.env, in_w_.get(), EncodeCatalogAnswer(answer), deadline_).WithContext("catalog answer"));
      continue;
    }
    if (f.type != MessageType::kResponse) return Status::Corruption("unexpected worker message after the request");
    VIGIL_ASSIGN_OR_RETURN(Response r, DecodeResponse(f.payload));
    if (!(r.attempt == request_.request.attempt)) {
      return Status::Corruption("the worker response names another attempt");
    }
    *kill_now = false;
    result_.complete = true;
    result_.response = std::move(r);
    return Status::OK();
  }
}

void Supervisor::Launch::Reap(bool kill_now) {
  bool exited = false;
  if (!kill_now) {
    if (pidfd_.get() >= 0) {
      struct pollfd pfd = {pidfd_.get(), POLLIN, 0};
      int r;
      do {
        r = ::poll(&pfd, 1, RemainingMs(options_.env, deadline_));
      } while (r < 0 && errno == EINTR);
      exited = r > 0;
    } else {
      for (;;) {
        siginfo_t info;
        info.si_pid = 0;
        if (::waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_) {
          exited = true;
          break;
        }
        if (options_.env->MonotonicMicros() >= deadline_) break;
        options_.env->SleepForMicros(2'000);
      }
    }
  }
  if (!exited) {
    if (!kill_now) result_.deadline_exceeded = true;
    ::kill(pid_, SIGKILL);
  }
  int status = 0;
  pid_t w;
  do {
    w = ::waitpid(pid_, &status, 0);
  } while (w < 0 && errno == EINTR);
  result_.reaped = w == pid_;
  result_.wait_status = status;
  supervisor_.fork_thread_->Reaped(pid_);
  if (cgroup_) {
    result_.oom_killed = cgroup_->OomKilled();
    Status removed = cgroup_->Remove();
    if (!removed.ok()) VIGIL_LOG_WARN("worker cgroup cleanup: {}", removed.ToString());
  }
}

LaunchResult Supervisor::Launch::FailedBeforeRequest(Status st) {
  result_.failed_before_request = true;
  result_.error = std::move(st);
  return result_;
}

LaunchResult Supervisor::Launch::FailedAfterFork(Status st) {
  Reap(/*kill_now=*/true);
  const int ws = result_.wait_status;
  if (result_.reaped && WIFEXITED(ws) && WEXITSTATUS(ws) == kExitSandbox) {
    // Typed: the machine cannot give the worker its sandbox; the step and errno are on its stderr.
    return FailedBeforeRequest(Status::FailedPrecondition(
        "the worker could not enter its sandbox (no_new_privs, capability drop or seccomp filter; "
        "its stderr names the step): " +
        st.message()));
  }
  if (result_.reaped && !st.message().empty() && (WIFSIGNALED(ws) || WIFEXITED(ws))) {
    st = st.WithContext(DescribeExit(ws));
  }
  return FailedBeforeRequest(std::move(st));
}

LaunchResult Supervisor::Launch::Finished(const Status& incomplete) {
  if (result_.complete) return result_;
  std::string why = incomplete.message();
  if (result_.reaped && !result_.deadline_exceeded) why += " (" + DescribeExit(result_.wait_status) + ")";
  if (result_.oom_killed) {
    why += " (OOM kill in the worker cgroup: its memory.max is worker.memory_bytes = " +
           (cgroup_memory_ == 0 ? std::string("max") : FormatSize(cgroup_memory_)) + ")";
  }
  result_.error = Status(incomplete.code(), why);
  return result_;
}

}  // namespace vigil::worker
