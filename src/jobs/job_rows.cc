#include "jobs/job_rows.h"

#include <nlohmann/json.hpp>

namespace vigil::jobs {

namespace {

using meta::Row;
using meta::Value;

std::string ColumnsJson(const std::vector<std::string>& columns) { return nlohmann::json(columns).dump(); }

// A JSON array of strings (job columns, audit warnings).
Result<std::vector<std::string>> ParseColumns(const std::string& text) {
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_array()) return Status::Corruption("stored text list is not a JSON array");
    return j.get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(std::string("stored text list: ") + e.what());
  }
}

Value Bool(bool b) { return Value(b ? 1 : 0); }

template <typename T>
Value Opt(const std::optional<T>& v) {
  return v ? Value(*v) : Value();
}

Status ParseIdentity(const Row& row, JobRecord* r) {
  VIGIL_ASSIGN_OR_RETURN(r->job_id, row.Int(0));
  VIGIL_ASSIGN_OR_RETURN(r->revision, row.Int(1));
  VIGIL_ASSIGN_OR_RETURN(r->creator, row.Text(2));
  VIGIL_ASSIGN_OR_RETURN(r->created_at_ms, row.Int(3));
  VIGIL_ASSIGN_OR_RETURN(r->started_at_ms, row.OptInt(4));
  VIGIL_ASSIGN_OR_RETURN(r->finished_at_ms, row.OptInt(5));
  JobSpec& s = r->spec;
  VIGIL_ASSIGN_OR_RETURN(s.catalog_name, row.Text(6));
  VIGIL_ASSIGN_OR_RETURN(s.database_name, row.Text(7));
  VIGIL_ASSIGN_OR_RETURN(s.table_name, row.Text(8));
  VIGIL_ASSIGN_OR_RETURN(s.catalog_incarnation, row.Text(9));
  VIGIL_ASSIGN_OR_RETURN(s.table_incarnation, row.Text(10));
  VIGIL_ASSIGN_OR_RETURN(s.locator, row.Text(11));
  VIGIL_ASSIGN_OR_RETURN(s.index_name, row.Text(12));
  VIGIL_ASSIGN_OR_RETURN(int64_t norm_version, row.Int(13));
  r->fence.normalization_version = static_cast<int>(norm_version);
  VIGIL_ASSIGN_OR_RETURN(r->fence.normalized_name, row.Text(14));
  r->fence.catalog_incarnation = s.catalog_incarnation;
  r->fence.table_incarnation = s.table_incarnation;
  VIGIL_ASSIGN_OR_RETURN(r->provider, row.Text(15));
  return Status::OK();
}

Status ParseSpec(const Row& row, JobSpec* s) {
  VIGIL_ASSIGN_OR_RETURN(std::string op, row.Text(16));
  VIGIL_ASSIGN_OR_RETURN(s->operation, ParseOperation(op));
  VIGIL_ASSIGN_OR_RETURN(std::string if_mode, row.Text(17));
  VIGIL_ASSIGN_OR_RETURN(s->if_mode, ParseIfMode(if_mode));
  VIGIL_ASSIGN_OR_RETURN(std::string columns, row.Text(18));
  VIGIL_ASSIGN_OR_RETURN(s->columns, ParseColumns(columns));
  VIGIL_ASSIGN_OR_RETURN(std::optional<std::string> category, row.OptText(19));
  if (category) {
    VIGIL_ASSIGN_OR_RETURN(s->category, ParseSqlCategory(*category));
  }
  VIGIL_ASSIGN_OR_RETURN(s->physical_type, row.OptText(20));
  VIGIL_ASSIGN_OR_RETURN(s->properties_json, row.Text(21));
  VIGIL_ASSIGN_OR_RETURN(s->start_version, row.Int(22));
  VIGIL_ASSIGN_OR_RETURN(s->schema_fingerprint, row.Text(23));
  return Status::OK();
}

Status ParseState(const Row& row, JobState* st) {
  VIGIL_ASSIGN_OR_RETURN(std::string e, row.Text(24));
  VIGIL_ASSIGN_OR_RETURN(st->execution, ParseExecution(e));
  VIGIL_ASSIGN_OR_RETURN(std::string o, row.Text(25));
  VIGIL_ASSIGN_OR_RETURN(st->outcome, ParseOutcome(o));
  VIGIL_ASSIGN_OR_RETURN(std::string f, row.Text(26));
  VIGIL_ASSIGN_OR_RETURN(st->refresh, ParseRefreshState(f));
  VIGIL_ASSIGN_OR_RETURN(std::string c, row.Text(27));
  VIGIL_ASSIGN_OR_RETURN(st->reconcile, ParseReconcileState(c));
  VIGIL_ASSIGN_OR_RETURN(std::string d, row.Text(28));
  VIGIL_ASSIGN_OR_RETURN(st->disposition, ParseDisposition(d));
  return CheckLegal(*st).WithContext("stored job state");
}

