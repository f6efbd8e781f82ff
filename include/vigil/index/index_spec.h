// Index types, their parameters and the type/property matrix (seed 000
// section 2.3, plus FTS): validation of a CREATE INDEX request against the
// column it names, before any job or file exists. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/index_caps.h"
#include "vigil/common/status.h"
#include "vigil/storage/schema.h"

namespace vigil::index {

enum class IndexType { kIvfPq, kBtree, kBitmap, kFts };
enum class Metric { kL2, kCosine, kDot };

std::string_view IndexTypeName(IndexType t);  // "IVF_PQ", "BTREE", "BITMAP", "FTS"
Result<IndexType> ParseIndexType(std::string_view name);
std::string_view MetricName(Metric m);  // "l2", "cosine", "dot"
Result<Metric> ParseMetric(std::string_view name);

struct IvfPqParams {
  Metric metric = Metric::kL2;
  uint32_t num_partitions = 0;
  uint32_t num_sub_vectors = 0;
  uint32_t num_bits = 8;
  // Chosen by `vigil bench index-ivfpq` on two data shapes (README): FAISS's own
  // defaults; 50 iterations cost twice the training for no recall, 128 rows lost 0.015.
  uint32_t sample_rate = 256;    // training rows per partition
  uint32_t max_iterations = 25;  // k-means iterations (coarse and PQ)

  bool operator==(const IvfPqParams&) const = default;
};

// What builds used when the stored properties did not name these (before they always did).
constexpr uint32_t kLegacyIvfPqSampleRate = 256;
constexpr uint32_t kLegacyIvfPqMaxIterations = 50;

struct FtsParams {
  std::string tokenizer = "unicode61";  // an FTS5 tokenizer spec: unicode61 | porter | ascii | trigram

  bool operator==(const FtsParams&) const = default;
};

struct IndexSpec {
  IndexType type = IndexType::kBtree;
  IvfPqParams ivf_pq;  // type == kIvfPq
  FtsParams fts;       // type == kFts

  bool operator==(const IndexSpec&) const = default;
};

// Validates `properties` for `type` on `field` (column contract, allowed keys and
// values, caps) given the snapshot's row count. InvalidArgument names the problem;
// an exceeded cap is named by its vigil.toml key, value and source.
// "caps.max_partitions = 65536 (the default; ...)": a cap as the operator sets it.
std::string CapText(std::string_view key, uint64_t value, uint64_t default_value);

Result<IndexSpec> ValidateIndexSpec(IndexType type, const std::map<std::string, std::string>& properties,
                                    const Field& field, uint64_t snapshot_rows, uint64_t snapshot_fragments,
                                    const IndexCaps& caps = {});

// OK when every cap is positive and within kIndexCapsLimits and max_sub_vectors
// does not exceed max_vector_dimension; InvalidArgument naming the cap otherwise.
Status CheckIndexCaps(const IndexCaps& caps);

// Deterministic, allowlisted JSON of a spec (<= 400 bytes), as stored in the
// manifest; every property is named, the training ones included.
std::string SpecToPropertiesJson(const IndexSpec& spec);
// Parses properties JSON from a manifest or a job (absent training keys are the
// kLegacy* values; "admitted_caps" is ignored); Corruption when malformed.
Result<IndexSpec> SpecFromPropertiesJson(IndexType type, std::string_view json);

// The build-request properties (CreateIndexRequest::properties) that reproduce
// the spec stored as `json` (SpecToPropertiesJson); Corruption for bad json.
Result<std::map<std::string, std::string>> RequestPropertiesFromJson(IndexType type, std::string_view json);

// The properties of a CREATE / REPLACE job (<= 400 bytes): SpecToPropertiesJson
// plus, when they are not IndexCaps{}, the caps it was admitted under ("admitted_caps").
std::string JobPropertiesJson(const IndexSpec& spec, const IndexCaps& caps);
// The admitted caps of a job's properties: IndexCaps{} when absent, Corruption when malformed.
Result<IndexCaps> AdmittedCapsFromJson(std::string_view json);

// "IVF_PQ (emb) {...}": a definition as IF NOT EXISTS compares it, for messages.
std::string DescribeDefinition(IndexType type, const std::vector<std::string>& columns, const IndexSpec& spec);

}  // namespace vigil::index
