#include "vigil/lance/lance_table.h"

#include <algorithm>
#include <regex>

#include "vigil/common/checksum.h"

namespace vigil::lance {

namespace {

// LanceDB's index type names, as Vigil's.
std::string VigilTypeName(const std::string& lancedb_type) {
  if (lancedb_type == "IvfPq") return "IVF_PQ";
  if (lancedb_type == "BTree") return "BTREE";
  if (lancedb_type == "Bitmap") return "BITMAP";
  if (lancedb_type == "FTS" || lancedb_type == "Inverted") return "FTS";
  return lancedb_type;
}

std::optional<int64_t> OptionalInt(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

Result<std::vector<LanceField>> ParseFields(const nlohmann::json& j) {
  if (!j.is_array()) return Status::Corruption("the Lance runner's answer has no fields");
  std::vector<LanceField> out;
  for (const auto& f : j) {
    if (!f.is_object() || !f.value("name", nlohmann::json()).is_string()) {
      return Status::Corruption("the Lance runner's answer has a field without a name");
    }
    out.push_back({f["name"].get<std::string>(), f.value("type", std::string()), f.value("nullable", true)});
  }
  return out;
}

Result<std::vector<LanceIndex>> ParseIndexes(const nlohmann::json& j) {
  if (!j.is_array()) return Status::Corruption("the Lance runner's answer has no indexes");
  std::vector<LanceIndex> out;
  for (const auto& ix : j) {
    if (!ix.is_object() || !ix.value("name", nlohmann::json()).is_string()) {
      return Status::Corruption("the Lance runner's answer has an index without a name");
    }
    LanceIndex i;
    i.name = ix["name"].get<std::string>();
    i.uuid = ix.value("uuid", std::string());
    i.index_type = VigilTypeName(ix.value("type", std::string()));
    for (const auto& c : ix.value("columns", nlohmann::json::array())) {
      if (c.is_string()) i.columns.push_back(c.get<std::string>());
    }
    i.indexed_rows = OptionalInt(ix, "indexed_rows");
    i.unindexed_rows = OptionalInt(ix, "unindexed_rows");
    out.push_back(std::move(i));
  }
  std::sort(out.begin(), out.end(), [](const LanceIndex& a, const LanceIndex& b) { return a.name < b.name; });
  return out;
}

LanceData ParseData(const nlohmann::json& j) {
  LanceData d;
  if (!j.is_object()) return d;
  d.rows = j.value("rows", int64_t{0});
  d.data_bytes = j.value("data_bytes", int64_t{0});
  d.fragments = j.value("fragments", int64_t{0});
  return d;
}

bool SameFields(const std::vector<LanceField>& a, const std::vector<LanceField>& b) {
  return SchemaFingerprint(a) == SchemaFingerprint(b);
}

const LanceIndex* Named(const std::vector<LanceIndex>& indexes, const std::string& name) {
  for (const LanceIndex& i : indexes) {
    if (i.name == name) return &i;
  }
  return nullptr;
}

// Every index but `name` is the same (same names, same UUIDs) in both versions.
bool OthersUnchanged(const LanceVersion& a, const LanceVersion& b, const std::string& name) {
  auto others = [&name](const std::vector<LanceIndex>& ix) {
    std::vector<std::string> out;
    for (const LanceIndex& i : ix) {
      if (i.name != name) out.push_back(i.name + '\x1f' + i.uuid);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  return others(a.indexes) == others(b.indexes);
}

}  // namespace

std::string DefaultRunnerDir() { return VIGIL_LANCE_RUNNER_DIR; }

LanceRunnerOptions RunnerOptions(const LanceConfig& config, std::chrono::milliseconds timeout) {
  LanceRunnerOptions o;
  o.node_path = config.node;
  o.script_path = config.runner.empty() ? DefaultRunnerDir() + "/lance_runner.mjs" : config.runner;
  o.timeout = timeout;
  return o;
}

Status ValidateLocation(std::string_view location) {
  static const std::regex kLocation(R"(^/(?:[A-Za-z0-9._-]+/)*[A-Za-z0-9_][A-Za-z0-9_-]{0,63}\.lance$)");
  const std::string s(location);
  if (!std::regex_match(s, kLocation) || s.find("/../") != std::string::npos || s.find("/./") != std::string::npos) {
    return Status::InvalidArgument(
        "LOCATION must be an absolute path of letters, digits, '.', '_' and '-' without '..', ending in "
        "<name>.lance: '" +
        s.substr(0, 200) + "'");
  }
  return Status::OK();
}

Result<LanceSnapshot> Inspect(const std::string& location, const LanceRunnerOptions& options,
                              const nlohmann::json& check_index) {
  VIGIL_RETURN_IF_ERROR(ValidateLocation(location));
  nlohmann::json request = {{"op", "inspect"}, {"dataset", location}};
  if (!check_index.is_null()) request["check_index"] = check_index;
  VIGIL_ASSIGN_OR_RETURN(nlohmann::json r, RunLance(request, options));
  LanceSnapshot s;
  s.version = r.value("version", int64_t{0});
  if (s.version < 1) return Status::Corruption("the Lance runner reported no version of " + location);
  VIGIL_ASSIGN_OR_RETURN(s.fields, ParseFields(r.value("fields", nlohmann::json())));
  VIGIL_ASSIGN_OR_RETURN(s.indexes, ParseIndexes(r.value("indexes", nlohmann::json())));
  s.data = ParseData(r.value("data", nlohmann::json()));
  return s;
}

Result<std::vector<LanceVersion>> History(const std::string& location, int64_t from_version,
                                          const LanceRunnerOptions& options) {
  VIGIL_RETURN_IF_ERROR(ValidateLocation(location));
  VIGIL_ASSIGN_OR_RETURN(nlohmann::json r,
                         RunLance({{"op", "history"}, {"dataset", location}, {"from_version", from_version}}, options));
  std::vector<LanceVersion> out;
  for (const auto& v : r.value("history", nlohmann::json::array())) {
    LanceVersion lv;
    lv.version = v.value("version", int64_t{0});
    lv.missing = v.value("missing", false);
    if (!lv.missing) {
      VIGIL_ASSIGN_OR_RETURN(lv.fields, ParseFields(v.value("fields", nlohmann::json())));
      VIGIL_ASSIGN_OR_RETURN(lv.indexes, ParseIndexes(v.value("indexes", nlohmann::json())));
      lv.data = ParseData(v.value("data", nlohmann::json()));
    }
    out.push_back(std::move(lv));
  }
  return out;
}

std::string SchemaFingerprint(const std::vector<LanceField>& fields) {
  std::string text;
  for (const LanceField& f : fields) text += f.name + '\x1f' + f.type + '\x1f' + (f.nullable ? "1" : "0") + '\x1e';
  return "lance:" + ChecksumToHex(Checksum64(text));
}

std::optional<int64_t> VectorDimension(std::string_view arrow_type) {
  static const std::regex kVector(R"(^FixedSizeList\[(\d{1,6})\]<Float(16|32|64)>$)");
  std::cmatch m;
  const std::string s(arrow_type);
  if (!std::regex_match(s.c_str(), m, kVector)) return std::nullopt;
  return std::stoll(m[1].str());
}

Status CheckIndexable(const std::vector<LanceField>& fields, const std::string& column, index::IndexType type) {
  auto it = std::find_if(fields.begin(), fields.end(), [&](const LanceField& f) { return f.name == column; });
  if (it == fields.end()) return Status::InvalidArgument("the Lance dataset has no column '" + column + "'");
  const std::string& t = it->type;
  const bool is_string = t == "Utf8" || t == "LargeUtf8";
  const bool is_list = t.find("List") != std::string::npos || t.starts_with("Struct") || t.starts_with("Map");
  bool ok = false;
  std::string wants;
  switch (type) {
    case index::IndexType::kIvfPq:
      ok = VectorDimension(t).has_value();
      wants = "a FixedSizeList of floats (a vector)";
      break;
    case index::IndexType::kFts:
      ok = is_string;
      wants = "a string";
      break;
    case index::IndexType::kBtree:
    case index::IndexType::kBitmap:
      ok = !is_list && t != "Binary" && t != "LargeBinary";
      wants = "a scalar";
      break;
  }
  if (ok) return Status::OK();
  return Status::InvalidArgument("USING " + std::string(index::IndexTypeName(type)) + " needs " + wants +
                                 " column; Lance column '" + column + "' is " + t);
}

Attribution Attribute(const index::JobRequest& job, const std::vector<LanceVersion>& history) {
  Attribution a;
  const int64_t start = job.start_version;
  const LanceVersion* base = nullptr;
  const LanceVersion* next = nullptr;
  for (const LanceVersion& v : history) {
    if (v.version == start) base = &v;
    if (v.version == start + 1) next = &v;
  }
  if (base == nullptr || base->missing) {
    a.reason = "the admitted version " + std::to_string(start) + " is not in the dataset's history";
    return a;
  }
  if (next == nullptr) {
    a.evidence = Evidence::kNotCommitted;
    a.reason = "no version after the admitted version " + std::to_string(start) + " exists";
    return a;
  }
  const std::string later = "version " + std::to_string(start + 1);
  if (next->missing) {
    a.reason = later + " is missing from the history";
    return a;
  }
  if (job.operation == index::JobOperation::kBuild) {
    a.reason = later + " exists and LanceDB's optimize changes more than one index: not attributable";
    return a;
  }
  if (!SameFields(base->fields, next->fields) || !(base->data == next->data)) {
    a.reason = later + " changed the schema or the data: another writer committed it";
    return a;
  }
  if (!OthersUnchanged(*base, *next, job.index_name)) {
    a.reason = later + " changed another index: another writer committed it";
    return a;
  }
  const LanceIndex* before = Named(base->indexes, job.index_name);
  const LanceIndex* after = Named(next->indexes, job.index_name);
  bool ours = false;
  switch (job.operation) {
    case index::JobOperation::kDrop:
      ours = before != nullptr && after == nullptr;
      break;
    case index::JobOperation::kCreate:
    case index::JobOperation::kReplace:
      ours = after != nullptr && (before == nullptr || before->uuid != after->uuid) &&
             (job.operation == index::JobOperation::kReplace || before == nullptr) &&
             after->index_type == job.physical_type && after->columns == job.columns;
      break;
    case index::JobOperation::kBuild:
      break;
  }
  if (!ours) {
    a.reason = later + " does not hold exactly the requested change of index '" + job.index_name + "'";
    return a;
  }
  a.evidence = Evidence::kCommitted;
  a.version = start + 1;
  a.reason = later + ", whose parent is the admitted version, holds exactly the requested change of index '" +
             job.index_name + "' and nothing else";
  return a;
}

}  // namespace vigil::lance
