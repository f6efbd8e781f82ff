#include "vigil/lance/lance_table.h"

#include <algorithm>
#include <climits>
#include <map>
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

bool ValidUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : c & (0xFF >> (n + 1));
    for (size_t k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 0x2) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += n;
  }
  return true;
}

// An external string of the runner's answer (`what` names it; its bytes are never quoted).
Result<std::string> ExternalString(const nlohmann::json& j, const std::string& what) {
  if (!j.is_string()) return Status::Corruption("the Lance runner's answer has " + what + " that is not a string");
  std::string s = j.get<std::string>();
  if (s.size() > kMaxLanceStringBytes) {
    return Status::ResourceExhausted("the Lance dataset has " + what + " of " + std::to_string(s.size()) +
                                     " bytes, more than " + std::to_string(kMaxLanceStringBytes));
  }
  if (!ValidUtf8(s)) return Status::Corruption("the Lance dataset has " + what + " that is not valid UTF-8");
  return s;
}

Result<std::vector<LanceField>> ParseFields(const nlohmann::json& j) {
  if (!j.is_array()) return Status::Corruption("the Lance runner's answer has no fields");
  if (j.size() > kMaxLanceEntries) {
    return Status::ResourceExhausted("the Lance dataset has " + std::to_string(j.size()) + " fields, more than " +
                                     std::to_string(kMaxLanceEntries));
  }
  std::vector<LanceField> out;
  for (const auto& f : j) {
    if (!f.is_object() || !f.value("name", nlohmann::json()).is_string()) {
      return Status::Corruption("the Lance runner's answer has a field without a name");
    }
    LanceField field;
    VIGIL_ASSIGN_OR_RETURN(field.name, ExternalString(f["name"], "a field name"));
    VIGIL_ASSIGN_OR_RETURN(field.type, ExternalString(f.value("type", nlohmann::json("")), "a field type"));
    field.nullable = f.value("nullable", true);
    if (auto e = f.find("element_nullable"); e != f.end() && e->is_boolean()) field.element_nullable = e->get<bool>();
    field.null_elements = OptionalInt(f, "null_elements");
    if (field.null_elements && *field.null_elements < 0) {
      return Status::Corruption("the Lance runner's answer has a negative count of null elements");
    }
    out.push_back(std::move(field));
  }
  return out;
}

// An index's columns (Appendix A: at most 64, of at most 16 KiB of names together); a null
// column (one no field has) is nullopt when `nulls` allows it, else Corruption.
Result<std::vector<std::optional<std::string>>> ParseColumns(const nlohmann::json& columns, bool nulls) {
  if (!columns.is_array()) return Status::Corruption("the Lance runner's answer has an index without columns");
  if (columns.size() > kMaxLanceIndexColumns) {
    return Status::ResourceExhausted("the Lance dataset has an index of " + std::to_string(columns.size()) +
                                     " columns, more than " + std::to_string(kMaxLanceIndexColumns));
  }
  std::vector<std::optional<std::string>> out;
  size_t column_bytes = 0;
  for (const auto& c : columns) {
    if (nulls && c.is_null()) {
      out.emplace_back();
      continue;
    }
    VIGIL_ASSIGN_OR_RETURN(std::string column, ExternalString(c, "an index column name"));
    column_bytes += column.size();
    out.emplace_back(std::move(column));
  }
  if (column_bytes > kMaxLanceIndexColumnBytes) {
    return Status::ResourceExhausted("the Lance dataset has an index whose column names take " +
                                     std::to_string(column_bytes) + " bytes, more than " +
                                     std::to_string(kMaxLanceIndexColumnBytes));
  }
  return out;
}

Result<std::optional<std::string>> OptionalExternalString(const nlohmann::json& j, const char* key,
                                                          const std::string& what) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::optional<std::string>();
  VIGIL_ASSIGN_OR_RETURN(std::string s, ExternalString(*it, what));
  return std::optional<std::string>(std::move(s));
}

Result<std::vector<LanceIndex>> ParseIndexes(const nlohmann::json& j) {
  if (!j.is_array()) return Status::Corruption("the Lance runner's answer has no indexes");
  if (j.size() > kMaxLanceEntries) {
    return Status::ResourceExhausted("the Lance dataset has " + std::to_string(j.size()) + " indexes, more than " +
                                     std::to_string(kMaxLanceEntries));
  }
  std::vector<LanceIndex> out;
  for (const auto& ix : j) {
    if (!ix.is_object() || !ix.value("name", nlohmann::json()).is_string()) {
      return Status::Corruption("the Lance runner's answer has an index without a name");
    }
    LanceIndex i;
    VIGIL_ASSIGN_OR_RETURN(i.name, ExternalString(ix["name"], "an index name"));
    VIGIL_ASSIGN_OR_RETURN(i.uuid, ExternalString(ix.value("uuid", nlohmann::json("")), "an index UUID"));
    VIGIL_ASSIGN_OR_RETURN(std::string type, ExternalString(ix.value("type", nlohmann::json("")), "an index type"));
    i.index_type = VigilTypeName(type);
    VIGIL_ASSIGN_OR_RETURN(auto columns, ParseColumns(ix.value("columns", nlohmann::json::array()), false));
    for (auto& c : columns) i.columns.push_back(std::move(*c));
    i.indexed_rows = OptionalInt(ix, "indexed_rows");
    i.unindexed_rows = OptionalInt(ix, "unindexed_rows");
    VIGIL_ASSIGN_OR_RETURN(i.type_url, OptionalExternalString(ix, "type_url", "an index type URL"));
    i.segments = OptionalInt(ix, "segments");
    out.push_back(std::move(i));
  }
  std::sort(out.begin(), out.end(), [](const LanceIndex& a, const LanceIndex& b) { return a.name < b.name; });
  return out;
}

