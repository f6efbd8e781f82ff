// Scalar segments: BTREE (sorted values with row addresses in pages with
// per-page min/max) and BITMAP (one CRoaring bitmap of row addresses per
// distinct value), and the predicates they answer. Both give exact answers:
// the same rows a scan with the same predicate would return (before deletions).
// Opened segments are immutable and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <roaring/roaring64map.hh>

#include "vigil/common/status.h"
#include "vigil/index/index_spec.h"
#include "vigil/index/segment.h"
#include "vigil/storage/column.h"
#include "vigil/storage/dataset.h"

namespace vigil::index {

struct ScalarPredicate {
  enum class Op { kEq, kLt, kLe, kGt, kGe, kBetween, kIn, kIsNull };
  Op op = Op::kEq;
  std::vector<Value> values;  // kBetween: {low, high}, inclusive; kIn: the set; kIsNull: none
};

// Whether `v` (of `type`) satisfies `p`; the reference semantics for scans.
// NULL satisfies only kIsNull. Strings compare bytewise; numbers numerically.
bool PredicateMatches(const ScalarPredicate& p, const Value& v, const DataType& type);
// Three-way comparison of two non-null values of `type` (-1, 0, 1).
int CompareValues(const Value& a, const Value& b, const DataType& type);

class ScalarSegment : public Segment {
 public:
  using Segment::Segment;
  virtual bool Supports(ScalarPredicate::Op op) const = 0;
  // Row addresses (of the covered fragments, deletions not applied) that satisfy `p`.
  virtual Result<Roaring64Map> Evaluate(const ScalarPredicate& p) const = 0;
};

// Builds a BTREE / BITMAP segment over the rows of `fragments`.
Status BuildBtreeSegment(const Dataset& dataset, const Field& field, const std::vector<uint32_t>& fragments,
                         SegmentWriter* writer, const ProgressFn& progress);
Status BuildBitmapSegment(const Dataset& dataset, const Field& field, const std::vector<uint32_t>& fragments,
                          SegmentWriter* writer, const ProgressFn& progress);

// Opens and verifies; Corruption on any defect. `field` gives the value type.
Result<std::shared_ptr<ScalarSegment>> OpenBtreeSegment(std::shared_ptr<SegmentFiles> files, const Field& field);
Result<std::shared_ptr<ScalarSegment>> OpenBitmapSegment(std::shared_ptr<SegmentFiles> files, const Field& field);

}  // namespace vigil::index
