#include "vigil/generations/generation_manager.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "testutil/temp_dir.h"
#include "vigil/index/provider.h"
#include "vigil/query/query.h"
#include "vigil/storage/datagen.h"

namespace vigil::generations {
namespace {

using query::VectorQueryOptions;
using query::VectorSearch;
using query::IoRecorder;

class GenerationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DatagenOptions o;
    o.rows = 2000;
    o.dim = 16;
    o.latent_dim = 4;
    o.columns = {"id", "category", "emb"};
    gen_ = *DataGenerator::Make(o);
    path_ = dir_.Join("db/docs.vgl");
    auto ds = *Dataset::Create(path_, gen_->schema(), {});
    auto reader = gen_->NewReader();
    ASSERT_TRUE(ds->Append(reader.get(), {}).ok());
    CreateIndex("emb_idx", "8", "4", false);
    CreateScalar("cat_idx", "category");
  }

  void CreateIndex(const std::string& name, const std::string& partitions, const std::string& subs, bool replace) {
    index::CreateIndexRequest req;
    req.dataset_path = path_;
    req.column = "emb";
    req.name = name;
    req.type = index::IndexType::kIvfPq;
    req.properties = {{"index_type", "IVF_PQ"}, {"metric", "l2"}, {"num_partitions", partitions},
                      {"num_sub_vectors", subs}};
    req.replace = replace;
    auto r = index::CreateVectorIndex(req);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  void CreateScalar(const std::string& name, const std::string& column) {
    index::CreateIndexRequest req;
    req.dataset_path = path_;
    req.column = column;
    req.name = name;
    req.type = index::IndexType::kBitmap;
    ASSERT_TRUE(index::CreateScalarIndex(req).ok());
  }

  std::vector<float> Embedding(uint64_t row) {
    std::vector<float> v(16);
    gen_->Embedding(row, v.data());
    return v;
  }

  std::string SegmentPathOf(const Manifest& m, const std::string& index_name) {
    for (const auto& s : m.segments) {
      if (s.name == index_name) return "_indices/" + s.uuid.ToString();
    }
    return "";
  }

  testing::TempDir dir_;
  std::shared_ptr<const DataGenerator> gen_;
  std::string path_;
};

// A reader holding an old generation keeps its exact results while a REPLACE
// and an append commit and the manager publishes the new version.
TEST_F(GenerationTest, LeaseKeepsExactResultsThroughReplace) {
  auto manager = *GenerationManager::Open(path_);
  Lease old_lease = manager->Acquire();
  auto query = Embedding(42);
  VectorQueryOptions opts{.k = 10, .nprobes = 2};
  auto before = *VectorSearch(old_lease.snapshot(), "emb", query, opts);
  CreateIndex("emb_idx", "16", "2", /*replace=*/true);
  ASSERT_TRUE(manager->Refresh().ok());
  Lease new_lease = manager->Acquire();
  EXPECT_GT(new_lease.version(), old_lease.version());
  EXPECT_EQ(manager->live_generations(), 2u);
  auto again = *VectorSearch(old_lease.snapshot(), "emb", query, opts);
  ASSERT_EQ(again.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(again[i].row, before[i].row);
    EXPECT_EQ(again[i].distance, before[i].distance);
  }
  IoRecorder rec;
  ASSERT_TRUE(VectorSearch(new_lease.snapshot(), "emb", query, opts, {}, &rec).ok());
  EXPECT_EQ(rec.segments_used().size(), 1u);
  EXPECT_FALSE(rec.segments_used().count(SegmentPathOf(old_lease.snapshot().manifest(), "emb_idx")));  // the replacement segment
  // Unchanged segments are shared between the generations, not reopened.
  for (const auto& meta : old_lease.snapshot().manifest().segments) {
    if (meta.name != "emb_idx") EXPECT_EQ(old_lease.snapshot().Segment(meta.uuid), new_lease.snapshot().Segment(meta.uuid));
  }
  old_lease.Release();
  EXPECT_EQ(manager->live_generations(), 1u);
}


TEST_F(GenerationTest, ReadersNeverSeeAHalfPublishedGeneration) {
  auto manager = *GenerationManager::Open(path_);
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::thread reader([&] {
    while (!stop) {
      Lease l = manager->Acquire();
      // Every generation is complete: each segment named by its manifest is open.
      for (const auto& meta : l.snapshot().manifest().segments) {
        if (!l.snapshot().Segment(meta.uuid)) ++bad;
      }
    }
  });
  for (int i = 0; i < 3; ++i) {
    CreateIndex("emb_idx", "8", "4", /*replace=*/true);
    ASSERT_TRUE(manager->Refresh().ok());
  }
  stop = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(manager->current_version(), *Dataset::LatestVersion(path_));
}

}  // namespace
}  // namespace vigil::generations
