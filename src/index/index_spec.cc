#include "vigil/index/index_spec.h"

#include <limits>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "vigil/common/bounds.h"
#include "vigil/index/ivf_pq.h"

namespace vigil::index {

namespace {

Result<uint32_t> PositiveInt(const std::map<std::string, std::string>& props, const std::string& key, bool required,
                             uint32_t def) {
  auto it = props.find(key);
  if (it == props.end()) {
    if (required) return Status::InvalidArgument("property \"" + key + "\" is required");
    return def;
  }
  const std::string& s = it->second;
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) {
    return Status::InvalidArgument("property \"" + key + "\" must be a positive integer, got \"" + s + "\"");
  }
  uint32_t v = static_cast<uint32_t>(std::stoul(s));
  if (v == 0) return Status::InvalidArgument("property \"" + key + "\" must be positive");
  return v;
}

Status CheckKeys(const std::map<std::string, std::string>& props, std::initializer_list<const char*> allowed,
                 std::string_view type) {
  for (const auto& [k, v] : props) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || k == a;
    if (!ok) {
      return Status::InvalidArgument("unknown property \"" + k + "\" for index type " + std::string(type));
    }
  }
  return Status::OK();
}

}  // namespace

std::string CapText(std::string_view key, uint64_t value, uint64_t default_value) {
  std::string out = "caps." + std::string(key) + " = " + std::to_string(value);
  if (value == default_value) {
    return out + " (the default; raise it with " + std::string(key) + " under [caps] in vigil.toml)";
  }
  return out + " (set in vigil.toml)";
}

namespace {

constexpr IndexCaps kDefaultCaps;
constexpr IvfPqParams kDefaultIvfPq;

Status CheckColumn(IndexType type, const Field& f) {
  const TypeId t = f.type.id;
  bool ok = false;
  switch (type) {
    case IndexType::kIvfPq:
      ok = t == TypeId::kVector;
      break;
    case IndexType::kBtree:
      ok = f.type.IsNumeric() || t == TypeId::kString || t == TypeId::kDate || t == TypeId::kTimestamp;
      break;
    case IndexType::kBitmap:
      ok = t == TypeId::kBool || f.type.IsInteger() || t == TypeId::kString || t == TypeId::kDate;
      break;
    case IndexType::kFts:
      ok = t == TypeId::kString;
      break;
  }
  if (!ok) {
    return Status::InvalidArgument("index type " + std::string(IndexTypeName(type)) + " cannot index column '" +
                                   f.name + "' of type " + f.type.ToString());
  }
  if (f.nullable) {
    return Status::InvalidArgument("index type " + std::string(IndexTypeName(type)) + " needs a NOT NULL column; '" +
                                   f.name + "' is nullable");
  }
  return Status::OK();
}

Result<IvfPqParams> ValidateIvfPq(const std::map<std::string, std::string>& props, const Field& field, uint64_t rows,
                                  const IndexCaps& caps) {
  VIGIL_RETURN_IF_ERROR(CheckKeys(
      props, {"index_type", "metric", "num_partitions", "num_sub_vectors", "num_bits", "sample_rate", "max_iterations"},
      "IVF_PQ"));
  auto it = props.find("index_type");
  if (it == props.end()) return Status::InvalidArgument("property \"index_type\" is required for USING ANN");
  if (it->second != "IVF_PQ") {
    return Status::InvalidArgument("unsupported index_type \"" + it->second + "\"; supported: IVF_PQ");
  }
  IvfPqParams p;
  auto m = props.find("metric");
  if (m == props.end()) return Status::InvalidArgument("property \"metric\" is required (l2, cosine or dot)");
  VIGIL_ASSIGN_OR_RETURN(p.metric, ParseMetric(m->second));
  VIGIL_ASSIGN_OR_RETURN(p.num_partitions, PositiveInt(props, "num_partitions", true, 0));
  VIGIL_ASSIGN_OR_RETURN(p.num_sub_vectors, PositiveInt(props, "num_sub_vectors", true, 0));
  VIGIL_ASSIGN_OR_RETURN(p.num_bits, PositiveInt(props, "num_bits", false, 8));
  VIGIL_ASSIGN_OR_RETURN(p.sample_rate, PositiveInt(props, "sample_rate", false, kDefaultIvfPq.sample_rate));
  VIGIL_ASSIGN_OR_RETURN(p.max_iterations, PositiveInt(props, "max_iterations", false, kDefaultIvfPq.max_iterations));
  const uint32_t dim = field.type.dim;
  VIGIL_RETURN_IF_ERROR(CheckIvfPqBits(p.num_bits, p.num_sub_vectors));
  if (dim > caps.max_vector_dimension) {
    return Status::InvalidArgument(
        "vector dimension " + std::to_string(dim) + " of column '" + field.name + "' exceeds " +
        CapText("max_vector_dimension", caps.max_vector_dimension, kDefaultCaps.max_vector_dimension));
  }
  if (p.num_partitions > caps.max_partitions) {
    return Status::InvalidArgument("num_partitions " + std::to_string(p.num_partitions) + " exceeds " +
                                   CapText("max_partitions", caps.max_partitions, kDefaultCaps.max_partitions));
  }
  if (p.num_sub_vectors > caps.max_sub_vectors) {
    return Status::InvalidArgument("num_sub_vectors " + std::to_string(p.num_sub_vectors) + " exceeds " +
                                   CapText("max_sub_vectors", caps.max_sub_vectors, kDefaultCaps.max_sub_vectors));
  }
  if (dim % p.num_sub_vectors != 0) {
    return Status::InvalidArgument("num_sub_vectors " + std::to_string(p.num_sub_vectors) +
                                   " does not divide the dimension " + std::to_string(dim));
  }
  if (p.num_partitions > rows) {
    return Status::InvalidArgument("num_partitions " + std::to_string(p.num_partitions) + " exceeds the " +
                                   std::to_string(rows) + " rows of the snapshot");
  }
  if (rows < 256) {
    return Status::InvalidArgument("IVF_PQ needs at least 256 rows to train; the snapshot has " + std::to_string(rows));
  }
  if (p.max_iterations > 1000) return Status::InvalidArgument("max_iterations must be at most 1000");
  return p;
}

}  // namespace

