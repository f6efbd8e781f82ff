#include "jobs/job_list.h"

#include <set>
#include <tuple>

#include "jobs/job_schema.h"

namespace vigil::jobs {

namespace {

constexpr std::string_view kDerivedStates[] = {
    "PENDING", "RUNNING", "REFRESHING", "FINISHED", "FAILED", "FAILED_REFRESH_PENDING",
    "COMMITTED_REFRESH_PENDING", "COMMITTED_REFRESH_SKIPPED", "FAILED_REFRESH_SKIPPED", "CANCELLED",
    "OUTCOME_UNKNOWN"};

using Triple = std::tuple<Execution, Outcome, RefreshState>;

// Every legal (execution, outcome, refresh) whose derived state is `state`.
std::set<Triple> TriplesOf(std::string_view state) {
  std::set<Triple> out;
  for (int e = 0; e <= static_cast<int>(Execution::kTerminal); ++e) {
    for (int o = 0; o <= static_cast<int>(Outcome::kUnknown); ++o) {
      for (int r = 0; r <= static_cast<int>(RefreshState::kSkippedByForce); ++r) {
        for (int c = 0; c <= static_cast<int>(ReconcileState::kStoppedByForce); ++c) {
          for (int d = 0; d <= static_cast<int>(Disposition::kForceReleased); ++d) {
            JobState s{Execution(e), Outcome(o), RefreshState(r), ReconcileState(c), Disposition(d)};
            if (CheckLegal(s).ok() && DerivedState(s) == state) out.insert({s.execution, s.outcome, s.refresh});
          }
        }
      }
    }
  }
  return out;
}

class Builder {
 public:
  void Eq(std::string_view column, meta::Value v) {
    Where(std::string(column) + " = " + Bind(std::move(v)));
  }
  std::string Bind(meta::Value v) {
    params_.push_back(std::move(v));
    return "$" + std::to_string(params_.size());
  }
  void Where(const std::string& predicate) { where_ += (where_.empty() ? " WHERE " : " AND ") + predicate; }
  ListQuery Finish(int limit) {
    std::string sql = "SELECT " + std::string(sql::kJobColumns) + " FROM index_jobs" + where_ +
                      " ORDER BY job_id DESC LIMIT " + Bind(limit);
    return {std::move(sql), std::move(params_)};
  }

 private:
  std::string where_;
  meta::Params params_;
};

void AddStateFilter(const std::set<Triple>& triples, Builder* b) {
  std::set<Outcome> outcomes;
  std::string any;
  for (const auto& [e, o, r] : triples) {
    outcomes.insert(o);
    any += std::string(any.empty() ? "" : " OR ") + "(execution = " + b->Bind(Name(e)) +
           " AND refresh = " + b->Bind(Name(r)) + " AND outcome = " + b->Bind(Name(o)) + ")";
  }
  // The outcome list lets the planner use the (target, outcome, job_id) index.
  std::string in;
  for (Outcome o : outcomes) in += (in.empty() ? "" : ", ") + b->Bind(Name(o));
  b->Where("outcome IN (" + in + ")");
  b->Where("(" + any + ")");
}

}  // namespace

Result<ListQuery> BuildListQuery(const JobFilter& f) {
  if (f.limit < 1 || f.limit > kMaxListLimit) {
    return Status::InvalidArgument("job list limit must be 1.." + std::to_string(kMaxListLimit));
  }
  Builder b;
  if (f.catalog_name) b.Eq("catalog_name", *f.catalog_name);
  if (f.database_name) b.Eq("database_name", *f.database_name);
  if (f.table_name) b.Eq("table_name", *f.table_name);
  if (f.outcome) b.Eq("outcome", Name(*f.outcome));
  if (f.state) {
    bool known = false;
    for (std::string_view s : kDerivedStates) known = known || s == *f.state;
    if (!known) return Status::InvalidArgument("unknown job state '" + *f.state + "'");
    AddStateFilter(TriplesOf(*f.state), &b);
  }
  if (!f.include_archived) b.Where("archived_at IS NULL");
  return b.Finish(f.limit);
}

}  // namespace vigil::jobs
