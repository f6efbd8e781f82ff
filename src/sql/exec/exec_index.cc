// Index statements: CREATE [OR REPLACE] INDEX, DROP INDEX and BUILD INDEX admit
// durable jobs under vigil.toml's caps (or are refused before any job exists; a
// held fence as INDEX_FENCED naming its job); SHOW INDEX lists the logical
// indexes of the newest version in MySQL's 13 columns.
#include <algorithm>

#include "sql/exec/exec_internal.h"
#include "vigil/common/ascii.h"
#include "vigil/index/provider.h"
#include "vigil/jobs/admission.h"
#include "vigil/lance/lance_table.h"

namespace vigil::sql {

namespace {

// A read of an external Lance table's newest version: seconds; a minute is far above it.

index::IndexType TypeOf(IndexMethod m) {
  switch (m) {
    case IndexMethod::kAnn:
      return index::IndexType::kIvfPq;
    case IndexMethod::kBtree:
      return index::IndexType::kBtree;
    case IndexMethod::kBitmap:
      return index::IndexType::kBitmap;
    case IndexMethod::kFts:
      return index::IndexType::kFts;
  }
  return index::IndexType::kBtree;
}

Status CheckMutationEnabled(const ExecContext& ctx, std::string_view statement) {
  return jobs::CheckMutationAllowed(ctx.config, ctx.root.path() + "/vigil.toml", statement);
}

// The registered target of an index statement, after authorization.
Result<jobs::IndexTarget> IndexTarget(ExecContext& ctx, const TableRef& table) {
  VIGIL_ASSIGN_OR_RETURN(vigil::TableName name, ResolveTable(ctx, table));
  VIGIL_RETURN_IF_ERROR(Authorize(ctx, name, auth::Privilege::kAlter));
  VIGIL_ASSIGN_OR_RETURN(catalog::TableEntry entry, ctx.Catalog().Lookup(name));
  return jobs::IndexTarget{entry.catalog_name, entry.database_name, entry.table_name};
}

// An admission refused because a job holds the name's fence, as the operator needs it:
// which job, in which state, and what to run (a typed INDEX_FENCED, not the jobs
// layer's AlreadyExists). Other errors pass unchanged.
Status Fenced(jobs::Admission& admission, const jobs::IndexTarget& target, const std::string& name, Status st) {
  if (st.code() != StatusCode::kAlreadyExists) return st;
  auto holder = admission.FenceHolder(target, name);
  if (!holder.ok() || !*holder) return st;
  const jobs::JobRecord& job = **holder;
  const std::string id = std::to_string(job.job_id);
  const std::string_view state = jobs::DerivedState(job.state);
  const std::string next = state == "OUTCOME_UNKNOWN"
                               ? "its outcome is unknown: see SHOW INDEX JOB " + id +
                                     "; the reconciler settles it, or RESOLVE INDEX JOB " + id + " releases it"
                               : "run WAIT INDEX JOB " + id + ", then retry";
  return Status::FailedPrecondition("INDEX_FENCED: index '" + job.spec.index_name + "' on " + target.database + "." +
                                    target.table + " is held by job " + id + " (" +
                                    std::string(jobs::Name(job.spec.operation)) + ", " + std::string(state) + "); " +
                                    next);
}

// The result of an admitted job; starts the leader when the job still has work.
ResultSet Admitted(ExecContext& ctx, std::string_view statement, const jobs::JobRecord& job) {
  ResultSet r;
  const std::string id = std::to_string(job.job_id);
  r.message = std::string(statement) + ": job " + id + " admitted";
  r.admitted_jobs.push_back(job.job_id);
  if (jobs::IsFinal(job.state)) {
    r.message += " (" + std::string(jobs::DerivedState(job.state)) + ": " + std::string(jobs::Name(job.state.outcome)) +
                 ", nothing to do)";
    return r;
  }
  if (ctx.options.ensure_leader) {
    Status st = ctx.options.ensure_leader();
    if (!st.ok()) {
      r.warnings.push_back("job " + id + " is admitted, but no leader could be started to run it: " + st.ToString());
    }
  }
  return r;
}

std::string NullMark(const Schema& schema, const std::string& column) {
  std::optional<size_t> i = schema.IndexOf(column);
  return i && schema.field(*i).nullable ? "YES" : "";
}

}  // namespace

Result<ResultSet> ExecCreateIndex(ExecContext& ctx, const CreateIndexStatement& s) {
  VIGIL_RETURN_IF_ERROR(CheckMutationEnabled(ctx, "CREATE INDEX"));
  if (s.columns.size() != 1) {
    return Status::InvalidArgument("USING " + std::string(IndexMethodName(s.method)) +
                                   " indexes exactly one column; found " + std::to_string(s.columns.size()));
  }
  jobs::CreateIndexStatement stmt;
  VIGIL_ASSIGN_OR_RETURN(stmt.target, IndexTarget(ctx, s.table));
  stmt.index_name = s.name;
  stmt.column = s.columns[0];
  stmt.type = TypeOf(s.method);
  for (const Property& p : s.properties) stmt.properties[AsciiLowered(p.key)] = p.value;
  if (s.method != IndexMethod::kAnn && stmt.properties.count("index_type")) {
    return Status::InvalidArgument("property \"index_type\" is only for USING ANN");
  }
  stmt.if_not_exists = s.if_not_exists;
  stmt.or_replace = s.or_replace;
  jobs::Admission admission(ctx.store.get(), ctx.config.caps, ctx.request, ctx.config.lance);
  auto job = admission.Create(stmt, ctx.options.principal.name, ctx.Now());
  if (!job.ok()) return Fenced(admission, stmt.target, stmt.index_name, job.status());
  return Admitted(ctx, s.or_replace ? "CREATE OR REPLACE INDEX" : "CREATE INDEX", *job);
}

Result<ResultSet> ExecDropIndex(ExecContext& ctx, const DropIndexStatement& s) {
  VIGIL_RETURN_IF_ERROR(CheckMutationEnabled(ctx, "DROP INDEX"));
  jobs::DropIndexStatement stmt;
  VIGIL_ASSIGN_OR_RETURN(stmt.target, IndexTarget(ctx, s.table));
  stmt.index_name = s.name;
  stmt.if_exists = s.if_exists;
  jobs::Admission admission(ctx.store.get(), ctx.config.caps, ctx.request, ctx.config.lance);
  auto job = admission.Drop(stmt, ctx.options.principal.name, ctx.Now());
  if (!job.ok()) return Fenced(admission, stmt.target, stmt.index_name, job.status());
  return Admitted(ctx, "DROP INDEX", *job);
}

Result<ResultSet> ExecBuildIndex(ExecContext& ctx, const BuildIndexStatement& s) {
  VIGIL_RETURN_IF_ERROR(CheckMutationEnabled(ctx, "BUILD INDEX"));
  jobs::BuildIndexStatement stmt;
  VIGIL_ASSIGN_OR_RETURN(stmt.target, IndexTarget(ctx, s.table));
  stmt.index_name = s.name;
  jobs::Admission admission(ctx.store.get(), ctx.config.caps, ctx.request, ctx.config.lance);
  auto job = admission.Build(stmt, ctx.options.principal.name, ctx.Now());
  if (!job.ok()) return Fenced(admission, stmt.target, stmt.index_name, job.status());
  return Admitted(ctx, "BUILD INDEX", *job);
}

Result<ResultSet> ExecShowIndex(ExecContext& ctx, const ShowIndexStatement& s) {
  VIGIL_ASSIGN_OR_RETURN(vigil::TableName name, ResolveTable(ctx, s.table));
  VIGIL_RETURN_IF_ERROR(Authorize(ctx, name, auth::Privilege::kShow));
  ResultSet r;
  r.columns = {"Table",    "Non_unique", "Key_name", "Seq_in_index", "Column_name", "Collation", "Cardinality",
               "Sub_part", "Packed",     "Null",     "Index_type",   "Comment",     "Properties"};
  VIGIL_ASSIGN_OR_RETURN(catalog::TableEntry entry, ctx.Catalog().Lookup(name));
  if (entry.engine == index::TableEngine::kLance) {
    // The dataset's newest version as LanceDB lists it; LanceDB lists no index parameters. A
    // listing its manifest's index entries disagree with is LANCE_INDEX_METADATA_INCONSISTENT.
    VIGIL_ASSIGN_OR_RETURN(lance::LanceSnapshot snap,
                           lance::Inspect(entry.locator, lance::ReadOptions(ctx.config.lance)));
    VIGIL_RETURN_IF_ERROR(lance::CheckLogicalMetadata(snap));
    for (const lance::LanceIndex& info : snap.indexes) {
      for (size_t k = 0; k < info.columns.size(); ++k) {
        auto field = std::find_if(snap.fields.begin(), snap.fields.end(),
                                  [&](const lance::LanceField& f) { return f.name == info.columns[k]; });
        const bool nullable = field != snap.fields.end() && field->nullable;
        r.rows.push_back({Value(name.table), Value(int64_t{1}), Value(info.name), Value(static_cast<int64_t>(k + 1)),
                          Value(info.columns[k]), Value(), Value(), Value(), Value(),
                          Value(std::string(nullable ? "YES" : "")), Value(info.index_type), Value(std::string()),
                          Value(std::string("{}"))});
      }
    }
    return r;
  }
  VIGIL_ASSIGN_OR_RETURN(auto ds, OpenTable(ctx, name));
  VIGIL_ASSIGN_OR_RETURN(auto indexes, index::ListIndexes(ds->path(), ds->version()));
  for (const index::LogicalIndexInfo& info : indexes) {
    for (size_t k = 0; k < info.columns.size(); ++k) {
      r.rows.push_back({Value(name.table), Value(int64_t{1}), Value(info.name), Value(static_cast<int64_t>(k + 1)),
                        Value(info.columns[k]), Value(), Value(), Value(), Value(),
                        Value(NullMark(*ds->schema(), info.columns[k])), Value(info.index_type), Value(std::string()),
                        Value(info.properties_json)});
    }
  }
  return r;
}

}  // namespace vigil::sql
