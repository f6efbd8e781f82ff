#include "vigil/index/provider.h"

#include <algorithm>
#include <set>

#include "vigil/common/failpoint.h"
#include "vigil/common/names.h"
#include "vigil/index/fts.h"
#include "vigil/index/ivf_pq.h"
#include "vigil/index/scalar.h"

namespace vigil::index {

namespace {

std::vector<const IndexSegmentMeta*> SegmentsNamed(const Manifest& m, const std::string& name) {
  std::vector<const IndexSegmentMeta*> out;
  for (const auto& s : m.segments) {
    if (s.name == name) out.push_back(&s);
  }
  return out;
}

Result<std::shared_ptr<Dataset>> OpenAdmitted(const std::string& path, std::optional<uint64_t> version,
                                              const std::string& expected_fingerprint, const DatasetOptions& dataset) {
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(path, version, dataset));
  if (!expected_fingerprint.empty() && ds->schema()->fingerprint() != expected_fingerprint) {
    return Status::FailedPrecondition("the schema of version " + std::to_string(ds->version()) +
                                      " no longer matches the admitted schema");
  }
  return ds;
}

// Writes the segment files for `spec` over every fragment of `ds`.
Status BuildSegment(const Dataset& ds, const Field& field, const IndexSpec& spec,
                    const std::vector<uint32_t>& fragments, SegmentWriter* writer, const ProgressFn& progress) {
  switch (spec.type) {
    case IndexType::kIvfPq: {
      VIGIL_ASSIGN_OR_RETURN(IvfPqModel model, TrainIvfPq(ds, field, fragments, spec.ivf_pq, progress));
      return BuildIvfPqSegment(ds, field, fragments, model, writer, progress);
    }
    case IndexType::kBtree:
      return BuildBtreeSegment(ds, field, fragments, writer, progress);
    case IndexType::kBitmap:
      return BuildBitmapSegment(ds, field, fragments, writer, progress);
    case IndexType::kFts:
      return BuildFtsSegment(ds, field, fragments, spec.fts, writer, progress);
  }
  return Status::Internal("unhandled index type");
}

Result<ProviderResult> CreateIndex(const CreateIndexRequest& req, bool vector) {
  VIGIL_RETURN_IF_ERROR(ValidateIdentifier(req.name, "index name"));
  if ((req.type == IndexType::kIvfPq) != vector) {
    return Status::InvalidArgument(std::string("index type ") + std::string(IndexTypeName(req.type)) +
                                   (vector ? " is not a vector index" : " is not a scalar index"));
  }
  VIGIL_ASSIGN_OR_RETURN(auto ds,
                         OpenAdmitted(req.dataset_path, req.version, req.expected_schema_fingerprint, req.dataset));
  auto idx = ds->schema()->IndexOf(req.column);
  if (!idx) return Status::InvalidArgument("table has no column '" + req.column + "'");
  const Field& field = ds->schema()->field(*idx);
  auto same_name = SegmentsNamed(ds->manifest(), req.name);
  if (!same_name.empty() && !req.replace) {
    return Status::AlreadyExists("index '" + req.name + "' already exists at version " + std::to_string(ds->version()));
  }
  VIGIL_ASSIGN_OR_RETURN(IndexSpec spec, ValidateIndexSpec(req.type, req.properties, field, ds->CountRows(),
                                                           ds->manifest().fragments.size(), req.caps));
  std::vector<uint32_t> fragments;
  for (const auto& f : ds->manifest().fragments) fragments.push_back(f.id);

  Uuid uuid = req.segment_uuid.IsNil() ? Uuid::Generate() : req.segment_uuid;
  VIGIL_ASSIGN_OR_RETURN(auto writer, SegmentWriter::Create(ds->fs(), ds->path(), uuid));
  Status built = BuildSegment(*ds, field, spec, fragments, writer.get(), req.progress);
  Result<std::vector<SegmentFile>> files = built.ok() ? writer->Finish() : Result<std::vector<SegmentFile>>(built);
  if (!files.ok()) {
    writer->Abandon();
    return files.status();
  }
  VIGIL_FAILPOINT("provider.after_segment_write");
  if (req.progress) req.progress("committing", 0, 1);

  IndexSegmentMeta meta;
  meta.name = req.name;
  meta.uuid = uuid;
  meta.field_ids = {field.id};
  meta.index_type = std::string(IndexTypeName(spec.type));
  meta.properties_json = SpecToPropertiesJson(spec);
  meta.built_at_version = ds->version();
  meta.covered_fragments = fragments;
  meta.files = std::move(*files);
  Transaction txn;
  txn.props = req.txn;
  txn.props.operation = same_name.empty() ? "CREATE_INDEX" : "REPLACE_INDEX";
  txn.props.extra["index_name"] = req.name;
  txn.props.extra["segment_uuid"] = uuid.ToString();
  for (const auto* s : same_name) txn.removed_segments.push_back(s->uuid);
  txn.added_segments.push_back(std::move(meta));
  auto committed = ds->Commit(std::move(txn));
  if (!committed.ok()) {
    // Only a commit that certainly did not publish may drop its files.
    if (committed.status().code() == StatusCode::kCommitConflict) writer->Abandon();
    return committed.status();
  }
  VIGIL_FAILPOINT("provider.after_commit");
  if (req.progress) req.progress("committing", 1, 1);
  return ProviderResult{(*committed)->version(), uuid};
}

}  // namespace

