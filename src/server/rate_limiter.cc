#include "server/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace vigil::server {

namespace {
constexpr size_t kForgetAbove = 4096;
}  // namespace

RateLimiter::RateLimiter(uint64_t per_second) : rate_(static_cast<double>(per_second)), forget_above_(kForgetAbove) {}

int64_t RateLimiter::Admit(std::string_view user, int64_t now_us) {
  if (rate_ <= 0) return 0;
  MutexLock lock(&mu_);
  auto [it, added] = buckets_.try_emplace(std::string(user), Bucket{rate_, now_us});
  Bucket& b = it->second;
  const double elapsed_s = static_cast<double>(std::max<int64_t>(0, now_us - b.at_us)) / 1e6;
  b.tokens = std::min(rate_, b.tokens + elapsed_s * rate_);
  b.at_us = std::max(b.at_us, now_us);
  if (b.tokens >= 1) {
    b.tokens -= 1;
    if (added && buckets_.size() > forget_above_) ForgetFull(now_us);
    return 0;
  }
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil((1 - b.tokens) / rate_ * 1e6)));
}

void RateLimiter::ForgetFull(int64_t now_us) {
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    const double elapsed_s = static_cast<double>(std::max<int64_t>(0, now_us - it->second.at_us)) / 1e6;
    if (it->second.tokens + elapsed_s * rate_ >= rate_) {
      it = buckets_.erase(it);
    } else {
      ++it;
    }
  }
  forget_above_ = std::max(kForgetAbove, 2 * buckets_.size());
}

size_t RateLimiter::tracked() {
  MutexLock lock(&mu_);
  return buckets_.size();
}

}  // namespace vigil::server
