// The API request behind a mutation, as the layers that make its effect see it: the token
// that marks the effect (recorded with an admitted job, or in an append's commit), and the
// check that the request still owns its idempotency reservation, run in the same metadata
// transaction as the effect so that a request another server took over changes nothing.
// Thread safety: a value; `confirm` is called from the thread running the request.
#pragma once

#include <functional>
#include <string>

#include "vigil/common/status.h"
#include "vigil/meta/database.h"

namespace vigil::jobs {

struct RequestClaim {
  // "<realm>/<key>/<reserved at, ms>"; empty for a request without an Idempotency-Key.
  std::string token;
  // Renews the reservation on `conn`, a connection in a write transaction on the root's
  // metadata database; Aborted when the reservation is no longer this request's (another
  // server took it over). Empty: nothing to confirm.
  std::function<Status(meta::Connection& conn)> confirm;
};

}  // namespace vigil::jobs
