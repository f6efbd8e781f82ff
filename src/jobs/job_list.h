// The SQL of a job listing: the filter becomes predicates on the indexed
// target columns, normalized name, creation time and job id (a derived `State`
// filter becomes the set of (execution, outcome, refresh) triples that
// job_state.h maps to it), and a page in job-id order. Without
// include_archived the listing is the union of the unarchived jobs and the
// archived ones that still hold a fence, so each half uses an index.
// Pure functions; thread-safe.
#pragma once

#include <string>

#include "vigil/jobs/job_store.h"
#include "vigil/meta/database.h"

namespace vigil::jobs {

// Visible scopes per listing query; a filter with more is split by the store.
constexpr size_t kMaxScopesPerQuery = 100;

struct ListQuery {
  std::string sql;
  meta::Params params;
};

// InvalidArgument for a limit outside 1..kMaxListLimit or an unknown state name.
Status ValidateFilter(const JobFilter& filter);
// One page of job columns (sql::kJobColumns order). The errors of ValidateFilter;
// InvalidArgument for more than kMaxScopesPerQuery visible scopes.
Result<ListQuery> BuildListQuery(const JobFilter& filter);
// One row with the number of matching jobs. The errors of BuildListQuery, limit aside.
Result<ListQuery> BuildCountQuery(const JobFilter& filter);

}  // namespace vigil::jobs