std::string_view IndexTypeName(IndexType t) {
  switch (t) {
    case IndexType::kIvfPq:
      return "IVF_PQ";
    case IndexType::kBtree:
      return "BTREE";
    case IndexType::kBitmap:
      return "BITMAP";
    case IndexType::kFts:
      return "FTS";
  }
  return "?";
}

Result<IndexType> ParseIndexType(std::string_view name) {
  for (IndexType t : {IndexType::kIvfPq, IndexType::kBtree, IndexType::kBitmap, IndexType::kFts}) {
    if (IndexTypeName(t) == name) return t;
  }
  return Status::InvalidArgument("unknown index type '" + std::string(name) + "'");
}

std::string_view MetricName(Metric m) {
  switch (m) {
    case Metric::kL2:
      return "l2";
    case Metric::kCosine:
      return "cosine";
    case Metric::kDot:
      return "dot";
  }
  return "?";
}

Result<Metric> ParseMetric(std::string_view name) {
  for (Metric m : {Metric::kL2, Metric::kCosine, Metric::kDot}) {
    if (MetricName(m) == name) return m;
  }
  return Status::InvalidArgument("unknown metric \"" + std::string(name) + "\"; supported: l2, cosine, dot");
}

Result<IndexSpec> ValidateIndexSpec(IndexType type, const std::map<std::string, std::string>& properties,
                                    const Field& field, uint64_t snapshot_rows, uint64_t snapshot_fragments,
                                    const IndexCaps& caps) {
  VIGIL_RETURN_IF_ERROR(CheckColumn(type, field));
  if (snapshot_rows > caps.max_rows) {
    return Status::InvalidArgument("the table has " + std::to_string(snapshot_rows) + " rows, more than " +
                                   CapText("max_rows", caps.max_rows, kDefaultCaps.max_rows));
  }
  if (snapshot_fragments > caps.max_fragments) {
    return Status::InvalidArgument("the table has " + std::to_string(snapshot_fragments) + " fragments, more than " +
                                   CapText("max_fragments", caps.max_fragments, kDefaultCaps.max_fragments));
  }
  IndexSpec spec;
  spec.type = type;
  switch (type) {
    case IndexType::kIvfPq: {
      VIGIL_ASSIGN_OR_RETURN(spec.ivf_pq, ValidateIvfPq(properties, field, snapshot_rows, caps));
      break;
    }
    case IndexType::kBtree:
    case IndexType::kBitmap:
      VIGIL_RETURN_IF_ERROR(CheckKeys(properties, {}, IndexTypeName(type)));
      break;
    case IndexType::kFts: {
      VIGIL_RETURN_IF_ERROR(CheckKeys(properties, {"tokenizer"}, "FTS"));
      auto it = properties.find("tokenizer");
      if (it != properties.end()) {
        const std::string& tok = it->second;
        if (tok != "unicode61" && tok != "porter" && tok != "ascii" && tok != "trigram") {
          return Status::InvalidArgument("unknown tokenizer \"" + tok +
                                         "\"; supported: unicode61, porter, ascii, trigram");
        }
        spec.fts.tokenizer = tok;
      }
      break;
    }
  }
  return spec;
}

