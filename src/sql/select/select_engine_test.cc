// SelectEngine tests: golden files under testdata/select (directives `query`,
// `explain`; an expected error is `error: CODE: message`), run over a
// generated table with one index of each type built directly through the
// provider, plus checks against the C++ query API. VIGIL_GOLDEN_REWRITE=1
// rewrites the expected outputs.
#include "vigil/sql/select_engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <regex>

#include "testutil/golden_runner.h"
#include "testutil/temp_dir.h"
#include "vigil/auth/principal.h"
#include "vigil/catalog/table_catalog.h"
#include "vigil/index/provider.h"
#include "vigil/ingest/datagen.h"
#include "vigil/jobs/admission.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/query/query.h"
#include "vigil/sql/parser.h"
#include "vigil/storage/root.h"

namespace vigil::sql {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kBaseRows = 3000;
constexpr uint64_t kAppendedRows = 400;
constexpr uint32_t kDim = 16;

// A root with db.docs: 3000 indexed rows (IVF_PQ emb_idx, BITMAP cat_idx, BTREE ts_idx,
// FTS body_idx), 400 appended rows no index covers, rows 10 and 3100 deleted; and db.cats,
// a small unindexed table for joins.
class SelectEnv {
 public:
  SelectEnv() {
    root_ = std::make_unique<Root>(*Root::Init(dir_.Join("root")));
    DatagenOptions o;
    o.rows = kBaseRows + kAppendedRows;
    o.dim = kDim;
    o.latent_dim = 4;
    o.num_categories = 12;
    o.words_per_body = 20;
    o.vocabulary = 300;
    o.batch_rows = 1000;
    gen_ = *DataGenerator::Make(o);
    vigil::TableName name{"local", "db", "docs"};
    path_ = *root_->LegacyTablePath(name);  // a table of a root made before incarnations
    DatasetOptions dopts;
    dopts.max_rows_per_fragment = 1000;
    dopts.writer.rows_per_block = 256;
    auto ds = *Dataset::Create(path_, gen_->schema(), {}, dopts);
    ds = *ds->Append(Reader(0, kBaseRows).get(), {});
    CreateIndex("emb_idx", "emb", index::IndexType::kIvfPq,
                {{"index_type", "IVF_PQ"}, {"metric", "l2"}, {"num_partitions", "8"}, {"num_sub_vectors", "4"}});
    CreateIndex("cat_idx", "category", index::IndexType::kBitmap, {});
    CreateIndex("ts_idx", "ts", index::IndexType::kBtree, {});
    CreateIndex("body_idx", "body", index::IndexType::kFts, {});
    ds = *Dataset::Open(path_);
    ds = *ds->Append(Reader(kBaseRows, kAppendedRows).get(), {});
    ds = *ds->Delete({MakeRowAddress(0, 10), MakeRowAddress(3, 100)}, {});
    MakeCats();
    store_ = *jobs::OpenRootJobStore(*root_);
    engine_ = *SelectEngine::Open(*root_, store_.get());
  }

  SelectEngine& engine() { return *engine_; }
  jobs::JobStore& store() { return *store_; }
  const Root& root() const { return *root_; }
  const std::string& path() const { return path_; }
  const DataGenerator& gen() const { return *gen_; }
  std::vector<float> Embedding(uint64_t row) const {
    std::vector<float> v(kDim);
    gen_->Embedding(row, v.data());
    return v;
  }

  Result<ResultSet> Run(const std::string& sql, const std::vector<Value>& params = {},
                        const auth::Principal& who = auth::Principal::LocalAdmin()) {
    VIGIL_ASSIGN_OR_RETURN(Statement stmt, ParseStatement(sql));
    if (auto* s = std::get_if<SelectStatement>(&stmt.node)) return engine_->Select(*s, who, params);
    if (auto* e = std::get_if<ExplainStatement>(&stmt.node)) return engine_->Explain(*e, who, params);
    return Status::InvalidArgument("not a SELECT or EXPLAIN");
  }

 private:
  std::unique_ptr<RecordBatchReader> Reader(uint64_t first, uint64_t n) {
    std::vector<RecordBatch> batches;
    for (uint64_t r = first; r < first + n; r += 500) {
      batches.push_back(gen_->Batch(r, std::min<uint64_t>(500, first + n - r)));
    }
    return MakeBatchReader(gen_->schema(), std::move(batches));
  }

