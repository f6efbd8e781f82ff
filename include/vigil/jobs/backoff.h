// The persisted backoff of an UNKNOWN job's watcher and of refresh retries
// (seed 000 section 8.1): an initial delay, doubled after every check that
// proved nothing, up to a maximum. One type for every caller; the delays are
// persisted on the job so that a new leader continues the schedule.
// Values; thread-safe.
#pragma once

#include <cstdint>

namespace vigil::jobs {

struct Backoff {
  int64_t initial_s = 30;
  int64_t max_s = 1800;

  // The delay after a delay of `current_s` (0 or less: the first one), within [initial, max].
  int64_t Next(int64_t current_s) const;
  // The delay after `failures` consecutive failures (1 or less: the initial one).
  int64_t AfterFailures(int64_t failures) const;
};

}  // namespace vigil::jobs
