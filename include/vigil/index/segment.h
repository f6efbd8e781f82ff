// The common shape of opened index segments, the row filter that searches
// consult (deletions, prefilters), and build progress reporting.
// Opened segments are immutable and thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "vigil/index/segment_files.h"
#include "vigil/storage/column.h"
#include "vigil/storage/manifest.h"

namespace vigil::index {

// Build progress: phase ("sampling", "training", "encoding", "writing"), done, total.
using ProgressFn = std::function<void(std::string_view phase, uint64_t done, uint64_t total)>;

// Whether a row may appear in a result. Must be thread-safe (FAISS may call it
// from several threads).
class RowFilter {
 public:
  virtual ~RowFilter() = default;
  virtual bool Accept(RowAddress row) const = 0;
};

class Segment {
 public:
  explicit Segment(std::shared_ptr<SegmentFiles> files) : files_(std::move(files)) {}
  virtual ~Segment() = default;
  const IndexSegmentMeta& meta() const { return files_->meta(); }
  const SegmentFiles& files() const { return *files_; }
  // Bytes of memory the opened segment holds.
  virtual size_t MemoryBytes() const = 0;

 private:
  std::shared_ptr<SegmentFiles> files_;
};

}  // namespace vigil::index
