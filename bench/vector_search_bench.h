// Pieces shared by the vector-search benchmarks: a root holding generated rows
// for the SQL path, scripts of vector_search statements for the shell, the shell
// timed as one process, and recall against exact results.
// Thread safety: plain functions; call them from one thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <faiss/Index.h>

#include "bench/bench.h"
#include "vigil/common/status.h"
#include "vigil/ingest/datagen.h"

namespace vigil::bench {

// The (id, emb) rows of a vector benchmark, shaped by its options rows (`default_rows`),
// dim (128), latent_dim (16) and noise (0.05).
DatagenOptions VectorDataOptions(const BenchArgs& args, uint64_t default_rows);

// Creates a root at `dir` whose table bench.<table> holds the generator's rows.
Status MakeBenchRoot(const DataGenerator& gen, const std::string& dir, const std::string& table);
// MakeBenchRoot with the table bench.vectors.
Status MakeVectorRoot(const DataGenerator& gen, const std::string& dir);

// How the shell's searches pass each query vector.
enum class ShellVectors {
  kLiteral,   // a SELECT per query, the vector a '[...]' text literal
  kPrepared,  // PREPARE once, then EXECUTE per query with the vector as a FLOAT32 blob X'...'
};

// A script of one vector_search statement on bench.vectors per query: `count` queries of
// `dim` floats, top `k`, `options_json` (e.g. {"nprobes": 20}) as the options argument.
std::string VectorSearchScript(const std::vector<float>& queries, uint32_t dim, uint64_t count, uint32_t k,
                               const std::string& options_json, ShellVectors how);

struct ShellSearch {
  double qps = 0;
  std::vector<std::vector<int64_t>> ids;  // per statement, the ids it returned
};

// `vigil sql --csv -f script` on the root, timed as a whole (process start, opening the
// root, every statement, printing); Internal unless every one of `queries` statements answered.
Result<ShellSearch> TimeShellSearch(const std::string& root_dir, const std::string& script, uint64_t queries);

// Mean recall@k of `got` (ids per query) against `exact` (k ids per query, row-major).
double RecallAtK(const std::vector<std::vector<int64_t>>& got, const std::vector<faiss::Index::idx_t>& exact,
                 uint32_t k);

}  // namespace vigil::bench
