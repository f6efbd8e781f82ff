#include <algorithm>
#include <optional>

#include "query_internal.h"
#include "vigil/query/query.h"

namespace vigil::query {

namespace {

bool Better(const index::FtsHit& a, const index::FtsHit& b) {
  return a.score > b.score || (a.score == b.score && a.row < b.row);
}

// An in-memory index over the live rows of `fragments`.
Result<std::unique_ptr<index::FtsMemoryIndex>> IndexUncovered(const TableSnapshot& snap, const Field& field,
                                                              const index::FtsParams& params,
                                                              const std::vector<uint32_t>& fragments) {
  VIGIL_ASSIGN_OR_RETURN(auto mem, index::FtsMemoryIndex::Create(params));
  if (fragments.empty()) return mem;
  ScanOptions opts;
  opts.columns = {field.name};
  opts.fragment_ids = fragments;
  VIGIL_ASSIGN_OR_RETURN(auto scan, snap.dataset()->Scan(opts));
  for (;;) {
    VIGIL_ASSIGN_OR_RETURN(auto batch, scan->Next());
    if (!batch) break;
    const Column& col = batch->columns[0];
    for (size_t r = 0; r < batch->num_rows; ++r) {
      if (col.IsValid(r)) VIGIL_RETURN_IF_ERROR(mem->Add(batch->row_addresses[r], col.StringAt(r)));
    }
  }
  return mem;
}

Result<std::vector<index::FtsHit>> SearchOnce(const TableSnapshot& snapshot, const std::string& column,
                                              const std::string& query, uint32_t k, IoRecorder* recorder) {
  std::optional<ScopedIoObserver> observe;
  if (recorder) observe.emplace(recorder);
  auto idx = snapshot.manifest().schema->IndexOf(column);
  if (!idx) return Status::InvalidArgument("unknown column '" + column + "'");
  const Field& field = snapshot.manifest().schema->field(*idx);
  if (field.type.id != TypeId::kString) {
    return Status::InvalidArgument("column '" + column + "' is " + field.type.ToString() + ", not STRING");
  }
  if (k == 0) return Status::InvalidArgument("k must be positive");
  std::string index_name = snapshot.IndexOn(column, "FTS");
  index::FtsParams params;
  internal::Coverage cov;
  if (index_name.empty()) {
    for (const auto& f : snapshot.manifest().fragments) cov.uncovered.push_back(f.id);
  } else {
    cov = internal::ComputeCoverage(snapshot, index_name);
    params = static_cast<index::FtsSegment*>(snapshot.SegmentsOf(index_name).front().get())->params();
  }
  const internal::Deletions deletions = internal::Deletions::Of(snapshot);
  // Every row covered: no in-memory index (an empty table still gets one, which checks the query).
  std::unique_ptr<index::FtsMemoryIndex> mem;
  if (!cov.uncovered.empty() || cov.segments.empty()) {
    VIGIL_ASSIGN_OR_RETURN(mem, IndexUncovered(snapshot, field, params, cov.uncovered));
  }

  // Table-wide statistics: every part adds up, so scores match one index over everything.
  index::FtsStats stats;
  for (const auto& [segment, fragments] : cov.segments) {
    if (recorder) recorder->UseSegment(internal::SegmentPath(*segment));
    auto s = static_cast<index::FtsSegment*>(segment.get())->Stats(query);
    VIGIL_RETURN_IF_ERROR(internal::SegmentStatus(snapshot, *segment, s.status()));
    stats.Add(*s);
  }
  if (mem) {
    VIGIL_ASSIGN_OR_RETURN(auto mem_stats, mem->Stats(query));
    stats.Add(mem_stats);
  }

  std::vector<index::FtsHit> all;
  for (const auto& [segment, fragments] : cov.segments) {
    internal::QueryRowFilter filter(&deletions, &fragments, nullptr);
    auto hits = static_cast<index::FtsSegment*>(segment.get())->Search(query, stats, &filter, k);
    VIGIL_RETURN_IF_ERROR(internal::SegmentStatus(snapshot, *segment, hits.status()));
    all.insert(all.end(), hits->begin(), hits->end());
  }
  if (mem) {
    internal::QueryRowFilter mem_filter(&deletions, nullptr, nullptr);
    VIGIL_ASSIGN_OR_RETURN(auto mem_hits, mem->Search(query, stats, &mem_filter, k));
    all.insert(all.end(), mem_hits.begin(), mem_hits.end());
  }
  std::sort(all.begin(), all.end(), Better);
  if (all.size() > k) all.resize(k);
  return all;
}

}  // namespace

Result<std::vector<index::FtsHit>> FullTextSearch(const TableSnapshot& snapshot, const std::string& column,
                                                  const std::string& query, uint32_t k, IoRecorder* recorder) {
  return internal::RetryWithoutCorruptSegments(snapshot,
                                               [&] { return SearchOnce(snapshot, column, query, k, recorder); });
}

}  // namespace vigil::query