  void CreateIndex(const std::string& name, const std::string& column, index::IndexType type,
                   std::map<std::string, std::string> props) {
    index::CreateIndexRequest req;
    req.dataset_path = path_;
    req.column = column;
    req.name = name;
    req.type = type;
    req.properties = std::move(props);
    auto r = type == index::IndexType::kIvfPq ? index::CreateVectorIndex(req) : index::CreateScalarIndex(req);
    EXPECT_TRUE(r.ok()) << name << ": " << r.status().ToString();
  }

  void MakeCats() {
    auto schema = *Schema::Make({Field{-1, "name", DataType::Of(TypeId::kString), false},
                                 Field{-1, "label", DataType::Of(TypeId::kString), true}});
    RecordBatch b = RecordBatch::Empty(schema);
    for (int c = 0; c < 4; ++c) {
      EXPECT_TRUE(b.AppendRow({vigil::Value(DataGenerator::CategoryName(static_cast<uint32_t>(c))),
                               vigil::Value("label " + std::to_string(c))})
                      .ok());
    }
    std::string cats = *root_->LegacyTablePath(vigil::TableName{"local", "db", "cats"});
    auto ds = *Dataset::Create(cats, schema, {});
    std::vector<RecordBatch> batches{b};
    EXPECT_TRUE(ds->Append(MakeBatchReader(schema, std::move(batches)).get(), {}).ok());
  }

  testing::TempDir dir_;
  std::unique_ptr<Root> root_;
  std::shared_ptr<const DataGenerator> gen_;
  std::string path_;
  std::unique_ptr<jobs::JobStore> store_;
  std::unique_ptr<SelectEngine> engine_;
};

std::string FormatValue(const Value& v) {
  if (std::holds_alternative<std::monostate>(v)) return "NULL";
  if (const int64_t* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const double* d = std::get_if<double>(&v)) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.4f", *d);
    return buf;
  }
  if (const std::string* s = std::get_if<std::string>(&v)) return *s;
  return "blob(" + std::to_string(std::get<Blob>(v).bytes.size()) + " bytes)";
}

