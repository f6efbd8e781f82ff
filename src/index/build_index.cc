// BUILD INDEX: one delta segment over the fragments a logical index does not
// cover yet, reusing the trained parts of its newest segment (provider.h).
#include <algorithm>
#include <set>

#include "ivf_pq_format.h"
#include "vigil/common/failpoint.h"
#include "vigil/common/names.h"
#include "vigil/index/fts.h"
#include "vigil/index/ivf_pq.h"
#include "vigil/index/provider.h"
#include "vigil/index/scalar.h"

namespace vigil::index {

namespace {

constexpr size_t kMaxModelBytes = size_t{1} << 30;

std::vector<const IndexSegmentMeta*> SegmentsNamed(const Manifest& m, const std::string& name) {
  std::vector<const IndexSegmentMeta*> out;
  for (const auto& s : m.segments) {
    if (s.name == name) out.push_back(&s);
  }
  return out;
}

// Fragments of `m` that no segment in `segments` covers, ascending.
std::vector<uint32_t> Uncovered(const Manifest& m, const std::vector<const IndexSegmentMeta*>& segments) {
  std::set<uint32_t> covered;
  for (const auto* s : segments) covered.insert(s->covered_fragments.begin(), s->covered_fragments.end());
  std::vector<uint32_t> out;
  for (const auto& f : m.fragments) {
    if (!covered.count(f.id)) out.push_back(f.id);
  }
  return out;
}

// The segment whose trained parts the delta reuses: the newest built.
const IndexSegmentMeta* Newest(const std::vector<const IndexSegmentMeta*>& segments) {
  const IndexSegmentMeta* best = segments.front();
  for (const auto* s : segments) {
    if (s->built_at_version >= best->built_at_version) best = s;
  }
  return best;
}

Result<const Field*> IndexedField(const Manifest& m, const IndexSegmentMeta& meta) {
  if (meta.field_ids.size() != 1) return Status::Corruption("index '" + meta.name + "' must name one field");
  auto idx = m.schema->IndexOfId(meta.field_ids[0]);
  if (!idx) return Status::Corruption("index '" + meta.name + "' names a field that is not in the schema");
  return &m.schema->field(*idx);
}

// Reads only the trained model of an IVF_PQ segment (not its inverted lists).
Result<IvfPqModel> ReadIvfPqModel(const Dataset& ds, const IndexSegmentMeta& meta) {
  VIGIL_ASSIGN_OR_RETURN(auto files, SegmentFiles::Open(ds.fs(), ds.path(), meta));
  VIGIL_ASSIGN_OR_RETURN(std::string bytes, files->ReadVerified(kIvfPqModelFile, kMaxModelBytes));
  auto model = DecodeIvfPqModel(bytes);
  if (!model.ok()) return model.status().WithContext("IVF_PQ segment " + meta.uuid.ToString());
  return model;
}

Status BuildDelta(const Dataset& ds, const Field& field, const IndexSegmentMeta& newest,
                  const std::vector<uint32_t>& fragments, SegmentWriter* writer, const ProgressFn& progress) {
  VIGIL_ASSIGN_OR_RETURN(IndexType type, ParseIndexType(newest.index_type));
  switch (type) {
    case IndexType::kIvfPq: {
      VIGIL_ASSIGN_OR_RETURN(IvfPqModel model, ReadIvfPqModel(ds, newest));
      return BuildIvfPqSegment(ds, field, fragments, model, writer, progress);
    }
    case IndexType::kFts: {
      VIGIL_ASSIGN_OR_RETURN(IndexSpec spec, SpecFromPropertiesJson(type, newest.properties_json));
      return BuildFtsSegment(ds, field, fragments, spec.fts, writer, progress);
    }
    case IndexType::kBtree:
      return BuildBtreeSegment(ds, field, fragments, writer, progress);
    case IndexType::kBitmap:
      return BuildBitmapSegment(ds, field, fragments, writer, progress);
  }
  return Status::Internal("unhandled index type");
}

// Validation against a fresh read: the index is exactly as at the base, the
// schema is unchanged and every fragment to cover is still present.
Status ValidateFresh(const Dataset& base, const std::string& name, const std::vector<uint32_t>& fragments) {
  VIGIL_ASSIGN_OR_RETURN(auto fresh, Dataset::Open(base.path(), std::nullopt, base.options()));
  if (fresh->manifest().dataset_id != base.manifest().dataset_id) {
    return Status::CommitConflict("the table was re-created since version " + std::to_string(base.version()));
  }
  if (fresh->schema()->fingerprint() != base.schema()->fingerprint()) {
    return Status::CommitConflict("the schema changed since version " + std::to_string(base.version()));
  }
  std::vector<Uuid> was, now;
  for (const auto* s : SegmentsNamed(base.manifest(), name)) was.push_back(s->uuid);
  for (const auto* s : SegmentsNamed(fresh->manifest(), name)) now.push_back(s->uuid);
  std::sort(was.begin(), was.end());
  std::sort(now.begin(), now.end());
  if (was != now) {
    return Status::CommitConflict("index '" + name + "' was changed since version " + std::to_string(base.version()));
  }
  for (uint32_t f : fragments) {
    if (fresh->manifest().FindFragment(f) == nullptr) {
      return Status::CommitConflict("fragment " + std::to_string(f) + " was removed since version " +
                                    std::to_string(base.version()));
    }
  }
  return Status::OK();
}

IndexSegmentMeta DeltaMeta(const Dataset& ds, const IndexSegmentMeta& newest, const Uuid& uuid,
                           std::vector<uint32_t> fragments, std::vector<SegmentFile> files) {
  IndexSegmentMeta meta;
  meta.name = newest.name;
  meta.uuid = uuid;
  meta.field_ids = newest.field_ids;
  meta.index_type = newest.index_type;
  meta.properties_json = newest.properties_json;
  meta.built_at_version = ds.version();
  meta.covered_fragments = std::move(fragments);
  meta.files = std::move(files);
  return meta;
}

// The commit: the delta segment added; the index's base segments removed and
// re-added unchanged, so a concurrent DROP or REPLACE of the index (which removes
// them) makes the rebase fail with CommitConflict instead of resurrecting it.
Transaction DeltaTransaction(const BuildIndexRequest& req, const Dataset& ds, IndexSegmentMeta meta) {
  Transaction txn;
  txn.props = req.txn;
  txn.props.operation = "BUILD_INDEX";
  txn.props.extra["index_name"] = req.name;
  txn.props.extra["segment_uuid"] = meta.uuid.ToString();
  for (const auto* s : SegmentsNamed(ds.manifest(), req.name)) {
    txn.removed_segments.push_back(s->uuid);
    txn.added_segments.push_back(*s);
  }
  txn.added_segments.push_back(std::move(meta));
  return txn;
}

}  // namespace

Result<BuildIndexResult> BuildIndex(const BuildIndexRequest& req) {
  VIGIL_RETURN_IF_ERROR(ValidateIdentifier(req.name, "index name"));
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(req.dataset_path, req.version, req.dataset));
  if (!req.expected_schema_fingerprint.empty() && ds->schema()->fingerprint() != req.expected_schema_fingerprint) {
    return Status::FailedPrecondition("the schema of version " + std::to_string(ds->version()) +
                                      " no longer matches the admitted schema");
  }
  auto segments = SegmentsNamed(ds->manifest(), req.name);
  if (segments.empty()) {
    return Status::NotFound("index '" + req.name + "' does not exist at version " + std::to_string(ds->version()));
  }
  BuildIndexResult result;
  result.base_version = ds->version();
  result.committed_version = ds->version();
  std::vector<uint32_t> fragments = Uncovered(ds->manifest(), segments);
  if (fragments.empty()) {
    result.noop = true;
    return result;
  }
  const IndexSegmentMeta& newest = *Newest(segments);
  VIGIL_ASSIGN_OR_RETURN(const Field* field, IndexedField(ds->manifest(), newest));

