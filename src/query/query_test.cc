#include "vigil/query/query.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "testutil/temp_dir.h"
#include "vigil/index/provider.h"
#include "vigil/ingest/datagen.h"

namespace vigil::query {
namespace {

using index::ScalarPredicate;

constexpr uint64_t kBaseRows = 3000;
constexpr uint64_t kAppendedRows = 400;

// A table with one index of each type over its first 3000 rows, 400 appended
// rows no index covers, and a few deleted rows in both parts.
class QueryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DatagenOptions o;
    o.rows = kBaseRows + kAppendedRows;
    o.dim = 16;
    o.latent_dim = 4;
    o.num_categories = 12;
    o.words_per_body = 20;
    o.vocabulary = 300;
    o.batch_rows = 1000;
    gen_ = *DataGenerator::Make(o);
    path_ = dir_.Join("db/docs.vgl");
    DatasetOptions dopts;
    dopts.max_rows_per_fragment = 1000;
    dopts.writer.rows_per_block = 256;
    auto ds = *Dataset::Create(path_, gen_->schema(), {}, dopts);
    ds = *ds->Append(BatchReader(0, kBaseRows).get(), {});
    CreateIndex("emb_idx", "emb", index::IndexType::kIvfPq,
                {{"index_type", "IVF_PQ"}, {"metric", "l2"}, {"num_partitions", "8"}, {"num_sub_vectors", "4"}});
    CreateIndex("cat_idx", "category", index::IndexType::kBitmap, {});
    CreateIndex("ts_idx", "ts", index::IndexType::kBtree, {});
    CreateIndex("body_idx", "body", index::IndexType::kFts, {});
    ds = *Dataset::Open(path_);
    ds = *ds->Append(BatchReader(kBaseRows, kAppendedRows).get(), {});
    // Delete rows 10 (covered) and 3100 (uncovered): ids equal positions, fragments hold 1000 rows.
    ds = *ds->Delete({MakeRowAddress(0, 10), MakeRowAddress(3, 100)}, {});
    snapshot_ = *TableSnapshot::Open(*Dataset::Open(path_));
  }

  std::unique_ptr<RecordBatchReader> BatchReader(uint64_t first, uint64_t n) {
    std::vector<RecordBatch> batches;
    for (uint64_t r = first; r < first + n; r += 500)
      batches.push_back(gen_->Batch(r, std::min<uint64_t>(500, first + n - r)));
    return MakeBatchReader(gen_->schema(), std::move(batches));
  }

  void CreateIndex(const std::string& name, const std::string& column, index::IndexType type,
                   std::map<std::string, std::string> props, bool replace = false) {
    index::CreateIndexRequest req;
    req.dataset_path = path_;
    req.column = column;
    req.name = name;
    req.type = type;
    req.properties = std::move(props);
    req.replace = replace;
    auto r = type == index::IndexType::kIvfPq ? index::CreateVectorIndex(req) : index::CreateScalarIndex(req);
    ASSERT_TRUE(r.ok()) << name << ": " << r.status().ToString();
  }

  std::vector<float> Embedding(uint64_t row) {
    std::vector<float> v(16);
    gen_->Embedding(row, v.data());
    return v;
  }

  // Row address of generated row `i` (ids are positions; 1000 rows per fragment).
  static RowAddress Addr(uint64_t i) { return MakeRowAddress(static_cast<uint32_t>(i / 1000), i % 1000); }

  std::string SegmentPathOf(const std::string& index_name) {
    for (const auto& s : snapshot_->manifest().segments) {
      if (s.name == index_name) return "_indices/" + s.uuid.ToString();
    }
    return "";
  }

  testing::TempDir dir_;
  std::shared_ptr<const DataGenerator> gen_;
  std::string path_;
  std::shared_ptr<const TableSnapshot> snapshot_;
};

