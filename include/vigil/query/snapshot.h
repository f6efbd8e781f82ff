// A table snapshot: one dataset version plus its opened index segments —
// what a generation lease pins. Segments are opened once per process and
// shared between snapshots of the same dataset (keyed by path and UUID), so a
// new version that keeps a segment does not reopen it.
// TableSnapshot is immutable and thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/index/segment.h"
#include "vigil/storage/dataset.h"

namespace vigil::query {

class TableSnapshot {
 public:
  // Opens every segment of `dataset`'s manifest (verifying inventories) and
  // loads the deletion vectors of its fragments once, for every query on it.
  static Result<std::shared_ptr<const TableSnapshot>> Open(std::shared_ptr<Dataset> dataset);

  const std::shared_ptr<Dataset>& dataset() const { return dataset_; }
  uint64_t version() const { return dataset_->version(); }
  const Manifest& manifest() const { return dataset_->manifest(); }
  // Segments of the logical index `name`, in manifest order.
  std::vector<std::shared_ptr<index::Segment>> SegmentsOf(const std::string& name) const;
  // The logical index on `column` of `index_type` ("IVF_PQ", ...), or empty when none.
  std::string IndexOn(const std::string& column, const std::string& index_type) const;
  std::shared_ptr<index::Segment> Segment(const Uuid& uuid) const;
  // Deleted offsets by fragment id; fragments without deletions are absent.
  const std::map<uint32_t, DeletionVector>& deletions() const { return deletions_; }
  // Number of distinct segment objects (for tests of sharing).
  size_t num_segments() const { return segments_.size(); }

 private:
  std::shared_ptr<Dataset> dataset_;
  std::map<Uuid, std::shared_ptr<index::Segment>> segments_;
  std::map<uint32_t, DeletionVector> deletions_;
};

// Drops cached segment readers no snapshot uses (for tests and shutdown).
void PurgeUnusedSegments();

}  // namespace vigil::query
