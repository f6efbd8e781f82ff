// Helpers shared by the query implementations: per-query deletion vectors,
// the assignment of fragments to the segments that cover them, and the
// RowFilter handed to segment searches. Internal; not thread-safe to build,
// read-only (thread-safe) once built.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <roaring/roaring64map.hh>

#include "vigil/index/segment.h"
#include "vigil/query/io_recorder.h"
#include "vigil/query/snapshot.h"

namespace vigil::query::internal {

// Deletions of every fragment of a snapshot (a view of what the snapshot loaded).
class Deletions {
 public:
  static Deletions Of(const TableSnapshot& snapshot);
  bool IsDeleted(RowAddress row) const;
  bool HasFragment(uint32_t fragment) const { return fragments_.count(fragment) > 0; }
  // Whether any of `fragments` has a deleted row.
  bool AnyDeletedIn(const std::set<uint32_t>& fragments) const;

 private:
  const std::map<uint32_t, DeletionVector>* by_fragment_ = nullptr;
  std::set<uint32_t> fragments_;
};

// Which segment of a logical index answers for each fragment (the newest
// segment covering it), and the fragments no segment covers.
struct Coverage {
  std::vector<std::pair<std::shared_ptr<index::Segment>, std::set<uint32_t>>> segments;
  std::vector<uint32_t> uncovered;
};
Coverage ComputeCoverage(const TableSnapshot& snapshot, const std::string& index_name);

// `st` from an operation on `segment`; a Corruption marks the segment unusable in the
// snapshot (later runs scan its fragments) and is returned for RetryWithoutCorruptSegments.
Status SegmentStatus(const TableSnapshot& snapshot, const index::Segment& segment, Status st);

// Runs `query` again each time it failed on a segment it just marked unusable (bounded by
// the number of segments), so a corrupt segment costs a scan, never a wrong or failed answer.
template <typename Fn>
auto RetryWithoutCorruptSegments(const TableSnapshot& snapshot, Fn query) -> decltype(query()) {
  for (size_t attempt = 0;; ++attempt) {
    const size_t unusable_before = snapshot.num_unusable_segments();
    auto result = query();
    if (result.ok() || !result.status().Is(StatusCode::kCorruption)) return result;
    if (snapshot.num_unusable_segments() == unusable_before) return result;
    if (attempt > snapshot.manifest().segments.size()) return result;
  }
}

// Accepts live rows of the given fragments that are in `allowed` (when set).
class QueryRowFilter : public index::RowFilter {
 public:
  QueryRowFilter(const Deletions* deletions, const std::set<uint32_t>* fragments, const Roaring64Map* allowed)
      : deletions_(deletions), fragments_(fragments), allowed_(allowed) {}
  bool Accept(RowAddress row) const override;

 private:
  const Deletions* deletions_;
  const std::set<uint32_t>* fragments_;  // null: any fragment
  const Roaring64Map* allowed_;          // null: no prefilter
};

// Whether a search of `segment` restricted to `fragments` needs no row filter:
// it covers exactly those fragments, none has deletions and there is no prefilter.
bool NeedsNoFilter(const index::Segment& segment, const std::set<uint32_t>& fragments, const Deletions& deletions,
                   const Roaring64Map* allowed);

// "_indices/<uuid>" for the recorder.
std::string SegmentPath(const index::Segment& segment);

}  // namespace vigil::query::internal
