// Full-text segments on SQLite FTS5: one read-only, immutable database file
// per segment (`fts.db`), rowid = row address, and native postings
// (`postings.bin`) that answer queries of plain words ORed or ANDed with
// top-k pruning; every other query (phrases, prefixes, NEAR, NOT, ...) runs
// on FTS5, with identical scores either way. Ranking is BM25 (k1 = 1.2,
// b = 0.75) computed by a custom FTS5 auxiliary function fed table-wide
// statistics, so a table split into several segments plus uncovered fragments
// ranks exactly like one index over all of it. Uncovered fragments are indexed
// at query time in an in-memory FTS5 table with the same tokenizer.
//
// Thread safety: FtsSegment is thread-safe (one read-only connection per
// calling thread or a mutex inside); FtsMemoryIndex is single-threaded.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/index/index_spec.h"
#include "vigil/index/segment.h"
#include "vigil/storage/dataset.h"

namespace vigil::index {

// Collection statistics for one query over one part of a table; parts add up.
struct FtsStats {
  uint64_t documents = 0;
  uint64_t total_tokens = 0;                 // sum of document lengths in tokens
  std::map<std::string, uint64_t> doc_freq;  // per query term (as tokenized): documents containing it

  void Add(const FtsStats& other);
};

struct FtsHit {
  RowAddress row = 0;
  double score = 0;  // BM25; higher is better
};

// Builds `fts.db` over the rows of `fragments` (string column `field`).
Status BuildFtsSegment(const Dataset& dataset, const Field& field, const std::vector<uint32_t>& fragments,
                       const FtsParams& params, SegmentWriter* writer, const ProgressFn& progress);

class FtsSegment : public Segment {
 public:
  // Verifies the inventory checksum and opens the file read-only and immutable.
  static Result<std::shared_ptr<FtsSegment>> Open(std::shared_ptr<SegmentFiles> files);
  ~FtsSegment() override;

  const FtsParams& params() const { return params_; }
  // This segment's statistics for `query` (an FTS5 query string).
  Result<FtsStats> Stats(const std::string& query) const;
  // The top `k` matches passing `filter`, scored with `table_stats` (the sum over all parts).
  Result<std::vector<FtsHit>> Search(const std::string& query, const FtsStats& table_stats, const RowFilter* filter,
                                     uint32_t k) const;
  // Whether Stats and Search answer `query` from the native postings (else FTS5).
  bool AnswersFromPostings(const std::string& query) const;
  size_t MemoryBytes() const override;

 private:
  FtsSegment(std::shared_ptr<SegmentFiles> files, FtsParams params);
  // Loads the native postings when the segment has them.
  Status OpenPostings();
  FtsParams params_;
  struct Db;
  std::unique_ptr<Db> db_;
};

// An in-memory FTS5 index over documents not covered by any segment.
class FtsMemoryIndex {
 public:
  static Result<std::unique_ptr<FtsMemoryIndex>> Create(const FtsParams& params);
  ~FtsMemoryIndex();
  Status Add(RowAddress row, std::string_view text);
  Result<FtsStats> Stats(const std::string& query) const;
  Result<std::vector<FtsHit>> Search(const std::string& query, const FtsStats& table_stats, const RowFilter* filter,
                                     uint32_t k) const;

 private:
  FtsMemoryIndex();
  struct Db;
  std::unique_ptr<Db> db_;
};

}  // namespace vigil::index
