// BM25 formula and top-k collection for full-text segments.
#include "index/fts_bm25.h"

#include <algorithm>
#include <cmath>

namespace vigil::index::fts_internal {

double Bm25Idf(uint64_t documents, uint64_t doc_freq) {
  double n = static_cast<double>(std::min(doc_freq, documents));
  double total = static_cast<double>(documents);
  return std::log((total - n + 0.5) / (n + 0.5) + 1.0);
}

double Bm25TermScore(double idf, uint64_t tf, uint64_t doc_length, double avg_doc_length) {
  if (tf == 0) return 0;
  double f = static_cast<double>(tf);
  double relative_length = avg_doc_length > 0 ? static_cast<double>(doc_length) / avg_doc_length : 1.0;
  return idf * f * (kBm25K1 + 1) / (f + kBm25K1 * (1 - kBm25B + kBm25B * relative_length));
}

std::string PhraseKey(int i) { return "phrase:" + std::to_string(i); }

void TopK::Offer(const FtsHit& hit) {
  if (k_ == 0) return;
  if (heap_.size() < k_) {
    heap_.push_back(hit);
    std::push_heap(heap_.begin(), heap_.end(), RanksBefore);
    return;
  }
  if (!RanksBefore(hit, heap_.front())) return;
  std::pop_heap(heap_.begin(), heap_.end(), RanksBefore);
  heap_.back() = hit;
  std::push_heap(heap_.begin(), heap_.end(), RanksBefore);
}

std::vector<FtsHit> TopK::Take() {
  std::vector<FtsHit> out = std::move(heap_);
  heap_.clear();
  std::sort(out.begin(), out.end(), RanksBefore);
  return out;
}

}  // namespace vigil::index::fts_internal
