#include <optional>

#include "query_internal.h"
#include "vigil/query/query.h"

namespace vigil::query {

namespace {

using index::ScalarPredicate;

// The scalar index (BITMAP preferred for =/IN, else BTREE) on `column` that supports `op`.
std::string PickIndex(const TableSnapshot& snap, const std::string& column, ScalarPredicate::Op op) {
  for (const char* type : {"BITMAP", "BTREE"}) {
    std::string name = snap.IndexOn(column, type);
    if (name.empty()) continue;
    auto segments = snap.SegmentsOf(name);
    bool ok = !segments.empty();
    for (const auto& s : segments) {
      auto* scalar = dynamic_cast<index::ScalarSegment*>(s.get());
      ok = ok && scalar != nullptr && scalar->Supports(op);
    }
    if (ok) return name;
  }
  return "";
}

// Adds the live rows of `fragments` whose `field` value satisfies `p`.
Status ScanFragments(const TableSnapshot& snap, const Field& field, const ScalarPredicate& p,
                     const std::vector<uint32_t>& fragments, Roaring64Map* out) {
  if (fragments.empty()) return Status::OK();
  ScanOptions opts;
  opts.columns = {field.name};
  opts.fragment_ids = fragments;
  VIGIL_ASSIGN_OR_RETURN(auto scan, snap.dataset()->Scan(opts));
  for (;;) {
    VIGIL_ASSIGN_OR_RETURN(auto batch, scan->Next());
    if (!batch) return Status::OK();
    const Column& col = batch->columns[0];
    for (size_t r = 0; r < batch->num_rows; ++r) {
      if (index::PredicateMatches(p, col.ValueAt(r), field.type)) out->add(batch->row_addresses[r]);
    }
  }
}

Result<Roaring64Map> EvaluateConjunct(const TableSnapshot& snap, const ColumnPredicate& cp,
                                      const internal::Deletions& deletions, IoRecorder* recorder) {
  auto idx = snap.manifest().schema->IndexOf(cp.column);
  if (!idx) return Status::InvalidArgument("unknown column '" + cp.column + "'");
  const Field& field = snap.manifest().schema->field(*idx);
  Roaring64Map rows;
  std::vector<uint32_t> to_scan;
  std::string index_name = PickIndex(snap, cp.column, cp.predicate.op);
  if (index_name.empty()) {
    for (const auto& f : snap.manifest().fragments) to_scan.push_back(f.id);
  } else {
    internal::Coverage cov = internal::ComputeCoverage(snap, index_name);
    to_scan = cov.uncovered;
    for (const auto& [segment, fragments] : cov.segments) {
      if (recorder) recorder->UseSegment(internal::SegmentPath(*segment));
      auto* scalar = static_cast<index::ScalarSegment*>(segment.get());
      Result<Roaring64Map> hits = scalar->Evaluate(cp.predicate);
      VIGIL_RETURN_IF_ERROR(internal::SegmentStatus(snap, *segment, hits.status()));
      for (uint64_t row : *hits) {
        if (fragments.count(RowFragment(row)) && !deletions.IsDeleted(row)) rows.add(row);
      }
    }
  }
  VIGIL_RETURN_IF_ERROR(ScanFragments(snap, field, cp.predicate, to_scan, &rows));
  return rows;
}

Result<Roaring64Map> FilterOnce(const TableSnapshot& snapshot, const std::vector<ColumnPredicate>& conjuncts,
                                IoRecorder* recorder) {
  std::optional<ScopedIoObserver> observe;
  if (recorder) observe.emplace(recorder);
  const internal::Deletions deletions = internal::Deletions::Of(snapshot);
  if (conjuncts.empty()) {
    Roaring64Map all;
    for (const auto& f : snapshot.manifest().fragments) {
      for (uint32_t off = 0; off < f.num_rows; ++off) {
        RowAddress row = MakeRowAddress(f.id, off);
        if (!deletions.IsDeleted(row)) all.add(row);
      }
    }
    return all;
  }
  std::optional<Roaring64Map> result;
  for (const auto& cp : conjuncts) {
    VIGIL_ASSIGN_OR_RETURN(Roaring64Map rows, EvaluateConjunct(snapshot, cp, deletions, recorder));
    if (result) {
      *result &= rows;
    } else {
      result = std::move(rows);
    }
    if (result->isEmpty()) break;
  }
  return std::move(*result);
}

}  // namespace

Result<Roaring64Map> FilterRows(const TableSnapshot& snapshot, const std::vector<ColumnPredicate>& conjuncts,
                                IoRecorder* recorder) {
  return internal::RetryWithoutCorruptSegments(snapshot, [&] { return FilterOnce(snapshot, conjuncts, recorder); });
}

}  // namespace vigil::query