Status ParseAttempt(const Row& row, JobRecord* r) {
  VIGIL_ASSIGN_OR_RETURN(std::optional<std::string> node, row.OptText(29));
  if (node) {
    AttemptIdentity a;
    a.executor_node_id = *node;
    VIGIL_ASSIGN_OR_RETURN(a.node_epoch, row.Int(30));
    VIGIL_ASSIGN_OR_RETURN(a.attempt_id, row.Text(31));
    VIGIL_ASSIGN_OR_RETURN(a.attempt_number, row.Int(32));
    VIGIL_ASSIGN_OR_RETURN(a.dispatch_generation, row.Int(33));
    VIGIL_ASSIGN_OR_RETURN(a.leader_epoch, row.Int(34));
    VIGIL_ASSIGN_OR_RETURN(a.deadline_at_ms, row.Int(35));
    r->attempt = std::move(a);
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t invoked, row.Int(36));
  r->invoked = invoked != 0;
  VIGIL_ASSIGN_OR_RETURN(int64_t proven, row.Int(37));
  r->termination_proven = proven != 0;
  VIGIL_ASSIGN_OR_RETURN(r->error_code, row.OptText(38));
  VIGIL_ASSIGN_OR_RETURN(r->error_message, row.OptText(39));
  VIGIL_ASSIGN_OR_RETURN(r->committed_version, row.OptInt(40));
  VIGIL_ASSIGN_OR_RETURN(r->last_observed_version, row.OptInt(41));
  VIGIL_ASSIGN_OR_RETURN(r->last_observed_fingerprint, row.OptText(42));
  return Status::OK();
}

Status ParseBookkeeping(const Row& row, JobRecord* r) {
  VIGIL_ASSIGN_OR_RETURN(r->refresh_generation, row.Int(43));
  VIGIL_ASSIGN_OR_RETURN(r->refresh_retries, row.Int(44));
  VIGIL_ASSIGN_OR_RETURN(r->refresh_next_at_ms, row.OptInt(45));
  VIGIL_ASSIGN_OR_RETURN(r->refresh_last_error, row.OptText(46));
  VIGIL_ASSIGN_OR_RETURN(r->reconcile_next_at_ms, row.OptInt(47));
  VIGIL_ASSIGN_OR_RETURN(r->reconcile_last_at_ms, row.OptInt(48));
  VIGIL_ASSIGN_OR_RETURN(r->reconcile_backoff_s, row.Int(49));
  VIGIL_ASSIGN_OR_RETURN(r->resolution_id, row.OptText(50));
  VIGIL_ASSIGN_OR_RETURN(r->progress_phase, row.OptText(51));
  VIGIL_ASSIGN_OR_RETURN(r->progress_done, row.Int(52));
  VIGIL_ASSIGN_OR_RETURN(r->progress_total, row.Int(53));
  VIGIL_ASSIGN_OR_RETURN(r->archived_at_ms, row.OptInt(54));
  VIGIL_ASSIGN_OR_RETURN(int64_t tombstone, row.Int(55));
  r->tombstone = tombstone != 0;
  VIGIL_ASSIGN_OR_RETURN(std::string engine, row.Text(56));
  Result<index::TableEngine> parsed = index::ParseTableEngine(engine);
  if (!parsed.ok()) return Status::Corruption("stored job engine: " + parsed.status().message());
  r->spec.engine = *parsed;
  return Status::OK();
}

}  // namespace

Result<JobRecord> ParseJob(const Row& row) {
  JobRecord r;
  VIGIL_RETURN_IF_ERROR(ParseIdentity(row, &r));
  VIGIL_RETURN_IF_ERROR(ParseSpec(row, &r.spec));
  VIGIL_RETURN_IF_ERROR(ParseState(row, &r.state));
  VIGIL_RETURN_IF_ERROR(ParseAttempt(row, &r));
  VIGIL_RETURN_IF_ERROR(ParseBookkeeping(row, &r));
  return r;
}

meta::Params AdmissionParams(const JobRecord& r) {
  const JobSpec& s = r.spec;
  std::optional<std::string> category;
  if (s.category) category = std::string(Name(*s.category));
  return {r.revision,
          r.creator,
          r.created_at_ms,
          s.catalog_name,
          s.database_name,
          s.table_name,
          s.catalog_incarnation,
          s.table_incarnation,
          s.locator,
          s.index_name,
          r.fence.normalization_version,
          r.fence.normalized_name,
          r.provider,
          Name(s.operation),
          Name(s.if_mode),
          ColumnsJson(s.columns),
          category,
          s.physical_type,
          s.properties_json,
          s.start_version,
          s.schema_fingerprint,
          Name(r.state.execution),
          Name(r.state.outcome),
          Name(r.state.refresh),
          Name(r.state.reconcile),
          Name(r.state.disposition),
          index::TableEngineName(s.engine)};
}