// The physical entries of the runner's answer, by name (each name's in manifest order).
Result<std::vector<LanceEntry>> ParseEntries(const nlohmann::json& j) {
  if (!j.is_array()) return Status::Corruption("the Lance runner's answer has no index entries");
  if (j.size() > kMaxLanceEntries) {
    return Status::ResourceExhausted("the Lance dataset has " + std::to_string(j.size()) +
                                     " index entries, more than " + std::to_string(kMaxLanceEntries));
  }
  std::vector<LanceEntry> out;
  for (const auto& e : j) {
    if (!e.is_object() || !e.value("name", nlohmann::json()).is_string()) {
      return Status::Corruption("the Lance runner's answer has an index entry without a name");
    }
    LanceEntry entry;
    VIGIL_ASSIGN_OR_RETURN(entry.name, ExternalString(e["name"], "an index name"));
    VIGIL_ASSIGN_OR_RETURN(entry.uuid, ExternalString(e.value("uuid", nlohmann::json()), "an index UUID"));
    const nlohmann::json ids = e.value("field_ids", nlohmann::json());
    VIGIL_ASSIGN_OR_RETURN(entry.columns, ParseColumns(e.value("columns", nlohmann::json()), true));
    if (!ids.is_array() || ids.size() != entry.columns.size()) {
      return Status::Corruption("the Lance runner's answer has an index entry whose field ids are not its columns'");
    }
    for (const auto& id : ids) {
      if (!id.is_number_integer() || id.get<int64_t>() < INT32_MIN || id.get<int64_t>() > INT32_MAX) {
        return Status::Corruption("the Lance runner's answer has an index entry with a field id that is not an int32");
      }
      entry.field_ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
    const std::optional<int64_t> covers = OptionalInt(e, "dataset_version");
    if (!covers || *covers < 0) {
      return Status::Corruption("the Lance runner's answer has an index entry without a dataset version");
    }
    entry.dataset_version = *covers;
    VIGIL_ASSIGN_OR_RETURN(entry.type_url, OptionalExternalString(e, "type_url", "an index type URL"));
    out.push_back(std::move(entry));
  }
  std::stable_sort(out.begin(), out.end(), [](const LanceEntry& a, const LanceEntry& b) { return a.name < b.name; });
  return out;
}

// Each entry's consistency and, when it is not CONSISTENT, why.
std::vector<std::pair<LanceConsistency, std::string>> JoinEntries(const LanceSnapshot& snap) {
  std::map<std::string, std::vector<const LanceEntry*>> by_uuid;
  std::map<std::string, const LanceEntry*> first_of_name;
  for (const LanceEntry& e : snap.entries) {
    by_uuid[e.uuid].push_back(&e);
    first_of_name.emplace(e.name, &e);
  }
  std::vector<std::pair<LanceConsistency, std::string>> out;
  for (const LanceEntry& e : snap.entries) {
    const std::string which = "entry " + e.uuid + " of index '" + e.name + "'";
    auto mismatch = [&](const std::string& why) { out.emplace_back(LanceConsistency::kMismatch, which + " " + why); };
    const auto unresolved = std::find_if(e.columns.begin(), e.columns.end(), [](const auto& c) { return !c; });
    const std::vector<const LanceEntry*>& same_uuid = by_uuid[e.uuid];
    const auto other = std::find_if(same_uuid.begin(), same_uuid.end(), [&](const LanceEntry* o) { return o != &e; });
    const LanceEntry* first = first_of_name[e.name];
    const auto logical =
        std::find_if(snap.indexes.begin(), snap.indexes.end(), [&](const LanceIndex& ix) { return ix.name == e.name; });
    if (unresolved != e.columns.end()) {
      mismatch("has field id " + std::to_string(e.field_ids[static_cast<size_t>(unresolved - e.columns.begin())]) +
               ", which no field of version " + std::to_string(snap.version) + " has");
    } else if (other != same_uuid.end()) {
      mismatch((*other)->name == e.name ? "appears twice"
                                        : "has a UUID that also belongs to index '" + (*other)->name + "'");
    } else if (first->field_ids != e.field_ids || first->type_url != e.type_url) {
      mismatch("disagrees with entry " + first->uuid + " of the same name on its fields or type");
    } else if (logical == snap.indexes.end()) {
      out.emplace_back(LanceConsistency::kOrphan, which + " belongs to no index LanceDB lists");
    } else if (logical->type_url && e.type_url && *logical->type_url != *e.type_url) {
      mismatch("has another type than LanceDB lists for the index");
    } else {
      out.emplace_back(LanceConsistency::kConsistent, "");
    }
  }
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

LanceRunnerOptions ReadOptions(const LanceConfig& config) {
  LanceRunnerOptions o = RunnerOptions(config, std::chrono::seconds(config.read_timeout_seconds));
  o.timeout_setting = "[lance] read_timeout_seconds";
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
  VIGIL_ASSIGN_OR_RETURN(s.entries, ParseEntries(r.value("entries", nlohmann::json())));
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
  static const std::regex kVector(R"(^FixedSizeList\[(\d{1,6})\]<Float(16|32)>$)");
  std::cmatch m;
  const std::string s(arrow_type);
  if (!std::regex_match(s.c_str(), m, kVector)) return std::nullopt;
  return std::stoll(m[1].str());
}

Status CheckIndexable(const std::vector<LanceField>& fields, const std::string& column, index::IndexType type) {
  auto it = std::find_if(fields.begin(), fields.end(), [&](const LanceField& f) { return f.name == column; });
  if (it == fields.end()) return Status::InvalidArgument("the Lance dataset has no column '" + column + "'");
  const std::string& t = it->type;
  static const std::regex kIntegral(R"(^U?[Ii]nt(8|16|32|64)$)");
  static const std::regex kFloating(R"(^Float(16|32|64)$)");
  const bool is_string = t == "Utf8" || t == "LargeUtf8";
  const bool is_integral = std::regex_match(t, kIntegral);
  const bool is_date = t.starts_with("Date32<") || t.starts_with("Date64<");
  bool ok = false;
  std::string wants;
  switch (type) {
    case index::IndexType::kIvfPq:
      ok = VectorDimension(t).has_value();
      wants = "a FixedSizeList of Float16 or Float32 (a vector)";
      break;
    case index::IndexType::kFts:
      ok = is_string;
      wants = "a string";
      break;
    case index::IndexType::kBtree:
      ok = is_integral || std::regex_match(t, kFloating) || t.starts_with("Decimal") || is_string || is_date ||
           t.starts_with("Timestamp<");
      wants = "an integral, floating, decimal, string, date or timestamp";
      break;
    case index::IndexType::kBitmap:
      ok = t == "Bool" || is_integral || is_string || is_date;
      wants = "a boolean, integral, string or date";
      break;
  }
  const std::string using_type = "USING " + std::string(index::IndexTypeName(type));
  if (!ok) {
    return Status::InvalidArgument(using_type + " needs " + wants + " column; Lance column '" + column + "' is " + t);
  }
  if (it->nullable) {
    return Status::InvalidArgument(using_type + " needs a NOT NULL column; Lance column '" + column + "' is nullable");
  }
  if (type == index::IndexType::kIvfPq && it->element_nullable.value_or(true)) {
    // Lance's schema cannot declare non-null elements (LanceField::element_nullable): the data decides.
    if (!it->null_elements) {
      return Status::InvalidArgument(using_type +
                                     " needs non-null Float16 or Float32 elements; the elements of Lance "
                                     "column '" +
                                     column + "' may be null and were not counted");
    }
    if (*it->null_elements > 0) {
      return Status::InvalidArgument(using_type + " needs non-null Float16 or Float32 elements; Lance column '" +
                                     column + "' holds " + std::to_string(*it->null_elements) + " null elements");
    }
  }
  return Status::OK();
}

std::string_view LanceConsistencyName(LanceConsistency c) {
  switch (c) {
    case LanceConsistency::kConsistent:
      return "CONSISTENT";
    case LanceConsistency::kOrphan:
      return "ORPHAN";
    case LanceConsistency::kMismatch:
      return "MISMATCH";
  }
  return "?";
}

std::vector<LanceConsistency> EntryConsistency(const LanceSnapshot& snap) {
  std::vector<LanceConsistency> out;
  for (const auto& [c, why] : JoinEntries(snap)) out.push_back(c);
  return out;
}

Status CheckLogicalMetadata(const LanceSnapshot& snap) {
  auto inconsistent = [](const std::string& why) {
    return Status::FailedPrecondition("LANCE_INDEX_METADATA_INCONSISTENT: " + why);
  };
  for (const auto& [c, why] : JoinEntries(snap)) {
    if (c != LanceConsistency::kConsistent) return inconsistent(why);
  }
  for (const LanceIndex& ix : snap.indexes) {
    int64_t count = 0;
    bool has_uuid = false;
    for (const LanceEntry& e : snap.entries) {
      if (e.name != ix.name) continue;
      ++count;
      has_uuid = has_uuid || e.uuid == ix.uuid;
    }
    if (count == 0) return inconsistent("index '" + ix.name + "' has no physical entry");
    if (!has_uuid) return inconsistent("the UUID LanceDB lists for index '" + ix.name + "' is none of its entries'");
    if (ix.segments && *ix.segments != count) {
      return inconsistent("LanceDB counts " + std::to_string(*ix.segments) + " entries of index '" + ix.name +
                          "', its manifest holds " + std::to_string(count));
    }
  }
  return Status::OK();
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
