#include "vigil/index/ivf_pq.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <tuple>

#include <omp.h>

#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFPQ.h>

#include "index/ivf_pq_format.h"
#include "index/ivf_pq_internal.h"
#include "testutil/temp_dir.h"
#include "vigil/common/checksum.h"
#include "vigil/ingest/datagen.h"

namespace vigil::index {
namespace {

constexpr uint32_t kDim = 32;
constexpr uint64_t kRows = 20000;
constexpr uint32_t kQueries = 40;

// Replaces the generated vector of a row (e.g. with NaN); returns nothing.
using RowHook = std::function<void(uint64_t row, std::vector<float>* v)>;

std::shared_ptr<const DataGenerator> Generator(uint32_t dim) {
  auto gen = DataGenerator::Make(
      {.rows = kRows, .dim = dim, .latent_dim = std::min(dim, 16u), .seed = 7, .columns = {"id", "emb"}});
  VIGIL_CHECK(gen.ok());
  return *gen;
}

SchemaPtr VectorSchema(VectorElement element, uint32_t dim) {
  return *Schema::Make(
      {{-1, "id", DataType::Of(TypeId::kInt64), false}, {-1, "emb", DataType::Vector(element, dim), false}});
}

TransactionProperties Props(std::string op) {
  TransactionProperties p;
  p.operation = std::move(op);
  return p;
}

// Appends generated rows [first, first + n) to `ds` (one commit).
std::shared_ptr<Dataset> AppendRows(const std::shared_ptr<Dataset>& ds, const DataGenerator& gen, uint64_t first,
                                    uint64_t n, const RowHook& hook = nullptr) {
  RecordBatch batch = RecordBatch::Empty(ds->schema());
  std::vector<float> v(ds->schema()->field(1).type.dim);
  for (uint64_t r = first; r < first + n; ++r) {
    gen.Embedding(r, v.data());
    if (hook) hook(r, &v);
    VIGIL_CHECK(batch.AppendRow({static_cast<int64_t>(r), v}).ok());
  }
  std::vector<RecordBatch> batches;
  batches.push_back(std::move(batch));
  auto reader = MakeBatchReader(ds->schema(), std::move(batches));
  auto next = ds->Append(reader.get(), Props("APPEND"));
  VIGIL_CHECK(next.ok());
  return *next;
}

std::shared_ptr<Dataset> CreateDataset(const std::string& path, VectorElement element, uint32_t dim) {
  DatasetOptions options;
  options.max_rows_per_fragment = 8000;
  options.writer.rows_per_block = 1024;
  auto ds = Dataset::Create(path, VectorSchema(element, dim), Props("CREATE_TABLE"), options);
  VIGIL_CHECK(ds.ok());
  return *ds;
}

std::vector<uint32_t> AllFragments(const Dataset& ds) {
  std::vector<uint32_t> ids;
  for (const auto& f : ds.manifest().fragments) ids.push_back(f.id);
  return ids;
}

struct Built {
  IndexSegmentMeta meta;
  std::shared_ptr<IvfPqSegment> segment;
};

// Writes a segment for `fragments` with `model`; Open()s it unless `open` is false.
Result<Built> WriteSegment(const Dataset& ds, const std::vector<uint32_t>& fragments, const IvfPqModel& model,
                           bool open = true) {
  Built b;
  b.meta.name = "idx";
  b.meta.uuid = Uuid::Generate();
  b.meta.field_ids = {ds.schema()->field(1).id};
  b.meta.index_type = "IVF_PQ";
  b.meta.built_at_version = ds.version();
  b.meta.covered_fragments = fragments;
  VIGIL_ASSIGN_OR_RETURN(auto writer, SegmentWriter::Create(ds.fs(), ds.path(), b.meta.uuid));
  VIGIL_RETURN_IF_ERROR(BuildIvfPqSegment(ds, ds.schema()->field(1), fragments, model, writer.get(), nullptr));
  VIGIL_ASSIGN_OR_RETURN(b.meta.files, writer->Finish());
  if (!open) return b;
  VIGIL_ASSIGN_OR_RETURN(auto files, SegmentFiles::Open(ds.fs(), ds.path(), b.meta));
  VIGIL_ASSIGN_OR_RETURN(b.segment, IvfPqSegment::Open(files));
  return b;
}

IvfPqParams Params(Metric metric, uint32_t partitions, uint32_t sub_vectors) {
  IvfPqParams p;
  p.metric = metric;
  p.num_partitions = partitions;
  p.num_sub_vectors = sub_vectors;
  p.max_iterations = 10;
  return p;
}

// Every live row's vector (as stored, widened) by row address.
std::vector<std::pair<RowAddress, std::vector<float>>> LiveVectors(const Dataset& ds) {
  auto scan = ds.Scan({.columns = {"emb"}});
  VIGIL_CHECK(scan.ok());
  std::vector<std::pair<RowAddress, std::vector<float>>> out;
  for (;;) {
    auto b = (*scan)->Next();
    VIGIL_CHECK(b.ok());
    if (!b->has_value()) break;
    for (size_t r = 0; r < (*b)->num_rows; ++r) {
      out.emplace_back((*b)->row_addresses[r], std::get<std::vector<float>>((*b)->columns[0].ValueAt(r)));
    }
  }
  return out;
}

std::vector<RowAddress> ExactTopK(Metric metric, const std::vector<std::pair<RowAddress, std::vector<float>>>& rows,
                                  const float* q, size_t k) {
  std::vector<std::pair<float, RowAddress>> d;
  for (const auto& [row, v] : rows) d.emplace_back(ExactDistance(metric, q, v.data(), v.size()), row);
  std::partial_sort(d.begin(), d.begin() + k, d.end());
  std::vector<RowAddress> out;
  for (size_t i = 0; i < k; ++i) out.push_back(d[i].second);
  return out;
}

// Mean recall@10 of `seg` against exact search over `rows`, queries from rows past the data set.
double RecallAt10(const IvfPqSegment& seg, const DataGenerator& gen,
                  const std::vector<std::pair<RowAddress, std::vector<float>>>& rows, uint32_t nprobes) {
  std::vector<float> q(seg.model().dim);
  size_t hits = 0;
  for (uint32_t i = 0; i < kQueries; ++i) {
    gen.Embedding(kRows + 1000 + i, q.data());
    auto exact = ExactTopK(seg.model().metric, rows, q.data(), 10);
    auto got = seg.Search(q.data(), 10, nprobes, nullptr);
    VIGIL_CHECK(got.ok());
    for (const auto& s : *got) hits += std::count(exact.begin(), exact.end(), s.row);
  }
  return static_cast<double>(hits) / (kQueries * 10.0);
}

// One 20k x 32 FLOAT32 dataset (three fragments, 1024-row blocks) shared by the suite.
class IvfPqTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    gen_ = Generator(kDim);
    auto ds = CreateDataset(dir_->Join("t.vgl"), VectorElement::kFloat32, kDim);
    ds_ = AppendRows(ds, *gen_, 0, kRows);
    rows_ = new std::vector<std::pair<RowAddress, std::vector<float>>>(LiveVectors(*ds_));
  }
  static void TearDownTestSuite() {
    delete rows_;
    ds_.reset();
    gen_.reset();
    delete dir_;
  }
  const Field& emb() const { return ds_->schema()->field(1); }

