#include "vigil/common/failpoint.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>

#include "vigil/common/env.h"
#include "vigil/common/mutex.h"

namespace vigil::failpoint {

namespace {

struct Entry {
  Action action = Action::kOff;
  int hit = 0;  // 0: every evaluation
  StatusCode error_code = StatusCode::kIOError;
  int evaluations = 0;
  int delay_ms = 0;  // kDelay
  std::string path;  // kPause: the release file (PATH.reached is created on reaching it); kSignal: the file created
};

// kPause's and kSignal's path: absolute, of an allowlisted alphabet, so a spec never names another kind of path.
bool IsPausePath(std::string_view path) {
  if (path.size() < 2 || path.size() > 1024 || path[0] != '/') return false;
  for (char c : path) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == '/' || c == '-';
    if (!ok) return false;
  }
  return path.find("/../") == std::string_view::npos;
}

// Creates the file `path` (empty; an existing one is left as it is).
void Touch(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0) ::close(fd);
}

// Creates `path`.reached, then waits until `path` exists.
void Pause(const std::string& path) {
  Touch(path + ".reached");
  while (::access(path.c_str(), F_OK) != 0) Env::Default()->SleepForMs(5);
}

constexpr long kMaxDelayMs = 3'600'000;

class Registry {
 public:
  static Registry& Get() {
    static Registry* r = new Registry();  // never destroyed: usable during exit
    return *r;
  }

  void LoadEnvironmentOnce() {
    std::call_once(env_once_, [] {
      const char* spec = std::getenv(kEnvVar);
      if (spec != nullptr && *spec != '\0') {
        Status st = ArmFromSpec(spec);
        VIGIL_CHECK(st.ok() && "malformed VIGIL_FAILPOINTS");
      }
    });
  }

  std::atomic<int> armed_count{0};  // read without mu: Hit's fast path when nothing is armed
  Mutex mu;
  std::map<std::string, Entry, std::less<>> entries VIGIL_GUARDED_BY(mu);

 private:
  std::once_flag env_once_;  // std::call_once: a one-time load, no state for mu to guard
};

Status ParseEntry(std::string_view text) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Status::InvalidArgument("failpoint entry '" + std::string(text) + "' has no name=action");
  }
  std::string_view name = text.substr(0, eq);
  std::string_view rest = text.substr(eq + 1);
  int hit = 0;
  size_t at = rest.find('@');
  if (at != std::string_view::npos) {
    std::string n(rest.substr(at + 1));
    char* end = nullptr;
    long v = std::strtol(n.c_str(), &end, 10);
    if (n.empty() || *end != '\0' || v <= 0 || v > 1'000'000'000) {
      return Status::InvalidArgument("failpoint '" + std::string(name) + "' has a bad hit count '" + n + "'");
    }
    hit = static_cast<int>(v);
    rest = rest.substr(0, at);
  }
  StatusCode code = StatusCode::kIOError;
  int delay_ms = 0;
  std::string path;
  Action action;
  if (rest == "kill") {
    action = Action::kKill;
  } else if (rest == "hang") {
    action = Action::kHang;
  } else if (rest.starts_with("delay(") && rest.ends_with(")")) {
    action = Action::kDelay;
    const std::string ms(rest.substr(6, rest.size() - 7));
    char* end = nullptr;
    const long v = std::strtol(ms.c_str(), &end, 10);
    if (ms.empty() || *end != '\0' || v <= 0 || v > kMaxDelayMs) {
      return Status::InvalidArgument("failpoint '" + std::string(name) + "' has a bad delay '" + ms +
                                     "' (milliseconds, 1 to " + std::to_string(kMaxDelayMs) + ")");
    }
    delay_ms = static_cast<int>(v);
  } else if ((rest.starts_with("pause(") || rest.starts_with("signal(")) && rest.ends_with(")")) {
    const bool pause = rest.starts_with("pause(");
    action = pause ? Action::kPause : Action::kSignal;
    const size_t open = rest.find('(') + 1;
    path = std::string(rest.substr(open, rest.size() - open - 1));
    if (!IsPausePath(path)) {
      return Status::InvalidArgument("failpoint '" + std::string(name) + "' has a bad " + (pause ? "pause" : "signal") +
                                     " path '" + path + "' (absolute; A-Z a-z 0-9 _ . / - only)");
    }
  } else if (rest == "off") {
    action = Action::kOff;
  } else if (rest == "error") {
    action = Action::kError;
  } else if (rest.starts_with("error(") && rest.ends_with(")")) {
    action = Action::kError;
    auto c = StatusCodeFromName(rest.substr(6, rest.size() - 7));
    if (!c || *c == StatusCode::kOk) {
      return Status::InvalidArgument("failpoint '" + std::string(name) + "' has an unknown status code in '" +
                                     std::string(rest) + "'");
    }
    code = *c;
  } else {
    return Status::InvalidArgument("failpoint '" + std::string(name) + "' has unknown action '" + std::string(rest) +
                                   "'");
  }
  if (action == Action::kOff) {
    Disarm(name);
  } else {
    Arm(name, action, hit, code, delay_ms, std::move(path));
  }
  return Status::OK();
}

}  // namespace

