#include "server/metrics.h"

#include <cstdio>

namespace vigil::server {

namespace {

std::string Number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

std::string RouteLabel(const std::string& route) { return route.empty() ? "unmatched" : route; }

}  // namespace

std::string EscapeLabel(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

void Metrics::ObserveRequest(std::string_view route, std::string_view method, int status, double seconds) {
  MutexLock lock(&mu_);
  ++requests_[{std::string(route), std::string(method), status}];
  Histogram& h = latency_[std::string(route)];
  for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
    if (seconds <= kLatencyBuckets[i]) ++h.buckets[i];
  }
  ++h.count;
  h.sum += seconds;
}

void Metrics::CountIdempotency(std::string_view outcome) {
  MutexLock lock(&mu_);
  ++idempotency_[std::string(outcome)];
}

void Metrics::CountPurgedKeys(int64_t n) {
  MutexLock lock(&mu_);
  purged_keys_ += static_cast<uint64_t>(n);
}

std::string Metrics::Render() const {
  MutexLock lock(&mu_);
  std::string out;
  out += "# HELP vigil_http_requests_total HTTP requests answered, by route, method and status.\n";
  out += "# TYPE vigil_http_requests_total counter\n";
  for (const auto& [key, n] : requests_) {
    const auto& [route, method, status] = key;
    out += "vigil_http_requests_total{route=\"" + EscapeLabel(RouteLabel(route)) + "\",method=\"" +
           EscapeLabel(method) + "\",status=\"" + std::to_string(status) + "\"} " + std::to_string(n) + "\n";
  }
  out += "# HELP vigil_http_request_duration_seconds Time from request header to the response, by route.\n";
  out += "# TYPE vigil_http_request_duration_seconds histogram\n";
  for (const auto& [route, h] : latency_) {
    const std::string label = "route=\"" + EscapeLabel(RouteLabel(route)) + "\"";
    for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
      out += "vigil_http_request_duration_seconds_bucket{" + label + ",le=\"" + Number(kLatencyBuckets[i]) + "\"} " +
             std::to_string(h.buckets[i]) + "\n";
    }
    out += "vigil_http_request_duration_seconds_bucket{" + label + ",le=\"+Inf\"} " + std::to_string(h.count) + "\n";
    out += "vigil_http_request_duration_seconds_sum{" + label + "} " + Number(h.sum) + "\n";
    out += "vigil_http_request_duration_seconds_count{" + label + "} " + std::to_string(h.count) + "\n";
  }
  out += "# HELP vigil_idempotency_requests_total Requests with an Idempotency-Key, by outcome.\n";
  out += "# TYPE vigil_idempotency_requests_total counter\n";
  for (const char* outcome :
       {"reserved", "replayed", "conflict_in_progress", "mismatch", "missing_key", "not_stored", "settled_found",
        "settled_rerun", "settled_released", "settled_unknown", "lost_ownership"}) {
    auto it = idempotency_.find(outcome);
    out += std::string("vigil_idempotency_requests_total{outcome=\"") + outcome + "\"} " +
           std::to_string(it == idempotency_.end() ? 0 : it->second) + "\n";
  }
  out +=
      "# HELP vigil_idempotency_records_purged_total Finished idempotency records deleted: expired, or of a "
      "dropped user.\n";
  out += "# TYPE vigil_idempotency_records_purged_total counter\n";
  out += "vigil_idempotency_records_purged_total " + std::to_string(purged_keys_) + "\n";
  return out;
}

}  // namespace vigil::server
