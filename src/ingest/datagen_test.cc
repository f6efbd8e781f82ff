#include "vigil/ingest/datagen.h"

#include <map>
#include <sstream>

#include <gtest/gtest.h>

namespace vigil {
namespace {

std::shared_ptr<const DataGenerator> Make(DatagenOptions o) {
  auto g = DataGenerator::Make(std::move(o));
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return *g;
}

TEST(DatagenTest, SchemaHasAllColumnsNotNull) {
  DatagenOptions o;
  o.dim = 32;
  EXPECT_EQ(Make(o)->schema()->ToString(),
            "id BIGINT NOT NULL, category STRING NOT NULL, ts TIMESTAMP NOT NULL, body STRING NOT NULL, "
            "emb VECTOR(FLOAT32, 32) NOT NULL");
  o.columns = {"emb", "id"};
  EXPECT_EQ(Make(o)->schema()->ToString(), "emb VECTOR(FLOAT32, 32) NOT NULL, id BIGINT NOT NULL");
}

TEST(DatagenTest, RejectsBadOptions) {
  DatagenOptions o;
  o.columns = {"id", "nope"};
  EXPECT_FALSE(DataGenerator::Make(o).ok());
  o.columns = {"id", "id"};
  EXPECT_FALSE(DataGenerator::Make(o).ok());
  o = DatagenOptions();
  o.latent_dim = o.dim + 1;
  EXPECT_FALSE(DataGenerator::Make(o).ok());
  o = DatagenOptions();
  o.dim = 0;
  EXPECT_FALSE(DataGenerator::Make(o).ok());
}

TEST(DatagenTest, DeterministicAndBatchIndependent) {
  DatagenOptions o;
  o.rows = 300;
  o.dim = 16;
  o.latent_dim = 4;
  o.batch_rows = 64;
  auto a = Make(o), b = Make(o);
  RecordBatch whole = a->Batch(0, 300);
  RecordBatch part = b->Batch(200, 50);  // generated on its own, out of order
  ASSERT_TRUE(whole.Validate().ok());
  for (size_t c = 0; c < whole.columns.size(); ++c) {
    for (size_t i = 0; i < 50; ++i) {
      EXPECT_EQ(ValueToString(whole.columns[c].ValueAt(200 + i), whole.columns[c].type()),
                ValueToString(part.columns[c].ValueAt(i), part.columns[c].type()));
    }
  }
  // The reader yields the same rows in bounded batches.
  auto reader = a->NewReader();
  uint64_t row = 0;
  while (true) {
    auto batch = reader->Next();
    ASSERT_TRUE(batch.ok());
    if (!*batch) break;
    EXPECT_LE((*batch)->num_rows, 64u);
    for (size_t i = 0; i < (*batch)->num_rows; ++i, ++row) {
      EXPECT_EQ((*batch)->columns[3].StringAt(i), whole.columns[3].StringAt(row));
    }
  }
  EXPECT_EQ(row, 300u);
  // Another seed gives other data.
  o.seed = 7;
  EXPECT_NE(Make(o)->Body(5), a->Body(5));
}

TEST(DatagenTest, ValuesHaveTheAdvertisedShape) {
  DatagenOptions o;
  o.rows = 5000;
  o.dim = 32;
  o.latent_dim = 8;
  auto g = Make(o);
  std::map<std::string, int> counts;
  double words = 0;
  for (uint64_t r = 0; r < o.rows; ++r) {
    ++counts[g->Category(r)];
    std::istringstream body(g->Body(r));
    std::string w;
    while (body >> w) ++words;
    EXPECT_GE(g->Timestamp(r), o.start_micros + static_cast<int64_t>(r) * 1000000);
    EXPECT_LT(g->Timestamp(r), o.start_micros + static_cast<int64_t>(r + 1) * 1000000);
  }
  EXPECT_LE(counts.size(), 100u);
  EXPECT_GT(counts["cat_000"], counts["cat_050"] * 5);  // skewed
  EXPECT_NEAR(words / o.rows, 110, 5);
  // Embeddings of one category are closer to each other than to another's.
  auto dist = [&](uint64_t x, uint64_t y) {
    std::vector<float> a(o.dim), b(o.dim);
    g->Embedding(x, a.data());
    g->Embedding(y, b.data());
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i) d += (a[i] - b[i]) * (a[i] - b[i]);
    return d;
  };
  std::vector<uint64_t> cat0, other;
  for (uint64_t r = 0; r < o.rows && (cat0.size() < 50 || other.size() < 50); ++r) {
    std::string c = g->Category(r);
    if (c == "cat_000" && cat0.size() < 50) cat0.push_back(r);
    if (c == "cat_001" && other.size() < 50) other.push_back(r);
  }
  double within = 0, across = 0;
  for (size_t i = 0; i + 1 < cat0.size() && i + 1 < other.size(); ++i) {
    within += dist(cat0[i], cat0[i + 1]);
    across += dist(cat0[i], other[i]);
  }
  EXPECT_LT(within, across);
}

}  // namespace
}  // namespace vigil
