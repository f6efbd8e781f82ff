// Test helpers for `vigil serve` as a real process: running the vigil binary
// (VIGIL_CLI_BINARY) and a server child on 127.0.0.1 whose port is read from
// its "listening on" line. Test-only; single-threaded per object.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <regex>
#include <string>
#include <thread>

#include "vigil/server/http_client.h"

namespace vigil {

// Runs the vigil binary with `args` (shell-quoted), output discarded; its exit status.
inline int RunVigil(const std::string& args) {
  const std::string cmd = "env -u VIGIL_ROOT " + std::string(VIGIL_CLI_BINARY) + " " + args + " >/dev/null 2>&1";
  return WEXITSTATUS(std::system(cmd.c_str()));
}

// The value of the sample `series` (name and labels, e.g. "vigil_x_total{a=\"b\"}") in the
// /metrics of the server at `url`; -1 when it cannot be read.
inline int64_t MetricValue(const std::string& url, const std::string& series) {
  auto client = server::HttpClient::Connect(url);
  if (!client.ok()) return -1;
  auto r = (*client)->Call("GET", "/metrics", {}, "");
  if (!r.ok() || r->status != 200) return -1;
  const std::string prefix = "\n" + series + " ";
  const size_t at = r->body.find(prefix);
  if (at == std::string::npos) return -1;
  return std::strtoll(r->body.c_str() + at + prefix.size(), nullptr, 10);
}

// Polls MetricValue until it reaches `at_least` (true) or 60 s pass (false).
inline bool WaitForMetric(const std::string& url, const std::string& series, int64_t at_least) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (MetricValue(url, series) >= at_least) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The server at `url`'s count of idempotency keys with `outcome` (e.g. "reserved") in /metrics;
// -1 when it cannot be read.
inline int64_t IdempotencyCount(const std::string& url, const std::string& outcome) {
  return MetricValue(url, "vigil_idempotency_requests_total{outcome=\"" + outcome + "\"}");
}

// Polls IdempotencyCount until it reaches `at_least` (true) or 60 s pass (false): a test that
// sends a duplicate of a running request first waits for the original's reservation.
inline bool WaitForIdempotencyCount(const std::string& url, const std::string& outcome, int64_t at_least) {
  return WaitForMetric(url, "vigil_idempotency_requests_total{outcome=\"" + outcome + "\"}", at_least);
}

// A `vigil serve` child on 127.0.0.1:`port` (0: a port the kernel picks), stopped with
// SIGTERM when destroyed.
class ServeProcess {
 public:
  // `port` < 0: no --listen (the [server] listen of vigil.toml applies). `failpoints`: the
  // server's VIGIL_FAILPOINTS. `log_path`: a file that takes the server's stderr (its log).
  // `grace_seconds`: serve's --grace.
  explicit ServeProcess(const std::string& root, int port = 0, const std::string& failpoints = "",
                        const std::string& log_path = "", int grace_seconds = 2) {
    const std::string listen = "127.0.0.1:" + std::to_string(port);
    const std::string grace = std::to_string(grace_seconds);
    int out[2];
    if (::pipe(out) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::close(out[0]);
      ::close(out[1]);
      if (!log_path.empty()) {
        const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (log < 0 || ::dup2(log, STDERR_FILENO) < 0) ::_exit(126);
      }
      ::unsetenv("VIGIL_ROOT");
      if (!failpoints.empty()) ::setenv("VIGIL_FAILPOINTS", failpoints.c_str(), 1);
      if (port < 0) {
        ::execl(VIGIL_CLI_BINARY, VIGIL_CLI_BINARY, "--root", root.c_str(), "serve", "--grace", grace.c_str(),
                static_cast<char*>(nullptr));
      }
      ::execl(VIGIL_CLI_BINARY, VIGIL_CLI_BINARY, "--root", root.c_str(), "serve", "--listen", listen.c_str(),
              "--grace", grace.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    FILE* f = ::fdopen(out[0], "r");
    char line[512];
    static const std::regex kListening("listening on https?://127\\.0\\.0\\.1:([0-9]+)");
    while (f != nullptr && std::fgets(line, sizeof(line), f) != nullptr) {
      std::cmatch m;
      if (std::regex_search(line, m, kListening)) {
        port_ = std::stoi(m[1].str());
        break;
      }
    }
    out_ = f;
  }
  ~ServeProcess() { Stop(SIGTERM); }
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Signals the server with `sig` and waits up to `bound` for it to exit: its exit status, or
  // nullopt when it was still running then (it is SIGKILLed and reaped).
  std::optional<int> StopWithin(int sig, std::chrono::seconds bound) {
    if (pid_ <= 0) return std::nullopt;
    ::kill(pid_, sig);
    const auto deadline = std::chrono::steady_clock::now() + bound;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        Stop(SIGKILL);
        return std::nullopt;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
    if (out_ != nullptr) std::fclose(out_);
    out_ = nullptr;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  // Signals the server without waiting for it to exit.
  void Signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  // Reaps the server once it exits by itself (after Signal); its exit status (-1 when killed by a signal).
  int Wait() { return Stop(0); }
  // Signals the server (unless `sig` is 0) and reaps it; its exit status (-1 when killed by a signal).
  int Stop(int sig) {
    if (pid_ <= 0) return -1;
    if (sig != 0) ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    if (out_ != nullptr) std::fclose(out_);
    out_ = nullptr;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  FILE* out_ = nullptr;
};

}  // namespace vigil
