#include <algorithm>
#include <cmath>
#include <optional>
#include <queue>

#include "query_internal.h"
#include "vigil/index/ivf_pq.h"
#include "vigil/query/query.h"

namespace vigil::query {

namespace {

using index::Metric;

bool Closer(const VectorHit& a, const VectorHit& b) {
  return a.distance < b.distance || (a.distance == b.distance && a.row < b.row);
}

// Keeps the k best hits seen.
class TopK {
 public:
  explicit TopK(size_t k) : k_(k) {}
  void Push(VectorHit h) {
    if (heap_.size() < k_) {
      heap_.push_back(h);
      std::push_heap(heap_.begin(), heap_.end(), Closer);
    } else if (Closer(h, heap_.front())) {
      std::pop_heap(heap_.begin(), heap_.end(), Closer);
      heap_.back() = h;
      std::push_heap(heap_.begin(), heap_.end(), Closer);
    }
  }
  std::vector<VectorHit> Sorted() {
    std::sort(heap_.begin(), heap_.end(), Closer);
    return heap_;
  }

 private:
  size_t k_;
  std::vector<VectorHit> heap_;  // max-heap by Closer: front is the worst kept
};

Status ValidateQuery(const Field& field, const std::vector<float>& q, Metric metric, uint32_t k) {
  if (field.type.id != TypeId::kVector) {
    return Status::InvalidArgument("column '" + field.name + "' is " + field.type.ToString() + ", not a vector");
  }
  if (q.size() != field.type.dim) {
    return Status::InvalidArgument("query vector has dimension " + std::to_string(q.size()) + "; column '" +
                                   field.name + "' has " + std::to_string(field.type.dim));
  }
  if (k == 0) return Status::InvalidArgument("k must be positive");
  double norm = 0;
  for (size_t i = 0; i < q.size(); ++i) {
    if (!std::isfinite(q[i])) {
      return Status::InvalidArgument("query vector element " + std::to_string(i) + " is not finite");
    }
    norm += static_cast<double>(q[i]) * q[i];
  }
  if (metric == Metric::kCosine && norm == 0)
    return Status::InvalidArgument("a zero query vector has no cosine distance");
  return Status::OK();
}

// Row r of a VECTOR column as FLOAT32: the stored floats, or FLOAT16 widened into `widened`.
const float* RowVector(const Column& col, size_t r, const Field& field, std::vector<float>* widened) {
  const uint32_t dim = field.type.dim;
  if (field.type.element == VectorElement::kFloat32) return col.values<float>() + r * dim;
  const uint16_t* h = col.values<uint16_t>() + r * dim;
  widened->resize(dim);
  for (uint32_t i = 0; i < dim; ++i) (*widened)[i] = HalfToFloat(h[i]);
  return widened->data();
}

// Exact distances over the live, allowed rows of `fragments` whose vector is not NULL
// (an index holds no NULL vector either: a row without one has no distance).
Status ExactScan(const TableSnapshot& snap, const Field& field, const std::vector<float>& q, Metric metric,
                 const std::vector<uint32_t>& fragments, const index::RowFilter& filter, TopK* top) {
  if (fragments.empty()) return Status::OK();
  ScanOptions opts;
  opts.columns = {field.name};
  opts.fragment_ids = fragments;
  VIGIL_ASSIGN_OR_RETURN(auto scan, snap.dataset()->Scan(opts));
  std::vector<float> widened;
  for (;;) {
    VIGIL_ASSIGN_OR_RETURN(auto batch, scan->Next());
    if (!batch) return Status::OK();
    const Column& col = batch->columns[0];
    for (size_t r = 0; r < batch->num_rows; ++r) {
      RowAddress row = batch->row_addresses[r];
      if (!col.IsValid(r) || !filter.Accept(row)) continue;
      const float* v = RowVector(col, r, field, &widened);
      top->Push({row, index::ExactDistance(metric, q.data(), v, field.type.dim)});
    }
  }
}

// Issues prefetches for `bytes` bytes at `p`: the candidates of a refinement sit at
// random places in their blocks, and asking for them all at once overlaps the misses.
void Prefetch(const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (size_t at = 0; at < bytes; at += 64) __builtin_prefetch(c + at);
}

// Replaces approximate distances with exact ones: candidates in row-address order,
// each block of the vector column read once per query through the snapshot's reader
// (usually from the block cache); every candidate's vector is prefetched before the
// first distance is computed.
Status Refine(const TableSnapshot& snap, const Field& field, const std::vector<float>& q, Metric metric,
              std::vector<VectorHit>* hits) {
  std::vector<VectorHit*> order;
  for (auto& h : *hits) order.push_back(&h);
  std::sort(order.begin(), order.end(), [](const VectorHit* a, const VectorHit* b) { return a->row < b->row; });
  std::shared_ptr<FragmentReader> reader;
  uint32_t fragment = 0;
  std::vector<std::shared_ptr<const Column>> blocks;  // keeps the candidates' blocks alive
  size_t block_index = 0;
  std::vector<std::pair<const Column*, size_t>> at;  // per candidate in `order`: its block and row
  const size_t width = field.type.FixedWidth();
  for (VectorHit* h : order) {
    if (!reader || fragment != RowFragment(h->row)) {
      fragment = RowFragment(h->row);
      VIGIL_ASSIGN_OR_RETURN(reader, snap.Fragment(fragment));
      blocks.emplace_back();
    }
    const uint32_t offset = RowOffset(h->row);
    if (offset >= reader->num_rows()) {
      return Status::Corruption("the index names row " + std::to_string(offset) + " of fragment " +
                                std::to_string(fragment) + ", which has " + std::to_string(reader->num_rows()));
    }
    const size_t b = offset / reader->rows_per_block(), r = offset % reader->rows_per_block();
    if (!blocks.back() || block_index != b) {
      VIGIL_ASSIGN_OR_RETURN(std::shared_ptr<const Column> block, reader->ReadBlock(field.id, b));
      blocks.push_back(std::move(block));
      block_index = b;
    }
    const Column& block = *blocks.back();
    if (!block.IsValid(r)) {
      return Status::Corruption("the index names row " + std::to_string(offset) + " of fragment " +
                                std::to_string(fragment) + ", whose vector is NULL");
    }
    Prefetch(block.raw_data().data() + r * width, width);
    at.emplace_back(&block, r);
  }
  std::vector<float> widened;
  for (size_t i = 0; i < order.size(); ++i) {
    const float* v = RowVector(*at[i].first, at[i].second, field, &widened);
    order[i]->distance = index::ExactDistance(metric, q.data(), v, field.type.dim);
  }
  return Status::OK();
}

Result<std::vector<VectorHit>> SearchOnce(const TableSnapshot& snapshot, const std::string& column,
                                          const std::vector<float>& query, const VectorQueryOptions& options,
                                          const std::vector<ColumnPredicate>& prefilter, IoRecorder* recorder) {
  std::optional<ScopedIoObserver> observe;
  if (recorder) observe.emplace(recorder);
  const Schema& schema = *snapshot.manifest().schema;
  auto idx = schema.IndexOf(column);
  if (!idx) return Status::InvalidArgument("unknown column '" + column + "'");
  const Field& field = schema.field(*idx);
  std::string index_name = snapshot.IndexOn(column, "IVF_PQ");
  std::optional<Metric> index_metric;
  if (!index_name.empty()) {
    auto* seg = static_cast<index::IvfPqSegment*>(snapshot.SegmentsOf(index_name).front().get());
    index_metric = seg->model().metric;
  }
  if (options.use_index && index_metric && options.metric && *options.metric != *index_metric) {
    return Status::InvalidArgument("index '" + index_name + "' uses metric " +
                                   std::string(index::MetricName(*index_metric)) + "; the query asked for " +
                                   std::string(index::MetricName(*options.metric)));
  }
  Metric metric = options.metric.value_or(index_metric.value_or(Metric::kL2));
  VIGIL_RETURN_IF_ERROR(ValidateQuery(field, query, metric, options.k));

  const internal::Deletions deletions = internal::Deletions::Of(snapshot);
  std::optional<Roaring64Map> allowed;
  if (!prefilter.empty()) {
    VIGIL_ASSIGN_OR_RETURN(allowed, FilterRows(snapshot, prefilter, recorder));
  }
  const Roaring64Map* allowed_ptr = allowed ? &*allowed : nullptr;

  TopK top(options.k);
  internal::Coverage cov;
  if (options.use_index && !index_name.empty()) {
    cov = internal::ComputeCoverage(snapshot, index_name);
  } else {
    for (const auto& f : snapshot.manifest().fragments) cov.uncovered.push_back(f.id);
  }
  const uint32_t fetch = options.refine_factor > 0 ? options.k * options.refine_factor : options.k;
  for (const auto& [segment, fragments] : cov.segments) {
    if (recorder) recorder->UseSegment(internal::SegmentPath(*segment));
    internal::QueryRowFilter filter(&deletions, &fragments, allowed_ptr);
    auto* ivf = static_cast<index::IvfPqSegment*>(segment.get());
    const bool unfiltered = internal::NeedsNoFilter(*segment, fragments, deletions, allowed_ptr);
    auto found = ivf->Search(query.data(), fetch, options.nprobes, unfiltered ? nullptr : &filter);
    VIGIL_RETURN_IF_ERROR(internal::SegmentStatus(snapshot, *segment, found.status()));
    std::vector<VectorHit> hits;
    for (const auto& s : *found) hits.push_back({s.row, s.distance});
    if (options.refine_factor > 0) VIGIL_RETURN_IF_ERROR(Refine(snapshot, field, query, metric, &hits));
    for (const auto& h : hits) top.Push(h);
  }
  internal::QueryRowFilter scan_filter(&deletions, nullptr, allowed_ptr);
  VIGIL_RETURN_IF_ERROR(ExactScan(snapshot, field, query, metric, cov.uncovered, scan_filter, &top));
  return top.Sorted();
}

}  // namespace

Result<std::vector<VectorHit>> VectorSearch(const TableSnapshot& snapshot, const std::string& column,
                                            const std::vector<float>& query, const VectorQueryOptions& options,
                                            const std::vector<ColumnPredicate>& prefilter, IoRecorder* recorder) {
  return internal::RetryWithoutCorruptSegments(
      snapshot, [&] { return SearchOnce(snapshot, column, query, options, prefilter, recorder); });
}

}  // namespace vigil::query
