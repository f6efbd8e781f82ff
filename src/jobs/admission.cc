#include "vigil/jobs/admission.h"

#include <optional>
#include <set>

#include "jobs/admission_internal.h"
#include "vigil/catalog/version_store.h"
#include "vigil/common/failpoint.h"
#include "vigil/common/names.h"
#include "vigil/index/provider.h"
#include "vigil/storage/dataset.h"
#include "vigil/worker/isolation.h"

namespace vigil::jobs {

namespace internal {

SqlCategory CategoryOf(index::IndexType t) {
  switch (t) {
    case index::IndexType::kIvfPq:
      return SqlCategory::kAnn;
    case index::IndexType::kBtree:
      return SqlCategory::kBtree;
    case index::IndexType::kBitmap:
      return SqlCategory::kBitmap;
    case index::IndexType::kFts:
      return SqlCategory::kFts;
  }
  return SqlCategory::kBtree;
}

Result<std::optional<size_t>> MatchName(const std::vector<std::string>& names, const std::string& name) {
  std::optional<size_t> found;
  for (size_t i = 0; i < names.size(); ++i) {
    if (NormalizeIndexNameV1(names[i]) != NormalizeIndexNameV1(name)) continue;
    if (found) {
      return Status::InvalidArgument("index name '" + name + "' is ambiguous: it matches '" + names[*found] +
                                     "' and '" + names[i] + "' by case");
    }
    found = i;
  }
  return found;
}

Status CheckNewName(const std::string& requested, const std::string* existing, bool if_not_exists, bool or_replace,
                    const std::string& table) {
  if (existing == nullptr || if_not_exists || or_replace) return Status::OK();
  if (*existing != requested) {
    return Status::InvalidArgument("index '" + requested + "' differs only by case from existing index '" + *existing +
                                   "'");
  }
  return Status::AlreadyExists("index '" + *existing + "' already exists on " + table);
}

// Admits `spec` and, for a pre-dispatch NOOP, concludes it at once.
Result<JobRecord> AdmitSpec(JobStore* store, const JobSpec& spec, const std::string& actor, int64_t now_ms, bool noop,
                            const RequestClaim& request) {
  VIGIL_ASSIGN_OR_RETURN(JobRecord job, store->Admit(spec, actor, now_ms, request));
  // Crash cut C1: T1 is durable, the client's OK is not yet sent.
  if (Status fp = failpoint::Hit("admission.after_commit"); !fp.ok()) return fp;
  if (!noop) return job;
  Cas cas{job.job_id, job.revision, std::nullopt, actor, now_ms};
  Result<JobRecord> concluded = store->ConcludeBeforeDispatch(cas, AttemptResult::kNoop, false);
  // A leader dispatched it first: it runs like any admitted job (its provider finds nothing to do).
  if (concluded.status().code() == StatusCode::kCommitConflict) return store->Get(job.job_id);
  return concluded;
}

JobSpec TableSpec(const catalog::TableEntry& t, const std::string& exact_name, Operation op) {
  JobSpec s;
  s.catalog_name = t.catalog_name;
  s.database_name = t.database_name;
  s.table_name = t.table_name;
  s.catalog_incarnation = t.catalog_incarnation;
  s.table_incarnation = t.table_incarnation;
  s.locator = t.locator;
  s.index_name = exact_name;
  s.operation = op;
  s.engine = t.engine;
  return s;
}

}  // namespace internal

namespace {

using internal::AdmitSpec;
using internal::CategoryOf;

struct Target {
  catalog::TableEntry table;
  std::shared_ptr<Dataset> dataset;
  std::vector<index::LogicalIndexInfo> indexes;
};

Result<Target> LoadTarget(JobStore* store, const IndexTarget& t) {
  VIGIL_ASSIGN_OR_RETURN(auto entry, store->catalog().LookupTable(t.catalog, t.database, t.table));
  if (!entry) return Status::NotFound("table " + t.catalog + "." + t.database + "." + t.table + " does not exist");
  Target out;
  out.table = *entry;
  VIGIL_ASSIGN_OR_RETURN(out.dataset,
                         Dataset::Open(entry->locator, std::nullopt,
                                       catalog::TableDatasetOptions(&store->catalog(), entry->table_incarnation)));
  VIGIL_ASSIGN_OR_RETURN(out.indexes, index::ListIndexes(entry->locator, out.dataset->version()));
  return out;
}

// The existing logical index whose name matches `name` case-insensitively (v1),
// or nullopt. Two matches (an external case-only collision) are ambiguous.
Result<std::optional<index::LogicalIndexInfo>> Match(const std::vector<index::LogicalIndexInfo>& indexes,
                                                     const std::string& name) {
  std::vector<std::string> names;
  for (const auto& i : indexes) names.push_back(i.name);
  VIGIL_ASSIGN_OR_RETURN(std::optional<size_t> at, internal::MatchName(names, name));
  if (!at) return std::optional<index::LogicalIndexInfo>();
  return std::optional<index::LogicalIndexInfo>(indexes[*at]);
}

// OK when `existing` has the requested definition as IF NOT EXISTS compares it (seed 000
// section 5): columns, physical type and the allowlisted properties. AlreadyExists showing
// both definitions otherwise.
Status SameDefinition(const index::LogicalIndexInfo& existing, const std::vector<std::string>& columns,
                      const index::IndexSpec& requested, const std::string& table) {
  const std::string wanted = index::DescribeDefinition(requested.type, columns, requested);
  std::string have = existing.index_type + " (...) " + existing.properties_json;
  bool same = false;
  if (auto type = index::ParseIndexType(existing.index_type); type.ok()) {
    if (auto spec = index::SpecFromPropertiesJson(*type, existing.properties_json); spec.ok()) {
      have = index::DescribeDefinition(*type, existing.columns, *spec);
      same = *type == requested.type && existing.columns == columns && *spec == requested;
    }
  }
  if (same) return Status::OK();
  return Status::AlreadyExists("index '" + existing.name + "' already exists on " + table +
                               " with another definition; IF NOT EXISTS needs the same one: existing " + have +
                               ", requested " + wanted);
}

JobSpec BaseSpec(const Target& t, const std::string& exact_name, Operation op) {
  JobSpec s = internal::TableSpec(t.table, exact_name, op);
  s.start_version = static_cast<int64_t>(t.dataset->version());
  s.schema_fingerprint = t.dataset->schema()->fingerprint();
  return s;
}

}  // namespace

Result<JobRecord> Admission::Create(const CreateIndexStatement& stmt, const std::string& actor, int64_t now_ms) {
  if (stmt.if_not_exists && stmt.or_replace) {
    return Status::InvalidArgument("IF NOT EXISTS and OR REPLACE cannot be used together");
  }
  VIGIL_ASSIGN_OR_RETURN(catalog::TableEntry table, LookupNamed(stmt.target, stmt.index_name));
  if (table.engine == index::TableEngine::kLance) return CreateLance(table, stmt, actor, now_ms);
  VIGIL_ASSIGN_OR_RETURN(Target t, LoadTarget(store_, stmt.target));
  auto idx = t.dataset->schema()->IndexOf(stmt.column);
  if (!idx) return Status::InvalidArgument("table " + t.table.table_name + " has no column '" + stmt.column + "'");
  const Field& field = t.dataset->schema()->field(*idx);
  VIGIL_ASSIGN_OR_RETURN(index::IndexSpec spec,
                         index::ValidateIndexSpec(stmt.type, stmt.properties, field, t.dataset->CountRows(),
                                                  t.dataset->manifest().fragments.size(), caps_));
  VIGIL_ASSIGN_OR_RETURN(auto existing, Match(t.indexes, stmt.index_name));
  std::string exact = existing ? existing->name : stmt.index_name;
  VIGIL_RETURN_IF_ERROR(internal::CheckNewName(stmt.index_name, existing ? &existing->name : nullptr,
                                               stmt.if_not_exists, stmt.or_replace, t.table.table_name));
  if (existing && stmt.if_not_exists) {
    VIGIL_RETURN_IF_ERROR(SameDefinition(*existing, {field.name}, spec, t.table.table_name));
  }
  JobSpec js = BaseSpec(t, exact, stmt.or_replace ? Operation::kReplace : Operation::kCreate);
  js.if_mode = stmt.if_not_exists ? IfMode::kIfNotExists : IfMode::kNone;
  js.columns = {field.name};
  js.category = CategoryOf(stmt.type);
  js.physical_type = std::string(index::IndexTypeName(stmt.type));
  js.properties_json = index::JobPropertiesJson(spec, caps_);
  return AdmitSpec(store_, js, actor, now_ms, existing.has_value() && stmt.if_not_exists, request_);
}

Result<catalog::TableEntry> Admission::LookupNamed(const IndexTarget& t, const std::string& index_name) {
  // An index name is an identifier, except on an external Lance table: there it is matched
  // against the names another writer chose (admission_lance.cc checks it).
  const Status name = ValidateIdentifier(index_name, "index name");
  Result<catalog::TableEntry> table = Lookup(t);
  if (!name.ok() && (!table.ok() || table->engine != index::TableEngine::kLance)) return name;
  return table;
}

Result<catalog::TableEntry> Admission::Lookup(const IndexTarget& t) {
  VIGIL_ASSIGN_OR_RETURN(auto entry, store_->catalog().LookupTable(t.catalog, t.database, t.table));
  if (!entry) return Status::NotFound("table " + t.catalog + "." + t.database + "." + t.table + " does not exist");
  return *entry;
}

Result<std::optional<JobRecord>> Admission::FenceHolder(const IndexTarget& target, const std::string& name) {
  VIGIL_ASSIGN_OR_RETURN(auto entry, store_->catalog().LookupTable(target.catalog, target.database, target.table));
  if (!entry) return std::optional<JobRecord>();
  const std::string normalized = NormalizeIndexNameV1(name);
  // Only jobs in these states can hold a fence (HoldsFence); each listing is bounded.
  for (std::string_view state : FenceHoldingStateNames()) {
    JobFilter filter;
    filter.catalog_name = entry->catalog_name;
    filter.database_name = entry->database_name;
    filter.table_name = entry->table_name;
    filter.index_name = name;
    filter.state = std::string(state);
    filter.include_archived = true;
    filter.limit = kMaxListLimit;
    VIGIL_ASSIGN_OR_RETURN(std::vector<JobRecord> jobs, store_->List(filter));
    for (JobRecord& j : jobs) {
      if (HoldsFence(j.state) && j.fence.table_incarnation == entry->table_incarnation &&
          j.fence.normalized_name == normalized) {
        return std::optional<JobRecord>(std::move(j));
      }
    }
  }
  return std::optional<JobRecord>();
}

Result<JobRecord> Admission::Drop(const DropIndexStatement& stmt, const std::string& actor, int64_t now_ms) {
  VIGIL_ASSIGN_OR_RETURN(catalog::TableEntry table, LookupNamed(stmt.target, stmt.index_name));
  if (table.engine == index::TableEngine::kLance) return DropLance(table, stmt, actor, now_ms);
  VIGIL_ASSIGN_OR_RETURN(Target t, LoadTarget(store_, stmt.target));
  VIGIL_ASSIGN_OR_RETURN(auto existing, Match(t.indexes, stmt.index_name));
  if (!existing && !stmt.if_exists) {
    return Status::NotFound("index '" + stmt.index_name + "' does not exist on " + t.table.table_name);
  }
  JobSpec js = BaseSpec(t, existing ? existing->name : stmt.index_name, Operation::kDrop);
  js.if_mode = stmt.if_exists ? IfMode::kIfExists : IfMode::kNone;
  if (existing) js.columns = existing->columns;
  return AdmitSpec(store_, js, actor, now_ms, !existing.has_value(), request_);
}

Result<JobRecord> Admission::Build(const BuildIndexStatement& stmt, const std::string& actor, int64_t now_ms) {
  VIGIL_ASSIGN_OR_RETURN(catalog::TableEntry table, LookupNamed(stmt.target, stmt.index_name));
  if (table.engine == index::TableEngine::kLance) return BuildLance(table, stmt, actor, now_ms);
  VIGIL_ASSIGN_OR_RETURN(Target t, LoadTarget(store_, stmt.target));
  VIGIL_ASSIGN_OR_RETURN(auto existing, Match(t.indexes, stmt.index_name));
  if (!existing) return Status::NotFound("index '" + stmt.index_name + "' does not exist on " + t.table.table_name);
  VIGIL_ASSIGN_OR_RETURN(index::IndexType type, index::ParseIndexType(existing->index_type));
  std::set<uint32_t> covered;
  for (const auto& s : t.dataset->manifest().segments) {
    if (s.name == existing->name) covered.insert(s.covered_fragments.begin(), s.covered_fragments.end());
  }
  bool nothing_to_cover = true;
  for (const auto& f : t.dataset->manifest().fragments) nothing_to_cover = nothing_to_cover && covered.count(f.id) > 0;
  JobSpec js = BaseSpec(t, existing->name, Operation::kBuild);
  js.columns = existing->columns;
  js.category = CategoryOf(type);
  js.physical_type = existing->index_type;
  js.properties_json = existing->properties_json;
  return AdmitSpec(store_, js, actor, now_ms, nothing_to_cover, request_);
}

Status CheckMutationAllowed(const Config& config, const std::string& config_path, std::string_view statement) {
  if (!config.mutation.enabled) {
    return Status::FailedPrecondition(std::string(statement) +
                                      " is refused: index mutation is disabled (mutation.enabled = false in " +
                                      config_path + ")");
  }
  if (!config.worker.require_cgroup) return Status::OK();
  const std::string refusal =
      worker::IsolationRefusal(config.worker, worker::ProbeIsolation(config.worker.cgroup_parent));
  if (refusal.empty()) return Status::OK();
  return Status::FailedPrecondition(std::string(statement) + " is refused: " + refusal + "; see `vigil doctor`");
}

}  // namespace vigil::jobs