  static testing::TempDir* dir_;
  static std::shared_ptr<const DataGenerator> gen_;
  static std::shared_ptr<Dataset> ds_;
  static std::vector<std::pair<RowAddress, std::vector<float>>>* rows_;
};
testing::TempDir* IvfPqTest::dir_ = nullptr;
std::shared_ptr<const DataGenerator> IvfPqTest::gen_;
std::shared_ptr<Dataset> IvfPqTest::ds_;
std::vector<std::pair<RowAddress, std::vector<float>>>* IvfPqTest::rows_ = nullptr;

// (metric, num_bits); 4-bit segments search by fast scan.
class IvfPqRecallTest : public IvfPqTest, public ::testing::WithParamInterface<std::tuple<Metric, uint32_t>> {};

TEST_P(IvfPqRecallTest, RecallAgainstExactSearch) {
  const auto [metric, bits] = GetParam();
  IvfPqParams p = Params(metric, 32, 32);
  p.num_bits = bits;
  auto model = TrainIvfPq(*ds_, emb(), AllFragments(*ds_), p, nullptr);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ(model->num_bits, bits);
  auto built = WriteSegment(*ds_, AllFragments(*ds_), *model);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  const IvfPqSegment& seg = *built->segment;
  EXPECT_EQ(seg.num_rows(), kRows);
  EXPECT_GT(seg.MemoryBytes(), kRows * 32 * bits / 8);
  double recall = RecallAt10(seg, *gen_, *rows_, 32);
  EXPECT_GE(recall, bits == 8 ? 0.9 : 0.6);
  std::printf("recall@10 %s %u bits %.3f\n", std::string(MetricName(metric)).c_str(), bits, recall);

  // Nearest first; distances follow the header's definition (close to exact).
  std::vector<float> q(kDim);
  gen_->Embedding(kRows + 5, q.data());
  auto got = seg.Search(q.data(), 10, 32, nullptr);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 10u);
  for (size_t i = 1; i < got->size(); ++i) EXPECT_LE((*got)[i - 1].distance, (*got)[i].distance);
  const auto& top = (*got)[0];
  auto it = std::find_if(rows_->begin(), rows_->end(), [&](const auto& r) { return r.first == top.row; });
  ASSERT_NE(it, rows_->end());
  float exact = ExactDistance(metric, q.data(), it->second.data(), kDim);
  EXPECT_NEAR(top.distance, exact, (bits == 8 ? 0.1 : 0.2) * std::max(1.0f, std::fabs(exact)));
}

