// Fast scan of 4-bit IVF_PQ codes (see ivf_pq_fastscan.h).
//
// Per query: the coarse quantizer picks nprobes lists; per list a float table
// lut[m][j] = distance of the query's sub-vector m (its residual from the list's
// centroid, except under dot) to PQ centroid j. Tables are quantized to 8 bits with
// one scale for the whole query (per-table minimums go into the list's bias), so
// that quantized sums of different lists compare. Rows whose sum maps above the
// current k-th distance are dropped by a SIMD compare without reading their
// addresses, and a list whose least possible distance (its bias) cannot enter the
// top k is left at once.
#include "index/ivf_pq_fastscan.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <vector>

namespace vigil::index {
namespace {

constexpr uint32_t kKsub = kPq4Ksub;
constexpr size_t kHalfBlock = kPq4BlockRows / 2;

// Float distance tables of one probed list: m x 16 entries. `x` is scratch of dim floats.
void ListTable(const IvfPqModel& model, const Pq4Codebook& book, const float* query, const float* centroid, float* x,
               float* table) {
  const uint32_t dsub = model.dim / model.num_sub_vectors;
  const bool residual = model.metric != Metric::kDot;
  for (uint32_t i = 0; i < model.dim; ++i) x[i] = residual ? query[i] - centroid[i] : query[i];
  for (uint32_t m = 0; m < model.num_sub_vectors; ++m) {
    float acc[kKsub] = {};
    for (uint32_t t = 0; t < dsub; ++t) {
      const float v = x[m * dsub + t];
      const float* c = book.by_dim.data() + (static_cast<size_t>(m) * dsub + t) * kKsub;
      if (residual) {
        for (uint32_t j = 0; j < kKsub; ++j) acc[j] += (v - c[j]) * (v - c[j]);
      } else {
        for (uint32_t j = 0; j < kKsub; ++j) acc[j] -= v * c[j];  // smaller is nearer
      }
    }
    std::copy(acc, acc + kKsub, table + m * kKsub);
  }
}

struct Candidate {
  float distance;
  uint32_t probe;  // index into the probed lists
  uint64_t pos;    // row position in its list
  bool operator<(const Candidate& o) const { return distance < o.distance; }
};

// The quantized tables of all probed lists and how to map their sums back to floats.
struct QuantizedTables {
  std::vector<uint8_t> lut;  // probes x m2 x 16
  std::vector<float> bias;   // per probe
  float scale = 1;
};

QuantizedTables Quantize(const std::vector<float>& tables, uint32_t probes, uint32_t m, uint32_t m2) {
  QuantizedTables q;
  q.lut.assign(static_cast<size_t>(probes) * m2 * kKsub, 0);
  q.bias.assign(probes, 0);
  std::vector<float> mins(static_cast<size_t>(probes) * m);
  float widest = 0;
  for (size_t t = 0; t < mins.size(); ++t) {
    float hi = 0;
    MinMax16(tables.data() + t * kKsub, &mins[t], &hi);
    widest = std::max(widest, hi - mins[t]);
  }
  q.scale = widest > 0 ? 255.0f / widest : 1.0f;
  for (uint32_t p = 0; p < probes; ++p) {
    for (uint32_t s = 0; s < m; ++s) {
      const size_t t = static_cast<size_t>(p) * m + s;
      q.bias[p] += mins[t];
      Quantize16(tables.data() + t * kKsub, mins[t], q.scale, q.lut.data() + (static_cast<size_t>(p) * m2 + s) * kKsub);
    }
  }
  return q;
}

// The `nprobes` lists nearest `query` (fewer when the model has fewer), nearest first.
std::vector<uint32_t> CoarseProbes(const IvfPqModel& model, const float* query, uint32_t nprobes) {
  std::vector<float> d(model.num_partitions);
  CentroidDistances(query, model.centroids.data(), model.num_partitions, model.dim, model.metric == Metric::kDot,
                    d.data());
  std::vector<uint32_t> order(model.num_partitions);
  for (uint32_t i = 0; i < model.num_partitions; ++i) order[i] = i;
  const uint32_t n = std::min(nprobes, model.num_partitions);
  auto closer = [&](uint32_t a, uint32_t b) { return d[a] < d[b] || (d[a] == d[b] && a < b); };
  std::partial_sort(order.begin(), order.begin() + n, order.end(), closer);
  order.resize(n);
  return order;
}

}  // namespace

PackedPq4Lists PackedPq4Lists::Pack(const IvfPqModel& model, const IvfPqListsView& view) {
  const uint32_t num_sub_vectors = model.num_sub_vectors;
  VIGIL_CHECK(model.num_bits == 4 && num_sub_vectors <= kIvfPq4MaxSubVectors);
  VIGIL_CHECK(view.code_size == IvfPqCodeSize(model) && view.num_partitions == model.num_partitions);
  PackedPq4Lists p;
  p.m2_ = num_sub_vectors + (num_sub_vectors & 1);
  const size_t block_bytes = static_cast<size_t>(p.m2_) * kHalfBlock;
  p.row_start_.assign(view.num_partitions + 1, 0);
  p.block_start_.assign(view.num_partitions + 1, 0);
  for (uint32_t l = 0; l < view.num_partitions; ++l) {
    p.row_start_[l + 1] = p.row_start_[l] + view.counts[l];
    p.block_start_[l + 1] = p.block_start_[l] + (view.counts[l] + kPq4BlockRows - 1) / kPq4BlockRows;
  }
  p.rows_.resize(p.row_start_.back());
  p.blocks_.assign(p.block_start_.back() * block_bytes, 0);
  for (uint32_t l = 0; l < view.num_partitions; ++l) {
    const uint8_t* codes = view.Codes(l);
    for (uint64_t i = 0; i < view.counts[l]; ++i) {
      p.rows_[p.row_start_[l] + i] = view.RowAt(l, i);
      uint8_t* block = p.blocks_.data() + (p.block_start_[l] + i / kPq4BlockRows) * block_bytes;
      const size_t lane = i % kHalfBlock, shift = (i % kPq4BlockRows) / kHalfBlock * 4;
      for (uint32_t m = 0; m < num_sub_vectors; ++m) {
        block[m * kHalfBlock + lane] |= static_cast<uint8_t>(Pq4Code(codes + i * view.code_size, m) << shift);
      }
    }
  }
  return p;
}

const uint8_t* PackedPq4Lists::Block(uint32_t list, uint64_t block) const {
  return blocks_.data() + (block_start_[list] + block) * m2_ * kHalfBlock;
}

uint8_t PackedPq4Lists::Code(uint32_t list, uint64_t i, uint32_t m) const {
  uint8_t byte = Block(list, i / kPq4BlockRows)[m * kHalfBlock + i % kHalfBlock];
  return (i % kPq4BlockRows) < kHalfBlock ? (byte & 0xF) : (byte >> 4);
}

void PackedPq4Lists::Prefetch(uint32_t list, uint64_t i) const {
  __builtin_prefetch(&rows_[row_start_[list] + i]);
  const uint8_t* block = Block(list, i / kPq4BlockRows);
  for (size_t at = 0; at < static_cast<size_t>(m2_) * kHalfBlock; at += 64) __builtin_prefetch(block + at);
}

float PackedPq4Lists::TableDistance(uint32_t list, uint64_t i, uint32_t m, const float* table) const {
  const uint8_t* column = Block(list, i / kPq4BlockRows) + i % kHalfBlock;
  const int shift = (i % kPq4BlockRows) < kHalfBlock ? 0 : 4;
  float d = 0;
  for (uint32_t s = 0; s < m; ++s) d += table[s * kKsub + ((column[s * kHalfBlock] >> shift) & 0xF)];
  return d;
}

size_t PackedPq4Lists::MemoryBytes() const {
  return rows_.size() * sizeof(RowAddress) + (row_start_.size() + block_start_.size()) * 8 + blocks_.size();
}

Pq4Codebook Pq4Codebook::Of(const IvfPqModel& model) {
  Pq4Codebook book;
  const uint32_t dsub = model.dim / model.num_sub_vectors;
  book.by_dim.resize(model.pq_centroids.size());
  for (uint32_t m = 0; m < model.num_sub_vectors; ++m) {
    for (uint32_t j = 0; j < kKsub; ++j) {
      for (uint32_t t = 0; t < dsub; ++t) {
        book.by_dim[(static_cast<size_t>(m) * dsub + t) * kKsub + j] =
            model.pq_centroids[(static_cast<size_t>(m) * kKsub + j) * dsub + t];
      }
    }
  }
  return book;
}

std::vector<ScoredRow> SearchPq4(const IvfPqModel& model, const Pq4Codebook& book, const PackedPq4Lists& lists,
                                 const float* query, uint32_t k, uint32_t nprobes, const RowFilter* filter) {
  const uint32_t m = model.num_sub_vectors, m2 = lists.padded_sub_vectors();
  const std::vector<uint32_t> probe = CoarseProbes(model, query, nprobes);
  const auto probes = static_cast<uint32_t>(probe.size());
  std::vector<float> tables(static_cast<size_t>(probes) * m * kKsub), scratch(model.dim);
  for (uint32_t p = 0; p < probes; ++p) {
    const float* centroid = model.centroids.data() + static_cast<size_t>(probe[p]) * model.dim;
    ListTable(model, book, query, centroid, scratch.data(), tables.data() + static_cast<size_t>(p) * m * kKsub);
  }
  QuantizedTables q = Quantize(tables, probes, m, m2);

  std::priority_queue<Candidate> best;  // the k nearest so far, farthest on top
  alignas(32) uint16_t sums[kPq4BlockRows];
  for (uint32_t p = 0; p < probes; ++p) {
    const uint32_t list = probe[p];
    const uint64_t count = lists.Count(list);
    const uint8_t* lut = q.lut.data() + static_cast<size_t>(p) * m2 * kKsub;
    for (uint64_t b = 0; b * kPq4BlockRows < count; ++b) {
      // Rows whose quantized sum maps below the k-th distance so far (all until k are kept).
      const float limit = best.size() < k ? 65536.0f : (best.top().distance - q.bias[p]) * q.scale;
      const auto below = static_cast<uint32_t>(std::clamp(std::ceil(limit), 0.0f, 65536.0f));
      if (below == 0) break;  // the list's least possible sum is already too far
      uint32_t mask = ScanPq4Block(lists.Block(list, b), lut, m2, below, sums);
      const uint64_t first = b * kPq4BlockRows, n = std::min<uint64_t>(kPq4BlockRows, count - first);
      if (n < kPq4BlockRows) mask &= (uint32_t{1} << n) - 1;
      for (; mask != 0; mask &= mask - 1) {
        const auto i = static_cast<uint32_t>(__builtin_ctz(mask));
        if (filter != nullptr && !filter->Accept(lists.Row(list, first + i))) continue;
        best.push({q.bias[p] + static_cast<float>(sums[i]) / q.scale, p, first + i});
        if (best.size() > k) best.pop();
      }
    }
  }
  // The kept rows' addresses and codes are cold: prefetch them all, then read.
  std::vector<Candidate> kept;
  kept.reserve(best.size());
  for (; !best.empty(); best.pop()) {
    kept.push_back(best.top());
    lists.Prefetch(probe[kept.back().probe], kept.back().pos);
  }
  std::vector<ScoredRow> out;
  out.reserve(kept.size());
  for (const Candidate& c : kept) {
    const float* table = tables.data() + static_cast<size_t>(c.probe) * m * kKsub;
    const float d = lists.TableDistance(probe[c.probe], c.pos, m, table);
    out.push_back({lists.Row(probe[c.probe], c.pos), model.metric == Metric::kDot ? -d : d});
  }
  const bool dot = model.metric == Metric::kDot;
  std::sort(out.begin(), out.end(), [dot](const ScoredRow& a, const ScoredRow& b) {
    if (a.distance != b.distance) return dot ? a.distance > b.distance : a.distance < b.distance;
    return a.row < b.row;
  });
  return out;
}

}  // namespace vigil::index
