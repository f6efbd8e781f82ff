#include "bench/bench.h"

#include <sys/resource.h>

#include <algorithm>
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

}  // namespace vigil::bench
