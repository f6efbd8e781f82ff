// The I/O recorder: per query, which index segments were used (logical
// accesses, by `_indices/<uuid>/...` path) and, separately, which physical
// reads were made (files, bytes, read calls). A shared segment reader that
// already holds its data in memory is a logical access with zero physical reads.
// Thread-safe: a query may record from several threads.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "vigil/common/file_system.h"
#include "vigil/common/mutex.h"

namespace vigil::query {

class IoRecorder : public IoObserver {
 public:
  struct FileReads {
    uint64_t calls = 0;
    uint64_t bytes = 0;
  };

  // Records that the query consulted `segment_path` ("_indices/<uuid>/<file>" or "_indices/<uuid>").
  void UseSegment(const std::string& segment_path);
  void OnRead(const std::string& path, uint64_t offset, size_t bytes) override;

  std::set<std::string> segments_used() const;
  std::map<std::string, FileReads> physical_reads() const;
  // Physical reads whose path contains `needle` (e.g. "_indices/<uuid>" or "/data/").
  FileReads ReadsMatching(const std::string& needle) const;
  void Clear();

 private:
  mutable Mutex mu_;
  std::set<std::string> segments_ VIGIL_GUARDED_BY(mu_);
  std::map<std::string, FileReads> reads_ VIGIL_GUARDED_BY(mu_);
};

}  // namespace vigil::query