INSTANTIATE_TEST_SUITE_P(MetricsAndBits, IvfPqRecallTest,
                         ::testing::Combine(::testing::Values(Metric::kL2, Metric::kCosine, Metric::kDot),
                                            ::testing::Values(8u, 4u)),
                         [](const auto& info) {
                           return std::string(MetricName(std::get<0>(info.param))) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "bits";
                         });

class OddOffsets : public RowFilter {
 public:
  bool Accept(RowAddress row) const override { return RowOffset(row) % 2 == 1; }
};

class IvfPqFilterTest : public IvfPqTest, public ::testing::WithParamInterface<uint32_t> {};

TEST_P(IvfPqFilterTest, FilterExcludesRowsAndProgressIsReported) {
  std::set<std::string> phases;
  ProgressFn progress = [&](std::string_view phase, uint64_t done, uint64_t total) {
    EXPECT_LE(done, total);
    phases.insert(std::string(phase));
  };
  IvfPqParams p = Params(Metric::kL2, 16, 8);
  p.num_bits = GetParam();
  auto model = TrainIvfPq(*ds_, emb(), AllFragments(*ds_), p, progress);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto built = WriteSegment(*ds_, AllFragments(*ds_), *model);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  EXPECT_EQ(phases, (std::set<std::string>{"sampling", "training"}));
  OddOffsets odd;
  std::vector<float> q(kDim);
  for (uint32_t i = 0; i < 20; ++i) {
    gen_->Embedding(i * 97, q.data());  // stored rows, half of them with even offsets
    auto got = built->segment->Search(q.data(), 20, 16, &odd);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->size(), 20u);
    for (const auto& s : *got) EXPECT_TRUE(odd.Accept(s.row)) << s.row;
  }
}

INSTANTIATE_TEST_SUITE_P(Bits, IvfPqFilterTest, ::testing::Values(8u, 4u));

TEST_F(IvfPqTest, RowsDeletedAtBuildVersionAreAbsent) {
  std::vector<RowAddress> deleted;
  for (size_t i = 0; i < rows_->size(); i += 3) deleted.push_back((*rows_)[i].first);
  auto v = ds_->Delete(deleted, Props("DELETE"));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  auto model = TrainIvfPq(**v, emb(), AllFragments(**v), Params(Metric::kL2, 16, 8), nullptr);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto built = WriteSegment(**v, AllFragments(**v), *model);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  EXPECT_EQ(built->segment->num_rows(), kRows - deleted.size());
  std::set<RowAddress> gone(deleted.begin(), deleted.end());
  for (size_t i = 0; i < 30; ++i) {
    const auto& [row, vec] = (*rows_)[i * 3];  // a deleted row queried by its own vector
    auto got = built->segment->Search(vec.data(), 10, 16, nullptr);
    ASSERT_TRUE(got.ok());
    ASSERT_FALSE(got->empty());
    for (const auto& s : *got) EXPECT_EQ(gone.count(s.row), 0u) << s.row;
  }
}

