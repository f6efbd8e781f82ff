#include "vigil/jobs/backoff.h"

#include <algorithm>

namespace vigil::jobs {

int64_t Backoff::Next(int64_t current_s) const {
  if (current_s < initial_s) return initial_s;
  return std::min(current_s > max_s / 2 ? max_s : current_s * 2, max_s);
}

int64_t Backoff::AfterFailures(int64_t failures) const {
  int64_t s = initial_s;
  for (int64_t i = 1; i < failures && s < max_s; ++i) s = Next(s);
  return std::min(s, max_s);
}

}  // namespace vigil::jobs
