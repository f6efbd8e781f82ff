// Deterministic synthetic data for tests, the demo and benchmarks: rows of
// (id BIGINT, category STRING, ts TIMESTAMP, body STRING, emb VECTOR(FLOAT32, dim)),
// all NOT NULL. Embeddings are a fixed random linear map of a low-dimensional
// latent (centred per category) plus small noise, so they cluster like real
// embeddings. Categories are Zipf-skewed; bodies are ~110 words drawn from a
// Zipf vocabulary. Every row is a pure function of (seed, row number), so any
// range of rows can be generated independently and in any order.
//
// Thread safety: a DataGenerator is immutable after Make(); its const methods
// may be called concurrently. Readers are single-threaded.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vigil/common/file_system.h"
#include "vigil/common/status.h"
#include "vigil/storage/column.h"
#include "vigil/storage/schema.h"

namespace vigil {

struct DatagenOptions {
  uint64_t rows = 10000;
  uint32_t dim = 128;
  uint32_t latent_dim = 16;
  uint64_t seed = 42;
  // Subset of {"id", "category", "ts", "body", "emb"}, in schema order; empty: all five.
  std::vector<std::string> columns;
  uint32_t num_categories = 100;
  uint32_t vocabulary = 5000;
  uint32_t words_per_body = 110;            // mean; each body has 80%..120% of it
  float noise = 0.05f;                      // noise standard deviation relative to the signal
  int64_t start_micros = 1704067200000000;  // 2024-01-01T00:00:00Z; row i is ~i seconds later
  size_t batch_rows = 16384;
};

class DataGenerator : public std::enable_shared_from_this<DataGenerator> {
 public:
  // Validates options (known unique columns, dims >= 1 and <= bounds, ...).
  static Result<std::shared_ptr<const DataGenerator>> Make(DatagenOptions options);

  const DatagenOptions& options() const { return options_; }
  const SchemaPtr& schema() const { return schema_; }

  // Rows [first, first + n) of the data set (n may run past options().rows).
  RecordBatch Batch(uint64_t first, size_t n) const;
  // The embedding of row `row` into `out` (dim floats).
  void Embedding(uint64_t row, float* out) const;
  std::string Category(uint64_t row) const;
  int64_t Timestamp(uint64_t row) const;
  std::string Body(uint64_t row) const;
  // Name of category `c` ("cat_007"); category 0 is the most frequent.
  static std::string CategoryName(uint32_t c);

  // All rows, in batches of options().batch_rows (the reader shares this generator).
  std::unique_ptr<RecordBatchReader> NewReader() const;

 private:
  DataGenerator() = default;
  uint32_t CategoryIndex(uint64_t row) const;

  DatagenOptions options_;
  SchemaPtr schema_;
  std::vector<float> mixing_;         // dim x latent_dim, row-major
  std::vector<float> centers_;        // num_categories x latent_dim
  std::vector<double> category_cdf_;  // Zipf(1.1) over categories
  std::vector<double> word_cdf_;      // Zipf(1.0) over the vocabulary
  std::vector<std::string> words_;
};

// Writers of generated embeddings as input files (through `fs`, null: default).
// The file must not exist. Only the embedding is written; ids are positions.
Status WriteFvecs(const DataGenerator& gen, const std::string& path, FileSystem* fs = nullptr);
// dtype '<f4' (kFloat32) or '<f2' (kFloat16), format version 1.
Status WriteNpy(const DataGenerator& gen, const std::string& path, VectorElement element = VectorElement::kFloat32,
                FileSystem* fs = nullptr);
// Every generated column as JSON Lines (timestamps as ISO-8601 text, vectors as arrays).
Status WriteJsonl(const DataGenerator& gen, const std::string& path, FileSystem* fs = nullptr);
// Every generated column as CSV with a header (vectors as "[...]" quoted fields).
Status WriteCsv(const DataGenerator& gen, const std::string& path, FileSystem* fs = nullptr);

}  // namespace vigil