TEST_F(IvfPqTest, DeltaSegmentReusesAnEarlierModel) {
  std::vector<uint32_t> old_fragments = AllFragments(*ds_);
  auto model = TrainIvfPq(*ds_, emb(), old_fragments, Params(Metric::kCosine, 16, 16), nullptr);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto grown = AppendRows(ds_, *gen_, kRows, 3000);
  std::vector<uint32_t> delta;
  for (uint32_t id : AllFragments(*grown)) {
    if (!std::count(old_fragments.begin(), old_fragments.end(), id)) delta.push_back(id);
  }
  ASSERT_FALSE(delta.empty());
  auto built = WriteSegment(*grown, delta, *model);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  const IvfPqSegment& seg = *built->segment;
  EXPECT_EQ(seg.num_rows(), 3000u);
  EXPECT_EQ(seg.model().centroids, model->centroids);
  EXPECT_EQ(seg.model().pq_centroids, model->pq_centroids);
  std::vector<float> q(kDim);
  size_t self_hits = 0;
  for (uint64_t r = kRows; r < kRows + 50; ++r) {
    gen_->Embedding(r, q.data());
    auto got = seg.Search(q.data(), 5, 16, nullptr);
    ASSERT_TRUE(got.ok());
    for (const auto& s : *got) EXPECT_TRUE(std::count(delta.begin(), delta.end(), RowFragment(s.row))) << s.row;
    self_hits += !got->empty() && RowOffset((*got)[0].row) == r - kRows;
  }
  EXPECT_GE(self_hits, 45u);
}

