// Job statements: SHOW INDEX JOBS (seed 000 section 2.2's 19 columns, JobId
// order, every database unless filtered; the store evaluates the filters on its
// indexed columns and pages the listing, a result holds at most 1,000 rows and
// a notice continues it), SHOW INDEX JOB (detail with events, progress and
// warnings), CANCEL, RESOLVE and WAIT INDEX JOB.
#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>

#include "sql/exec/exec_internal.h"
#include "sql/select/job_listing.h"
#include "vigil/common/ascii.h"
#include "vigil/sql/job_detail.h"

namespace vigil::sql {

namespace {

// Rows of one SHOW INDEX JOBS result; a notice says how to continue after the last.
constexpr size_t kShowPageRows = 1000;

Value Text(std::string s) { return Value(std::move(s)); }
Value OptText(const std::optional<std::string>& s) { return s ? Value(*s) : Value(); }

// A job list row (integer, text or NULL cells) as result cells.
std::vector<Value> ResultCells(const std::vector<vigil::Value>& row) {
  std::vector<Value> out;
  out.reserve(row.size());
  for (const vigil::Value& v : row) {
    if (const auto* i = std::get_if<int64_t>(&v)) {
      out.emplace_back(*i);
    } else if (const auto* t = std::get_if<std::string>(&v)) {
      out.emplace_back(*t);
    } else {
      out.emplace_back();
    }
  }
  return out;
}

Result<std::vector<Value>> ListRow(ExecContext& ctx, const jobs::JobRecord& job) {
  VIGIL_ASSIGN_OR_RETURN(std::vector<vigil::Value> row, JobListRow(*ctx.store, job));
  return ResultCells(row);
}

// ---- SHOW INDEX JOBS ... WHERE ----

Result<size_t> ListColumnIndex(const std::string& name) {
  const auto& cols = JobListColumns();
  for (size_t i = 0; i < cols.size(); ++i) {
    if (AsciiEqualsIgnoreCase(cols[i], name)) return i;
  }
  std::string all;
  for (const auto& c : cols) all += (all.empty() ? "" : ", ") + c;
  return Status::InvalidArgument("SHOW INDEX JOBS has no column '" + name + "'; its columns are " + all);
}

Status WhereUnsupported(const Expr& e) {
  return Status::InvalidArgument("line " + std::to_string(e.pos.line) + ", column " + std::to_string(e.pos.column) +
                                 ": SHOW INDEX JOBS ... WHERE supports Column = value and Column != value, and "
                                 "<, <=, >, >= on JobId and the time columns, joined by AND / OR; found " +
                                 ToSql(e));
}

// JobId and the times order; names match exactly (as FROM does), IndexName by normalization
// v1 (as the fence does), every other column case-insensitively.
bool Ordered(size_t column) {
  return column == kJobIdColumn || column == kCreateTimeColumn || column == kStartTimeColumn ||
         column == kFinishTimeColumn || column == kLastResolvedAtColumn;
}
bool ExactName(size_t column) {
  return column == kCatalogNameColumn || column == kDatabaseNameColumn || column == kTableNameColumn;
}

// `Column op value`, with the column on the left.
struct Comparison {
  size_t column = 0;
  BinaryOp op = BinaryOp::kEq;
  std::string value;
  int64_t number = 0;  // JobId's value
};

BinaryOp Mirrored(BinaryOp op) {
  switch (op) {
    case BinaryOp::kLt:
      return BinaryOp::kGt;
    case BinaryOp::kLe:
      return BinaryOp::kGe;
    case BinaryOp::kGt:
      return BinaryOp::kLt;
    case BinaryOp::kGe:
      return BinaryOp::kLe;
    default:
      return op;
  }
}

// The comparison of a leaf; a "double-quoted" word is a string.
Result<Comparison> ComparisonOf(const Expr& e) {
  const bool ordering =
      e.op == BinaryOp::kLt || e.op == BinaryOp::kLe || e.op == BinaryOp::kGt || e.op == BinaryOp::kGe;
  if (e.kind != ExprKind::kBinary || e.args.size() != 2 ||
      (!ordering && e.op != BinaryOp::kEq && e.op != BinaryOp::kNe)) {
    return WhereUnsupported(e);
  }
  const Expr* col = &e.args[0];
  const Expr* val = &e.args[1];
  Comparison c;
  c.op = e.op;
  if (col->kind != ExprKind::kColumn || col->double_quoted) {
    std::swap(col, val);
    c.op = Mirrored(e.op);
  }
  if (col->kind != ExprKind::kColumn || col->double_quoted) return WhereUnsupported(e);
  VIGIL_ASSIGN_OR_RETURN(c.column, ListColumnIndex(col->column));
  if (val->kind == ExprKind::kColumn && val->double_quoted) {
    c.value = val->column;
  } else if (val->kind == ExprKind::kLiteral && val->literal.kind != Literal::Kind::kNull &&
             val->literal.kind != Literal::Kind::kBool) {
    c.value = val->literal.text;
  } else {
    return WhereUnsupported(e);
  }
  if (ordering && !Ordered(c.column)) return WhereUnsupported(e);
  if (c.column == kJobIdColumn) {
    size_t used = 0;
    try {
      c.number = std::stoll(c.value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != c.value.size()) {
      return Status::InvalidArgument("SHOW INDEX JOBS ... WHERE: JobId compares with an integer, not '" + c.value +
                                     "'");
    }
  }
  return c;
}

// InvalidArgument for the first part of `e` that SHOW INDEX JOBS cannot evaluate.
Status CheckWhere(const Expr& e) {
  if (e.kind == ExprKind::kBinary && (e.op == BinaryOp::kAnd || e.op == BinaryOp::kOr)) {
    for (const Expr& a : e.args) VIGIL_RETURN_IF_ERROR(CheckWhere(a));
    return Status::OK();
  }
  return ComparisonOf(e).status();
}

bool Compare(const Comparison& c, const Value& cell) {
  if (c.column == kJobIdColumn) {
    const int64_t v = std::get<int64_t>(cell);
    switch (c.op) {
      case BinaryOp::kEq:
        return v == c.number;
      case BinaryOp::kNe:
        return v != c.number;
      case BinaryOp::kLt:
        return v < c.number;
      case BinaryOp::kLe:
        return v <= c.number;
      case BinaryOp::kGt:
        return v > c.number;
      default:
        return v >= c.number;
    }
  }
  const std::string& text = std::get<std::string>(cell);
  const int order = text.compare(c.value);
  switch (c.op) {
    case BinaryOp::kEq:
    case BinaryOp::kNe: {
      const bool equal = ExactName(c.column) ? order == 0
                         : c.column == kIndexNameColumn
                             ? jobs::NormalizeIndexNameV1(text) == jobs::NormalizeIndexNameV1(c.value)
                             : AsciiEqualsIgnoreCase(text, c.value);
      return equal == (c.op == BinaryOp::kEq);
    }
    case BinaryOp::kLt:
      return order < 0;
    case BinaryOp::kLe:
      return order <= 0;
    case BinaryOp::kGt:
      return order > 0;
    default:
      return order >= 0;
  }
}

// `e` (checked by CheckWhere) on a list row.
Result<bool> JobMatches(const Expr& e, const std::vector<Value>& row) {
  if (e.kind == ExprKind::kBinary && (e.op == BinaryOp::kAnd || e.op == BinaryOp::kOr)) {
    for (const Expr& a : e.args) {
      VIGIL_ASSIGN_OR_RETURN(bool m, JobMatches(a, row));
      if (m != (e.op == BinaryOp::kAnd)) return m;
    }
    return e.op == BinaryOp::kAnd;
  }
  VIGIL_ASSIGN_OR_RETURN(Comparison c, ComparisonOf(e));
  const Value& cell = row[c.column];
  if (std::holds_alternative<std::monostate>(cell)) return false;  // NULL is neither equal nor unequal
  return Compare(c, cell);
}

void SetOnce(std::optional<std::string>* field, const std::string& value) {
  if (!*field) *field = value;
}

// Narrows the store query with the top-level conjuncts on the store's indexed columns
// (names, index name, state, job id, creation time); the rows are still matched exactly.
Status PushDown(const Expr& e, jobs::JobFilter* f) {
  if (e.kind == ExprKind::kBinary && e.op == BinaryOp::kAnd) {
    for (const Expr& a : e.args) VIGIL_RETURN_IF_ERROR(PushDown(a, f));
    return Status::OK();
  }
  if (e.kind != ExprKind::kBinary || e.op == BinaryOp::kOr || e.op == BinaryOp::kNe) return Status::OK();
  VIGIL_ASSIGN_OR_RETURN(Comparison c, ComparisonOf(e));
  if (c.column == kJobIdColumn) {
    int64_t lo = c.number, hi = c.number;  // the rows are still compared exactly: saturate
    if (c.op == BinaryOp::kGt && lo < std::numeric_limits<int64_t>::max()) ++lo;
    if (c.op == BinaryOp::kLt && hi > std::numeric_limits<int64_t>::min()) --hi;
    if (c.op != BinaryOp::kLt && c.op != BinaryOp::kLe) f->min_job_id = std::max(f->min_job_id.value_or(lo), lo);
    if (c.op != BinaryOp::kGt && c.op != BinaryOp::kGe) f->max_job_id = std::min(f->max_job_id.value_or(hi), hi);
    return Status::OK();
  }
  if (c.column == kCreateTimeColumn) {
    static constexpr std::pair<BinaryOp, CompareOp> kOps[] = {{BinaryOp::kEq, CompareOp::kEq},
                                                              {BinaryOp::kLt, CompareOp::kLt},
                                                              {BinaryOp::kLe, CompareOp::kLe},
                                                              {BinaryOp::kGt, CompareOp::kGt},
                                                              {BinaryOp::kGe, CompareOp::kGe}};
    for (const auto& [op, cmp] : kOps) {
      if (op == c.op) AddCreateTimeBounds(cmp, c.value, f);
    }
    return Status::OK();
  }
  if (c.op != BinaryOp::kEq) return Status::OK();
  if (c.column == kCatalogNameColumn) SetOnce(&f->catalog_name, c.value);
  if (c.column == kDatabaseNameColumn) SetOnce(&f->database_name, c.value);
  if (c.column == kTableNameColumn) SetOnce(&f->table_name, c.value);
  if (c.column == kIndexNameColumn) SetOnce(&f->index_name, c.value);
  if (c.column == kStateColumn) {
    std::string state = c.value;
    for (char& ch : state) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    SetOnce(&f->state, state);
  }
  return Status::OK();
}

// The statement that lists the jobs after `last_job_id`.
std::string Continuation(const ShowIndexJobsStatement& s, int64_t last_job_id) {
  ShowIndexJobsStatement next = s;
  Expr after = Expr::Binary(
      BinaryOp::kGt,
      {Expr::Column("JobId"), Expr::Lit(Literal::Number(Literal::Kind::kInteger, std::to_string(last_job_id)))});
  next.where = s.where ? Expr::Binary(BinaryOp::kAnd, {*s.where, std::move(after)}) : std::move(after);
  return ToSql(StatementNode(std::move(next)));
}

// A notice when jobs wait for a leader and no live lease exists at the session's clock.
Result<std::optional<std::string>> LeaderNotice(ExecContext& ctx) {
  jobs::JobFilter waiting;
  waiting.waiting_for_leader = true;
  VIGIL_ASSIGN_OR_RETURN(int64_t n, ctx.Control().Count(waiting, ctx.options.principal));
  if (n == 0) return std::optional<std::string>();
  VIGIL_ASSIGN_OR_RETURN(jobs::LeaderLease lease, ctx.store->cluster().GetLeader());
  if (lease.Live(ctx.Now())) return std::optional<std::string>();
  return std::optional<std::string>(std::to_string(n) +
                                    " job(s) wait for a leader; none is running: start `vigil supervise` or run "
                                    "any `vigil sql` statement");
}

// ---- SHOW INDEX JOB detail ----

ResultSet DetailResult(const jobs::JobDetail& d) {
  ResultSet r;
  r.columns = {"Item", "Value"};
  for (JobItem& item : JobDetailItems(d)) r.rows.push_back({Text(std::move(item.name)), std::move(item.value)});
  for (const jobs::JobEvent& e : d.events) {
    std::string seq = std::to_string(e.seq) + (e.part ? "." + std::to_string(e.part) : "");
    r.rows.push_back({Text("Event " + seq), Text(JobEventText(e))});
  }
  for (const std::string& w : d.warnings) r.rows.push_back({Text("Warning"), Text(w)});
  r.warnings = d.warnings;
  return r;
}

jobs::ResolveAction ActionOf(const ResolveIndexJobStatement& s) {
  if (s.action == ResolveAction::kAcknowledged) return jobs::ResolveAction::kAcknowledge;
  return s.without_refresh ? jobs::ResolveAction::kForceReleaseWithoutRefresh : jobs::ResolveAction::kForceRelease;
}

bool Resolved(const jobs::JobRecord& job) {
  return job.state.disposition == jobs::Disposition::kAcknowledged ||
         job.state.disposition == jobs::Disposition::kForceReleased;
}

}  // namespace

std::string JobEventText(const jobs::JobEvent& e) {
  std::string s = FormatJobTimeMs(e.at_ms) + " " + e.kind + " by " + e.actor;
  if (e.resolution_id) s += " (resolution " + *e.resolution_id + ")";
  if (e.note) s += ": " + *e.note;
  if (!e.detail_json.empty() && e.detail_json != "{}") s += " " + e.detail_json;
  return s;
}

std::vector<JobItem> JobDetailItems(const jobs::JobDetail& d) {
  std::vector<JobItem> items;
  std::vector<Value> list = ResultCells(JobListRow(d.job, FindLastResolution(d.events)));
  for (size_t i = 0; i < list.size(); ++i) items.push_back({JobListColumns()[i], std::move(list[i])});
  const jobs::JobRecord& j = d.job;
  std::string columns;
  for (const auto& c : j.spec.columns) columns += (columns.empty() ? "" : ", ") + c;
  auto add = [&items](std::string item, Value v) { items.push_back({std::move(item), std::move(v)}); };
  add("Columns", Text(columns));
  add("IndexType", OptText(j.spec.physical_type));
  add("Properties", Text(j.spec.properties_json));
  add("Creator", Text(j.creator));
  add("StartVersion", Value(j.spec.start_version));
  add("CommittedVersion", j.committed_version ? Value(*j.committed_version) : Value());
  add("AttemptId", j.attempt ? Text(j.attempt->attempt_id) : Value());
  add("AttemptNumber", j.attempt ? Value(j.attempt->attempt_number) : Value());
  add("AttemptNode",
      j.attempt ? Text(j.attempt->executor_node_id + " epoch " + std::to_string(j.attempt->node_epoch)) : Value());
  add("RefreshError", OptText(j.refresh_last_error));
  return items;
}

Result<jobs::JobDetail> ExecShowJob(ExecContext& ctx, int64_t job_id) {
  return ctx.Control().Show(job_id, ctx.options.principal);
}

Result<jobs::JobDetail> ExecResolveJob(ExecContext& ctx, int64_t job_id, jobs::ResolveAction action,
                                       std::string_view comment) {
  jobs::WaitOptions wait;
  wait.timeout_ms = ctx.options.resolve_wait_ms;
  return ctx.Control().Resolve(job_id, action, comment, ctx.options.principal, wait);
}

Result<ResultSet> ExecShowIndexJobs(ExecContext& ctx, const ShowIndexJobsStatement& s) {
  jobs::JobFilter filter;
  filter.order = jobs::JobOrder::kOldestFirst;
  filter.limit = jobs::kMaxListLimit;
  if (s.database) {
    if (!s.database->catalog.empty()) filter.catalog_name = s.database->catalog;
    filter.database_name = s.database->database;
  }
  if (s.where) {
    VIGIL_RETURN_IF_ERROR(CheckWhere(*s.where));
    VIGIL_RETURN_IF_ERROR(PushDown(*s.where, &filter));
  }
  VIGIL_ASSIGN_OR_RETURN(jobs::JobCursor cursor, ctx.Control().Scan(filter, ctx.options.principal));
  ResultSet r;
  r.columns = JobListColumns();
  int64_t last_shown = 0;
  while (true) {
    VIGIL_ASSIGN_OR_RETURN(std::optional<jobs::JobRecord> job, cursor.Next());
    if (!job) break;
    VIGIL_ASSIGN_OR_RETURN(std::vector<Value> row, ListRow(ctx, *job));
    bool keep = true;
    if (s.where) {
      VIGIL_ASSIGN_OR_RETURN(keep, JobMatches(*s.where, row));
    }
    if (!keep) continue;
    if (r.rows.size() == kShowPageRows) {
      r.notices.push_back(std::to_string(kShowPageRows) +
                          " jobs shown and more match; continue with: " + Continuation(s, last_shown));
      break;
    }
    r.rows.push_back(std::move(row));
    last_shown = job->job_id;
  }
  VIGIL_ASSIGN_OR_RETURN(std::optional<std::string> leader, LeaderNotice(ctx));
  if (leader) r.notices.push_back(std::move(*leader));
  return r;
}

Result<ResultSet> ExecShowIndexJob(ExecContext& ctx, const ShowIndexJobStatement& s) {
  VIGIL_ASSIGN_OR_RETURN(jobs::JobDetail d, ExecShowJob(ctx, s.job_id));
  return DetailResult(d);
}

Result<ResultSet> ExecCancelIndexJob(ExecContext& ctx, const CancelIndexJobStatement& s) {
  VIGIL_ASSIGN_OR_RETURN(jobs::JobRecord job, ctx.Control().Cancel(s.job_id, ctx.options.principal));
  ResultSet r;
  r.message = "index job " + std::to_string(job.job_id) + " is " + std::string(jobs::DerivedState(job.state));
  return r;
}

Result<ResultSet> ExecResolveIndexJob(ExecContext& ctx, const ResolveIndexJobStatement& s) {
  const jobs::ResolveAction action = ActionOf(s);
  VIGIL_ASSIGN_OR_RETURN(jobs::JobDetail d, ExecResolveJob(ctx, s.job_id, action, s.comment));
  ResultSet r = DetailResult(d);
  const std::string id = std::to_string(s.job_id);
  if (Resolved(d.job)) {
    r.message = "index job " + id + " resolved: " + std::string(jobs::Name(d.job.state.disposition));
  } else {
    r.message = "index job " + id + ": " + std::string(jobs::Name(action)) + " requested (" +
                std::string(jobs::Name(d.job.state.disposition)) + "); the leader completes it after the refresh";
  }
  return r;
}

Result<ResultSet> ExecWaitIndexJob(ExecContext& ctx, const WaitIndexJobStatement& s) {
  jobs::WaitOptions wait;
  wait.timeout_ms = s.timeout_seconds ? static_cast<int64_t>(*s.timeout_seconds * 1000) : ctx.options.default_wait_ms;
  VIGIL_ASSIGN_OR_RETURN(jobs::JobRecord job, ctx.Control().Wait(s.job_id, ctx.options.principal, wait));
  ResultSet r;
  r.columns = JobListColumns();
  VIGIL_ASSIGN_OR_RETURN(std::vector<Value> row, ListRow(ctx, job));
  r.rows.push_back(std::move(row));
  r.message = "index job " + std::to_string(job.job_id) + " is " + std::string(jobs::DerivedState(job.state));
  return r;
}

}  // namespace vigil::sql