// Rows as "a | b" lines under a header; UUIDs and read counts masked (they vary by run).
std::string FormatResult(const Result<ResultSet>& r) {
  if (!r.ok()) return "error: " + std::string(StatusCodeName(r.status().code())) + ": " + r.status().message();
  std::string out;
  for (size_t i = 0; i < r->columns.size(); ++i) out += (i ? " | " : "") + r->columns[i];
  for (const auto& row : r->rows) {
    out += "\n";
    for (size_t i = 0; i < row.size(); ++i) out += (i ? " | " : "") + FormatValue(row[i]);
  }
  static const std::regex kUuid("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  static const std::regex kReads("(reads) [0-9]+ ops, [0-9]+ bytes");
  out = std::regex_replace(out, kUuid, "<uuid>");
  return std::regex_replace(out, kReads, "$1 N ops, N bytes");
}

class SelectGoldenTest : public ::testing::TestWithParam<std::filesystem::path> {};

TEST_P(SelectGoldenTest, Matches) {
  SelectEnv env;
  size_t records = testing::RunGoldenFile(GetParam(), [&](const testing::GoldenRecord& r) {
    return r.directive == "query" ? std::optional<std::string>(FormatResult(env.Run(r.input))) : std::nullopt;
  });
  EXPECT_GT(records, 3u);
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SelectGoldenTest);
INSTANTIATE_TEST_SUITE_P(Select, SelectGoldenTest,
                         ::testing::ValuesIn(testing::GoldenFiles(std::filesystem::path(VIGIL_SQL_TESTDATA_DIR) /
                                                                  "select")),
                         testing::GoldenFileName);

class SelectEngineTest : public ::testing::Test {
 protected:
  static std::string Detail(const ResultSet& rs) {
    std::string out;
    for (const auto& row : rs.rows) out += std::get<std::string>(row[1]) + "\n";
    return out;
  }
  // Sum of the "data reads" bytes of an EXPLAIN ANALYZE.
  static uint64_t DataBytes(const ResultSet& rs) {
    uint64_t total = 0;
    std::regex re("data reads [0-9]+ ops, ([0-9]+) bytes");
    for (const auto& row : rs.rows) {
      std::smatch m;
      const std::string& d = std::get<std::string>(row[1]);
      if (std::regex_search(d, m, re)) total += std::stoull(m[1]);
    }
    return total;
  }

  SelectEnv env_;
};

TEST_F(SelectEngineTest, VectorSearchMatchesTheQueryApi) {
  std::vector<float> q = env_.Embedding(123);
  Blob blob{std::string(reinterpret_cast<const char*>(q.data()), q.size() * sizeof(float))};
  auto rs = env_.Run("SELECT id, _distance FROM vector_search('db.docs', 'emb', ?, 10, '{\"nprobes\": 8}')", {blob});
  ASSERT_TRUE(rs.ok()) << rs.status().ToString();
  auto snap = *query::TableSnapshot::Open(*Dataset::Open(env_.path()));
  query::VectorQueryOptions opts;
  opts.k = 10;
  opts.nprobes = 8;
  auto hits = *query::VectorSearch(*snap, "emb", q, opts);
  auto batch = *query::TakeRows(*snap, {hits[0].row}, {"id"});
  ASSERT_EQ(rs->rows.size(), hits.size());
  EXPECT_EQ(std::get<int64_t>(rs->rows[0][0]), std::get<int64_t>(batch.columns[0].ValueAt(0)));
  for (size_t i = 0; i < hits.size(); ++i) EXPECT_FLOAT_EQ(std::get<double>(rs->rows[i][1]), hits[i].distance);
}

TEST_F(SelectEngineTest, PrefilterAppliesBeforeTopK) {
  std::vector<float> q = env_.Embedding(7);
  std::string qs = "[";
  for (size_t i = 0; i < q.size(); ++i) qs += (i ? "," : "") + std::to_string(q[i]);
  qs += "]";
  auto rs = env_.Run("SELECT id, category FROM vector_search('db.docs', 'emb', '" + qs +
                     "', 5, '{\"use_index\": false}') WHERE category = 'cat_005'");
  ASSERT_TRUE(rs.ok()) << rs.status().ToString();
  ASSERT_EQ(rs->rows.size(), 5u);  // top-k among the prefiltered rows, not a post-filtered top-k
  for (const auto& row : rs->rows) EXPECT_EQ(std::get<std::string>(row[1]), "cat_005");
  // The same through the "filter" option with an OR.
  auto or_rs = env_.Run("SELECT id, category FROM vector_search('db.docs', 'emb', '" + qs +
                        "', 5, '{\"use_index\": false, \"filter\": \"category = ''cat_005'' OR id < 0\"}')");
  ASSERT_TRUE(or_rs.ok()) << or_rs.status().ToString();
  EXPECT_EQ(or_rs->rows, rs->rows);
}

TEST_F(SelectEngineTest, PushdownUsesTheBtreeAndReadsLessThanAScan) {
  const int64_t t0 = env_.gen().Timestamp(100);
  const int64_t t1 = env_.gen().Timestamp(140);
  std::string range = std::to_string(t0) + " AND " + std::to_string(t1);
  auto pushed = env_.Run("EXPLAIN ANALYZE SELECT id, body FROM db.docs WHERE ts BETWEEN " + range);
  ASSERT_TRUE(pushed.ok()) << pushed.status().ToString();
  SelectEnv cold;  // another root: no cached blocks from the first query
  auto scan = cold.Run("EXPLAIN ANALYZE SELECT id, body FROM db.docs WHERE ts + 0 BETWEEN " + range);
  ASSERT_TRUE(scan.ok()) << scan.status().ToString();
  std::string uuid;
  {
    auto entries = env_.Run("SELECT IndexUuid FROM vigil_index_entries('db.docs') WHERE IndexName = 'ts_idx'");
    ASSERT_TRUE(entries.ok()) << entries.status().ToString();
    uuid = std::get<std::string>(entries->rows.at(0).at(0));
  }
  EXPECT_THAT(Detail(*pushed), HasSubstr("segment _indices/" + uuid));
  EXPECT_THAT(Detail(*scan), ::testing::Not(HasSubstr("segment _indices/")));
  EXPECT_GT(DataBytes(*pushed), 0u);
  EXPECT_LT(DataBytes(*pushed), DataBytes(*scan)) << Detail(*pushed) << Detail(*scan);
  // Same rows either way.
  auto a = env_.Run("SELECT id FROM db.docs WHERE ts BETWEEN " + range);
  auto b = env_.Run("SELECT id FROM db.docs WHERE ts + 0 BETWEEN " + range);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->rows, b->rows);
  EXPECT_EQ(a->rows.size(), 41u);
}

TEST_F(SelectEngineTest, MaxRowsIsAnErrorNotATruncation) {
  auto rs = env_.Run("SELECT id FROM db.docs");
  ASSERT_TRUE(rs.ok());
  EXPECT_EQ(rs->rows.size(), kBaseRows + kAppendedRows - 2);
  Root root = *Root::Open(std::filesystem::path(env_.path()).parent_path().parent_path().string());
  auto small = *SelectEngine::Open(root, &env_.store(), SelectOptions{100});
  auto stmt = *ParseStatement("SELECT id FROM db.docs");
  auto r = small->Select(std::get<SelectStatement>(stmt.node), auth::Principal::LocalAdmin());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
}