TEST_F(IvfPqTest, BadParametersAreInvalidArgument) {
  auto frags = AllFragments(*ds_);
  auto bad = [&](IvfPqParams p, const Field& f) {
    auto m = TrainIvfPq(*ds_, f, frags, p, nullptr);
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << m.status().ToString();
  };
  bad(Params(Metric::kL2, 16, 5), emb());  // 5 does not divide 32
  bad(Params(Metric::kL2, 0, 8), emb());
  bad(Params(Metric::kL2, kRows + 1, 8), emb());  // more partitions than rows
  for (uint32_t width : {0u, 1u, 3u, 5u, 16u}) {
    IvfPqParams bits = Params(Metric::kL2, 16, 8);
    bits.num_bits = width;
    bad(bits, emb());
  }
  bad(Params(Metric::kL2, 16, 8), ds_->schema()->field(0));  // BIGINT column
  auto unknown = TrainIvfPq(*ds_, emb(), {999}, Params(Metric::kL2, 16, 8), nullptr);
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);

  auto model = TrainIvfPq(*ds_, emb(), frags, Params(Metric::kL2, 16, 8), nullptr);
  ASSERT_TRUE(model.ok());
  std::vector<float> q(kDim, 0.0f);
  auto built = WriteSegment(*ds_, frags, *model);
  ASSERT_TRUE(built.ok());
  EXPECT_EQ(built->segment->Search(q.data(), 0, 4, nullptr).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(built->segment->Search(q.data(), 10, 0, nullptr).status().code(), StatusCode::kInvalidArgument);
  q[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(built->segment->Search(q.data(), 10, 4, nullptr).status().code(), StatusCode::kInvalidArgument);
  IvfPqModel wrong = *model;
  wrong.pq_centroids.pop_back();
  auto w = WriteSegment(*ds_, frags, wrong, false);
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(IvfPqTest, MaxIterationsAndSampleRateShapeTheTraining) {
  auto frags = AllFragments(*ds_);
  auto train = [&](uint32_t iterations, uint32_t sample_rate) {
    IvfPqParams p = Params(Metric::kL2, 16, 8);
    p.max_iterations = iterations;
    p.sample_rate = sample_rate;
    auto m = TrainIvfPq(*ds_, emb(), frags, p, nullptr);
    VIGIL_CHECK(m.ok());
    return *m;
  };
  const IvfPqModel three = train(3, 256);
  EXPECT_EQ(train(3, 256).centroids, three.centroids);  // deterministic
  // One more or one less k-means iteration moves the centroids and the codebooks.
  EXPECT_NE(train(2, 256).centroids, three.centroids);
  EXPECT_NE(train(4, 256).centroids, three.centroids);
  EXPECT_NE(train(2, 256).pq_centroids, three.pq_centroids);
  EXPECT_NE(train(IvfPqParams{}.max_iterations, 256).centroids, three.centroids);
  // A smaller sample trains on other rows.
  EXPECT_NE(train(3, 64).centroids, three.centroids);
  IvfPqParams big = Params(Metric::kL2, 16, 8);
  big.sample_rate = 1000;
  EXPECT_EQ(TrainingSampleSize(big, kRows), 16000u);
  EXPECT_NE(train(3, 1000).centroids, three.centroids);
}

// Small datasets with one bad row; nothing may be written for them.
class IvfPqBadRowsTest : public ::testing::Test {
 protected:
  std::shared_ptr<Dataset> Make(uint64_t rows, const RowHook& hook) {
    auto ds = CreateDataset(dir_.Join("bad" + std::to_string(n_++) + ".vgl"), VectorElement::kFloat32, 8);
    return AppendRows(ds, *gen_, 0, rows, hook);
  }
  // Builds with a clean model; expects InvalidArgument naming `row` and no segment file.
  void ExpectBuildRejects(const Dataset& ds, const IvfPqModel& model, uint64_t row) {
    Uuid uuid = Uuid::Generate();
    auto writer = SegmentWriter::Create(ds.fs(), ds.path(), uuid);
    ASSERT_TRUE(writer.ok());
    Status st = BuildIvfPqSegment(ds, ds.schema()->field(1), AllFragments(ds), model, writer->get(), nullptr);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
    EXPECT_NE(st.message().find("offset " + std::to_string(row)), std::string::npos) << st.message();
    auto listed = ds.fs()->ListDir(ds.AbsPath(SegmentDir(uuid)));
    ASSERT_TRUE(listed.ok());
    EXPECT_TRUE(listed->empty());
  }
  testing::TempDir dir_;
  std::shared_ptr<const DataGenerator> gen_ = Generator(8);
  int n_ = 0;
};

TEST_F(IvfPqBadRowsTest, NanZeroAndTooFewRowsAreRejectedBeforeAnyFileIsWritten) {
  auto clean = Make(600, nullptr);
  const Field& emb = clean->schema()->field(1);
  IvfPqParams l2 = Params(Metric::kL2, 2, 4);
  auto model = TrainIvfPq(*clean, emb, AllFragments(*clean), l2, nullptr);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  IvfPqParams cos = Params(Metric::kCosine, 2, 4);
  auto cos_model = TrainIvfPq(*clean, emb, AllFragments(*clean), cos, nullptr);
  ASSERT_TRUE(cos_model.ok()) << cos_model.status().ToString();

  auto nan = Make(600, [](uint64_t r, std::vector<float>* v) {
    if (r == 417) (*v)[2] = std::numeric_limits<float>::quiet_NaN();
  });
  ExpectBuildRejects(*nan, *model, 417);
  IvfPqParams all = l2;
  all.sample_rate = 1000;  // every row is sampled, so training sees the NaN too
  auto t = TrainIvfPq(*nan, emb, AllFragments(*nan), all, nullptr);
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("offset 417"), std::string::npos) << t.status().message();

  auto inf = Make(600, [](uint64_t r, std::vector<float>* v) {
    if (r == 9) (*v)[0] = std::numeric_limits<float>::infinity();
  });
  ExpectBuildRejects(*inf, *model, 9);

  auto zero = Make(600, [](uint64_t r, std::vector<float>* v) {
    if (r == 123) std::fill(v->begin(), v->end(), 0.0f);
  });
  ExpectBuildRejects(*zero, *cos_model, 123);
  EXPECT_TRUE(WriteSegment(*zero, AllFragments(*zero), *model).ok());  // zero is fine under l2

  auto few = Make(255, nullptr);
  auto f = TrainIvfPq(*few, emb, AllFragments(*few), Params(Metric::kL2, 1, 4), nullptr);
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(f.status().message().find("256"), std::string::npos);
}

TEST(IvfPqFloat16Test, HalfVectorsAreWidenedAndSearched) {
  testing::TempDir dir;
  auto gen = Generator(16);
  auto ds = AppendRows(CreateDataset(dir.Join("h.vgl"), VectorElement::kFloat16, 16), *gen, 0, 3000);
  IvfPqParams p = Params(Metric::kL2, 8, 8);
  auto model = TrainIvfPq(*ds, ds->schema()->field(1), AllFragments(*ds), p, nullptr);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto built = WriteSegment(*ds, AllFragments(*ds), *model);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  EXPECT_EQ(built->segment->num_rows(), 3000u);
  auto rows = LiveVectors(*ds);
  size_t hits = 0;
  for (size_t i = 0; i < 50; ++i) {
    const auto& [row, v] = rows[i * 59];
    auto got = built->segment->Search(v.data(), 10, 8, nullptr);
    ASSERT_TRUE(got.ok());
    auto exact = ExactTopK(Metric::kL2, rows, v.data(), 10);
    for (const auto& s : *got) hits += std::count(exact.begin(), exact.end(), s.row);
  }
  EXPECT_GE(hits, 50u * 10 * 9 / 10);
}

// A small built segment whose files the corruption tests damage.
// With num_bits as the parameter.
class IvfPqCorruptionTest : public ::testing::TestWithParam<uint32_t> {
 protected:
  void SetUp() override {
    auto gen = Generator(8);
    ds_ = AppendRows(CreateDataset(dir_.Join("c.vgl"), VectorElement::kFloat32, 8), *gen, 0, 400);
    IvfPqParams params = Params(Metric::kDot, 4, 2);
    params.num_bits = GetParam();
    auto model = TrainIvfPq(*ds_, ds_->schema()->field(1), AllFragments(*ds_), params, nullptr);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    auto built = WriteSegment(*ds_, AllFragments(*ds_), *model, false);
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    meta_ = built->meta;
  }
  std::string PathOf(const std::string& name) { return ds_->AbsPath(SegmentDir(meta_.uuid) + "/" + name); }
  std::string Read(const std::string& name) {
    std::ifstream in(PathOf(name), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Replaces a file; with `reseal` the inventory is updated so that Vigil's decoder is what must notice.
  IndexSegmentMeta Replace(const std::string& name, const std::string& bytes, bool reseal) {
    std::ofstream(PathOf(name), std::ios::binary | std::ios::trunc) << bytes;
    IndexSegmentMeta meta = meta_;
    for (auto& f : meta.files) {
      if (f.name == name && reseal) f = {name, bytes.size(), Checksum64(bytes)};
    }
    return meta;
  }
  Status OpenWith(const IndexSegmentMeta& meta) {
    auto files = SegmentFiles::Open(ds_->fs(), ds_->path(), meta);
    if (!files.ok()) return files.status();
    return IvfPqSegment::Open(*files).status();
  }

  testing::TempDir dir_;
  std::shared_ptr<Dataset> ds_;
  IndexSegmentMeta meta_;
};

TEST_P(IvfPqCorruptionTest, FlippedAndTruncatedFilesAreCorruption) {
  ASSERT_TRUE(OpenWith(meta_).ok());
  for (const std::string name : {kIvfPqModelFile, kIvfPqListsFile}) {
    const std::string good = Read(name);
    ASSERT_GT(good.size(), 64u);
    for (size_t pos = 0; pos < good.size(); pos += 1 + good.size() / 40) {
      std::string bad = good;
      bad[pos] ^= 0x20;
      for (bool reseal : {false, true}) {
        Status st = OpenWith(Replace(name, bad, reseal));
        EXPECT_EQ(st.code(), StatusCode::kCorruption) << name << " byte " << pos << ": " << st.ToString();
      }
    }
    for (size_t len : {size_t{0}, size_t{7}, size_t{30}, good.size() / 2, good.size() - 1}) {
      for (bool reseal : {false, true}) {
        Status st = OpenWith(Replace(name, good.substr(0, len), reseal));
        EXPECT_EQ(st.code(), StatusCode::kCorruption) << name << " cut to " << len << ": " << st.ToString();
      }
    }
    Replace(name, good, false);
  }
  ASSERT_TRUE(OpenWith(meta_).ok());
  IndexSegmentMeta missing = meta_;
  missing.files.pop_back();
  EXPECT_EQ(OpenWith(missing).code(), StatusCode::kCorruption);
  IndexSegmentMeta elsewhere = meta_;
  elsewhere.covered_fragments = {77};
  EXPECT_EQ(OpenWith(elsewhere).code(), StatusCode::kCorruption);
}

INSTANTIATE_TEST_SUITE_P(Bits, IvfPqCorruptionTest, ::testing::Values(8u, 4u));

TEST(IvfPqFormatTest, EncodingsRoundTripAndStructuralDefectsAreCorruption) {
  IvfPqModel m;
  m.metric = Metric::kCosine;
  m.dim = 4;
  m.num_partitions = 2;
  m.num_sub_vectors = 2;
  for (int i = 0; i < 8; ++i) m.centroids.push_back(i * 0.5f);
  for (int i = 0; i < 4 * 256; ++i) m.pq_centroids.push_back(i * 0.25f);
  auto back = DecodeIvfPqModel(EncodeIvfPqModel(m));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->metric, m.metric);
  EXPECT_EQ(back->centroids, m.centroids);
  EXPECT_EQ(back->pq_centroids, m.pq_centroids);

  auto id = [](uint32_t f, uint32_t o) { return static_cast<int64_t>(MakeRowAddress(f, o)); };
  std::vector<std::vector<int64_t>> ids = {{id(1, 5)}, {}, {id(2, 0), id(2, 9)}};
  std::vector<std::vector<uint8_t>> codes = {{1, 2}, {}, {3, 4, 5, 6}};
  std::string lists = EncodeIvfPqLists(2, ids, codes);
  auto view = ParseIvfPqLists(lists);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->num_rows, 3u);
  EXPECT_EQ(view->RowAt(2, 1), MakeRowAddress(2, 9));
  EXPECT_EQ(view->Codes(2)[3], 6);

  // A list count that disagrees with the row count, under a valid checksum.
  std::string bad = lists;
  bad[24] = 2;
  uint64_t sum = Checksum64(bad.data(), bad.size() - 8);
  std::memcpy(bad.data() + bad.size() - 8, &sum, 8);
  EXPECT_EQ(ParseIvfPqLists(bad).status().code(), StatusCode::kCorruption);
}

TEST(IvfPqInternalsTest, ExactDistanceAndSampling) {
  float a[] = {1, 0, 0}, b[] = {0, 2, 0};
  EXPECT_FLOAT_EQ(ExactDistance(Metric::kL2, a, b, 3), 5.0f);
  EXPECT_FLOAT_EQ(ExactDistance(Metric::kCosine, a, b, 3), 1.0f);
  EXPECT_FLOAT_EQ(ExactDistance(Metric::kCosine, a, a, 3), 0.0f);
  EXPECT_FLOAT_EQ(ExactDistance(Metric::kDot, a, a, 3), 0.0f);

  auto s = SampleOrdinals(100000, 3000);
  EXPECT_EQ(s.size(), 3000u);
  EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
  EXPECT_EQ(std::set<uint64_t>(s.begin(), s.end()).size(), s.size());
  EXPECT_LT(s.back(), 100000u);
  EXPECT_GT(s.back(), 90000u);  // spread over the whole range
  EXPECT_EQ(s, SampleOrdinals(100000, 3000));
  EXPECT_EQ(SampleOrdinals(10, 20).size(), 10u);
  IvfPqParams p = Params(Metric::kL2, 4, 2);
  EXPECT_EQ(TrainingSampleSize(p, 100000), 1024u);
  EXPECT_EQ(TrainingSampleSize(p, 300), 300u);
  p.num_partitions = 1;
  EXPECT_EQ(TrainingSampleSize(p, 100000), 256u);
}

// Mean squared error of `pq` reconstructing n x pq.d vectors.
double PqError(const faiss::ProductQuantizer& pq, size_t n, const float* x) {
  std::vector<uint8_t> codes(n * pq.code_size);
  std::vector<float> back(n * pq.d);
  pq.compute_codes(x, codes.data(), n);
  pq.decode(codes.data(), back.data(), n);
  double sum = 0;
  for (size_t i = 0; i < n * pq.d; ++i) sum += (x[i] - back[i]) * (x[i] - back[i]);
  return sum / static_cast<double>(n);
}

// The side-by-side sub-quantizer training gives FAISS's coarse centroids bit for bit
// and PQ centroids as good as IndexIVFPQ::train's on the same vectors, also when the
// PQ sample is a subsample of the training set.
TEST(IvfPqInternalsTest, TrainingMatchesFaissTraining) {
  auto gen = Generator(kDim);
  const size_t n = 12000;
  std::vector<float> x(n * kDim);
  for (size_t r = 0; r < n; ++r) gen->Embedding(r, &x[r * kDim]);
  omp_set_num_threads(2);
  for (int pq_points_per_centroid : {256, 40}) {  // 40 x 256 < n: the PQ sample is subsampled
    faiss::IndexFlatL2 q1(kDim), q2(kDim);
    faiss::IndexIVFPQ faiss_ivf(&q1, kDim, 16, 4, 8), vigil_ivf(&q2, kDim, 16, 4, 8);
    for (faiss::IndexIVFPQ* ivf : {&faiss_ivf, &vigil_ivf}) {
      ivf->cp.niter = 4;
      ivf->pq.cp.niter = 4;
      ivf->pq.cp.max_points_per_centroid = pq_points_per_centroid;
    }
    faiss_ivf.train(static_cast<faiss::Index::idx_t>(n), x.data());
    TrainIvfPqIndex(&vigil_ivf, n, x.data(), 2);
    ASSERT_TRUE(vigil_ivf.is_trained);
    std::vector<float> c1(q1.get_xb(), q1.get_xb() + 16 * kDim), c2(q2.get_xb(), q2.get_xb() + 16 * kDim);
    EXPECT_EQ(c1, c2);
    ASSERT_EQ(faiss_ivf.pq.centroids.size(), vigil_ivf.pq.centroids.size());
    EXPECT_NE(faiss_ivf.pq.centroids, std::vector<float>(faiss_ivf.pq.centroids.size(), 0.0f));
    std::vector<faiss::Index::idx_t> assign(n);
    q1.assign(static_cast<faiss::Index::idx_t>(n), x.data(), assign.data());
    std::vector<float> residuals(n * kDim);
    q1.compute_residual_n(static_cast<faiss::Index::idx_t>(n), x.data(), residuals.data(), assign.data());
    const double faiss_error = PqError(faiss_ivf.pq, n, residuals.data());
    const double vigil_error = PqError(vigil_ivf.pq, n, residuals.data());
    EXPECT_GT(faiss_error, 0);
    EXPECT_LE(vigil_error, faiss_error * 1.02) << pq_points_per_centroid;
    EXPECT_GE(vigil_error, faiss_error * 0.98) << pq_points_per_centroid;
  }
}

// PrecomputeIvfPqTable fills the table IndexIVFPQ::precompute_table fills, bit for bit
// (search results stay FAISS's), for several sub-vector widths; an index it does not
// compute (by inner product) is left to FAISS alike.
TEST(IvfPqInternalsTest, PrecomputedTableIsFaissTable) {
  auto gen = Generator(kDim);
  const size_t n = 4000;
  std::vector<float> x(n * kDim);
  for (size_t r = 0; r < n; ++r) gen->Embedding(r, &x[r * kDim]);
  for (size_t sub_vectors : {4u, 8u, 16u}) {
    faiss::IndexFlatL2 q(kDim);
    faiss::IndexIVFPQ trained(&q, kDim, 8, sub_vectors, 8);
    trained.cp.niter = 2;
    trained.pq.cp.niter = 2;
    trained.train(static_cast<faiss::Index::idx_t>(n), x.data());
    ASSERT_EQ(trained.use_precomputed_table, 1);
    faiss::IndexIVFPQ ours(&q, kDim, 8, sub_vectors, 8);
    ours.pq.centroids = trained.pq.centroids;
    ours.is_trained = true;
    PrecomputeIvfPqTable(&ours);
    EXPECT_EQ(ours.use_precomputed_table, 1);
    ASSERT_EQ(ours.precomputed_table.size(), trained.precomputed_table.size());
    EXPECT_EQ(std::memcmp(ours.precomputed_table.data(), trained.precomputed_table.data(),
                          trained.precomputed_table.size() * sizeof(float)),
              0)
        << sub_vectors << " sub-vectors";
  }
  faiss::IndexFlatIP ip(kDim);
  faiss::IndexIVFPQ by_dot(&ip, kDim, 8, 4, 8, faiss::METRIC_INNER_PRODUCT);
  by_dot.by_residual = false;
  PrecomputeIvfPqTable(&by_dot);
  EXPECT_EQ(by_dot.precomputed_table.size(), 0u);
}

}  // namespace
}  // namespace vigil::index