bool Enabled() {
#ifdef VIGIL_FAILPOINTS
  return true;
#else
  return false;
#endif
}

Status Hit(std::string_view name) {
  Registry& r = Registry::Get();
  r.LoadEnvironmentOnce();
  if (r.armed_count.load(std::memory_order_acquire) == 0) return Status::OK();
  Action action;
  StatusCode code;
  int delay_ms;
  std::string path;
  {
    MutexLock lock(&r.mu);
    auto it = r.entries.find(name);
    if (it == r.entries.end()) return Status::OK();
    Entry& e = it->second;
    ++e.evaluations;
    if (e.hit != 0 && e.evaluations != e.hit) return Status::OK();
    action = e.action;
    code = e.error_code;
    delay_ms = e.delay_ms;
    path = e.path;
  }
  switch (action) {
    case Action::kOff:
      return Status::OK();
    case Action::kError:
      return Status(code, "failpoint " + std::string(name) + " fired");
    case Action::kKill:
      ::kill(::getpid(), SIGKILL);
      for (;;) ::pause();
    case Action::kHang:
      for (;;) {
        {
          MutexLock lock(&r.mu);
          auto it = r.entries.find(name);
          if (it == r.entries.end() || it->second.action != Action::kHang) break;
        }
        Env::Default()->SleepForMs(20);
      }
      return Status::OK();
    case Action::kDelay:
      Env::Default()->SleepForMs(delay_ms);
      return Status::OK();
    case Action::kPause:
      Pause(path);
      return Status::OK();
    case Action::kSignal:
      Touch(path);
      return Status::OK();
  }
  return Status::OK();
}

Status ArmFromSpec(std::string_view spec) {
  while (!spec.empty()) {
    size_t semi = spec.find(';');
    std::string_view entry = spec.substr(0, semi);
    if (!entry.empty()) VIGIL_RETURN_IF_ERROR(ParseEntry(entry));
    if (semi == std::string_view::npos) break;
    spec = spec.substr(semi + 1);
  }
  return Status::OK();
}

void Arm(std::string_view name, Action action, int hit, StatusCode error_code, int delay_ms, std::string path) {
  Registry& r = Registry::Get();
  MutexLock lock(&r.mu);
  auto [it, inserted] = r.entries.try_emplace(std::string(name));
  it->second = Entry{action, hit, error_code, 0, delay_ms, std::move(path)};
  if (inserted) r.armed_count.fetch_add(1, std::memory_order_release);
}

void Disarm(std::string_view name) {
  Registry& r = Registry::Get();
  MutexLock lock(&r.mu);
  auto it = r.entries.find(name);
  if (it == r.entries.end()) return;
  r.entries.erase(it);
  r.armed_count.fetch_sub(1, std::memory_order_release);
}

void DisarmAll() {
  Registry& r = Registry::Get();
  MutexLock lock(&r.mu);
  r.armed_count.fetch_sub(static_cast<int>(r.entries.size()), std::memory_order_release);
  r.entries.clear();
}

std::string ArmedSpec() {
  Registry& r = Registry::Get();
  r.LoadEnvironmentOnce();
  MutexLock lock(&r.mu);
  std::string out;
  for (const auto& [name, e] : r.entries) {
    if (!out.empty()) out += ';';
    out += name + '=';
    switch (e.action) {
      case Action::kOff:
        out += "off";
        break;
      case Action::kError:
        out += "error(" + std::string(StatusCodeName(e.error_code)) + ")";
        break;
      case Action::kKill:
        out += "kill";
        break;
      case Action::kHang:
        out += "hang";
        break;
      case Action::kDelay:
        out += "delay(" + std::to_string(e.delay_ms) + ")";
        break;
      case Action::kPause:
        out += "pause(" + e.path + ")";
        break;
      case Action::kSignal:
        out += "signal(" + e.path + ")";
        break;
    }
    if (e.hit != 0) {
      out += '@';
      out += std::to_string(e.hit);
    }
  }
  return out;
}

bool Armed(std::string_view name) {
  if (!Enabled()) return false;
  Registry& r = Registry::Get();
  r.LoadEnvironmentOnce();
  MutexLock lock(&r.mu);
  auto it = r.entries.find(name);
  return it != r.entries.end() && it->second.action != Action::kOff;
}

int HitCount(std::string_view name) {
  Registry& r = Registry::Get();
  MutexLock lock(&r.mu);
  auto it = r.entries.find(name);
  return it == r.entries.end() ? 0 : it->second.evaluations;
}

}  // namespace vigil::failpoint
