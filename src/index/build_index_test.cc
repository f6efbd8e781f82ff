#include <gtest/gtest.h>

#include "ivf_pq_format.h"
#include "testutil/temp_dir.h"
#include "vigil/index/fts.h"
#include "vigil/index/ivf_pq.h"
#include "vigil/index/provider.h"
#include "vigil/index/scalar.h"
#include "vigil/ingest/datagen.h"

namespace vigil::index {
namespace {

class BuildIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DatagenOptions o;
    o.rows = 3000;
    o.dim = 8;
    o.latent_dim = 2;
    o.words_per_body = 10;
    gen_ = *DataGenerator::Make(o);
    path_ = dir_.Join("db/t.vgl");
    auto ds = *Dataset::Create(path_, gen_->schema(), {});
    Append(0, 2000);
  }

  void Append(uint64_t first, size_t n) {
    auto ds = *Dataset::Open(path_);
    std::vector<RecordBatch> parts;
    parts.push_back(gen_->Batch(first, n));
    auto reader = MakeBatchReader(gen_->schema(), std::move(parts));
    ASSERT_TRUE(ds->Append(reader.get(), {}).ok());
  }

  void Create(const std::string& name, const std::string& column, IndexType type,
              std::map<std::string, std::string> props = {}) {
    CreateIndexRequest r;
    r.dataset_path = path_;
    r.column = column;
    r.name = name;
    r.type = type;
    r.properties = std::move(props);
    auto res = type == IndexType::kIvfPq ? CreateVectorIndex(r) : CreateScalarIndex(r);
    ASSERT_TRUE(res.ok()) << res.status().ToString();
  }

  BuildIndexRequest Build(const std::string& name) {
    BuildIndexRequest r;
    r.dataset_path = path_;
    r.name = name;
    return r;
  }

  std::vector<IndexSegmentMeta> SegmentsOf(const std::string& name) {
    std::vector<IndexSegmentMeta> out;
    auto ds = *Dataset::Open(path_);
    for (const auto& s : ds->manifest().segments) {
      if (s.name == name) out.push_back(s);
    }
    return out;
  }

  IvfPqModel ModelOf(const IndexSegmentMeta& meta) {
    auto files = *SegmentFiles::Open(DefaultFileSystem(), path_, meta);
    return *DecodeIvfPqModel(*files->ReadVerified(kIvfPqModelFile, 1 << 30));
  }

  testing::TempDir dir_;
  std::shared_ptr<const DataGenerator> gen_;
  std::string path_;
};

TEST_F(BuildIndexTest, IvfPqDeltaReusesTheTrainedModelAndRecordsProvenance) {
  Create("emb_idx", "emb", IndexType::kIvfPq,
         {{"index_type", "IVF_PQ"}, {"metric", "l2"}, {"num_partitions", "4"}, {"num_sub_vectors", "2"}});
  Append(2000, 500);
  auto req = Build("emb_idx");
  req.txn.job_id = 9;
  req.txn.attempt_id = "9-1";
  req.segment_uuid = Uuid::Generate();
  auto r = BuildIndex(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->noop);
  EXPECT_EQ(r->segment_uuid, req.segment_uuid);
  auto ds = *Dataset::Open(path_);
  EXPECT_EQ(r->committed_version, ds->version());
  EXPECT_EQ(ds->manifest().txn.operation, "BUILD_INDEX");
  EXPECT_EQ(ds->manifest().txn.job_id, 9);
  EXPECT_EQ(ds->manifest().txn.attempt_id, "9-1");
  auto segs = SegmentsOf("emb_idx");
  ASSERT_EQ(segs.size(), 2u);
  const IndexSegmentMeta& delta = segs[0].uuid == req.segment_uuid ? segs[0] : segs[1];
  const IndexSegmentMeta& first = segs[0].uuid == req.segment_uuid ? segs[1] : segs[0];
  EXPECT_EQ(delta.covered_fragments, r->covered_fragments);
  EXPECT_EQ(delta.covered_fragments, (std::vector<uint32_t>{ds->manifest().fragments.back().id}));
  EXPECT_EQ(ModelOf(delta).centroids, ModelOf(first).centroids);
  EXPECT_EQ(ModelOf(delta).pq_centroids, ModelOf(first).pq_centroids);
  auto opened = OpenSegment(DefaultFileSystem(), path_, ds->manifest(), delta);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(std::static_pointer_cast<IvfPqSegment>(*opened)->num_rows(), 500u);
  auto listed = *ListIndexes(path_);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].rows_indexed, 2500u);
  // Everything covered now: a second BUILD is a NOOP without a commit.
  auto again = BuildIndex(Build("emb_idx"));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->noop);
  EXPECT_EQ(again->committed_version, ds->version());
  EXPECT_EQ((*Dataset::LatestVersion(path_)), ds->version());
}

