// The identity of one dispatch of an index job (seed 000 invariant I1): the
// job store persists it before anything is sent, the worker request carries it
// and the response must repeat it exactly. The one definition for the job
// layer (jobs::AttemptIdentity) and the worker protocol. Plain value; thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace vigil::worker {

struct AttemptIdentity {
  std::string executor_node_id;
  int64_t node_epoch = 0;
  std::string attempt_id;
  int64_t attempt_number = 1;
  int64_t dispatch_generation = 1;
  int64_t leader_epoch = 0;
  int64_t deadline_at_ms = 0;

  bool operator==(const AttemptIdentity&) const = default;
};

}  // namespace vigil::worker
