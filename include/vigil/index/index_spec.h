// Index types, their parameters and the type/property matrix (seed 000
// section 2.3, plus FTS): validation of a CREATE INDEX request against the
// column it names, before any job or file exists. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "vigil/common/status.h"
#include "vigil/storage/schema.h"

namespace vigil::index {

enum class IndexType { kIvfPq, kBtree, kBitmap, kFts };
enum class Metric { kL2, kCosine, kDot };

std::string_view IndexTypeName(IndexType t);   // "IVF_PQ", "BTREE", "BITMAP", "FTS"
Result<IndexType> ParseIndexType(std::string_view name);
std::string_view MetricName(Metric m);         // "l2", "cosine", "dot"
Result<Metric> ParseMetric(std::string_view name);

struct IvfPqParams {
  Metric metric = Metric::kL2;
  uint32_t num_partitions = 0;
  uint32_t num_sub_vectors = 0;
  uint32_t num_bits = 8;
  uint32_t sample_rate = 256;     // training rows per partition
  uint32_t max_iterations = 50;   // k-means iterations
};

struct FtsParams {
  std::string tokenizer = "unicode61";  // an FTS5 tokenizer spec: unicode61 | porter | ascii | trigram
};

struct IndexSpec {
  IndexType type = IndexType::kBtree;
  IvfPqParams ivf_pq;   // type == kIvfPq
  FtsParams fts;        // type == kFts
};

// Administrator safety caps applied before any native call (seed 000 section 10.2).
struct IndexCaps {
  uint64_t max_rows = 100'000'000;
  uint64_t max_fragments = 100'000;
  uint32_t max_vector_dimension = 4096;
  uint32_t max_partitions = 65536;
  uint32_t max_sub_vectors = 1024;
};

// Validates `properties` for `type` on `field` (column contract, allowed keys and
// values, caps) given the snapshot's row count. InvalidArgument names the problem.
Result<IndexSpec> ValidateIndexSpec(IndexType type, const std::map<std::string, std::string>& properties,
                                    const Field& field, uint64_t snapshot_rows, uint64_t snapshot_fragments,
                                    const IndexCaps& caps = {});

// Deterministic, allowlisted JSON of a spec (<= 400 bytes), as stored in the manifest.
std::string SpecToPropertiesJson(const IndexSpec& spec);
// Parses properties JSON from a manifest; Corruption when malformed.
Result<IndexSpec> SpecFromPropertiesJson(IndexType type, std::string_view json);

// The build-request properties (CreateIndexRequest::properties) that reproduce
// the spec stored as `json` (SpecToPropertiesJson); Corruption for bad json.
Result<std::map<std::string, std::string>> RequestPropertiesFromJson(IndexType type, std::string_view json);

}  // namespace vigil::index
