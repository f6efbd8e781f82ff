#include "vigil/query/snapshot.h"

#include "vigil/index/provider.h"

namespace vigil::query {

namespace {

// Process-wide cache of opened segments: (dataset path, uuid) -> reader.
class SegmentCache {
 public:
  static SegmentCache& Get() {
    static auto* c = new SegmentCache();
    return *c;
  }

  Result<std::shared_ptr<index::Segment>> GetOrOpen(const Dataset& ds, const IndexSegmentMeta& meta) {
    Key key{ds.path(), meta.uuid};
    {
      MutexLock lock(&mu_);
      auto it = map_.find(key);
      if (it != map_.end()) {
        if (auto s = it->second.lock()) return s;
      }
    }
    VIGIL_ASSIGN_OR_RETURN(auto seg, index::OpenSegment(ds.fs(), ds.path(), ds.manifest(), meta));
    MutexLock lock(&mu_);
    auto& slot = map_[key];
    if (auto s = slot.lock()) return s;  // another thread opened it first
    slot = seg;
    return seg;
  }

  void Purge() {
    MutexLock lock(&mu_);
    std::erase_if(map_, [](const auto& kv) { return kv.second.expired(); });
  }

 private:
  using Key = std::pair<std::string, Uuid>;
  Mutex mu_;
  std::map<Key, std::weak_ptr<index::Segment>> map_ VIGIL_GUARDED_BY(mu_);
};

}  // namespace

Result<std::shared_ptr<const TableSnapshot>> TableSnapshot::Open(std::shared_ptr<Dataset> dataset) {
  auto snap = std::make_shared<TableSnapshot>();
  for (const auto& meta : dataset->manifest().segments) {
    auto seg = SegmentCache::Get().GetOrOpen(*dataset, meta);
    if (seg.status().Is(StatusCode::kCorruption) || seg.status().Is(StatusCode::kNotFound)) {
      MutexLock lock(&snap->mu_);  // not yet shared; taken for the analysis
      snap->unusable_.push_back(UnusableSegment{meta.name, meta.uuid, seg.status()});
      snap->num_unusable_.store(snap->unusable_.size());
      continue;
    }
    if (!seg.ok()) return seg.status().WithContext("index '" + meta.name + "'");
    snap->segments_[meta.uuid] = std::move(*seg);
  }
  for (const auto& f : dataset->manifest().fragments) {
    if (!f.deletion) continue;
    VIGIL_ASSIGN_OR_RETURN(DeletionVector dv, dataset->LoadDeletions(f.id));
    snap->deletions_.emplace(f.id, std::move(dv));
  }
  snap->dataset_ = std::move(dataset);
  return std::shared_ptr<const TableSnapshot>(std::move(snap));
}

std::vector<std::shared_ptr<index::Segment>> TableSnapshot::SegmentsOf(const std::string& name) const {
  std::vector<std::shared_ptr<index::Segment>> out;
  for (const auto& meta : manifest().segments) {
    if (meta.name != name) continue;
    if (auto s = Segment(meta.uuid)) out.push_back(std::move(s));
  }
  return out;
}

std::string TableSnapshot::IndexOn(const std::string& column, const std::string& index_type) const {
  auto idx = manifest().schema->IndexOf(column);
  if (!idx) return "";
  int32_t field_id = manifest().schema->field(*idx).id;
  for (const auto& meta : manifest().segments) {
    if (meta.index_type == index_type && meta.field_ids.size() == 1 && meta.field_ids[0] == field_id &&
        Segment(meta.uuid) != nullptr) {
      return meta.name;
    }
  }
  return "";
}

std::shared_ptr<index::Segment> TableSnapshot::Segment(const Uuid& uuid) const {
  auto it = segments_.find(uuid);
  if (it == segments_.end()) return nullptr;
  if (marked_.load(std::memory_order_acquire)) {
    MutexLock lock(&mu_);
    for (const UnusableSegment& u : unusable_) {
      if (u.uuid == uuid) return nullptr;
    }
  }
  return it->second;
}

std::vector<UnusableSegment> TableSnapshot::unusable_segments() const {
  MutexLock lock(&mu_);
  return unusable_;
}

void TableSnapshot::MarkUnusable(const Uuid& uuid, const Status& reason) const {
  MutexLock lock(&mu_);
  for (const UnusableSegment& u : unusable_) {
    if (u.uuid == uuid) return;
  }
  std::string name;
  for (const auto& meta : manifest().segments) {
    if (meta.uuid == uuid) name = meta.name;
  }
  unusable_.push_back(UnusableSegment{name, uuid, reason});
  num_unusable_.store(unusable_.size(), std::memory_order_release);
  marked_.store(true, std::memory_order_release);
}

Result<std::shared_ptr<FragmentReader>> TableSnapshot::Fragment(uint32_t fragment_id) const {
  {
    MutexLock lock(&fragments_mu_);
    auto it = fragments_.find(fragment_id);
    if (it != fragments_.end()) return it->second;
  }
  VIGIL_ASSIGN_OR_RETURN(auto reader, dataset_->OpenFragment(fragment_id));
  MutexLock lock(&fragments_mu_);
  return fragments_.emplace(fragment_id, std::move(reader)).first->second;
}

void PurgeUnusedSegments() { SegmentCache::Get().Purge(); }

}  // namespace vigil::query
