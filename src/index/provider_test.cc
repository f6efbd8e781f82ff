#include "vigil/index/provider.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testutil/temp_dir.h"
#include "vigil/common/failpoint.h"
#include "vigil/index/ivf_pq.h"
#include "vigil/ingest/datagen.h"

namespace vigil::index {
namespace {

class ProviderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DatagenOptions o;
    o.rows = 1200;
    o.dim = 8;
    o.latent_dim = 2;
    o.words_per_body = 10;
    gen_ = *DataGenerator::Make(o);
    path_ = dir_.Join("db/t.vgl");
    auto ds = *Dataset::Create(path_, gen_->schema(), {});
    auto reader = gen_->NewReader();
    ASSERT_TRUE(ds->Append(reader.get(), {}).ok());
  }

  CreateIndexRequest Request(const std::string& name, const std::string& column, IndexType type) {
    CreateIndexRequest r;
    r.dataset_path = path_;
    r.column = column;
    r.name = name;
    r.type = type;
    if (type == IndexType::kIvfPq) {
      r.properties = {
          {"index_type", "IVF_PQ"}, {"metric", "cosine"}, {"num_partitions", "4"}, {"num_sub_vectors", "2"}};
    }
    return r;
  }

  size_t SegmentDirs() {
    auto names = DefaultFileSystem()->ListDir(JoinPath(path_, "_indices"));
    return names.ok() ? names->size() : 0;
  }

  testing::TempDir dir_;
  std::shared_ptr<const DataGenerator> gen_;
  std::string path_;
};

TEST_F(ProviderTest, CreateRecordsProvenanceAndPreassignedUuid) {
  auto req = Request("emb_idx", "emb", IndexType::kIvfPq);
  req.segment_uuid = Uuid::Generate();
  req.txn.job_id = 7;
  req.txn.attempt_id = "7-1";
  auto r = CreateVectorIndex(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->segment_uuid, req.segment_uuid);
  auto versions = *Dataset::ListVersions(path_);
  const auto& last = versions.back();
  EXPECT_EQ(last.version, r->committed_version);
  EXPECT_EQ(last.txn.operation, "CREATE_INDEX");
  EXPECT_EQ(last.txn.job_id, 7);
  EXPECT_EQ(last.txn.attempt_id, "7-1");
  auto ds = *Dataset::Open(path_);
  ASSERT_EQ(ds->manifest().segments.size(), 1u);
  const auto& seg = ds->manifest().segments[0];
  EXPECT_EQ(seg.uuid, req.segment_uuid);
  EXPECT_EQ(seg.index_type, "IVF_PQ");
  EXPECT_EQ(seg.built_at_version, 2u);
  EXPECT_EQ(seg.covered_fragments.size(), ds->manifest().fragments.size());
  EXPECT_FALSE(seg.files.empty());
  EXPECT_LE(seg.properties_json.size(), 400u);
  EXPECT_NE(seg.properties_json.find("\"metric_type\":\"cosine\""), std::string::npos);
  auto opened = OpenSegment(DefaultFileSystem(), path_, ds->manifest(), seg);
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
}

TEST_F(ProviderTest, NameTakenReplaceAndDrop) {
  ASSERT_TRUE(CreateScalarIndex(Request("cat_idx", "category", IndexType::kBitmap)).ok());
  auto again = CreateScalarIndex(Request("cat_idx", "category", IndexType::kBitmap));
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  auto rep = Request("cat_idx", "category", IndexType::kBtree);
  rep.replace = true;
  auto replaced = CreateScalarIndex(rep);
  ASSERT_TRUE(replaced.ok()) << replaced.status().ToString();
  auto list = *ListIndexes(path_);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].index_type, "BTREE");  // the old segment left in the same commit
  EXPECT_EQ(list[0].segments.size(), 1u);
  EXPECT_EQ(list[0].rows_indexed, 1200u);
  EXPECT_EQ(list[0].columns, std::vector<std::string>{"category"});
  auto versions = *Dataset::ListVersions(path_);
  EXPECT_EQ(versions.back().txn.operation, "REPLACE_INDEX");
  DropIndexRequest drop{path_, std::nullopt, "cat_idx", {}};
  ASSERT_TRUE(DropIndex(drop).ok());
  EXPECT_TRUE(ListIndexes(path_)->empty());
  EXPECT_EQ(DropIndex(drop).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*CountRows(path_), 1200u);
}

