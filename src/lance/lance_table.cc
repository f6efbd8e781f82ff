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
  a.reason = "version " + std::to_string(start + 1) +
             " exists, and nothing in a Lance commit binds it to this attempt (another writer's identical change "
             "looks the same)";
  return a;
}

}  // namespace vigil::lance
