#include "bench/bench.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace vigil::bench {

namespace {
std::vector<BenchInfo>& Registry() {
  static auto* r = new std::vector<BenchInfo>();
  return *r;
}
}  // namespace

int64_t BenchArgs::Int(const std::string& key, int64_t def) const {
  auto it = options.find(key);
  return it == options.end() ? def : std::strtoll(it->second.c_str(), nullptr, 10);
}

std::string BenchArgs::Str(const std::string& key, const std::string& def) const {
  auto it = options.find(key);
  return it == options.end() ? def : it->second;
}

bool Register(BenchInfo info) {
  Registry().push_back(std::move(info));
  return true;
}

std::vector<BenchInfo> All() {
  auto all = Registry();
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return all;
}

int64_t PeakRssBytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;
}

std::string ReadToEnd(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

Result<ProgramRun> RunProgram(const std::vector<std::string>& argv) {
  if (argv.empty()) return Status::InvalidArgument("RunProgram needs a program");
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  int fds[2];
  if (::pipe(fds) != 0) return Status::FromErrno(errno, "pipe");
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return Status::FromErrno(errno, "fork");
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  ProgramRun run;
  run.output = ReadToEnd(fds[0]);
  const std::string& out = run.output;
  int status = 0;
  struct rusage ru {};
  while (::wait4(pid, &status, 0, &ru) < 0) {
    if (errno != EINTR) return Status::FromErrno(errno, "wait4");
  }
  run.cpu_seconds = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                    static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string cmd;
    for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    return Status::Internal("`" + cmd + "` failed (wait status " + std::to_string(status) + "):\n" + out);
  }
  return run;
}

Result<std::pair<nlohmann::json, int64_t>> RunForked(const std::function<nlohmann::json()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) return Status::FromErrno(errno, "pipe");
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return Status::FromErrno(errno, "fork");
  if (pid == 0) {
    ::close(fds[0]);
    std::string out = body().dump();
    for (size_t at = 0; at < out.size();) {
      ssize_t n = ::write(fds[1], out.data() + at, out.size() - at);
      if (n <= 0) ::_exit(2);
      at += static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  const std::string text = ReadToEnd(fds[0]);
  int status = 0;
  struct rusage ru {};
  while (::wait4(pid, &status, 0, &ru) < 0) {
    if (errno != EINTR) return Status::FromErrno(errno, "wait4");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return Status::Internal("a benchmark child failed");
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || j.contains("error")) return Status::Internal("benchmark child failed: " + text);
  return std::make_pair(j, static_cast<int64_t>(ru.ru_maxrss) * 1024);
}

}  // namespace vigil::bench