TEST_F(ProviderTest, BadRequestsFailBeforeAnyFileIsWritten) {
  struct Case {
    CreateIndexRequest req;
    StatusCode code;
  };
  std::vector<Case> cases;
  auto add = [&](CreateIndexRequest r, StatusCode c = StatusCode::kInvalidArgument) { cases.push_back({r, c}); };
  auto ivf = Request("v", "emb", IndexType::kIvfPq);
  auto bad = ivf;
  bad.properties["num_sub_vectors"] = "3";  // does not divide 8
  add(bad);
  bad = ivf;
  bad.properties["num_partitions"] = "5000";  // more than the rows
  add(bad);
  bad = ivf;
  bad.properties["metric"] = "hamming";
  add(bad);
  bad = ivf;
  bad.properties["num_bits"] = "6";  // 4 or 8
  add(bad);
  bad = ivf;
  bad.properties["color"] = "blue";
  add(bad);
  bad = ivf;
  bad.properties.erase("index_type");
  add(bad);
  add(Request("v", "category", IndexType::kIvfPq));  // not a vector column
  add(Request("b", "emb", IndexType::kBtree));       // vectors cannot be BTREE'd
  add(Request("b", "ts", IndexType::kBitmap));       // TIMESTAMP is not a BITMAP type
  add(Request("f", "id", IndexType::kFts));          // FTS needs a string
  add(Request("", "id", IndexType::kBtree));         // empty name
  add(Request(std::string(65, 'x'), "id", IndexType::kBtree));
  add(Request("b", "nope", IndexType::kBtree));
  bad = Request("b", "id", IndexType::kBtree);
  bad.properties["x"] = "1";
  add(bad);
  bad = Request("f", "body", IndexType::kFts);
  bad.properties["tokenizer"] = "klingon";
  add(bad);
  for (const auto& c : cases) {
    auto r = c.req.type == IndexType::kIvfPq ? CreateVectorIndex(c.req) : CreateScalarIndex(c.req);
    EXPECT_EQ(r.status().code(), c.code) << c.req.name << " on " << c.req.column << ": " << r.status().ToString();
  }
  EXPECT_EQ(SegmentDirs(), 0u);
  EXPECT_EQ(*Dataset::LatestVersion(path_), 2u);
}

TEST_F(ProviderTest, StaleAdmissionIsRefused) {
  auto req = Request("id_idx", "id", IndexType::kBtree);
  req.expected_schema_fingerprint = "0000000000000000";
  EXPECT_EQ(CreateScalarIndex(req).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(SegmentDirs(), 0u);
}

TEST_F(ProviderTest, RevalidationRefusesCapsAndRequestsTheBuildCannotHonour) {
  auto req = Request("emb_idx", "emb", IndexType::kIvfPq);
  req.version = 2;
  EXPECT_TRUE(RevalidateCreate(req).ok());
  req.caps.max_partitions = 2;  // below the admitted num_partitions 4
  Status low = RevalidateCreate(req);
  EXPECT_EQ(low.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(low.message(), ::testing::StartsWith("STALE_ADMISSION: the request is not valid at version 2: "));
  EXPECT_THAT(low.message(), ::testing::HasSubstr("caps.max_partitions = 2"));
  req.caps = kIndexCapsLimits;
  req.caps.max_partitions += 1;
  Status beyond = RevalidateCreate(req);
  EXPECT_EQ(beyond.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(beyond.message(), ::testing::StartsWith("STALE_ADMISSION: the admitted caps cannot be honoured"));
  req.caps = {};
  req.expected_schema_fingerprint = "0000000000000000";
  EXPECT_EQ(RevalidateCreate(req).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(SegmentDirs(), 0u);
  EXPECT_EQ(*Dataset::LatestVersion(path_), 2u);
}

TEST_F(ProviderTest, TrainingParametersOfAJobReachTheBuildAndTheStoredProperties) {
  auto req = Request("emb_idx", "emb", IndexType::kIvfPq);
  req.properties["max_iterations"] = "3";
  req.properties["sample_rate"] = "100";
  auto ds = *Dataset::Open(path_);
  const Field& emb = ds->schema()->field(*ds->schema()->IndexOf("emb"));
  IndexSpec spec = *ValidateIndexSpec(IndexType::kIvfPq, req.properties, emb, ds->CountRows(), 1);
  // As an executor builds it: from the job's properties.
  req.properties = *RequestPropertiesFromJson(IndexType::kIvfPq, JobPropertiesJson(spec, {}));
  auto r = CreateVectorIndex(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto built = *Dataset::Open(path_);
  const IndexSegmentMeta& meta = built->manifest().segments.at(0);
  EXPECT_NE(meta.properties_json.find("\"max_iterations\":3"), std::string::npos) << meta.properties_json;
  EXPECT_NE(meta.properties_json.find("\"sample_rate\":100"), std::string::npos) << meta.properties_json;
  auto seg = OpenSegment(DefaultFileSystem(), path_, built->manifest(), meta);
  ASSERT_TRUE(seg.ok()) << seg.status().ToString();
  const IvfPqModel& model = static_cast<const IvfPqSegment&>(**seg).model();
  std::vector<uint32_t> frags;
  for (const auto& f : ds->manifest().fragments) frags.push_back(f.id);
  auto three = TrainIvfPq(*ds, emb, frags, spec.ivf_pq, nullptr);
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(model.centroids, three->centroids);
  IvfPqParams defaults = spec.ivf_pq;
  defaults.max_iterations = IvfPqParams{}.max_iterations;
  defaults.sample_rate = IvfPqParams{}.sample_rate;
  EXPECT_NE(model.centroids, TrainIvfPq(*ds, emb, frags, defaults, nullptr)->centroids);
}

TEST_F(ProviderTest, FailureAfterFilesBeforeCommitLeavesNoManifestReference) {
  failpoint::Arm("provider.after_segment_write", failpoint::Action::kError);
  auto r = CreateScalarIndex(Request("id_idx", "id", IndexType::kBtree));
  failpoint::DisarmAll();
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(*Dataset::LatestVersion(path_), 2u);
  EXPECT_TRUE(ListIndexes(path_)->empty());
  EXPECT_EQ(SegmentDirs(), 1u);  // an orphan for vacuum, never referenced by a manifest
}

}  // namespace
}  // namespace vigil::index
