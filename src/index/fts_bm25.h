// BM25 scoring for full-text segments: the formula (k1 = 1.2, b = 0.75, the
// "+1" idf that never goes negative), the key under which a query phrase's
// document frequency is stored in FtsStats, and top-k collection of hits
// (score descending, ties by row address ascending). Pure functions and a
// single-threaded collector.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vigil/index/fts.h"

namespace vigil::index::fts_internal {

inline constexpr double kBm25K1 = 1.2;
inline constexpr double kBm25B = 0.75;

// ln((N - n + 0.5) / (n + 0.5) + 1); n is clamped to N.
double Bm25Idf(uint64_t documents, uint64_t doc_freq);
// idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)); 0 when tf == 0.
double Bm25TermScore(double idf, uint64_t tf, uint64_t doc_length, double avg_doc_length);

// FtsStats::doc_freq key of phrase `i` of a query. FTS5 numbers the phrases of a
// parsed query left to right; every part parses one query string identically.
std::string PhraseKey(int i);

// Keeps the best `k` hits seen.
class TopK {
 public:
  explicit TopK(uint32_t k) : k_(k) {}
  void Offer(const FtsHit& hit);
  bool full() const { return k_ > 0 && heap_.size() == k_; }
  // The hit a new one must rank before to be kept; only when full().
  const FtsHit& worst() const { return heap_.front(); }
  // The kept hits, best first; leaves the collector empty.
  std::vector<FtsHit> Take();

 private:
  uint32_t k_;
  std::vector<FtsHit> heap_;  // worst kept hit at the front
};

// Whether `a` ranks before `b`: higher score, then lower row address.
inline bool RanksBefore(const FtsHit& a, const FtsHit& b) {
  return a.score != b.score ? a.score > b.score : a.row < b.row;
}

}  // namespace vigil::index::fts_internal