TEST_F(SelectEngineTest, TableFunctionsNeedShow) {
  auth::Principal nobody{"nobody", false, {}};
  auto r = env_.Run("SELECT COUNT(*) FROM vigil_indexes('db.docs')", {}, nobody);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  auth::Principal viewer{"viewer", false, {{"local.db.*", {auth::Privilege::kShow}}}};
  auto ok = env_.Run("SELECT COUNT(*) FROM vigil_indexes('db.docs')", {}, viewer);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(std::get<int64_t>(ok->rows[0][0]), 4);
}

TEST_F(SelectEngineTest, AStatementRunAgainStillChecksWhoAsks) {
  // The second run of a text reuses its rewrite; the caller's privileges are checked anew.
  const std::string sql = "SELECT id FROM vector_search('db.docs', 'emb', ?, 3)";
  std::vector<float> q = env_.Embedding(5);
  const std::vector<Value> params{Blob{std::string(reinterpret_cast<const char*>(q.data()), q.size() * sizeof(float))}};
  auto admin = env_.Run(sql, params);
  ASSERT_TRUE(admin.ok()) << admin.status().ToString();
  EXPECT_EQ(admin->rows.size(), 3u);
  auth::Principal nobody{"nobody", false, {}};
  auto refused = env_.Run(sql, params, nobody);
  EXPECT_EQ(refused.status().code(), StatusCode::kNotFound) << refused.status().ToString();
  auth::Principal viewer{"viewer", false, {{"local.db.docs", {auth::Privilege::kShow}}}};
  auto again = env_.Run(sql, params, viewer);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->rows, admin->rows);
}

TEST_F(SelectEngineTest, StatementsSeeNewVersionsAndReleaseLeases) {
  auto before = env_.Run("SELECT COUNT(*) FROM db.docs");
  ASSERT_TRUE(before.ok());
  auto ds = *Dataset::Open(env_.path());
  ASSERT_TRUE(ds->Delete({MakeRowAddress(0, 20)}, {}).ok());
  auto after = env_.Run("SELECT COUNT(*) FROM db.docs");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(std::get<int64_t>(after->rows[0][0]) + 1, std::get<int64_t>(before->rows[0][0]));
}

TEST_F(SelectEngineTest, IndexJobsAreListedAsAuthorized) {
  catalog::TableCatalog catalog(&env_.root(), &env_.store().catalog(), [] { return int64_t{1000}; });
  auto entry = catalog.Lookup(vigil::TableName{"local", "db", "cats"});
  ASSERT_TRUE(entry.ok()) << entry.status().ToString();
  jobs::Admission admission(&env_.store(), {});
  jobs::CreateIndexStatement create;
  create.target = {"local", "db", "cats"};
  create.index_name = "name_idx";
  create.column = "name";
  create.type = index::IndexType::kBtree;
  auto job = admission.Create(create, "tester", 1'700'000'000'000);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  auto rs = env_.Run(
      "SELECT JobId, DatabaseName, TableName, IndexName, Operation, CreateTime, State, Outcome, "
      "Executor, LastResolutionAction FROM vigil_index_jobs WHERE TableName = 'cats'");
  ASSERT_TRUE(rs.ok()) << rs.status().ToString();
  ASSERT_EQ(rs->rows.size(), 1u);
  EXPECT_EQ(rs->rows[0][0], Value(job->job_id));
  EXPECT_EQ(rs->rows[0][3], Value(std::string("name_idx")));
  EXPECT_EQ(rs->rows[0][4], Value(std::string("CREATE")));
  EXPECT_EQ(rs->rows[0][5], Value(std::string("2023-11-14 22:13:20")));  // as SHOW INDEX JOBS shows it
  EXPECT_EQ(rs->rows[0][6], Value(std::string("PENDING")));
  EXPECT_EQ(rs->rows[0][8], Value());
  auto none = env_.Run("SELECT COUNT(*) FROM vigil_index_jobs WHERE TableName = 'docs'");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->rows[0][0], Value(int64_t{0}));
  auth::Principal other{"other", false, {{"local.db.docs", {auth::Privilege::kShow}}}};
  auto hidden = env_.Run("SELECT COUNT(*) FROM vigil_index_jobs", {}, other);
  ASSERT_TRUE(hidden.ok()) << hidden.status().ToString();
  EXPECT_EQ(hidden->rows[0][0], Value(int64_t{0}));
}

}  // namespace
}  // namespace vigil::sql
