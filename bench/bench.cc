#include "bench/bench.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <system_error>

namespace vigil::bench {

namespace {
std::vector<BenchInfo>& Registry() {
  static auto* r = new std::vector<BenchInfo>();
  return *r;
}

bool Declares(const std::vector<std::string>& names, const std::string& key) {
  return std::find(names.begin(), names.end(), key) != names.end();
}

// Whole `text` as a decimal integer (an optional '-', then digits).
std::optional<int64_t> WholeInteger(const std::string& text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end || text.empty()) return std::nullopt;
  return v;
}

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

}  // namespace

int64_t BenchArgs::Int(const std::string& key, int64_t def) const {
  VIGIL_CHECK(info == nullptr || Declares(info->int_options, key));
  auto it = options.find(key);
  if (it == options.end()) return def;
  const std::optional<int64_t> v = WholeInteger(it->second);
  VIGIL_CHECK(v.has_value());  // CheckOptions refused it before the run
  return *v;
}

std::string BenchArgs::Str(const std::string& key, const std::string& def) const {
  VIGIL_CHECK(info == nullptr || Declares(info->text_options, key));
  auto it = options.find(key);
  return it == options.end() ? def : it->second;
}

bool BenchArgs::Has(const std::string& key) const {
  VIGIL_CHECK(info == nullptr || Declares(info->int_options, key) || Declares(info->text_options, key));
  return options.count(key) != 0;
}

Status CheckOptions(const std::map<std::string, std::string>& options, const std::vector<BenchInfo>& benches) {
  for (const auto& [key, value] : options) {
    bool declared = false;
    for (const auto& b : benches) {
      if (Declares(b.text_options, key)) declared = true;
      if (!Declares(b.int_options, key)) continue;
      declared = true;
      if (!WholeInteger(value)) {
        return Status::InvalidArgument("benchmark option --" + key + ": '" + value + "' is not an integer");
      }
    }
    if (declared) continue;
    std::string names, known;
    for (const auto& b : benches) {
      std::vector<std::string> all = b.int_options;
      all.insert(all.end(), b.text_options.begin(), b.text_options.end());
      std::sort(all.begin(), all.end());
      names += (names.empty() ? "" : ", ") + b.name;
      known += (known.empty() ? "" : "; ") + b.name + " takes " + Joined(all);
    }
    return Status::InvalidArgument("benchmark option --" + key + " is not an option of " + names + " (" + known + ")");
  }
  return Status::OK();
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

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

double Median(std::vector<double> v) { return Percentile(std::move(v), 0.5); }

double SelfCpuSeconds() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
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

namespace {

// A forked child that runs `child(write_fd)` (which does not return) with a pipe back
// to this process: everything it wrote, then its wait status and resource usage.
struct ChildRun {
  std::string output;
  int status = 0;
  struct rusage usage {};
};

Result<ChildRun> RunChild(const std::function<void(int)>& child) {
  int fds[2];
  if (::pipe(fds) != 0) return Status::FromErrno(errno, "pipe");
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return Status::FromErrno(errno, "fork");
  }
  if (pid == 0) {
    ::close(fds[0]);
    child(fds[1]);
    ::_exit(127);
  }
  ::close(fds[1]);
  ChildRun run;
  run.output = ReadToEnd(fds[0]);
  while (::wait4(pid, &run.status, 0, &run.usage) < 0) {
    if (errno != EINTR) return Status::FromErrno(errno, "wait4");
  }
  return run;
}

bool ExitedZero(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

}  // namespace

int64_t CurrentRssBytes() {
  long pages_total = 0, pages_resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = 0;
  std::fclose(f);
  return static_cast<int64_t>(pages_resident) * sysconf(_SC_PAGESIZE);
}

const std::string& VigilProgram() {
  static const std::string program = [] {
    if (const char* given = std::getenv("VIGIL_PROGRAM"); given != nullptr && *given != '\0') {
      return std::string(given);
    }
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::filesystem::path beside = self.parent_path() / "vigil";
    if (!ec && ::access(beside.c_str(), X_OK) == 0) return beside.string();
#ifdef VIGIL_BUILT_PROGRAM
    return std::string(VIGIL_BUILT_PROGRAM);
#else
    return beside.string();
#endif
  }();
  return program;
}

Result<ProgramRun> RunProgram(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  if (argv.empty()) return Status::InvalidArgument("RunProgram needs a program");
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    const size_t len = eq == nullptr ? std::strlen(*e) : static_cast<size_t>(eq - *e) + 1;
    const bool overridden =
        std::any_of(env.begin(), env.end(), [&](const std::string& x) { return x.compare(0, len, *e, len) == 0; });
    if (!overridden) cenv.push_back(*e);
  }
  cenv.push_back(nullptr);
  const auto start = std::chrono::steady_clock::now();
  VIGIL_ASSIGN_OR_RETURN(ChildRun child, RunChild([&](int fd) {
                           ::dup2(fd, 1);
                           ::dup2(fd, 2);
                           ::close(fd);
                           ::execve(cargv[0], cargv.data(), cenv.data());
                         }));
  const struct rusage& ru = child.usage;
  ProgramRun run;
  run.output = std::move(child.output);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.cpu_seconds = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                    static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  run.peak_rss_bytes = static_cast<int64_t>(ru.ru_maxrss) * 1024;
  if (!ExitedZero(child.status)) {
    std::string cmd;
    for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    return Status::Internal("`" + cmd + "` failed (wait status " + std::to_string(child.status) + "):\n" + run.output);
  }
  return run;
}

Result<std::pair<nlohmann::json, int64_t>> RunForked(const std::function<nlohmann::json()>& body) {
  VIGIL_ASSIGN_OR_RETURN(ChildRun child, RunChild([&](int fd) {
                           std::string out = body().dump();
                           for (size_t at = 0; at < out.size();) {
                             ssize_t n = ::write(fd, out.data() + at, out.size() - at);
                             if (n <= 0) ::_exit(2);
                             at += static_cast<size_t>(n);
                           }
                           ::_exit(0);
                         }));
  if (!ExitedZero(child.status)) return Status::Internal("a benchmark child failed");
  auto j = nlohmann::json::parse(child.output, nullptr, false);
  if (j.is_discarded() || j.contains("error")) return Status::Internal("benchmark child failed: " + child.output);
  return std::make_pair(j, static_cast<int64_t>(child.usage.ru_maxrss) * 1024);
}

Result<RawRead> RawReadFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  std::vector<char> buf(1 << 20);
  RawRead r;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Status::FromErrno(err, "read " + path);
    }
    if (n == 0) break;
    r.bytes += static_cast<uint64_t>(n);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::close(fd);
  return r;
}

}  // namespace vigil::bench
