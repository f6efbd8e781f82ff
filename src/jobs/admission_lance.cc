// Admission on an external Lance table (DESIGN.md section 13): the statement is
// validated against the dataset's newest version as the Lance runner reads it
// (its columns, its indexes, the runner's allowlist of types and properties,
// Vigil's caps), and the job records that version and the fingerprint of its
// schema, so the worker's runner refuses a dataset another writer changed since
// (STALE_ADMISSION). Names (seed 000 section 5): the user's name is matched
// case-insensitively (normalization v1) against the names LanceDB lists, which
// another writer may have chosen outside Vigil's identifiers ("Índice"); two
// matches are ambiguous and refused; a unique match is sent with its exact
// stored name; a new name, and one Vigil creates, must be an identifier.
#include <nlohmann/json.hpp>

#include "jobs/admission_internal.h"
#include "vigil/common/bounds.h"
#include "vigil/common/names.h"
#include "vigil/lance/lance_table.h"

namespace vigil::jobs {

namespace {

using internal::AdmitSpec;

// The admission's read of the dataset: a minute is far above an inspect's seconds.

// Whether `name` has a C0 or C1 control character, DEL, '/' or '\\' (it is valid UTF-8).
bool HasControlOrSeparator(const std::string& name) {
  for (size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    const bool c1 = c == 0xC2 && i + 1 < name.size() && static_cast<unsigned char>(name[i + 1]) < 0xA0;
    if (c < 0x20 || c == 0x7F || c == '/' || c == '\\' || c1) return true;
  }
  return false;
}

// A name a statement on a Lance table gives, matched against the dataset's names: at most
// 1,024 bytes (seed 000 appendix A) without control characters (the parser gives UTF-8).
Status CheckGivenName(const std::string& name) {
  if (name.empty() || name.size() > bounds::kMaxExternalStringBytes || HasControlOrSeparator(name)) {
    return Status::InvalidArgument("index name must be 1 to " + std::to_string(bounds::kMaxExternalStringBytes) +
                                   " bytes without control characters, '/' or '\\'");
  }
  return Status::OK();
}

// The exact stored name a DROP or BUILD sends to the runner: any text LanceDB lists, bounded as
// the runner takes an existing name (1,024 bytes, no control characters, '/' or '\\') and as a
// job records it.
Status CheckSentName(const std::string& exact) {
  if (exact.size() > kMaxIndexNameBytes || HasControlOrSeparator(exact)) {
    return Status::InvalidArgument(
        "index '" + SanitizeMessage(exact) + "' cannot be named by Vigil: its name is over " +
        std::to_string(kMaxIndexNameBytes) + " bytes or holds a control character, '/' or '\\'");
  }
  return Status::OK();
}

Result<std::optional<lance::LanceIndex>> MatchLance(const std::vector<lance::LanceIndex>& indexes,
                                                    const std::string& name) {
  VIGIL_RETURN_IF_ERROR(CheckGivenName(name));
  std::vector<std::string> names;
  for (const auto& i : indexes) names.push_back(i.name);
  VIGIL_ASSIGN_OR_RETURN(std::optional<size_t> at, internal::MatchName(names, name));
  if (!at) return std::optional<lance::LanceIndex>();
  return std::optional<lance::LanceIndex>(indexes[*at]);
}

// Vigil's administrator caps over what the dataset reports.
Status CheckCaps(const lance::LanceSnapshot& snap, const std::string& column, const IndexCaps& caps,
                 const std::map<std::string, std::string>& properties) {
  const IndexCaps defaults;
  if (static_cast<uint64_t>(snap.data.rows) > caps.max_rows) {
    return Status::InvalidArgument("the Lance dataset has " + std::to_string(snap.data.rows) + " rows, more than " +
                                   index::CapText("max_rows", caps.max_rows, defaults.max_rows));
  }
  if (static_cast<uint64_t>(snap.data.fragments) > caps.max_fragments) {
    return Status::InvalidArgument("the Lance dataset has " + std::to_string(snap.data.fragments) +
                                   " fragments, more than " +
                                   index::CapText("max_fragments", caps.max_fragments, defaults.max_fragments));
  }
  std::optional<int64_t> column_dim;
  for (const lance::LanceField& f : snap.fields) {
    std::optional<int64_t> dim = f.name == column ? lance::VectorDimension(f.type) : std::nullopt;
    if (dim && static_cast<uint64_t>(*dim) > caps.max_vector_dimension) {
      return Status::InvalidArgument(
          "column '" + column + "' has dimension " + std::to_string(*dim) + ", more than " +
          index::CapText("max_vector_dimension", caps.max_vector_dimension, defaults.max_vector_dimension));
    }
    if (dim) column_dim = dim;
  }
  auto over = [&](const char* key, uint64_t cap, uint64_t default_cap) -> Status {
    auto it = properties.find(key);
    if (it == properties.end()) return Status::OK();
    const std::string& v = it->second;
    if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) {
      return Status::InvalidArgument(std::string("property '") + key + "' must be a positive integer");
    }
    if (std::stoull(v) > cap) {
      return Status::InvalidArgument(
          std::string("property '") + key + "' = " + v + " is more than " +
          index::CapText(key == std::string("num_partitions") ? "max_partitions" : "max_sub_vectors", cap,
                         default_cap));
    }
    return Status::OK();
  };
  VIGIL_RETURN_IF_ERROR(over("num_partitions", caps.max_partitions, defaults.max_partitions));
  VIGIL_RETURN_IF_ERROR(over("num_sub_vectors", caps.max_sub_vectors, defaults.max_sub_vectors));
  // The IVF_PQ shape rules of Vigil's own tables (index_spec.cc), before any job exists.
  const auto value = [&](const char* key) -> std::optional<uint64_t> {
    auto it = properties.find(key);
    return it == properties.end() ? std::nullopt : std::optional<uint64_t>(std::stoull(it->second));
  };
  if (const std::optional<uint64_t> sub = value("num_sub_vectors");
      sub && column_dim && *sub > 0 && static_cast<uint64_t>(*column_dim) % *sub != 0) {
    return Status::InvalidArgument("num_sub_vectors " + std::to_string(*sub) + " does not divide the dimension " +
                                   std::to_string(*column_dim));
  }
  if (const std::optional<uint64_t> parts = value("num_partitions");
      parts && column_dim && *parts > static_cast<uint64_t>(snap.data.rows)) {
    return Status::InvalidArgument("num_partitions " + std::to_string(*parts) + " exceeds the " +
                                   std::to_string(snap.data.rows) + " rows of the snapshot");
  }
  return Status::OK();
}

JobSpec LanceSpec(const catalog::TableEntry& t, const lance::LanceSnapshot& snap, const std::string& exact,
                  Operation op) {
  JobSpec s = internal::TableSpec(t, exact, op);
  s.start_version = snap.version;
  s.schema_fingerprint = lance::SchemaFingerprint(snap.fields);
  return s;
}

}  // namespace