meta::Params MutableParams(const JobRecord& r, int64_t expected_revision) {
  const std::optional<AttemptIdentity>& a = r.attempt;
  auto attempt_int = [&](int64_t AttemptIdentity::*field) { return a ? Value((*a).*field) : Value(); };
  auto attempt_text = [&](std::string AttemptIdentity::*field) { return a ? Value((*a).*field) : Value(); };
  return {r.job_id,
          expected_revision,
          r.revision,
          Opt(r.started_at_ms),
          Opt(r.finished_at_ms),
          Name(r.state.execution),
          Name(r.state.outcome),
          Name(r.state.refresh),
          Name(r.state.reconcile),
          Name(r.state.disposition),
          attempt_text(&AttemptIdentity::executor_node_id),
          attempt_int(&AttemptIdentity::node_epoch),
          attempt_text(&AttemptIdentity::attempt_id),
          attempt_int(&AttemptIdentity::attempt_number),
          attempt_int(&AttemptIdentity::dispatch_generation),
          attempt_int(&AttemptIdentity::leader_epoch),
          attempt_int(&AttemptIdentity::deadline_at_ms),
          Bool(r.invoked),
          Bool(r.termination_proven),
          Opt(r.error_code),
          Opt(r.error_message),
          Opt(r.committed_version),
          Opt(r.last_observed_version),
          Opt(r.last_observed_fingerprint),
          r.refresh_generation,
          r.refresh_retries,
          Opt(r.refresh_next_at_ms),
          Opt(r.refresh_last_error),
          Opt(r.reconcile_next_at_ms),
          Opt(r.reconcile_last_at_ms),
          r.reconcile_backoff_s,
          Opt(r.resolution_id),
          Opt(r.progress_phase),
          r.progress_done,
          r.progress_total};
}

Result<JobEvent> ParseEvent(const Row& row) {
  JobEvent e;
  VIGIL_ASSIGN_OR_RETURN(e.job_id, row.Int(0));
  VIGIL_ASSIGN_OR_RETURN(e.seq, row.Int(1));
  VIGIL_ASSIGN_OR_RETURN(e.part, row.Int(2));
  VIGIL_ASSIGN_OR_RETURN(e.at_ms, row.Int(3));
  VIGIL_ASSIGN_OR_RETURN(e.kind, row.Text(4));
  VIGIL_ASSIGN_OR_RETURN(e.actor, row.Text(5));
  VIGIL_ASSIGN_OR_RETURN(e.resolution_id, row.OptText(6));
  VIGIL_ASSIGN_OR_RETURN(e.note, row.OptText(7));
  VIGIL_ASSIGN_OR_RETURN(e.detail_json, row.Text(8));
  return e;
}

meta::Params EventParams(const JobEvent& e) {
  return {e.job_id, e.seq, e.part, e.at_ms, e.kind, e.actor, Opt(e.resolution_id), Opt(e.note), e.detail_json};
}

Result<AuditRecord> ParseAudit(const Row& row) {
  AuditRecord a;
  VIGIL_ASSIGN_OR_RETURN(a.audit_id, row.Int(0));
  VIGIL_ASSIGN_OR_RETURN(a.at_ms, row.Int(1));
  VIGIL_ASSIGN_OR_RETURN(a.actor, row.Text(2));
  VIGIL_ASSIGN_OR_RETURN(a.action, row.Text(3));
  VIGIL_ASSIGN_OR_RETURN(a.job_id, row.Int(4));
  VIGIL_ASSIGN_OR_RETURN(a.resolution_id, row.Text(5));
  VIGIL_ASSIGN_OR_RETURN(a.catalog_name, row.Text(6));
  VIGIL_ASSIGN_OR_RETURN(a.database_name, row.Text(7));
  VIGIL_ASSIGN_OR_RETURN(a.table_name, row.Text(8));
  VIGIL_ASSIGN_OR_RETURN(a.table_incarnation, row.Text(9));
  VIGIL_ASSIGN_OR_RETURN(a.index_name, row.Text(10));
  VIGIL_ASSIGN_OR_RETURN(a.note, row.Text(11));
  VIGIL_ASSIGN_OR_RETURN(std::string warnings, row.Text(12));
  VIGIL_ASSIGN_OR_RETURN(a.warnings, ParseColumns(warnings));
  return a;
}

meta::Params AuditParams(const AuditRecord& a) {
  return {a.at_ms,         a.actor,         a.action,
          a.job_id,        a.resolution_id, a.catalog_name,
          a.database_name, a.table_name,    a.table_incarnation,
          a.index_name,    a.note,          ColumnsJson(a.warnings)};
}

std::string DetailJson(const std::map<std::string, std::string>& fields) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : fields) j[k] = v;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace vigil::jobs