TEST_F(QueryTest, IndexedVectorSearchHasRecallAndUsesTheSegment) {
  IoRecorder rec;
  VectorQueryOptions opts;
  opts.k = 10;
  opts.nprobes = 8;
  opts.refine_factor = 5;
  double recall_sum = 0;
  for (uint64_t q = 0; q < 20; ++q) {
    auto query = Embedding(q * 97 + 5);
    auto approx = VectorSearch(*snapshot_, "emb", query, opts, {}, &rec);
    ASSERT_TRUE(approx.ok()) << approx.status().ToString();
    VectorQueryOptions exact_opts = opts;
    exact_opts.use_index = false;
    auto exact = *VectorSearch(*snapshot_, "emb", query, exact_opts);
    ASSERT_EQ(approx->size(), 10u);
    std::set<RowAddress> truth;
    for (const auto& h : exact) truth.insert(h.row);
    int hit = 0;
    for (const auto& h : *approx) hit += truth.count(h.row);
    recall_sum += hit / 10.0;
  }
  EXPECT_GE(recall_sum / 20, 0.9);
  EXPECT_TRUE(rec.segments_used().count(SegmentPathOf("emb_idx")));
}

TEST_F(QueryTest, UncoveredRowsAppearAndDeletedRowsNever) {
  // The nearest row to an appended row's own vector is that row, at distance 0.
  auto r = VectorSearch(*snapshot_, "emb", Embedding(3050), {.k = 3, .nprobes = 8});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].row, Addr(3050));
  EXPECT_FLOAT_EQ((*r)[0].distance, 0.0f);
  for (uint64_t deleted : {10ull, 3100ull}) {
    for (bool use_index : {true, false}) {
      auto hits = *VectorSearch(*snapshot_, "emb", Embedding(deleted), {.k = 20, .nprobes = 8, .use_index = use_index});
      for (const auto& h : hits) EXPECT_NE(h.row, Addr(deleted)) << deleted;
    }
  }
}

TEST_F(QueryTest, ExactSearchUsesNoSegment) {
  IoRecorder rec;
  auto r = VectorSearch(*snapshot_, "emb", Embedding(7), {.k = 5, .use_index = false}, {}, &rec);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(rec.segments_used().empty());
  EXPECT_EQ(rec.ReadsMatching("_indices/").calls, 0u);
  EXPECT_EQ((*r)[0].row, Addr(7));
}

TEST_F(QueryTest, PrefilterAppliesBeforeTopK) {
  std::string cat = gen_->Category(3050);
  std::vector<ColumnPredicate> pre = {{"category", {ScalarPredicate::Op::kEq, {cat}}}};
  IoRecorder rec;
  auto hits = VectorSearch(*snapshot_, "emb", Embedding(0), {.k = 15, .nprobes = 8, .refine_factor = 10}, pre, &rec);
  ASSERT_TRUE(hits.ok()) << hits.status().ToString();
  ASSERT_EQ(hits->size(), 15u);  // enough rows of that category exist; top-k is filled after filtering
  auto rows = *TakeRows(*snapshot_,
                        [&] {
                          std::vector<RowAddress> a;
                          for (const auto& h : *hits) a.push_back(h.row);
                          return a;
                        }(),
                        {"category"});
  for (size_t i = 0; i < rows.num_rows; ++i) EXPECT_EQ(rows.columns[0].StringAt(i), cat);
  EXPECT_TRUE(rec.segments_used().count(SegmentPathOf("cat_idx")));
  auto exact = *VectorSearch(*snapshot_, "emb", Embedding(0), {.k = 15, .use_index = false}, pre);
  EXPECT_EQ(exact.size(), 15u);
}

