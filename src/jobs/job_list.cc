#include "jobs/job_list.h"

#include <set>
#include <tuple>

#include "jobs/job_schema.h"

namespace vigil::jobs {

namespace {

// The job's target still names the registered table of its incarnations.
constexpr std::string_view kTargetResolves =
    "EXISTS (SELECT 1 FROM vigil_tables t JOIN vigil_catalogs c ON c.catalog_name = t.catalog_name"
    " WHERE t.table_incarnation = index_jobs.table_incarnation AND t.catalog_name = index_jobs.catalog_name"
    " AND t.database_name = index_jobs.database_name AND t.table_name = index_jobs.table_name"
    " AND c.catalog_incarnation = index_jobs.catalog_incarnation)";

// Not terminal, or a refresh to run; each half matches a partial index.
constexpr std::string_view kWaitingForLeader =
    "job_id IN (SELECT job_id FROM index_jobs WHERE execution <> 'TERMINAL' UNION ALL"
    " SELECT job_id FROM index_jobs WHERE refresh IN ('REQUIRED', 'RUNNING', 'RETRY_PENDING')"
    " AND execution = 'TERMINAL')";

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
  void Eq(std::string_view column, meta::Value v) { Where(std::string(column) + " = " + Bind(std::move(v))); }
  void Cmp(std::string_view column, std::string_view op, meta::Value v) {
    Where(std::string(column) + " " + std::string(op) + " " + Bind(std::move(v)));
  }
  std::string Bind(meta::Value v) {
    params_.push_back(std::move(v));
    return "$" + std::to_string(params_.size());
  }
  void Where(const std::string& predicate) { where_ += (where_.empty() ? "" : " AND ") + predicate; }

  // SELECT `columns` of the listed jobs: one select, or the union of the unarchived jobs
  // and the archived ones that still hold a fence (tombstones).
  std::string Body(std::string_view columns, bool include_archived) const {
    const std::string select = "SELECT " + std::string(columns) + " FROM index_jobs WHERE ";
    const std::string where = where_.empty() ? "" : where_ + " AND ";
    if (include_archived) return select + (where_.empty() ? "1 = 1" : where_);
    return select + where + "archived_at IS NULL UNION ALL " + select + where +
           "archived_at IS NOT NULL AND job_id IN (SELECT job_id FROM index_fences)";
  }
  meta::Params TakeParams() { return std::move(params_); }

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

void AddScopes(const std::vector<TableScope>& scopes, Builder* b) {
  std::string any;
  for (const TableScope& s : scopes) {
    std::string one = "(catalog_name = " + b->Bind(s.catalog_name) + " AND database_name = " + b->Bind(s.database_name);
    if (s.table_name) one += " AND table_name = " + b->Bind(*s.table_name);
    any += (any.empty() ? "" : " OR ") + one + ")";
  }
  b->Where(scopes.empty() ? "1 = 0" : "(" + any + ")");
  b->Where(std::string(kTargetResolves));
}

Status ValidateState(const JobFilter& f) {
  if (!f.state) return Status::OK();
  for (std::string_view s : DerivedStateNames()) {
    if (s == *f.state) return Status::OK();
  }
  return Status::InvalidArgument("unknown job state '" + *f.state + "'");
}

Result<Builder> Predicates(const JobFilter& f) {
  VIGIL_RETURN_IF_ERROR(ValidateState(f));
  if (f.visible && f.visible->size() > kMaxScopesPerQuery) {
    return Status::InvalidArgument("a job listing query takes at most " + std::to_string(kMaxScopesPerQuery) +
                                   " visible scopes");
  }
  Builder b;
  if (f.catalog_name) b.Eq("catalog_name", *f.catalog_name);
  if (f.database_name) b.Eq("database_name", *f.database_name);
  if (f.table_name) b.Eq("table_name", *f.table_name);
  if (f.index_name) b.Eq("normalized_name", NormalizeIndexNameV1(*f.index_name));
  if (f.outcome) b.Eq("outcome", Name(*f.outcome));
  if (f.state) AddStateFilter(TriplesOf(*f.state), &b);
  if (f.min_job_id) b.Cmp("job_id", ">=", *f.min_job_id);
  if (f.max_job_id) b.Cmp("job_id", "<=", *f.max_job_id);
  if (f.created_from_ms) b.Cmp("created_at", ">=", *f.created_from_ms);
  if (f.created_before_ms) b.Cmp("created_at", "<", *f.created_before_ms);
  if (f.visible) AddScopes(*f.visible, &b);
  if (f.waiting_for_leader) b.Where(std::string(kWaitingForLeader));
  return b;
}

}  // namespace

Status ValidateFilter(const JobFilter& f) {
  if (f.limit < 1 || f.limit > kMaxListLimit) {
    return Status::InvalidArgument("job list limit must be 1.." + std::to_string(kMaxListLimit));
  }
  return ValidateState(f);
}

Result<ListQuery> BuildListQuery(const JobFilter& f) {
  VIGIL_RETURN_IF_ERROR(ValidateFilter(f));
  VIGIL_ASSIGN_OR_RETURN(Builder b, Predicates(f));
  std::string sql = b.Body(sql::kJobColumns, f.include_archived) + " ORDER BY job_id " +
                    (f.order == JobOrder::kNewestFirst ? "DESC" : "ASC") + " LIMIT " + b.Bind(int64_t{f.limit});
  return ListQuery{std::move(sql), b.TakeParams()};
}

Result<ListQuery> BuildCountQuery(const JobFilter& f) {
  VIGIL_ASSIGN_OR_RETURN(Builder b, Predicates(f));
  std::string sql = "SELECT count(*) FROM (" + b.Body("job_id", f.include_archived) + ") AS listed";
  return ListQuery{std::move(sql), b.TakeParams()};
}

}  // namespace vigil::jobs
