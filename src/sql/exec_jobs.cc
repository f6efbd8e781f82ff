// Job statements: SHOW INDEX JOBS (seed 000 section 2.2's 19 columns, JobId
// order, every database unless filtered), SHOW INDEX JOB (detail with events,
// progress and warnings), CANCEL, RESOLVE and WAIT INDEX JOB.
#include <algorithm>
#include <cctype>
#include <map>

#include "sql/exec_internal.h"

namespace vigil::sql {

namespace {

const std::vector<std::string>& ListColumns() {
  static const std::vector<std::string> kColumns = {
      "JobId",      "CatalogName", "DatabaseName",   "TableName",      "IndexName",           "Operation",
      "CreateTime", "StartTime",   "FinishTime",     "State",          "Outcome",             "RefreshState",
      "ReconcileState", "Disposition", "Executor",   "Message",        "LastResolutionAction", "LastResolvedBy",
      "LastResolvedAt"};
  return kColumns;
}

Value Text(std::string s) { return Value(std::move(s)); }
Value OptText(const std::optional<std::string>& s) { return s ? Value(*s) : Value(); }
Value OptTime(const std::optional<int64_t>& ms) { return ms ? Value(FormatTimeMs(*ms)) : Value(); }

struct LastResolution {
  std::string action;
  std::string actor;
  int64_t at_ms = 0;
};

// The last completed resolution; its actor is the principal who requested it (the
// leader completes ACK and FORCE after the refresh).
std::optional<LastResolution> FindLastResolution(const std::vector<jobs::JobEvent>& events) {
  std::map<std::string, std::string> requested_by;
  std::optional<LastResolution> last;
  for (const jobs::JobEvent& e : events) {
    if (e.resolution_id && (e.kind == jobs::event::kAckRequested || e.kind == jobs::event::kForceRequested ||
                            e.kind == jobs::event::kEmergencyForceRequested)) {
      requested_by.emplace(*e.resolution_id, e.actor);
    }
    std::string action;
    if (e.kind == jobs::event::kAckCompleted) action = "ACKNOWLEDGED";
    if (e.kind == jobs::event::kForceCompleted) action = "FORCE_RELEASE";
    if (e.kind == jobs::event::kEmergencyForceCompleted) action = "FORCE_RELEASE WITHOUT REFRESH";
    if (action.empty()) continue;
    auto by = e.resolution_id ? requested_by.find(*e.resolution_id) : requested_by.end();
    last = LastResolution{action, by != requested_by.end() ? by->second : e.actor, e.at_ms};
  }
  return last;
}

Value Message(const jobs::JobRecord& job) {
  if (!job.error_message && !job.error_code) return Value();
  if (!job.error_code) return Value(*job.error_message);
  if (!job.error_message) return Value(*job.error_code);
  const std::string prefix = *job.error_code + ": ";
  if (job.error_message->rfind(prefix, 0) == 0) return Value(*job.error_message);
  return Value(prefix + *job.error_message);
}

std::vector<Value> ListRow(const jobs::JobRecord& job, const std::optional<LastResolution>& last) {
  const jobs::JobSpec& s = job.spec;
  return {Value(job.job_id),
          Text(s.catalog_name),
          Text(s.database_name),
          Text(s.table_name),
          Text(s.index_name),
          Text(std::string(jobs::Name(s.operation))),
          Text(FormatTimeMs(job.created_at_ms)),
          OptTime(job.started_at_ms),
          OptTime(job.finished_at_ms),
          Text(std::string(jobs::DerivedState(job.state))),
          Text(std::string(jobs::Name(job.state.outcome))),
          Text(std::string(jobs::Name(job.state.refresh))),
          Text(std::string(jobs::Name(job.state.reconcile))),
          Text(std::string(jobs::Name(job.state.disposition))),
          job.attempt ? Text(job.attempt->executor_node_id) : Value(),
          Message(job),
          last ? Text(last->action) : Value(),
          last ? Text(last->actor) : Value(),
          last ? Text(FormatTimeMs(last->at_ms)) : Value()};
}

Result<std::vector<Value>> ListRowOf(ExecContext& ctx, const jobs::JobRecord& job) {
  std::optional<LastResolution> last;
  if (job.state.disposition != jobs::Disposition::kNone) {
    VIGIL_ASSIGN_OR_RETURN(auto events, ctx.store->Events(job.job_id));
    last = FindLastResolution(events);
  }
  return ListRow(job, last);
}

// ---- SHOW INDEX JOBS ... WHERE ----

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

Result<size_t> ListColumnIndex(const std::string& name) {
  const auto& cols = ListColumns();
  for (size_t i = 0; i < cols.size(); ++i) {
    if (IEquals(cols[i], name)) return i;
  }
  std::string all;
  for (const auto& c : cols) all += (all.empty() ? "" : ", ") + c;
  return Status::InvalidArgument("SHOW INDEX JOBS has no column '" + name + "'; its columns are " + all);
}

Status WhereUnsupported(const Expr& e) {
  return Status::InvalidArgument("line " + std::to_string(e.pos.line) + ", column " + std::to_string(e.pos.column) +
                                 ": SHOW INDEX JOBS ... WHERE supports Column = value and Column != value joined "
                                 "by AND / OR; found " + ToSql(e));
}

// The column and the compared text of `Column = value`; a "double-quoted" word is a string.
Result<std::pair<size_t, std::string>> ColumnAndValue(const Expr& e) {
  if (e.args.size() != 2) return WhereUnsupported(e);
  const Expr* col = &e.args[0];
  const Expr* val = &e.args[1];
  if (col->kind != ExprKind::kColumn || col->double_quoted) std::swap(col, val);
  if (col->kind != ExprKind::kColumn || col->double_quoted) return WhereUnsupported(e);
  VIGIL_ASSIGN_OR_RETURN(size_t index, ListColumnIndex(col->column));
  if (val->kind == ExprKind::kColumn && val->double_quoted) return std::make_pair(index, val->column);
  if (val->kind == ExprKind::kLiteral && val->literal.kind != Literal::Kind::kNull &&
      val->literal.kind != Literal::Kind::kBool) {
    return std::make_pair(index, val->literal.text);
  }
  return WhereUnsupported(e);
}

std::string CellText(const Value& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return "";
}

Result<bool> JobMatches(const Expr& e, const std::vector<Value>& row) {
  if (e.kind != ExprKind::kBinary) return WhereUnsupported(e);
  if (e.op == BinaryOp::kAnd || e.op == BinaryOp::kOr) {
    for (const Expr& a : e.args) {
      VIGIL_ASSIGN_OR_RETURN(bool m, JobMatches(a, row));
      if (m != (e.op == BinaryOp::kAnd)) return m;
    }
    return e.op == BinaryOp::kAnd;
  }
  if (e.op != BinaryOp::kEq && e.op != BinaryOp::kNe) return WhereUnsupported(e);
  VIGIL_ASSIGN_OR_RETURN(auto cv, ColumnAndValue(e));
  const Value& cell = row[cv.first];
  if (std::holds_alternative<std::monostate>(cell)) return false;  // NULL is neither equal nor unequal
  return IEquals(CellText(cell), cv.second) == (e.op == BinaryOp::kEq);
}

// Narrows the store query with the top-level `State = ...` conjunct, when there is one.
Status PushStateFilter(const Expr& e, jobs::JobFilter* filter) {
  if (e.kind != ExprKind::kBinary) return Status::OK();
  if (e.op == BinaryOp::kAnd) {
    for (const Expr& a : e.args) VIGIL_RETURN_IF_ERROR(PushStateFilter(a, filter));
    return Status::OK();
  }
  if (e.op != BinaryOp::kEq) return Status::OK();
  VIGIL_ASSIGN_OR_RETURN(auto cv, ColumnAndValue(e));
  if (ListColumns()[cv.first] != "State") return Status::OK();
  std::string state = cv.second;
  for (char& c : state) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  filter->state = state;
  return Status::OK();
}

// ---- SHOW INDEX JOB detail ----

std::string EventText(const jobs::JobEvent& e) {
  std::string s = FormatTimeMs(e.at_ms) + " " + e.kind + " by " + e.actor;
  if (e.resolution_id) s += " (resolution " + *e.resolution_id + ")";
  if (e.note) s += ": " + *e.note;
  if (!e.detail_json.empty() && e.detail_json != "{}") s += " " + e.detail_json;
  return s;
}

ResultSet DetailResult(const jobs::JobDetail& d) {
  ResultSet r;
  r.columns = {"Item", "Value"};
  std::vector<Value> list = ListRow(d.job, FindLastResolution(d.events));
  for (size_t i = 0; i < list.size(); ++i) r.rows.push_back({Text(ListColumns()[i]), list[i]});
  const jobs::JobRecord& j = d.job;
  std::string columns;
  for (const auto& c : j.spec.columns) columns += (columns.empty() ? "" : ", ") + c;
  auto add = [&r](std::string item, Value v) { r.rows.push_back({Text(std::move(item)), std::move(v)}); };
  add("Columns", Text(columns));
  add("IndexType", OptText(j.spec.physical_type));
  add("Properties", Text(j.spec.properties_json));
  add("Creator", Text(j.creator));
  add("StartVersion", Value(j.spec.start_version));
  add("CommittedVersion", j.committed_version ? Value(*j.committed_version) : Value());
  add("AttemptId", j.attempt ? Text(j.attempt->attempt_id) : Value());
  add("AttemptNumber", j.attempt ? Value(j.attempt->attempt_number) : Value());
  add("Progress", j.progress_phase ? Text(*j.progress_phase + " " + std::to_string(j.progress_done) + "/" +
                                          std::to_string(j.progress_total))
                                   : Value());
  add("RefreshError", OptText(j.refresh_last_error));
  for (const jobs::JobEvent& e : d.events) {
    std::string seq = std::to_string(e.seq) + (e.part ? "." + std::to_string(e.part) : "");
    add("Event " + seq, Text(EventText(e)));
  }
  for (const std::string& w : d.warnings) add("Warning", Text(w));
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

Result<ResultSet> ExecShowIndexJobs(ExecContext& ctx, const ShowIndexJobsStatement& s) {
  jobs::JobFilter filter;
  filter.limit = jobs::kMaxListLimit;
  if (s.database) {
    if (!s.database->catalog.empty()) filter.catalog_name = s.database->catalog;
    filter.database_name = s.database->database;
  }
  if (s.where) VIGIL_RETURN_IF_ERROR(PushStateFilter(*s.where, &filter));
  VIGIL_ASSIGN_OR_RETURN(std::vector<jobs::JobRecord> jobs, ctx.Control().List(filter, ctx.options.principal));
  if (jobs.size() >= static_cast<size_t>(jobs::kMaxListLimit)) {
    return Status::ResourceExhausted("SHOW INDEX JOBS matches more than " + std::to_string(jobs::kMaxListLimit - 1) +
                                     " jobs; narrow it with FROM db or WHERE State = ...");
  }
  std::sort(jobs.begin(), jobs.end(),
            [](const jobs::JobRecord& a, const jobs::JobRecord& b) { return a.job_id < b.job_id; });
  ResultSet r;
  r.columns = ListColumns();
  for (const jobs::JobRecord& job : jobs) {
    VIGIL_ASSIGN_OR_RETURN(std::vector<Value> row, ListRowOf(ctx, job));
    bool keep = true;
    if (s.where) {
      VIGIL_ASSIGN_OR_RETURN(keep, JobMatches(*s.where, row));
    }
    if (keep) r.rows.push_back(std::move(row));
  }
  return r;
}

Result<ResultSet> ExecShowIndexJob(ExecContext& ctx, const ShowIndexJobStatement& s) {
  VIGIL_ASSIGN_OR_RETURN(jobs::JobDetail d, ctx.Control().Show(s.job_id, ctx.options.principal));
  return DetailResult(d);
}

Result<ResultSet> ExecCancelIndexJob(ExecContext& ctx, const CancelIndexJobStatement& s) {
  VIGIL_ASSIGN_OR_RETURN(jobs::JobRecord job, ctx.Control().Cancel(s.job_id, ctx.options.principal));
  ResultSet r;
  r.message = "index job " + std::to_string(job.job_id) + " is " + std::string(jobs::DerivedState(job.state));
  return r;
}

Result<ResultSet> ExecResolveIndexJob(ExecContext& ctx, const ResolveIndexJobStatement& s) {
  jobs::WaitOptions wait;
  wait.timeout_ms = ctx.options.resolve_wait_ms;
  const jobs::ResolveAction action = ActionOf(s);
  VIGIL_ASSIGN_OR_RETURN(jobs::JobDetail d,
                         ctx.Control().Resolve(s.job_id, action, s.comment, ctx.options.principal, wait));
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
  r.columns = ListColumns();
  VIGIL_ASSIGN_OR_RETURN(std::vector<Value> row, ListRowOf(ctx, job));
  r.rows.push_back(std::move(row));
  r.message = "index job " + std::to_string(job.job_id) + " is " + std::string(jobs::DerivedState(job.state));
  return r;
}

}  // namespace vigil::sql