Status RevalidateCreate(const CreateIndexRequest& req) {
  if (Status caps = CheckIndexCaps(req.caps); !caps.ok()) {
    return Status::FailedPrecondition("STALE_ADMISSION: the admitted caps cannot be honoured: " + caps.message());
  }
  VIGIL_ASSIGN_OR_RETURN(auto ds,
                         OpenAdmitted(req.dataset_path, req.version, req.expected_schema_fingerprint, req.dataset));
  auto idx = ds->schema()->IndexOf(req.column);
  if (!idx) {
    return Status::FailedPrecondition("STALE_ADMISSION: version " + std::to_string(ds->version()) + " has no column '" +
                                      req.column + "'");
  }
  auto spec = ValidateIndexSpec(req.type, req.properties, ds->schema()->field(*idx), ds->CountRows(),
                                ds->manifest().fragments.size(), req.caps);
  if (!spec.ok()) {
    return Status::FailedPrecondition("STALE_ADMISSION: the request is not valid at version " +
                                      std::to_string(ds->version()) + ": " + spec.status().message());
  }
  return Status::OK();
}

Result<ProviderResult> CreateVectorIndex(const CreateIndexRequest& request) { return CreateIndex(request, true); }
Result<ProviderResult> CreateScalarIndex(const CreateIndexRequest& request) { return CreateIndex(request, false); }

Result<ProviderResult> DropIndex(const DropIndexRequest& req) {
  VIGIL_RETURN_IF_ERROR(ValidateIdentifier(req.name, "index name"));
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(req.dataset_path, req.version, req.dataset));
  auto same_name = SegmentsNamed(ds->manifest(), req.name);
  if (same_name.empty()) {
    return Status::NotFound("index '" + req.name + "' does not exist at version " + std::to_string(ds->version()));
  }
  Transaction txn;
  txn.props = req.txn;
  txn.props.operation = "DROP_INDEX";
  txn.props.extra["index_name"] = req.name;
  for (const auto* s : same_name) txn.removed_segments.push_back(s->uuid);
  VIGIL_ASSIGN_OR_RETURN(auto committed, ds->Commit(std::move(txn)));
  VIGIL_FAILPOINT("provider.after_commit");
  return ProviderResult{committed->version(), same_name.front()->uuid};
}

Result<std::vector<LogicalIndexInfo>> ListIndexes(const std::string& dataset_path, std::optional<uint64_t> version) {
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(dataset_path, version));
  const Manifest& m = ds->manifest();
  std::map<std::string, LogicalIndexInfo> by_name;
  std::map<std::string, std::set<uint32_t>> covered;
  for (const auto& s : m.segments) {
    LogicalIndexInfo& info = by_name[s.name];
    if (info.segments.empty()) {
      info.name = s.name;
      info.index_type = s.index_type;
      info.properties_json = s.properties_json;
      for (int32_t id : s.field_ids) {
        auto idx = m.schema->IndexOfId(id);
        if (!idx) {
          return Status::Corruption("index '" + s.name + "' names field id " + std::to_string(id) +
                                    " which is not in the schema");
        }
        info.columns.push_back(m.schema->field(*idx).name);
      }
    } else if (info.index_type != s.index_type) {
      return Status::Corruption("segments of index '" + s.name + "' disagree on the index type");
    }
    info.segments.push_back(s.uuid);
    covered[s.name].insert(s.covered_fragments.begin(), s.covered_fragments.end());
  }
  std::vector<LogicalIndexInfo> out;
  for (auto& [name, info] : by_name) {
    for (uint32_t f : covered[name]) {
      if (const FragmentMeta* fm = m.FindFragment(f)) info.rows_indexed += fm->num_rows;
    }
    out.push_back(std::move(info));
  }
  return out;
}

Result<uint64_t> CountRows(const std::string& dataset_path, std::optional<uint64_t> version) {
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(dataset_path, version));
  return ds->CountRows();
}

Result<std::shared_ptr<Segment>> OpenSegment(FileSystem* fs, const std::string& dataset_path, const Manifest& manifest,
                                             const IndexSegmentMeta& meta) {
  VIGIL_ASSIGN_OR_RETURN(IndexType type, ParseIndexType(meta.index_type));
  if (meta.field_ids.size() != 1) return Status::Corruption("index '" + meta.name + "' must name one field");
  auto idx = manifest.schema->IndexOfId(meta.field_ids[0]);
  if (!idx) return Status::Corruption("index '" + meta.name + "' names a field that is not in the schema");
  const Field& field = manifest.schema->field(*idx);
  VIGIL_ASSIGN_OR_RETURN(auto files, SegmentFiles::Open(fs, dataset_path, meta));
  switch (type) {
    case IndexType::kIvfPq: {
      VIGIL_ASSIGN_OR_RETURN(auto seg, IvfPqSegment::Open(files));
      return std::shared_ptr<Segment>(std::move(seg));
    }
    case IndexType::kBtree: {
      VIGIL_ASSIGN_OR_RETURN(auto seg, OpenBtreeSegment(files, field));
      return std::shared_ptr<Segment>(std::move(seg));
    }
    case IndexType::kBitmap: {
      VIGIL_ASSIGN_OR_RETURN(auto seg, OpenBitmapSegment(files, field));
      return std::shared_ptr<Segment>(std::move(seg));
    }
    case IndexType::kFts: {
      VIGIL_ASSIGN_OR_RETURN(auto seg, FtsSegment::Open(files));
      return std::shared_ptr<Segment>(std::move(seg));
    }
  }
  return Status::Internal("unhandled index type");
}

}  // namespace vigil::index
