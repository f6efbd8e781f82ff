// Per-user request rate limits of the HTTP API ([server] requests_per_second_per_user):
// a token bucket per user that holds one second's worth of requests and refills at the
// rate, so a user may burst that many at once and keep up the rate, while other users are
// unaffected. A request past it is answered 429 with Retry-After, before any effect (so its
// Idempotency-Key is not kept). Times are the caller's monotonic microseconds.
// Thread safety: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "vigil/common/mutex.h"

namespace vigil::server {

class RateLimiter {
 public:
  // `per_second` requests per second per user; 0: no limit.
  explicit RateLimiter(uint64_t per_second);

  // Takes one request of `user` at `now_us`: 0 when it may run, else the microseconds until
  // the user's next request may (at least 1).
  int64_t Admit(std::string_view user, int64_t now_us);

  // Users tracked now (a user whose bucket refilled may be forgotten).
  size_t tracked();

 private:
  struct Bucket {
    double tokens = 0;
    int64_t at_us = 0;  // when `tokens` was computed
  };
  // Forgets the users whose buckets are full at `now_us` (they are as if never seen).
  void ForgetFull(int64_t now_us) VIGIL_REQUIRES(mu_);

  const double rate_;  // tokens per second, also the bucket's size
  Mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_ VIGIL_GUARDED_BY(mu_);
  // Past this many tracked users a new one makes a pass that forgets full buckets; the bound
  // then doubles past what remains, so many busy users never cost a pass per request.
  size_t forget_above_ VIGIL_GUARDED_BY(mu_);
};

}  // namespace vigil::server
