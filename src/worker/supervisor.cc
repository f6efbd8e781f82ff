#include "vigil/worker/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "vigil/common/config.h"
#include "vigil/common/failpoint.h"
#include "vigil/common/logging.h"

#ifndef VIGIL_WORKER_BUILD_PATH
#define VIGIL_WORKER_BUILD_PATH ""
#endif

namespace vigil::worker {

namespace {

using Clock = std::chrono::steady_clock;

// Descriptor numbers in the worker (its command line names them).
constexpr int kChildIn = 3;
constexpr int kChildOut = 4;
constexpr int kChildSecret = 5;
constexpr int kChildLock = 6;
constexpr int kChildExecStatus = 7;  // close-on-exec: EOF tells the parent exec succeeded
constexpr int kChildFds = 8;
constexpr int kDupFloor = 64;

// Everything the forked child needs, prepared before fork: the child of a
// multi-threaded process may only make async-signal-safe calls.
struct ChildPlan {
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int fds[kChildFds];  // source descriptor for each child number; -1: closed
  int go_fd = -1;      // cgroup barrier: wait for one byte
  int go_write_fd = -1;  // the parent's end, closed first so the parent's close reads as EOF
  const char* markers[4] = {};
  size_t marker_lens[4] = {};
  int markers_count = 0;
  pid_t parent = 0;
  rlim_t address_space = RLIM_INFINITY;
  rlim_t open_files = 1024;
};

[[noreturn]] void ChildExit(int code) { ::_exit(code); }

bool ChildInCgroup(const ChildPlan& p) {
  char buf[8192];
  int fd = ::open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t used = 0;
  while (used < sizeof buf) {
    ssize_t n = ::read(fd, buf + used, sizeof buf - used);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    used += static_cast<size_t>(n);
  }
  ::close(fd);
  for (int i = 0; i < p.markers_count; ++i) {
    if (::memmem(buf, used, p.markers[i], p.marker_lens[i]) == nullptr) return false;
  }
  return true;
}

// Runs in the forked child until exec; async-signal-safe calls only.
[[noreturn]] void ChildMain(const ChildPlan& p) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) sigaction(s, &dfl, nullptr);
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) ChildExit(kExitSetup);
  if (::getppid() != p.parent) ChildExit(kExitParentGone);
  if (p.go_fd >= 0) {
    ::close(p.go_write_fd);
    char b = 0;
    ssize_t n;
    do {
      n = ::read(p.go_fd, &b, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) ChildExit(kExitSetup);
    if (!ChildInCgroup(p)) ChildExit(kExitCgroupVerify);
  }
  int tmp[kChildFds];
  for (int i = 0; i < kChildFds; ++i) {
    tmp[i] = p.fds[i] < 0 ? -1 : ::fcntl(p.fds[i], F_DUPFD_CLOEXEC, kDupFloor);
    if (p.fds[i] >= 0 && tmp[i] < 0) ChildExit(kExitSetup);
  }
  for (int i = 0; i < kChildFds; ++i) {
    if (tmp[i] < 0) {
      ::close(i);
    } else if (i == kChildExecStatus) {
      if (::dup3(tmp[i], i, O_CLOEXEC) < 0) ChildExit(kExitSetup);
    } else if (::dup2(tmp[i], i) < 0) {  // dup2 leaves close-on-exec clear
      ChildExit(kExitSetup);
    }
  }
  if (::syscall(SYS_close_range, kChildFds, ~0U, 0) != 0) {
    for (int fd = kChildFds; fd < kDupFloor + 64; ++fd) ::close(fd);
  }
  struct rlimit core = {0, 0};
  struct rlimit files = {p.open_files, p.open_files};
  struct rlimit as = {p.address_space, p.address_space};
  if (::setrlimit(RLIMIT_CORE, &core) != 0 || ::setrlimit(RLIMIT_NOFILE, &files) != 0 ||
      ::setrlimit(RLIMIT_AS, &as) != 0) {
    ChildExit(kExitSetup);
  }
  ::execve(p.path, p.argv, p.envp);
  int err = errno;
  ssize_t ignored = ::write(kChildExecStatus, &err, sizeof err);
  (void)ignored;
  ChildExit(kExitExecFailed);
}

// A descriptor closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Close();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  ~Fd() { Close(); }
  int get() const { return fd_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

Status MakePipe(Fd* read_end, Fd* write_end) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return Status::FromErrno(errno, "pipe2");
  *read_end = Fd(p[0]);
  *write_end = Fd(p[1]);
  return Status::OK();
}

int RemainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return left > INT_MAX ? INT_MAX : static_cast<int>(left);
}

// Writes all of `bytes` to a non-blocking descriptor before `deadline`.
Status WriteUntil(int fd, std::string_view bytes, Clock::time_point deadline) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return Status::FromErrno(errno, "write to worker");
    struct pollfd pfd = {fd, POLLOUT, 0};
    int r = ::poll(&pfd, 1, RemainingMs(deadline));
    if (r == 0) return Status::DeadlineExceeded("worker did not read its input before the deadline");
    if (r < 0 && errno != EINTR) return Status::FromErrno(errno, "poll");
  }
  return Status::OK();
}

enum class ReadOutcome { kFrame, kEof, kTimeout };

// Reads until `reader` holds a complete frame, EOF, or `deadline`.
Result<ReadOutcome> ReadFrameUntil(int fd, FrameReader* reader, Clock::time_point deadline, Frame* out) {
  char buf[16384];
  for (;;) {
    VIGIL_ASSIGN_OR_RETURN(std::optional<Frame> f, reader->Next());
    if (f) {
      *out = std::move(*f);
      return ReadOutcome::kFrame;
    }
    struct pollfd pfd = {fd, POLLIN, 0};
    int r = ::poll(&pfd, 1, RemainingMs(deadline));
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

// Blocks SIGPIPE on the calling thread for its lifetime, so a write to a dead
// worker fails with EPIPE instead of killing the supervisor; discards a SIGPIPE
// raised meanwhile.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeBlock() {
    if (!was_pending_) {
      struct timespec zero = {0, 0};
      while (sigtimedwait(&pipe_, nullptr, &zero) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t pipe_, old_;
  bool was_pending_ = false;
};

// Zeroizes a string on destruction.
class Zeroize {
 public:
  explicit Zeroize(std::string* s) : s_(s) {}
  ~Zeroize() { ZeroizeString(s_); }

 private:
  std::string* s_;
};

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

// The long-lived thread that forks every worker (PDEATHSIG is tied to the
// forking thread), plus the bookkeeping of running workers.
class Supervisor::Launcher {
 public:
  Launcher() : thread_([this] { Loop(); }) {}
  ~Launcher() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  // Forks on the launcher thread; the child runs ChildMain(plan).
  Result<pid_t> Fork(const ChildPlan& plan) {
    std::unique_lock<std::mutex> lock(mu_);
    Task task{&plan};
    tasks_.push_back(&task);
    cv_.notify_all();
    cv_.wait(lock, [&] { return task.done; });
    if (task.pid < 0) return Status::FromErrno(task.err, "fork of vigil-worker");
    running_.insert(task.pid);
    return task.pid;
  }

  bool TryAcquire(int concurrency) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_runs_ || active_ >= std::max(concurrency, 1)) return false;
    ++active_;
    return true;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    --active_;
    cv_.notify_all();
  }
  void Reaped(pid_t pid) {
    std::lock_guard<std::mutex> lock(mu_);
    running_.erase(pid);
  }
  // Kills every running worker and waits until their Run calls have reaped them.
  void KillAllAndWait() {
    std::unique_lock<std::mutex> lock(mu_);
    stop_runs_ = true;
    for (pid_t pid : running_) ::kill(pid, SIGKILL);
    cv_.wait(lock, [&] { return active_ == 0; });
  }

 private:
  struct Task {
    const ChildPlan* plan;
    bool done = false;
    pid_t pid = -1;
    int err = 0;
  };

  void Loop() {
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

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task*> tasks_;
  std::set<pid_t> running_;
  int active_ = 0;
  bool stop_ = false;
  bool stop_runs_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

std::string DefaultWorkerPath() {
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  std::string sibling = "vigil-worker";
  if (n > 0) {
    std::string exe(self, static_cast<size_t>(n));
    sibling = exe.substr(0, exe.rfind('/')) + "/vigil-worker";
    if (::access(sibling.c_str(), X_OK) == 0) return sibling;
  }
  std::string built = VIGIL_WORKER_BUILD_PATH;
  if (!built.empty() && ::access(built.c_str(), X_OK) == 0) return built;
  return sibling;
}

Supervisor::Supervisor(SupervisorOptions options) : options_(std::move(options)) {}

Supervisor::~Supervisor() {
  if (launcher_) launcher_->KillAllAndWait();
}

Result<std::unique_ptr<Supervisor>> Supervisor::Create(SupervisorOptions options) {
  if (options.worker_path.empty()) options.worker_path = DefaultWorkerPath();
  if (::access(options.worker_path.c_str(), X_OK) != 0) {
    return Status::NotFound("worker executable " + options.worker_path + " is missing or not executable");
  }
  if (!options.sandbox && !failpoint::Enabled()) {
    return Status::NotSupported("workers run without their sandbox only in test builds");
  }
  std::unique_ptr<Supervisor> s(new Supervisor(std::move(options)));
  const CgroupOptions& cg = s->options_.cgroup;
  if (cg.parent.empty()) {
    s->cgroup_status_ = Status::NotSupported("no cgroup parent is configured");
  } else {
    s->cgroup_status_ = ProbeCgroup(cg);
    if (s->cgroup_status_.ok()) {
      auto placement = ResolveCgroup(cg.parent);
      s->cgroup_status_ = placement.status();
      if (placement.ok()) {
        RemoveStaleCgroups(*placement);
        s->cgroup_ = std::move(*placement);
      }
    }
  }
  if (s->options_.require_cgroup && !s->cgroup_) {
    return Status::FailedPrecondition("require_cgroup is set but workers cannot get a cgroup: " +
                                      s->cgroup_status_.message());
  }
  s->launcher_ = std::make_unique<Launcher>();
  return s;
}

Status Supervisor::CheckCapability() const {
  if (::access(options_.worker_path.c_str(), X_OK) != 0) {
    return Status::NotFound("worker executable " + options_.worker_path + " is missing or not executable");
  }
  if (options_.require_cgroup && !cgroup_) {
    return Status::FailedPrecondition("require_cgroup is set but workers cannot get a cgroup: " +
                                      cgroup_status_.message());
  }
  return Status::OK();
}

LaunchResult Supervisor::Run(LaunchRequest req) {
  static std::atomic<uint64_t> counter{0};
  Zeroize zero_secret(&req.secret);
  SigpipeBlock no_sigpipe;
  LaunchResult res;
  auto before_request = [&res](Status st) {
    res.failed_before_request = true;
    res.error = std::move(st);
    return res;
  };
  if (req.secret.size() > kMaxSecretBytes) return before_request(Status::InvalidArgument("the secret is too long"));
  if (!launcher_->TryAcquire(options_.concurrency)) {
    return before_request(Status::Busy("the worker supervisor is at its concurrency limit"));
  }
  struct ReleaseSlot {
    Launcher* l;
    ~ReleaseSlot() { l->Release(); }
  } release_slot{launcher_.get()};
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + req.timeout;
  const Clock::time_point handshake_deadline = std::min(deadline, start + options_.handshake_timeout);

  std::optional<WorkerCgroup> cg;
  const uint64_t cgroup_memory =
      options_.cgroup.memory_max_bytes != 0 ? options_.cgroup.memory_max_bytes : options_.address_space_bytes;
  if (cgroup_) {
    std::string name = "vigil-worker-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
    uint64_t mem = cgroup_memory;
    auto created = WorkerCgroup::Create(*cgroup_, name, mem, options_.cgroup.pids_max);
    if (!created.ok()) return before_request(created.status());
    cg.emplace(std::move(*created));
  }

  Fd in_r, in_w, out_r, out_w, secret_r, secret_w, status_r, status_w, go_r, go_w;
  for (auto [r, w] : {std::pair{&in_r, &in_w}, std::pair{&out_r, &out_w}, std::pair{&secret_r, &secret_w},
                      std::pair{&status_r, &status_w}}) {
    Status st = MakePipe(r, w);
    if (!st.ok()) return before_request(st);
  }
  if (cg) {
    Status st = MakePipe(&go_r, &go_w);
    if (!st.ok()) return before_request(st);
  }
  Fd devnull(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (devnull.get() < 0) return before_request(Status::FromErrno(errno, "open /dev/null"));
  Fd err_log;
  if (!options_.stderr_path.empty()) {
    err_log = Fd(::open(options_.stderr_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
    if (err_log.get() < 0) return before_request(Status::FromErrno(errno, "open " + options_.stderr_path));
  }
  for (int fd : {in_w.get(), secret_w.get()}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);

  // Command line: descriptor numbers and the expected parent only.
  std::vector<std::string> args = {options_.worker_path,
                                   "--in=" + std::to_string(kChildIn),
                                   "--out=" + std::to_string(kChildOut),
                                   "--secret=" + std::to_string(kChildSecret),
                                   "--parent=" + std::to_string(::getpid())};
  if (req.attempt_lock_fd >= 0) args.push_back("--lock=" + std::to_string(kChildLock));
  if (!options_.sandbox) args.push_back("--no-sandbox");
  std::vector<std::string> env;
  const char* path = std::getenv("PATH");
  env.push_back(std::string("PATH=") + (path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin"));
  if (const char* lang = std::getenv("LANG")) env.push_back(std::string("LANG=") + lang);
  env.push_back("MALLOC_ARENA_MAX=2");
  env.push_back("OPENBLAS_NUM_THREADS=1");
  env.push_back("OMP_NUM_THREADS=" + std::to_string(std::max(options_.omp_threads, 1)));
  std::vector<char*> argv = CStrings(args);
  std::vector<char*> envp = CStrings(env);

  ChildPlan plan;
  plan.path = options_.worker_path.c_str();
  plan.argv = argv.data();
  plan.envp = envp.data();
  int sources[kChildFds] = {devnull.get(), devnull.get(), err_log.get() >= 0 ? err_log.get() : devnull.get(),
                            in_r.get(),    out_w.get(),   secret_r.get(), req.attempt_lock_fd, status_w.get()};
  std::copy(std::begin(sources), std::end(sources), plan.fds);
  plan.go_fd = go_r.get();
  plan.go_write_fd = go_w.get();
  if (cg) {
    for (const auto& m : cg->membership_markers()) {
      if (plan.markers_count == 4) break;
      plan.markers[plan.markers_count] = m.c_str();
      plan.marker_lens[plan.markers_count] = m.size();
      ++plan.markers_count;
    }
  }
  plan.parent = ::getpid();
  plan.address_space = options_.address_space_bytes == 0 ? RLIM_INFINITY : options_.address_space_bytes;
  plan.open_files = options_.open_files;

  Result<pid_t> forked = launcher_->Fork(plan);
  in_r.Close();
  out_w.Close();
  secret_r.Close();
  status_w.Close();
  go_r.Close();
  if (!forked.ok()) return before_request(forked.status());
  const pid_t pid = *forked;
  res.pid = pid;
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));

  // Ends the child: waits for it to exit until `until` (then SIGKILL), reaps it.
  auto finish = [&](bool kill_now, Clock::time_point until) {
    bool exited = false;
    if (!kill_now) {
      if (pidfd.get() >= 0) {
        struct pollfd pfd = {pidfd.get(), POLLIN, 0};
        int r;
        do {
          r = ::poll(&pfd, 1, RemainingMs(until));
        } while (r < 0 && errno == EINTR);
        exited = r > 0;
      } else {
        for (;;) {
          siginfo_t info;
          info.si_pid = 0;
          if (::waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
            exited = true;
            break;
          }
          if (Clock::now() >= until) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
      }
    }
    if (!exited) {
      if (!kill_now) res.deadline_exceeded = true;
      ::kill(pid, SIGKILL);
    }
    int status = 0;
    pid_t w;
    do {
      w = ::waitpid(pid, &status, 0);
    } while (w < 0 && errno == EINTR);
    res.reaped = w == pid;
    res.wait_status = status;
    launcher_->Reaped(pid);
    if (cg) {
      res.oom_killed = cg->OomKilled();
      Status removed = cg->Remove();
      if (!removed.ok()) VIGIL_LOG_WARN("worker cgroup cleanup: {}", removed.ToString());
    }
  };
  auto fail_launch = [&](Status st) {
    finish(true, deadline);
    if (res.reaped && WIFEXITED(res.wait_status) && WEXITSTATUS(res.wait_status) == kExitSandbox) {
      // Typed: the machine cannot give the worker its sandbox; the step and errno are on its stderr.
      return before_request(Status::FailedPrecondition(
          "the worker could not enter its sandbox (no_new_privs, capability drop or seccomp filter; "
          "its stderr names the step): " + st.message()));
    }
    if (res.reaped && !st.message().empty() && (WIFSIGNALED(res.wait_status) || WIFEXITED(res.wait_status))) {
      st = st.WithContext(DescribeExit(res.wait_status));
    }
    return before_request(std::move(st));
  };

  // Stop/move/verify barrier: the child waits on the go pipe until it is in its cgroup.
  if (cg) {
    Status st = cg->AddProcess(pid);
    if (st.ok()) st = cg->Verify(pid);
    if (!st.ok()) {
      go_w.Close();
      return fail_launch(Status::Internal("cannot place the worker in its cgroup: " + st.message()));
    }
    char go = 1;
    if (::write(go_w.get(), &go, 1) != 1) return fail_launch(Status::FromErrno(errno, "worker launch barrier"));
    go_w.Close();
    res.in_cgroup = true;
  }

  // Exec status: EOF means exec succeeded, an errno value means it failed.
  {
    int err = 0;
    size_t got = 0;
    for (;;) {
      struct pollfd pfd = {status_r.get(), POLLIN, 0};
      int r = ::poll(&pfd, 1, RemainingMs(handshake_deadline));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return fail_launch(Status::DeadlineExceeded("the worker did not exec in time"));
      ssize_t n = ::read(status_r.get(), reinterpret_cast<char*>(&err) + got, sizeof err - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
      if (got == sizeof err) return fail_launch(Status::FromErrno(err, "exec " + options_.worker_path));
    }
  }

  // Handshake both ways.
  FrameReader reader;
  {
    Status st = WriteUntil(in_w.get(), EncodeHandshake({kProtocolVersion, std::string(BuildId())}), handshake_deadline);
    if (!st.ok()) return fail_launch(st.WithContext("handshake"));
    Frame f;
    auto got = ReadFrameUntil(out_r.get(), &reader, handshake_deadline, &f);
    if (!got.ok()) return fail_launch(got.status().WithContext("handshake"));
    if (*got == ReadOutcome::kEof) return fail_launch(Status::IOError("the worker closed the protocol before its handshake"));
    if (*got == ReadOutcome::kTimeout) return fail_launch(Status::DeadlineExceeded("no worker handshake in time"));
    if (f.type != MessageType::kHandshake) return fail_launch(Status::Corruption("the worker did not start with a handshake"));
    auto hs = DecodeHandshake(f.payload);
    if (!hs.ok()) return fail_launch(hs.status());
    if (hs->protocol_version != kProtocolVersion || hs->build_id != BuildId()) {
      return fail_launch(Status::FailedPrecondition("worker handshake mismatch: protocol " +
                                                    std::to_string(hs->protocol_version) + ", build '" +
                                                    hs->build_id + "'"));
    }
  }
  res.handshake_latency = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  if (req.on_launched) req.on_launched(pid);

  // The request. A frame that was not completely written cannot have been
  // accepted (the worker checks length and checksum), so that is still proof.
  req.request.secret_follows = !req.secret.empty();
  {
    Status st = WriteUntil(in_w.get(), EncodeRequest(req.request), deadline);
    if (!st.ok()) return fail_launch(st.WithContext("request not delivered"));
  }
  in_w.Close();
  if (!req.secret.empty()) {
    Status st = WriteUntil(secret_w.get(), req.secret, deadline);
    if (!st.ok()) VIGIL_LOG_WARN("worker {}: secret not delivered: {}", pid, st.ToString());
  }
  ZeroizeString(&req.secret);
  secret_w.Close();

  // Progress and the one response.
  Status incomplete;
  bool kill_now = false;
  for (;;) {
    Frame f;
    auto got = ReadFrameUntil(out_r.get(), &reader, deadline, &f);
    if (!got.ok()) {
      incomplete = got.status();
      kill_now = true;
      break;
    }
    if (*got == ReadOutcome::kEof) {
      incomplete = Status::IOError("the worker ended without a complete response");
      break;
    }
    if (*got == ReadOutcome::kTimeout) {
      incomplete = Status::DeadlineExceeded("the worker ran past its deadline");
      res.deadline_exceeded = true;
      kill_now = true;
      break;
    }
    if (f.type == MessageType::kProgress) {
      auto p = DecodeProgress(f.payload);
      if (!p.ok()) {
        incomplete = p.status();
        kill_now = true;
        break;
      }
      if (req.on_progress) req.on_progress(*p);
      continue;
    }
    if (f.type != MessageType::kResponse) {
      incomplete = Status::Corruption("unexpected worker message after the request");
      kill_now = true;
      break;
    }
    auto r = DecodeResponse(f.payload);
    if (!r.ok()) {
      incomplete = r.status();
      kill_now = true;
    } else if (!(r->attempt == req.request.attempt)) {
      incomplete = Status::Corruption("the worker response names another attempt");
      kill_now = true;
    } else {
      res.complete = true;
      res.response = std::move(*r);
    }
    break;
  }
  finish(kill_now, deadline);
  if (!res.complete) {
    std::string why = incomplete.message();
    if (res.reaped && !res.deadline_exceeded) why += " (" + DescribeExit(res.wait_status) + ")";
    if (res.oom_killed) {
      why += " (OOM kill in the worker cgroup: its memory.max is worker.memory_bytes = " +
             (cgroup_memory == 0 ? std::string("max") : FormatSize(cgroup_memory)) + ")";
    }
    res.error = Status(incomplete.code(), why);
  }
  return res;
}

}  // namespace vigil::worker
