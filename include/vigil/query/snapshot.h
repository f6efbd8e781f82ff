// A table snapshot: one dataset version plus its opened index segments —
// what a generation lease pins. Segments are opened once per process and
// shared between snapshots of the same dataset (keyed by path and UUID), so a
// new version that keeps a segment does not reopen it. A segment whose files
// are missing or corrupt (found at open, or by a query reading it) is left out
// and listed as unusable: queries then treat the fragments it covered as
// uncovered and scan them, so every answer stays exact for this version; the
// data version itself is never an older one.
// TableSnapshot is thread-safe; only its set of unusable segments changes.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vigil/common/mutex.h"
#include "vigil/common/status.h"
#include "vigil/index/segment.h"
#include "vigil/storage/dataset.h"

namespace vigil::query {

// A segment of the manifest that could not be opened (missing or corrupt files).
struct UnusableSegment {
  std::string index_name;
  Uuid uuid;
  Status reason;
};

class TableSnapshot {
 public:
  // Opens every segment of `dataset`'s manifest (verifying inventories) and
  // loads the deletion vectors of its fragments once, for every query on it.
  // Segments that fail with Corruption or NotFound become unusable_segments();
  // any other failure (e.g. an I/O error) fails the open.
  static Result<std::shared_ptr<const TableSnapshot>> Open(std::shared_ptr<Dataset> dataset);

  const std::shared_ptr<Dataset>& dataset() const { return dataset_; }
  uint64_t version() const { return dataset_->version(); }
  const Manifest& manifest() const { return dataset_->manifest(); }
  // Usable segments of the logical index `name`, in manifest order.
  std::vector<std::shared_ptr<index::Segment>> SegmentsOf(const std::string& name) const;
  // The logical index on `column` of `index_type` ("IVF_PQ", ...) with at least one usable
  // segment, or empty when none.
  std::string IndexOn(const std::string& column, const std::string& index_type) const;
  // The opened segment, or null when `uuid` is not a usable segment of this version.
  std::shared_ptr<index::Segment> Segment(const Uuid& uuid) const;
  // Segments left out of this snapshot, in the order they were found unusable.
  std::vector<UnusableSegment> unusable_segments() const;
  size_t num_unusable_segments() const { return num_unusable_.load(std::memory_order_acquire); }
  // Leaves a usable segment out from now on (a query found it corrupt); its reason is kept.
  void MarkUnusable(const Uuid& uuid, const Status& reason) const;
  // The reader of fragment `fragment_id` of this version, opened on first use and kept
  // while the snapshot lives, so that queries read its blocks without reopening the
  // file. NotFound when the version has no such fragment.
  Result<std::shared_ptr<FragmentReader>> Fragment(uint32_t fragment_id) const;
  // Deleted offsets by fragment id; fragments without deletions are absent.
  const std::map<uint32_t, DeletionVector>& deletions() const { return deletions_; }
  // Number of distinct segment objects (for tests of sharing).
  size_t num_segments() const { return segments_.size(); }

 private:
  std::shared_ptr<Dataset> dataset_;
  std::map<Uuid, std::shared_ptr<index::Segment>> segments_;
  mutable Mutex mu_;
  mutable std::vector<UnusableSegment> unusable_ VIGIL_GUARDED_BY(mu_);
  mutable std::atomic<bool> marked_{false};  // a query marked a segment: check unusable_
  mutable std::atomic<size_t> num_unusable_{0};
  std::map<uint32_t, DeletionVector> deletions_;
  mutable Mutex fragments_mu_;
  mutable std::map<uint32_t, std::shared_ptr<FragmentReader>> fragments_ VIGIL_GUARDED_BY(fragments_mu_);
};

// Drops cached segment readers no snapshot uses (for tests and shutdown).
void PurgeUnusedSegments();

}  // namespace vigil::query
