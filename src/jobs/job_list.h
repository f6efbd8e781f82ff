// The SQL of a bounded job listing: the filter becomes equality predicates on
// the indexed target columns and outcome (a derived `State` filter becomes the
// set of (execution, outcome, refresh) triples that job_state.h maps to it).
// Pure functions; thread-safe.
#pragma once

#include <string>

#include "vigil/jobs/job_store.h"
#include "vigil/meta/database.h"

namespace vigil::jobs {

struct ListQuery {
  std::string sql;
  meta::Params params;
};

// InvalidArgument for a limit outside 1..kMaxListLimit or an unknown state name.
Result<ListQuery> BuildListQuery(const JobFilter& filter);

}  // namespace vigil::jobs
