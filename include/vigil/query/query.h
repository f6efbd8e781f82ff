// Queries over one table snapshot: scalar filters, vector search and full-text
// search. Each uses index segments for the fragments they cover and scans the
// fragments they do not, applies the snapshot's deletions to both, and merges
// the parts exactly. An optional IoRecorder receives the segments used and the
// physical reads made by the calling thread.
// Thread safety: functions are reentrant; snapshots are shared read-only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <roaring/roaring64map.hh>

#include "vigil/common/status.h"
#include "vigil/index/fts.h"
#include "vigil/index/index_spec.h"
#include "vigil/index/scalar.h"
#include "vigil/query/io_recorder.h"
#include "vigil/query/snapshot.h"

namespace vigil::query {

struct ColumnPredicate {
  std::string column;
  index::ScalarPredicate predicate;
};

// Live rows satisfying every conjunct (AND). Conjuncts on a column with a
// BTREE or BITMAP index that supports the operator use its segments.
Result<Roaring64Map> FilterRows(const TableSnapshot& snapshot, const std::vector<ColumnPredicate>& conjuncts,
                                IoRecorder* recorder = nullptr);

struct VectorQueryOptions {
  uint32_t k = 10;
  uint32_t nprobes = 20;
  uint32_t refine_factor = 0;           // 0: no re-ranking; else re-rank k*refine_factor exactly
  bool use_index = true;                // false: exact scan of every fragment
  std::optional<index::Metric> metric;  // must match the index when one is used
};

struct VectorHit {
  RowAddress row = 0;
  float distance = 0;
};

// Top-k nearest live rows (ties by row address) among rows passing `prefilter`
// (applied before top-k). InvalidArgument for a wrong dimension, NaN/infinite
// query values, a zero query under cosine, a metric that differs from the index's, or k = 0.
Result<std::vector<VectorHit>> VectorSearch(const TableSnapshot& snapshot, const std::string& column,
                                            const std::vector<float>& query, const VectorQueryOptions& options,
                                            const std::vector<ColumnPredicate>& prefilter = {},
                                            IoRecorder* recorder = nullptr);

// Top-k BM25 matches of an FTS5 query (ties by row address). Uses the FTS index
// on `column` when there is one; uncovered fragments are tokenized with its tokenizer.
Result<std::vector<index::FtsHit>> FullTextSearch(const TableSnapshot& snapshot, const std::string& column,
                                                  const std::string& query, uint32_t k, IoRecorder* recorder = nullptr);

// The rows at `rows` (in that order) projected to `columns` (empty: all).
Result<RecordBatch> TakeRows(const TableSnapshot& snapshot, const std::vector<RowAddress>& rows,
                             const std::vector<std::string>& columns = {});

}  // namespace vigil::query
