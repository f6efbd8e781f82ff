#include "vigil/lance/lance_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "vigil/common/unique_fd.h"

namespace vigil::lance {

namespace {

// The child: `node script request`, its own process group, stdout to `out`, stdin and
// stderr from / to /dev/null, `options.keep_fd` as descriptor 3, a fixed environment. It
// dies with the thread that started it (PR_SET_PDEATHSIG), so a killed caller leaves no
// runner behind. Between fork and exec only async-signal-safe calls are made.
Result<pid_t> Spawn(const LanceRunnerOptions& options, const std::string& request, int out) {
  std::vector<std::string> args = {options.node_path, options.script_path, request};
  std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=/", "LANG=C.UTF-8"};
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  for (std::string& e : env) envp.push_back(e.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  if (access(options.node_path.c_str(), X_OK) != 0) {
    return Status::NotFound("cannot start the Lance runner: node " + options.node_path + ": " + strerror(errno) +
                            " (lance.node in vigil.toml)");
  }
  if (access(options.script_path.c_str(), R_OK) != 0) {
    return Status::NotFound("cannot start the Lance runner: " + options.script_path + ": " + strerror(errno) +
                            " (lance.runner in vigil.toml)");
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return Status::IOError(std::string("fork the Lance runner: ") + strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    const int null_in = open("/dev/null", O_RDONLY);
    const int null_out = open("/dev/null", O_WRONLY);
    if (null_in < 0 || null_out < 0 || dup2(null_in, 0) < 0 || dup2(out, 1) < 0 || dup2(null_out, 2) < 0) _exit(127);
    int last = 2;
    if (options.keep_fd >= 0) {
      if (dup2(options.keep_fd, 3) < 0) _exit(127);
      last = 3;
    }
    close_range(static_cast<unsigned>(last) + 1, ~0U, 0);
    execve(options.node_path.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  return pid;
}

// Kills the child's whole group (node and whatever it started) and reaps the child.
int KillAndReap(pid_t pid, bool kill_group) {
  if (kill_group) kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  kill(-pid, SIGKILL);  // a grandchild left in the group after node exited
  return status;
}

// The typed status of the runner's {"event": "error", "code", "message"} line.
Status RunnerError(const nlohmann::json& line) {
  const std::string code = line.value("code", "INTERNAL");
  const std::string message = "Lance runner: " + line.value("message", std::string("no message"));
  if (code == "STALE_ADMISSION") return Status::FailedPrecondition("STALE_ADMISSION: " + message);
  std::optional<StatusCode> typed = StatusCodeFromName(code);
  return Status(typed.value_or(StatusCode::kInternal), message);
}

// Reads the child's lines until EOF or the deadline (micros on env's monotonic clock); the last
// line read goes to `last`.
Status ReadLines(Env* env, int fd, int64_t deadline, const std::function<void(const nlohmann::json&)>& on_progress,
                 nlohmann::json* last) {
  std::string buffer;
  size_t total = 0;
  char chunk[65536];
  for (;;) {
    const int64_t left = (deadline - env->MonotonicMicros() + 999) / 1000;
    if (left <= 0) return Status::DeadlineExceeded("the Lance runner did not finish within its deadline");
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (ready < 0 && errno != EINTR) return Status::IOError(std::string("poll: ") + strerror(errno));
    if (ready <= 0) continue;
    const ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError(std::string("reading the Lance runner: ") + strerror(errno));
    if (n == 0) return Status::OK();
    total += static_cast<size_t>(n);
    if (total > kMaxOutputBytes) return Status::ResourceExhausted("the Lance runner wrote more than 16 MiB");
    buffer.append(chunk, static_cast<size_t>(n));
    for (size_t end; (end = buffer.find('\n')) != std::string::npos; buffer.erase(0, end + 1)) {
      nlohmann::json line = nlohmann::json::parse(buffer.substr(0, end), nullptr, false);
      if (line.is_discarded() || !line.is_object()) {
        return Status::Corruption("the Lance runner wrote a line that is not a JSON object");
      }
      if (line.value("event", "") == "progress" && on_progress) on_progress(line);
      *last = std::move(line);
    }
    if (buffer.size() > kMaxLineBytes) return Status::ResourceExhausted("the Lance runner wrote a line over 1 MiB");
  }
}

}  // namespace

Result<nlohmann::json> RunLance(const nlohmann::json& request, const LanceRunnerOptions& options,
                                const std::function<void(const nlohmann::json&)>& on_progress) {
  if (options.script_path.empty()) return Status::InvalidArgument("the Lance runner's script path is not set");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status::IOError(std::string("pipe: ") + strerror(errno));
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  const int64_t deadline =
      options.env->MonotonicMicros() + std::chrono::duration_cast<std::chrono::microseconds>(options.timeout).count();
  VIGIL_ASSIGN_OR_RETURN(const pid_t pid, Spawn(options, request.dump(), write_end.get()));
  write_end.Close();
  nlohmann::json last;
  Status read = ReadLines(options.env, read_end.get(), deadline, on_progress, &last);
  const int status = KillAndReap(pid, !read.ok());
  if (read.code() == StatusCode::kDeadlineExceeded && !options.timeout_setting.empty()) {
    read = Status::DeadlineExceeded(read.message() + " of " + std::to_string(options.timeout.count()) + " ms (" +
                                    options.timeout_setting + "); it was killed");
  }
  if (!read.ok()) return read;
  const std::string event = last.is_object() ? last.value("event", "") : "";
  if (event == "error") return RunnerError(last);
  if (event == "result" && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    last.erase("event");
    return last;
  }
  const std::string how = WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                              : "exited with status " + std::to_string(WEXITSTATUS(status));
  return Status::Internal("the Lance runner " + how + " without a result; the request may have taken effect");
}

}  // namespace vigil::lance