TEST_F(QueryTest, ScalarFiltersMatchAScanAndUseIndexes) {
  int64_t t0 = gen_->Timestamp(500), t1 = gen_->Timestamp(3200);
  std::vector<std::pair<ColumnPredicate, std::string>> cases = {
      {{"ts", {ScalarPredicate::Op::kBetween, {t0, t1}}}, "ts_idx"},
      {{"ts", {ScalarPredicate::Op::kLt, {t0}}}, "ts_idx"},
      {{"category", {ScalarPredicate::Op::kIn, {gen_->Category(1), gen_->Category(3001)}}}, "cat_idx"},
      {{"id", {ScalarPredicate::Op::kGe, {int64_t{2990}}}}, ""},  // no index on id: negative control
  };
  for (const auto& [cp, index_name] : cases) {
    IoRecorder rec;
    auto rows = FilterRows(*snapshot_, {cp}, &rec);
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    // Reference: a scan of every live row with the same predicate.
    Roaring64Map expected;
    auto scan = *snapshot_->dataset()->Scan({.columns = {cp.column}});
    const Field& f = snapshot_->manifest().schema->field(*snapshot_->manifest().schema->IndexOf(cp.column));
    for (auto b = *scan->Next(); b; b = *scan->Next()) {
      for (size_t r = 0; r < b->num_rows; ++r) {
        if (index::PredicateMatches(cp.predicate, b->columns[0].ValueAt(r), f.type)) expected.add(b->row_addresses[r]);
      }
    }
    EXPECT_TRUE(*rows == expected) << cp.column << " got " << rows->cardinality() << " want " << expected.cardinality();
    EXPECT_GT(expected.cardinality(), 0u);
    if (index_name.empty()) {
      EXPECT_TRUE(rec.segments_used().empty());
    } else {
      EXPECT_EQ(rec.segments_used(), std::set<std::string>{SegmentPathOf(index_name)});
    }
  }
}

TEST_F(QueryTest, FullTextSearchCoversAppendedRowsAndSkipsDeleted) {
  std::string body = gen_->Body(3050);
  std::string word = body.substr(0, body.find(' '));
  IoRecorder rec;
  auto hits = FullTextSearch(*snapshot_, "body", word, 5000, &rec);
  ASSERT_TRUE(hits.ok()) << hits.status().ToString();
  std::set<RowAddress> rows;
  for (const auto& h : *hits) rows.insert(h.row);
  EXPECT_TRUE(rows.count(Addr(3050)));
  EXPECT_FALSE(rows.count(Addr(10)));
  EXPECT_FALSE(rows.count(Addr(3100)));
  for (size_t i = 1; i < hits->size(); ++i) EXPECT_GE((*hits)[i - 1].score, (*hits)[i].score);
  EXPECT_TRUE(rec.segments_used().count(SegmentPathOf("body_idx")));
}

// Where a segment's fragments have no deletions and there is no prefilter the
// segment is searched without a row filter; the answer is the same as with one.
TEST_F(QueryTest, UnfilteredSegmentSearchAgreesWithFilteredSearch) {
  auto clean_path = dir_.Join("db/clean.vgl");
  auto clean = *Dataset::Create(clean_path, gen_->schema(), {});
  clean = *clean->Append(BatchReader(0, 2000).get(), {});
  index::CreateIndexRequest req;
  req.dataset_path = clean_path;
  req.column = "emb";
  req.name = "emb_idx";
  req.type = index::IndexType::kIvfPq;
  req.properties = {{"index_type", "IVF_PQ"}, {"metric", "l2"}, {"num_partitions", "8"}, {"num_sub_vectors", "4"}};
  ASSERT_TRUE(index::CreateVectorIndex(req).ok());
  auto snap = *TableSnapshot::Open(*Dataset::Open(clean_path));
  std::vector<ColumnPredicate> everything = {{"id", {ScalarPredicate::Op::kGe, {int64_t{0}}}}};
  for (uint64_t q : {3ull, 777ull, 1999ull}) {
    auto plain = *VectorSearch(*snap, "emb", Embedding(q), {.k = 10, .nprobes = 4});
    auto filtered = *VectorSearch(*snap, "emb", Embedding(q), {.k = 10, .nprobes = 4}, everything);
    ASSERT_EQ(plain.size(), filtered.size());
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_EQ(plain[i].row, filtered[i].row);
      EXPECT_EQ(plain[i].distance, filtered[i].distance);
    }
  }
}

TEST_F(QueryTest, BadQueriesAreRejected) {
  EXPECT_EQ(VectorSearch(*snapshot_, "emb", std::vector<float>(3, 1.0f), {}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(VectorSearch(*snapshot_, "emb", Embedding(0), {.metric = index::Metric::kCosine}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(VectorSearch(*snapshot_, "nope", Embedding(0), {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(VectorSearch(*snapshot_, "emb", Embedding(0), {.k = 0}).status().code(), StatusCode::kInvalidArgument);
  auto nan = Embedding(0);
  nan[3] = std::nanf("");
  EXPECT_EQ(VectorSearch(*snapshot_, "emb", nan, {}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vigil::query
