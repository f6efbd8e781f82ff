// The server's own metrics for GET /metrics (Prometheus text exposition 0.0.4):
// request counts by route, method and status, request latency histograms by
// route, and idempotency outcomes. Gauges read from elsewhere (jobs by state,
// leases, connections) are appended by the caller at scrape time.
// Thread safety: thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include "vigil/common/mutex.h"

namespace vigil::server {

// Upper bounds of the latency buckets, seconds.
constexpr std::array<double, 12> kLatencyBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                    0.1,   0.25,   0.5,   1.0,  2.5,   10.0};

class Metrics {
 public:
  // One finished request; `route` is the matched pattern ("" when none matched).
  void ObserveRequest(std::string_view route, std::string_view method, int status, double seconds);
  // Idempotency outcomes: "reserved", "replayed", "conflict_in_progress" (409),
  // "mismatch" (422), "missing_key" (400), "not_stored" (a response not kept),
  // "settled_found" / "settled_rerun" (a dead server's reservation settled from evidence).
  void CountIdempotency(std::string_view outcome);
  // Finished idempotency records a purge pass deleted (expired, or of a dropped user).
  void CountPurgedKeys(int64_t n);
  // The text of every metric kept here.
  std::string Render() const;

 private:
  struct Histogram {
    std::array<uint64_t, kLatencyBuckets.size()> buckets{};
    uint64_t count = 0;
    double sum = 0;
  };
  mutable Mutex mu_;
  std::map<std::tuple<std::string, std::string, int>, uint64_t> requests_ VIGIL_GUARDED_BY(mu_);
  std::map<std::string, Histogram> latency_ VIGIL_GUARDED_BY(mu_);
  std::map<std::string, uint64_t> idempotency_ VIGIL_GUARDED_BY(mu_);
  uint64_t purged_keys_ VIGIL_GUARDED_BY(mu_) = 0;
};

// A label value escaped for the exposition format (backslash, quote, newline).
std::string EscapeLabel(std::string_view v);

}  // namespace vigil::server
