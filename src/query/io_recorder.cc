#include "vigil/query/io_recorder.h"

namespace vigil::query {

void IoRecorder::UseSegment(const std::string& segment_path) {
  MutexLock lock(&mu_);
  segments_.insert(segment_path);
}

void IoRecorder::OnRead(const std::string& path, uint64_t offset, size_t bytes) {
  (void)offset;
  MutexLock lock(&mu_);
  FileReads& r = reads_[path];
  ++r.calls;
  r.bytes += bytes;
}

std::set<std::string> IoRecorder::segments_used() const {
  MutexLock lock(&mu_);
  return segments_;
}

std::map<std::string, IoRecorder::FileReads> IoRecorder::physical_reads() const {
  MutexLock lock(&mu_);
  return reads_;
}

IoRecorder::FileReads IoRecorder::ReadsMatching(const std::string& needle) const {
  MutexLock lock(&mu_);
  FileReads total;
  for (const auto& [path, r] : reads_) {
    if (path.find(needle) != std::string::npos) {
      total.calls += r.calls;
      total.bytes += r.bytes;
    }
  }
  return total;
}

void IoRecorder::Clear() {
  MutexLock lock(&mu_);
  segments_.clear();
  reads_.clear();
}

}  // namespace vigil::query