Status CheckIndexCaps(const IndexCaps& caps) {
  auto check = [](std::string_view key, uint64_t value, uint64_t limit) -> Status {
    if (value >= 1 && value <= limit) return Status::OK();
    return Status::InvalidArgument("caps." + std::string(key) + " = " + std::to_string(value) + " is outside 1.." +
                                   std::to_string(limit) + ", what this build can honour");
  };
  const IndexCaps& lim = kIndexCapsLimits;
  VIGIL_RETURN_IF_ERROR(check("max_rows", caps.max_rows, lim.max_rows));
  VIGIL_RETURN_IF_ERROR(check("max_fragments", caps.max_fragments, lim.max_fragments));
  VIGIL_RETURN_IF_ERROR(check("max_vector_dimension", caps.max_vector_dimension, lim.max_vector_dimension));
  VIGIL_RETURN_IF_ERROR(check("max_partitions", caps.max_partitions, lim.max_partitions));
  VIGIL_RETURN_IF_ERROR(check("max_sub_vectors", caps.max_sub_vectors, lim.max_sub_vectors));
  if (caps.max_sub_vectors > caps.max_vector_dimension) {
    return Status::InvalidArgument("caps.max_sub_vectors = " + std::to_string(caps.max_sub_vectors) +
                                   " exceeds caps.max_vector_dimension = " + std::to_string(caps.max_vector_dimension));
  }
  return Status::OK();
}

namespace {

nlohmann::json SpecJson(const IndexSpec& spec) {
  nlohmann::json j = nlohmann::json::object();
  if (spec.type == IndexType::kIvfPq) {
    const IvfPqParams& p = spec.ivf_pq;
    j["metric_type"] = std::string(MetricName(p.metric));
    j["num_partitions"] = p.num_partitions;
    j["num_sub_vectors"] = p.num_sub_vectors;
    j["num_bits"] = p.num_bits;
    j["sample_rate"] = p.sample_rate;
    j["max_iterations"] = p.max_iterations;
  } else if (spec.type == IndexType::kFts) {
    j["tokenizer"] = spec.fts.tokenizer;
  }
  return j;
}

std::string Dump(const nlohmann::json& j) {
  std::string out = j.dump();  // keys sorted: deterministic
  VIGIL_CHECK(out.size() <= bounds::kMaxPropertiesJsonBytes);
  return out;
}

}  // namespace

std::string SpecToPropertiesJson(const IndexSpec& spec) { return Dump(SpecJson(spec)); }

std::string JobPropertiesJson(const IndexSpec& spec, const IndexCaps& caps) {
  nlohmann::json j = SpecJson(spec);
  if (!(caps == kDefaultCaps)) {
    j["admitted_caps"] = {{"max_rows", caps.max_rows},
                          {"max_fragments", caps.max_fragments},
                          {"max_vector_dimension", caps.max_vector_dimension},
                          {"max_partitions", caps.max_partitions},
                          {"max_sub_vectors", caps.max_sub_vectors}};
  }
  return Dump(j);
}