  Uuid uuid = req.segment_uuid.IsNil() ? Uuid::Generate() : req.segment_uuid;
  VIGIL_ASSIGN_OR_RETURN(auto writer, SegmentWriter::Create(ds->fs(), ds->path(), uuid));
  Status built = BuildDelta(*ds, *field, newest, fragments, writer.get(), req.progress);
  Result<std::vector<SegmentFile>> files = built.ok() ? writer->Finish() : Result<std::vector<SegmentFile>>(built);
  if (!files.ok()) {
    writer->Abandon();
    return files.status();
  }
  VIGIL_FAILPOINT("build.after_segment_write");
  if (Status valid = ValidateFresh(*ds, req.name, fragments); !valid.ok()) {
    writer->Abandon();
    return valid;
  }
  if (req.progress) req.progress("committing", 0, 1);
  Transaction txn = DeltaTransaction(req, *ds, DeltaMeta(*ds, newest, uuid, fragments, std::move(*files)));
  auto committed = ds->Commit(std::move(txn));
  if (!committed.ok()) {
    // Only a commit that certainly did not publish may drop its files.
    if (committed.status().code() == StatusCode::kCommitConflict) writer->Abandon();
    return committed.status();
  }
  VIGIL_FAILPOINT("build.after_commit");
  if (req.progress) req.progress("committing", 1, 1);
  result.committed_version = (*committed)->version();
  result.segment_uuid = uuid;
  result.covered_fragments = std::move(fragments);
  return result;
}

}  // namespace vigil::index
