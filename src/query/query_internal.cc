#include "query_internal.h"

#include <algorithm>

#include "vigil/index/segment_files.h"

namespace vigil::query::internal {

Deletions Deletions::Of(const TableSnapshot& snapshot) {
  Deletions d;
  for (const auto& f : snapshot.manifest().fragments) d.fragments_.insert(f.id);
  d.by_fragment_ = &snapshot.deletions();
  return d;
}

bool Deletions::IsDeleted(RowAddress row) const {
  auto it = by_fragment_->find(RowFragment(row));
  return it != by_fragment_->end() && it->second.Contains(RowOffset(row));
}

bool Deletions::AnyDeletedIn(const std::set<uint32_t>& fragments) const {
  for (const auto& [id, dv] : *by_fragment_) {
    if (dv.Cardinality() > 0 && fragments.count(id)) return true;
  }
  return false;
}

bool NeedsNoFilter(const index::Segment& segment, const std::set<uint32_t>& fragments, const Deletions& deletions,
                   const Roaring64Map* allowed) {
  if (allowed != nullptr || deletions.AnyDeletedIn(fragments)) return false;
  const auto& covered = segment.meta().covered_fragments;
  return covered.size() == fragments.size() && std::equal(covered.begin(), covered.end(), fragments.begin());
}

Coverage ComputeCoverage(const TableSnapshot& snapshot, const std::string& index_name) {
  const Manifest& m = snapshot.manifest();
  std::map<uint32_t, size_t> owner;  // fragment -> index into segment list (newest wins)
  std::vector<const IndexSegmentMeta*> metas;
  for (const auto& meta : m.segments) {
    // An unusable segment covers nothing: its fragments are scanned.
    if (meta.name == index_name && snapshot.Segment(meta.uuid) != nullptr) metas.push_back(&meta);
  }
  std::stable_sort(metas.begin(), metas.end(),
                   [](const auto* a, const auto* b) { return a->built_at_version < b->built_at_version; });
  Coverage c;
  for (size_t i = 0; i < metas.size(); ++i) {
    for (uint32_t f : metas[i]->covered_fragments) owner[f] = i;
  }
  std::vector<std::set<uint32_t>> assigned(metas.size());
  for (const auto& f : m.fragments) {
    auto it = owner.find(f.id);
    if (it == owner.end()) {
      c.uncovered.push_back(f.id);
    } else {
      assigned[it->second].insert(f.id);
    }
  }
  for (size_t i = 0; i < metas.size(); ++i) {
    if (!assigned[i].empty()) c.segments.emplace_back(snapshot.Segment(metas[i]->uuid), std::move(assigned[i]));
  }
  return c;
}

Status SegmentStatus(const TableSnapshot& snapshot, const index::Segment& segment, Status st) {
  if (st.Is(StatusCode::kCorruption)) snapshot.MarkUnusable(segment.meta().uuid, st);
  return st;
}

bool QueryRowFilter::Accept(RowAddress row) const {
  if (fragments_ != nullptr && fragments_->count(RowFragment(row)) == 0) return false;
  if (!deletions_->HasFragment(RowFragment(row)) || deletions_->IsDeleted(row)) return false;
  return allowed_ == nullptr || allowed_->contains(static_cast<uint64_t>(row));
}

std::string SegmentPath(const index::Segment& segment) { return index::SegmentDir(segment.meta().uuid); }

}  // namespace vigil::query::internal