Result<JobRecord> Admission::CreateLance(const catalog::TableEntry& table, const CreateIndexStatement& stmt,
                                         const std::string& actor, int64_t now_ms) {
  const std::string type(index::IndexTypeName(stmt.type));
  // The name is checked here, after it is matched (a case-only duplicate of an external
  // non-identifier name is refused as such).
  nlohmann::json check = {
      {"column", stmt.column}, {"index_type", type}, {"properties", nlohmann::json(stmt.properties)}};
  VIGIL_ASSIGN_OR_RETURN(lance::LanceSnapshot snap, lance::Inspect(table.locator, lance::ReadOptions(lance_), check));
  VIGIL_RETURN_IF_ERROR(lance::CheckIndexable(snap.fields, stmt.column, stmt.type));
  VIGIL_RETURN_IF_ERROR(CheckCaps(snap, stmt.column, caps_, stmt.properties));
  VIGIL_ASSIGN_OR_RETURN(std::optional<lance::LanceIndex> existing, MatchLance(snap.indexes, stmt.index_name));
  VIGIL_RETURN_IF_ERROR(internal::CheckNewName(stmt.index_name, existing ? &existing->name : nullptr,
                                               stmt.if_not_exists, stmt.or_replace, table.table_name));
  const bool noop = existing.has_value() && stmt.if_not_exists;
  // What the runner creates under: an identifier (an external name outside them is never replaced).
  if (!noop) VIGIL_RETURN_IF_ERROR(ValidateIdentifier(existing ? existing->name : stmt.index_name, "index name"));
  const std::vector<std::string> columns = {stmt.column};
  if (existing && stmt.if_not_exists && (existing->index_type != type || existing->columns != columns)) {
    // LanceDB lists no index's parameters: IF NOT EXISTS compares the type and the column.
    return Status::AlreadyExists("index '" + existing->name + "' already exists on " + table.table_name +
                                 " with another definition; IF NOT EXISTS needs the same one: existing " +
                                 existing->index_type + " (" + (existing->columns.empty() ? "" : existing->columns[0]) +
                                 "), requested " + type + " (" + stmt.column + ")");
  }
  JobSpec js = LanceSpec(table, snap, existing ? existing->name : stmt.index_name,
                         stmt.or_replace ? Operation::kReplace : Operation::kCreate);
  js.if_mode = stmt.if_not_exists ? IfMode::kIfNotExists : IfMode::kNone;
  js.columns = columns;
  js.category = internal::CategoryOf(stmt.type);
  js.physical_type = type;
  js.properties_json = nlohmann::json(stmt.properties).dump();
  return AdmitSpec(store_, js, actor, now_ms, noop, request_);
}