Result<IndexCaps> AdmittedCapsFromJson(std::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::Corruption("job properties are not a JSON object");
  IndexCaps caps;
  if (!j.contains("admitted_caps")) return caps;
  const nlohmann::json& c = j["admitted_caps"];
  if (!c.is_object()) return Status::Corruption("job properties: \"admitted_caps\" is not an object");
  auto get = [&](const char* key, auto* out) -> Status {
    using T = std::remove_pointer_t<decltype(out)>;
    if (!c.contains(key) || !c[key].is_number_unsigned() || c[key].get<uint64_t>() > std::numeric_limits<T>::max()) {
      return Status::Corruption(std::string("job properties: admitted_caps lack \"") + key + "\"");
    }
    *out = static_cast<T>(c[key].get<uint64_t>());
    return Status::OK();
  };
  VIGIL_RETURN_IF_ERROR(get("max_rows", &caps.max_rows));
  VIGIL_RETURN_IF_ERROR(get("max_fragments", &caps.max_fragments));
  VIGIL_RETURN_IF_ERROR(get("max_vector_dimension", &caps.max_vector_dimension));
  VIGIL_RETURN_IF_ERROR(get("max_partitions", &caps.max_partitions));
  VIGIL_RETURN_IF_ERROR(get("max_sub_vectors", &caps.max_sub_vectors));
  return caps;
}

std::string DescribeDefinition(IndexType type, const std::vector<std::string>& columns, const IndexSpec& spec) {
  std::string cols;
  for (const auto& c : columns) cols += (cols.empty() ? "" : ", ") + c;
  return std::string(IndexTypeName(type)) + " (" + cols + ") " + SpecToPropertiesJson(spec);
}

Result<IndexSpec> SpecFromPropertiesJson(IndexType type, std::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::Corruption("index properties are not a JSON object");
  IndexSpec spec;
  spec.type = type;
  auto get_uint = [&](const char* key, uint32_t* out) -> Status {
    if (!j.contains(key) || !j[key].is_number_unsigned()) {
      return Status::Corruption(std::string("index properties lack \"") + key + "\"");
    }
    *out = j[key].get<uint32_t>();
    return Status::OK();
  };
  if (type == IndexType::kIvfPq) {
    if (!j.contains("metric_type") || !j["metric_type"].is_string()) {
      return Status::Corruption("index properties lack \"metric_type\"");
    }
    auto m = ParseMetric(j["metric_type"].get<std::string>());
    if (!m.ok()) return Status::Corruption(m.status().message());
    spec.ivf_pq.metric = *m;
    VIGIL_RETURN_IF_ERROR(get_uint("num_partitions", &spec.ivf_pq.num_partitions));
    VIGIL_RETURN_IF_ERROR(get_uint("num_sub_vectors", &spec.ivf_pq.num_sub_vectors));
    VIGIL_RETURN_IF_ERROR(get_uint("num_bits", &spec.ivf_pq.num_bits));
    // Absent in properties written before they were always kept: those builds used the
    // defaults of their time.
    spec.ivf_pq.sample_rate = kLegacyIvfPqSampleRate;
    spec.ivf_pq.max_iterations = kLegacyIvfPqMaxIterations;
    if (j.contains("sample_rate")) VIGIL_RETURN_IF_ERROR(get_uint("sample_rate", &spec.ivf_pq.sample_rate));
    if (j.contains("max_iterations")) VIGIL_RETURN_IF_ERROR(get_uint("max_iterations", &spec.ivf_pq.max_iterations));
  } else if (type == IndexType::kFts) {
    if (!j.contains("tokenizer") || !j["tokenizer"].is_string()) {
      return Status::Corruption("index properties lack \"tokenizer\"");
    }
    spec.fts.tokenizer = j["tokenizer"].get<std::string>();
  }
  return spec;
}

Result<std::map<std::string, std::string>> RequestPropertiesFromJson(IndexType type, std::string_view json) {
  VIGIL_ASSIGN_OR_RETURN(IndexSpec parsed, SpecFromPropertiesJson(type, json));
  std::map<std::string, std::string> props;
  if (type == IndexType::kIvfPq) {
    props = {{"index_type", "IVF_PQ"},
             {"metric", std::string(MetricName(parsed.ivf_pq.metric))},
             {"num_partitions", std::to_string(parsed.ivf_pq.num_partitions)},
             {"num_sub_vectors", std::to_string(parsed.ivf_pq.num_sub_vectors)},
             {"num_bits", std::to_string(parsed.ivf_pq.num_bits)},
             {"sample_rate", std::to_string(parsed.ivf_pq.sample_rate)},
             {"max_iterations", std::to_string(parsed.ivf_pq.max_iterations)}};
  } else if (type == IndexType::kFts) {
    props = {{"tokenizer", parsed.fts.tokenizer}};
  }
  return props;
}

}  // namespace vigil::index