TEST_F(BuildIndexTest, ScalarAndFtsDeltasCoverOnlyNewFragments) {
  Create("cat_idx", "category", IndexType::kBitmap);
  Create("id_idx", "id", IndexType::kBtree);
  Create("body_idx", "body", IndexType::kFts, {{"tokenizer", "porter"}});
  Append(2000, 300);
  for (const char* name : {"cat_idx", "id_idx", "body_idx"}) {
    auto r = BuildIndex(Build(name));
    ASSERT_TRUE(r.ok()) << name << ": " << r.status().ToString();
    auto segs = SegmentsOf(name);
    ASSERT_EQ(segs.size(), 2u) << name;
    EXPECT_EQ(segs[0].properties_json, segs[1].properties_json);
  }
  auto ds = *Dataset::Open(path_);
  for (const auto& s : ds->manifest().segments) {
    auto opened = OpenSegment(DefaultFileSystem(), path_, ds->manifest(), s);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  }
  // The BTREE delta answers for the new rows only.
  for (const auto& s : SegmentsOf("id_idx")) {
    if (s.covered_fragments.size() != 1 || s.covered_fragments[0] != ds->manifest().fragments.back().id) continue;
    auto seg = std::static_pointer_cast<ScalarSegment>(*OpenSegment(DefaultFileSystem(), path_, ds->manifest(), s));
    ScalarPredicate p;
    p.op = ScalarPredicate::Op::kGe;
    p.values = {Value(int64_t{0})};
    EXPECT_EQ(seg->Evaluate(p)->cardinality(), 300u);
  }
  auto fts = SegmentsOf("body_idx");
  auto spec = *SpecFromPropertiesJson(IndexType::kFts, fts[1].properties_json);
  EXPECT_EQ(spec.fts.tokenizer, "porter");
}

TEST_F(BuildIndexTest, MissingIndexIsNotFoundAndDroppedIndexConflicts) {
  EXPECT_EQ(BuildIndex(Build("nope")).status().code(), StatusCode::kNotFound);
  Create("cat_idx", "category", IndexType::kBitmap);
  Append(2000, 100);
  uint64_t base = *Dataset::LatestVersion(path_);
  DropIndexRequest drop;
  drop.dataset_path = path_;
  drop.name = "cat_idx";
  ASSERT_TRUE(DropIndex(drop).ok());
  auto req = Build("cat_idx");
  req.version = base;  // captured before the DROP committed
  req.segment_uuid = Uuid::Generate();
  auto r = BuildIndex(req);
  EXPECT_EQ(r.status().code(), StatusCode::kCommitConflict) << r.status().ToString();
  EXPECT_TRUE(SegmentsOf("cat_idx").empty());  // not resurrected
  EXPECT_FALSE(*DefaultFileSystem()->Exists(JoinPath(path_, SegmentDir(req.segment_uuid))));
}

TEST_F(BuildIndexTest, RebasesOverAnAppendAndADeleteCommittedMeanwhile) {
  Create("cat_idx", "category", IndexType::kBitmap);
  Append(2000, 100);
  uint64_t base = *Dataset::LatestVersion(path_);
  Append(2100, 100);  // after the base: stays uncovered
  ASSERT_TRUE((*Dataset::Open(path_))->Delete({MakeRowAddress(0, 3)}, {}).ok());
  auto req = Build("cat_idx");
  req.version = base;
  auto r = BuildIndex(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto ds = *Dataset::Open(path_);
  EXPECT_EQ(ds->CountRows(), 2199u);
  auto listed = *ListIndexes(path_);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].segments.size(), 2u);
  EXPECT_EQ(listed[0].rows_indexed, 2100u);  // the fragment appended after the base is not covered
}

}  // namespace
}  // namespace vigil::index