Result<JobRecord> Admission::DropLance(const catalog::TableEntry& table, const DropIndexStatement& stmt,
                                       const std::string& actor, int64_t now_ms) {
  VIGIL_ASSIGN_OR_RETURN(lance::LanceSnapshot snap, lance::Inspect(table.locator, lance::ReadOptions(lance_)));
  VIGIL_ASSIGN_OR_RETURN(std::optional<lance::LanceIndex> existing, MatchLance(snap.indexes, stmt.index_name));
  if (!existing && !stmt.if_exists) {
    return Status::NotFound("index '" + stmt.index_name + "' does not exist on " + table.table_name);
  }
  if (existing) VIGIL_RETURN_IF_ERROR(CheckSentName(existing->name));
  JobSpec js = LanceSpec(table, snap, existing ? existing->name : stmt.index_name, Operation::kDrop);
  js.if_mode = stmt.if_exists ? IfMode::kIfExists : IfMode::kNone;
  if (existing) js.columns = existing->columns;
  return AdmitSpec(store_, js, actor, now_ms, !existing.has_value(), request_);
}

Result<JobRecord> Admission::BuildLance(const catalog::TableEntry& table, const BuildIndexStatement& stmt,
                                        const std::string& actor, int64_t now_ms) {
  VIGIL_ASSIGN_OR_RETURN(lance::LanceSnapshot snap, lance::Inspect(table.locator, lance::ReadOptions(lance_)));
  VIGIL_ASSIGN_OR_RETURN(std::optional<lance::LanceIndex> existing, MatchLance(snap.indexes, stmt.index_name));
  if (!existing) return Status::NotFound("index '" + stmt.index_name + "' does not exist on " + table.table_name);
  VIGIL_RETURN_IF_ERROR(CheckSentName(existing->name));
  JobSpec js = LanceSpec(table, snap, existing->name, Operation::kBuild);
  js.columns = existing->columns;
  if (Result<index::IndexType> type = index::ParseIndexType(existing->index_type); type.ok()) {
    js.category = internal::CategoryOf(*type);
  }
  js.physical_type = existing->index_type;
  // Every row indexed: nothing to build (LanceDB reports the rows its index does not cover).
  const bool nothing_to_cover = existing->unindexed_rows.value_or(1) == 0;
  return AdmitSpec(store_, js, actor, now_ms, nothing_to_cover, request_);
}

}  // namespace vigil::jobs
