// Unit tests for full-text segments: BM25 by hand, split-equals-whole ranking,
// tokenizers, deletions and filters, malformed queries, corrupt files, and
// the column contract.
#include "vigil/index/fts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "index/fts_sqlite.h"
#include "testutil/temp_dir.h"
#include "vigil/common/checksum.h"
#include "vigil/common/failpoint.h"
#include "vigil/ingest/datagen.h"

namespace vigil::index {
namespace {

using Docs = std::vector<std::string>;

SchemaPtr TestSchema() {
  return *Schema::Make({{-1, "id", DataType::Of(TypeId::kInt64), false},
                        {-1, "body", DataType::Of(TypeId::kString), false},
                        {-1, "note", DataType::Of(TypeId::kString), true}});
}

TransactionProperties Props(std::string op) {
  TransactionProperties p;
  p.operation = std::move(op);
  return p;
}

class RejectRows : public RowFilter {
 public:
  explicit RejectRows(std::set<RowAddress> rows) : rows_(std::move(rows)) {}
  bool Accept(RowAddress row) const override { return rows_.count(row) == 0; }

 private:
  std::set<RowAddress> rows_;
};

class FtsTest : public ::testing::Test {
 protected:
  // A dataset with one fragment per element of `fragments`.
  std::shared_ptr<Dataset> MakeDataset(const std::vector<Docs>& fragments) {
    auto ds = Dataset::Create(dir_.Join("t.vgl"), TestSchema(), Props("CREATE_TABLE"));
    EXPECT_TRUE(ds.ok()) << ds.status().ToString();
    std::shared_ptr<Dataset> cur = *ds;
    int64_t id = 0;
    for (const Docs& docs : fragments) {
      RecordBatch batch = RecordBatch::Empty(cur->schema());
      for (const auto& d : docs) VIGIL_CHECK(batch.AppendRow({id++, d, std::monostate{}}).ok());
      auto reader = MakeBatchReader(cur->schema(), {std::move(batch)});
      auto next = cur->Append(reader.get(), Props("APPEND"));
      EXPECT_TRUE(next.ok()) << next.status().ToString();
      cur = *next;
    }
    return cur;
  }

  static const Field& FieldNamed(const Dataset& ds, const std::string& name) {
    return ds.schema()->field(*ds.schema()->IndexOf(name));
  }

  static std::vector<uint32_t> FragmentIds(const Dataset& ds) {
    std::vector<uint32_t> ids;
    for (const auto& f : ds.manifest().fragments) ids.push_back(f.id);
    return ids;
  }

  // Builds a segment over `fragments` and returns its (not yet opened) files.
  Result<std::shared_ptr<SegmentFiles>> BuildFiles(const Dataset& ds, const std::vector<uint32_t>& fragments,
                                                   const FtsParams& params = {}) {
    Uuid uuid = Uuid::Generate();
    VIGIL_ASSIGN_OR_RETURN(auto writer, SegmentWriter::Create(ds.fs(), ds.path(), uuid));
    VIGIL_RETURN_IF_ERROR(BuildFtsSegment(ds, FieldNamed(ds, "body"), fragments, params, writer.get(), nullptr));
    IndexSegmentMeta meta;
    meta.name = "body_idx";
    meta.uuid = uuid;
    meta.field_ids = {FieldNamed(ds, "body").id};
    meta.index_type = "FTS";
    IndexSpec spec;
    spec.type = IndexType::kFts;
    spec.fts = params;
    meta.properties_json = SpecToPropertiesJson(spec);
    meta.built_at_version = ds.version();
    meta.covered_fragments = fragments;
    VIGIL_ASSIGN_OR_RETURN(meta.files, writer->Finish());
    return SegmentFiles::Open(ds.fs(), ds.path(), meta);
  }

  std::shared_ptr<FtsSegment> Build(const Dataset& ds, const std::vector<uint32_t>& fragments,
                                    const FtsParams& params = {}) {
    auto files = BuildFiles(ds, fragments, params);
    EXPECT_TRUE(files.ok()) << files.status().ToString();
    if (!files.ok()) return nullptr;
    auto seg = FtsSegment::Open(*files);
    EXPECT_TRUE(seg.ok()) << seg.status().ToString();
    return seg.ok() ? *seg : nullptr;
  }

  // An in-memory index over the live rows of `fragment`.
  std::unique_ptr<FtsMemoryIndex> MemoryIndexOf(const Dataset& ds, uint32_t fragment, const FtsParams& params = {}) {
    auto index = FtsMemoryIndex::Create(params);
    VIGIL_CHECK(index.ok());
    auto scan = ds.Scan({.columns = {"body"}, .fragment_ids = std::vector<uint32_t>{fragment}});
    VIGIL_CHECK(scan.ok());
    while (true) {
      auto batch = (*scan)->Next();
      VIGIL_CHECK(batch.ok());
      if (!batch->has_value()) break;
      const RecordBatch& b = **batch;
      for (size_t i = 0; i < b.num_rows; ++i) {
        VIGIL_CHECK((*index)->Add(b.row_addresses[i], b.columns[0].StringAt(i)).ok());
      }
    }
    return std::move(*index);
  }

  testing::TempDir dir_;
};

std::map<RowAddress, double> ScoreMap(const std::vector<FtsHit>& hits) {
  std::map<RowAddress, double> m;
  for (const auto& h : hits) m[h.row] = h.score;
  return m;
}

TEST_F(FtsTest, HandComputedBm25) {
  auto ds = MakeDataset({{"apple banana", "apple apple cherry", "banana cherry cherry date"}});
  auto seg = Build(*ds, FragmentIds(*ds));
  ASSERT_NE(seg, nullptr);

  auto stats = seg->Stats("apple");
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->documents, 3u);
  EXPECT_EQ(stats->total_tokens, 9u);
  ASSERT_EQ(stats->doc_freq.size(), 1u);
  EXPECT_EQ(stats->doc_freq.begin()->second, 2u);

  // N = 3, avgdl = 3, n(apple) = 2: idf = ln(1.5 / 2.5 + 1) = ln 1.6.
  // d1: tf 1, dl 2 -> 2.2 / (1 + 1.2 * (0.25 + 0.5)) = 2.2 / 1.9; d2: tf 2, dl 3 -> 4.4 / 3.2.
  auto hits = seg->Search("apple", *stats, nullptr, 10);
  ASSERT_TRUE(hits.ok()) << hits.status().ToString();
  ASSERT_EQ(hits->size(), 2u);
  EXPECT_EQ((*hits)[0].row, MakeRowAddress(0, 1));
  EXPECT_NEAR((*hits)[0].score, std::log(1.6) * 4.4 / 3.2, 1e-12);
  EXPECT_EQ((*hits)[1].row, MakeRowAddress(0, 0));
  EXPECT_NEAR((*hits)[1].score, std::log(1.6) * 2.2 / 1.9, 1e-12);

  // n(date) = 1: idf = ln(2.5 / 1.5 + 1) = ln(8/3); d3: tf 1, dl 4 -> 2.2 / (1 + 1.2 * 1.25) =
  // 0.88.
  auto both = seg->Stats("apple OR date");
  ASSERT_TRUE(both.ok());
  auto hits2 = seg->Search("apple OR date", *both, nullptr, 1);
  ASSERT_TRUE(hits2.ok());
  ASSERT_EQ(hits2->size(), 1u);
  EXPECT_EQ((*hits2)[0].row, MakeRowAddress(0, 2));
  EXPECT_NEAR((*hits2)[0].score, std::log(8.0 / 3.0) * 0.88, 1e-12);
}

TEST_F(FtsTest, SplitSegmentsRankLikeOneSegment) {
  DatagenOptions opts;
  opts.rows = 600;
  opts.columns = {"body"};
  opts.vocabulary = 200;
  opts.words_per_body = 20;
  auto gen = *DataGenerator::Make(opts);
  std::vector<Docs> fragments(3);
  for (uint64_t r = 0; r < opts.rows; ++r) fragments[r % 3].push_back(gen->Body(r));
  auto ds = MakeDataset(fragments);
  auto deleted = ds->Delete({MakeRowAddress(1, 3), MakeRowAddress(1, 10), MakeRowAddress(2, 7)}, Props("DELETE"));
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  ds = *deleted;

  auto whole = Build(*ds, {0, 1, 2});
  auto part0 = Build(*ds, {0});
  auto part1 = Build(*ds, {1});
  auto part2 = MemoryIndexOf(*ds, 2);
  ASSERT_TRUE(whole && part0 && part1);

  std::istringstream words(gen->Body(0) + " " + gen->Body(1));
  std::vector<std::string> w(std::istream_iterator<std::string>(words), {});
  ASSERT_GE(w.size(), 6u);
  const std::vector<std::string> queries = {w[0],
                                            w[1] + " " + w[2],
                                            w[3] + " OR " + w[4] + " OR " + w[5],
                                            "\"" + w[0] + " " + w[1] + "\"",
                                            w[2].substr(0, 2) + "*",
                                            w[0] + " NOT " + w[4],
                                            "NEAR(" + w[1] + " " + w[5] + ", 8)"};
  for (const auto& q : queries) {
    SCOPED_TRACE(q);
    auto ws = whole->Stats(q);
    auto s0 = part0->Stats(q);
    auto s1 = part1->Stats(q);
    auto s2 = part2->Stats(q);
    ASSERT_TRUE(ws.ok() && s0.ok() && s1.ok() && s2.ok()) << ws.status().ToString();
    FtsStats split = *s0;
    split.Add(*s1);
    split.Add(*s2);
    EXPECT_EQ(split.documents, ws->documents);
    EXPECT_EQ(ws->documents, 597u);
    EXPECT_EQ(split.total_tokens, ws->total_tokens);
    EXPECT_EQ(split.doc_freq, ws->doc_freq);

    auto all = whole->Search(q, *ws, nullptr, 100000);
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    EXPECT_FALSE(all->empty());
    std::vector<FtsHit> merged;
    for (auto part : {part0->Search(q, split, nullptr, 100000), part1->Search(q, split, nullptr, 100000),
                      part2->Search(q, split, nullptr, 100000)}) {
      ASSERT_TRUE(part.ok()) << part.status().ToString();
      merged.insert(merged.end(), part->begin(), part->end());
    }
    auto whole_scores = ScoreMap(*all);
    auto split_scores = ScoreMap(merged);
    ASSERT_EQ(whole_scores.size(), split_scores.size());
    for (const auto& [row, score] : whole_scores) {
      ASSERT_EQ(split_scores.count(row), 1u) << row;
      EXPECT_LE(std::abs(split_scores[row] - score), 1e-9 * std::abs(score)) << row;
    }
    std::sort(merged.begin(), merged.end(),
              [](const FtsHit& a, const FtsHit& b) { return a.score != b.score ? a.score > b.score : a.row < b.row; });
    auto top = whole->Search(q, *ws, nullptr, 10);
    ASSERT_TRUE(top.ok());
    ASSERT_EQ(top->size(), std::min<size_t>(10, merged.size()));
    for (size_t i = 0; i < top->size(); ++i) EXPECT_EQ((*top)[i].row, merged[i].row) << i;
  }
}

TEST_F(FtsTest, PorterStemsAndUnicode61DoesNot) {
  auto ds = MakeDataset({{"she was running late", "a quiet walk"}});
  auto porter = Build(*ds, FragmentIds(*ds), FtsParams{"porter"});
  auto plain = Build(*ds, FragmentIds(*ds), FtsParams{"unicode61"});
  ASSERT_TRUE(porter && plain);
  for (const char* q : {"run", "runs"}) {
    auto ps = porter->Stats(q);
    ASSERT_TRUE(ps.ok());
    auto hits = porter->Search(q, *ps, nullptr, 10);
    ASSERT_TRUE(hits.ok());
    ASSERT_EQ(hits->size(), 1u) << q;
    EXPECT_EQ((*hits)[0].row, MakeRowAddress(0, 0));
    EXPECT_GT((*hits)[0].score, 0);
  }
  auto us = plain->Stats("run");
  ASSERT_TRUE(us.ok());
  auto none = plain->Search("run", *us, nullptr, 10);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  auto memory = *FtsMemoryIndex::Create(FtsParams{"porter"});
  ASSERT_TRUE(memory->Add(MakeRowAddress(5, 0), "he runs daily").ok());
  auto ms = memory->Stats("running");
  ASSERT_TRUE(ms.ok());
  auto mhits = memory->Search("running", *ms, nullptr, 10);
  ASSERT_TRUE(mhits.ok());
  ASSERT_EQ(mhits->size(), 1u);
}

TEST_F(FtsTest, TrigramMatchesSubstringsAndHidesTheSentinel) {
  auto ds = MakeDataset({{"lifecycle fencing", "unrelated words"}});
  auto seg = Build(*ds, FragmentIds(*ds), FtsParams{"trigram"});
  ASSERT_NE(seg, nullptr);
  auto stats = seg->Stats("cycl");
  ASSERT_TRUE(stats.ok());
  auto hits = seg->Search("cycl", *stats, nullptr, 10);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 1u);
  // "inel" and "sent" occur only in the internal sentinel row.
  for (const char* q : {"inel", "sent"}) {
    auto s = seg->Stats(q);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->documents, 2u);
    EXPECT_EQ(s->doc_freq.begin()->second, 0u);
    auto h = seg->Search(q, *s, nullptr, 10);
    ASSERT_TRUE(h.ok());
    EXPECT_TRUE(h->empty()) << q;
  }
}

TEST_F(FtsTest, DeletedAndFilteredRowsNeverAppear) {
  auto ds = MakeDataset({{"common zebra", "common", "common common", "common common common"}});
  auto v2 = ds->Delete({MakeRowAddress(0, 0)}, Props("DELETE"));
  ASSERT_TRUE(v2.ok());
  auto seg = Build(**v2, FragmentIds(**v2));
  ASSERT_NE(seg, nullptr);
  auto zs = seg->Stats("zebra");
  ASSERT_TRUE(zs.ok());
  EXPECT_EQ(zs->documents, 3u);
  EXPECT_EQ(zs->doc_freq.begin()->second, 0u);
  auto zebra = seg->Search("zebra", *zs, nullptr, 10);
  ASSERT_TRUE(zebra.ok());
  EXPECT_TRUE(zebra->empty());

  // The best match is filtered out before top-k, so k = 2 still returns two rows.
  auto cs = seg->Stats("common");
  ASSERT_TRUE(cs.ok());
  RejectRows filter({MakeRowAddress(0, 3)});
  auto hits = seg->Search("common", *cs, &filter, 2);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 2u);
  EXPECT_EQ((*hits)[0].row, MakeRowAddress(0, 2));
  EXPECT_EQ((*hits)[1].row, MakeRowAddress(0, 1));
}

TEST_F(FtsTest, TiesRankByRowAddress) {
  auto memory = *FtsMemoryIndex::Create({});
  for (uint32_t r : {7u, 3u, 5u, 1u}) ASSERT_TRUE(memory->Add(MakeRowAddress(2, r), "same text").ok());
  auto stats = memory->Stats("same");
  ASSERT_TRUE(stats.ok());
  auto hits = memory->Search("same", *stats, nullptr, 3);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 3u);
  EXPECT_EQ((*hits)[0].row, MakeRowAddress(2, 1));
  EXPECT_EQ((*hits)[1].row, MakeRowAddress(2, 3));
  EXPECT_EQ((*hits)[2].row, MakeRowAddress(2, 5));
  EXPECT_EQ(memory->Add(MakeRowAddress(2, 3), "again").code(), StatusCode::kInvalidArgument);
}

TEST_F(FtsTest, ConcurrentSearchesAgree) {
  auto ds = MakeDataset({{"red fox", "red red dog", "blue fox", "red blue fish"}});
  auto seg = Build(*ds, FragmentIds(*ds));
  ASSERT_NE(seg, nullptr);
  auto stats = *seg->Stats("red OR fox");
  auto expected = *seg->Search("red OR fox", stats, nullptr, 3);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        auto s = seg->Stats("red OR fox");
        auto hits = s.ok() ? seg->Search("red OR fox", *s, nullptr, 3) : s.status();
        if (!hits.ok() || ScoreMap(*hits) != ScoreMap(expected)) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_GT(seg->MemoryBytes(), 0u);
}

TEST_F(FtsTest, BuildReportsProgressOverEveryRow) {
  auto ds = MakeDataset({{"a b", "c"}, {"d e f"}});
  auto writer = *SegmentWriter::Create(ds->fs(), ds->path(), Uuid::Generate());
  uint64_t last_done = 0, last_total = 0;
  ProgressFn progress = [&](std::string_view phase, uint64_t done, uint64_t total) {
    if (phase == "encoding") last_done = done, last_total = total;
  };
  ASSERT_TRUE(BuildFtsSegment(*ds, FieldNamed(*ds, "body"), FragmentIds(*ds), {}, writer.get(), progress).ok());
  EXPECT_EQ(last_done, 3u);
  EXPECT_EQ(last_total, 3u);
  auto files = writer->Finish();
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ((*files)[0].name, "fts.db");
  EXPECT_EQ((*files)[1].name, "postings.bin");
}

TEST_F(FtsTest, MalformedQueryIsInvalidArgument) {
  auto ds = MakeDataset({{"alpha beta"}});
  auto seg = Build(*ds, FragmentIds(*ds));
  ASSERT_NE(seg, nullptr);
  auto memory = *FtsMemoryIndex::Create({});
  ASSERT_TRUE(memory->Add(1, "alpha beta").ok());
  auto stats = *seg->Stats("alpha");
  for (const std::string q :
       {"\"unbalanced", "alpha AND", "(alpha", "nosuchcolumn: alpha", "alpha) OR (beta", "", "   ", "alpha NOT"}) {
    SCOPED_TRACE(q);
    EXPECT_EQ(seg->Stats(q).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(seg->Search(q, stats, nullptr, 10).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(memory->Stats(q).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(memory->Search(q, stats, nullptr, 10).status().code(), StatusCode::kInvalidArgument);
  }
}

TEST_F(FtsTest, CorruptFileIsCorruption) {
  auto ds = MakeDataset({{"alpha beta", "gamma"}});
  auto files = BuildFiles(*ds, FragmentIds(*ds));
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  std::string path = (*files)->FilePath("fts.db");
  uint64_t size = std::filesystem::file_size(path);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    char c = 0;
    f.seekg(static_cast<std::streamoff>(size / 2));
    f.get(c);
    f.seekp(static_cast<std::streamoff>(size / 2));
    f.put(static_cast<char>(c ^ 0x20));
  }
  EXPECT_EQ(FtsSegment::Open(*files).status().code(), StatusCode::kCorruption);

  std::filesystem::resize_file(path, size - 100);
  EXPECT_EQ(FtsSegment::Open(*files).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(SegmentFiles::Open(ds->fs(), ds->path(), (*files)->meta()).status().code(), StatusCode::kCorruption);
}

TEST_F(FtsTest, ManifestDisagreeingWithTheFileIsCorruption) {
  auto ds = MakeDataset({{"alpha beta"}});
  auto files = BuildFiles(*ds, FragmentIds(*ds), FtsParams{"porter"});
  ASSERT_TRUE(files.ok());
  IndexSegmentMeta meta = (*files)->meta();
  meta.properties_json = R"({"tokenizer":"ascii"})";
  auto other = SegmentFiles::Open(ds->fs(), ds->path(), meta);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(FtsSegment::Open(*other).status().code(), StatusCode::kCorruption);
  meta = (*files)->meta();
  meta.files.clear();
  EXPECT_EQ(FtsSegment::Open(*SegmentFiles::Open(ds->fs(), ds->path(), meta)).status().code(), StatusCode::kCorruption);
}

TEST_F(FtsTest, ColumnContractIsEnforced) {
  auto ds = MakeDataset({{"alpha"}});
  auto writer = *SegmentWriter::Create(ds->fs(), ds->path(), Uuid::Generate());
  auto ids = FragmentIds(*ds);
  EXPECT_EQ(BuildFtsSegment(*ds, FieldNamed(*ds, "id"), ids, {}, writer.get(), nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildFtsSegment(*ds, FieldNamed(*ds, "note"), ids, {}, writer.get(), nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildFtsSegment(*ds, FieldNamed(*ds, "body"), ids, FtsParams{"klingon"}, writer.get(), nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildFtsSegment(*ds, FieldNamed(*ds, "body"), {99}, {}, writer.get(), nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(FtsMemoryIndex::Create(FtsParams{"porter'); DROP TABLE t; --"}).status().code(),
            StatusCode::kInvalidArgument);
}

// Every row address of `ds` with its body, fragment by fragment.
std::vector<std::pair<RowAddress, std::string>> AllBodies(const Dataset& ds) {
  std::vector<std::pair<RowAddress, std::string>> out;
  auto scan = ds.Scan({.columns = {"body"}});
  VIGIL_CHECK(scan.ok());
  for (;;) {
    auto batch = (*scan)->Next();
    VIGIL_CHECK(batch.ok());
    if (!batch->has_value()) break;
    for (size_t i = 0; i < (*batch)->num_rows; ++i) {
      out.emplace_back((*batch)->row_addresses[i], std::string((*batch)->columns[0].StringAt(i)));
    }
  }
  return out;
}

void ExpectSameHits(const std::vector<FtsHit>& native, const std::vector<FtsHit>& fts5) {
  ASSERT_EQ(native.size(), fts5.size());
  for (size_t i = 0; i < native.size(); ++i) {
    EXPECT_EQ(native[i].row, fts5[i].row) << i;
    EXPECT_EQ(native[i].score, fts5[i].score) << i;  // bit for bit: the same sums in the same order
  }
}

// Top-k from the native postings (with its pruning) equals FTS5's exhaustive
// scoring of the same documents: rows and scores, for AND and OR, several k,
// with and without a filter, repeated and unknown words, both tokenizers.
TEST_F(FtsTest, NativePostingsReturnWhatFts5Returns) {
  DatagenOptions opts;
  opts.rows = 4000;
  opts.columns = {"body"};
  opts.vocabulary = 300;
  opts.words_per_body = 12;
  auto gen = *DataGenerator::Make(opts);
  std::vector<Docs> fragments(2);
  for (uint64_t r = 0; r < opts.rows; ++r) fragments[r % 2].push_back(gen->Body(r) + (r % 7 ? "" : " running runs"));
  auto ds = MakeDataset(fragments);
  auto bodies = AllBodies(*ds);
  std::mt19937_64 rng(17);
  std::set<RowAddress> rejected;
  for (const auto& [row, body] : bodies) {
    if (rng() % 3 == 0) rejected.insert(row);
  }
  RejectRows filter(rejected);
  for (const char* tokenizer : {"unicode61", "porter"}) {
    SCOPED_TRACE(tokenizer);
    FtsParams params{tokenizer};
    auto seg = Build(*ds, FragmentIds(*ds), params);
    ASSERT_NE(seg, nullptr);
    auto memory = *FtsMemoryIndex::Create(params);
    for (const auto& [row, body] : bodies) ASSERT_TRUE(memory->Add(row, body).ok());
    for (int q = 0; q < 120; ++q) {
      std::istringstream in(bodies[rng() % bodies.size()].second);
      std::vector<std::string> words{std::istream_iterator<std::string>(in), {}};
      std::vector<std::string> terms;
      for (size_t t = 0, n = 1 + q % 3; t < n; ++t) terms.push_back(words[rng() % words.size()]);
      if (q % 11 == 0) terms.push_back("zzzunknown");
      if (q % 13 == 0) terms.push_back(terms[0]);
      const char* join = q % 3 == 0 ? " " : q % 3 == 1 ? " OR " : " AND ";
      std::string query = terms[0];
      for (size_t t = 1; t < terms.size(); ++t) query += join + terms[t];
      SCOPED_TRACE(query);
      ASSERT_TRUE(seg->AnswersFromPostings(query));
      auto native_stats = seg->Stats(query);
      auto fts5_stats = memory->Stats(query);
      ASSERT_TRUE(native_stats.ok() && fts5_stats.ok()) << native_stats.status().ToString();
      EXPECT_EQ(native_stats->documents, fts5_stats->documents);
      EXPECT_EQ(native_stats->total_tokens, fts5_stats->total_tokens);
      EXPECT_EQ(native_stats->doc_freq, fts5_stats->doc_freq);
      for (uint32_t k : {1u, 10u, 200u}) {
        for (const RowFilter* f : {static_cast<const RowFilter*>(nullptr), static_cast<const RowFilter*>(&filter)}) {
          auto native = seg->Search(query, *native_stats, f, k);
          auto fts5 = memory->Search(query, *fts5_stats, f, k);
          ASSERT_TRUE(native.ok() && fts5.ok()) << native.status().ToString();
          ExpectSameHits(*native, *fts5);
        }
      }
    }
  }
}

TEST_F(FtsTest, OnlyPlainWordQueriesUseThePostings) {
  auto ds = MakeDataset({{"alpha beta", "beta gamma", "alpha-beta gamma"}});
  auto seg = Build(*ds, FragmentIds(*ds), FtsParams{"trigram"});
  ASSERT_NE(seg, nullptr);
  // Trigram makes several tokens of a longer word: a phrase, which only FTS5 answers.
  EXPECT_TRUE(seg->AnswersFromPostings("alp"));
  EXPECT_FALSE(seg->AnswersFromPostings("alpha"));
  auto uni = Build(*ds, FragmentIds(*ds));
  ASSERT_NE(uni, nullptr);
  EXPECT_TRUE(uni->AnswersFromPostings("alpha OR gamma"));
  for (const char* q : {"\"alpha beta\"", "alph*", "alpha NOT gamma", "NEAR(alpha gamma)", "alpha OR beta gamma"}) {
    SCOPED_TRACE(q);
    EXPECT_FALSE(uni->AnswersFromPostings(q));
    auto stats = uni->Stats(q);
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    EXPECT_TRUE(uni->Search(q, *stats, nullptr, 10).ok());
  }
}

TEST_F(FtsTest, SegmentsWithoutPostingsAnswerThroughFts5) {
  auto ds = MakeDataset({{"red fox", "red red dog", "blue fox", "red blue fish"}});
  auto files = BuildFiles(*ds, FragmentIds(*ds));
  ASSERT_TRUE(files.ok());
  auto with = FtsSegment::Open(*files);
  ASSERT_TRUE(with.ok());
  // The same segment as one built before native postings existed: only fts.db in its inventory.
  IndexSegmentMeta meta = (*files)->meta();
  meta.files.erase(std::remove_if(meta.files.begin(), meta.files.end(),
                                  [](const SegmentFile& f) { return f.name == "postings.bin"; }),
                   meta.files.end());
  ASSERT_EQ(meta.files.size(), 1u);
  auto old_files = SegmentFiles::Open(ds->fs(), ds->path(), meta);
  ASSERT_TRUE(old_files.ok());
  auto without = FtsSegment::Open(*old_files);
  ASSERT_TRUE(without.ok()) << without.status().ToString();
  EXPECT_FALSE((*without)->AnswersFromPostings("red OR fox"));
  EXPECT_TRUE((*with)->AnswersFromPostings("red OR fox"));
  auto stats = *(*with)->Stats("red OR fox");
  ExpectSameHits(*(*with)->Search("red OR fox", stats, nullptr, 3),
                 *(*without)->Search("red OR fox", stats, nullptr, 3));
}

TEST_F(FtsTest, DatabasesWithContentFromEarlierBuildsStillOpen) {
  auto ds = MakeDataset({{"red fox", "red red dog"}});
  Uuid uuid = Uuid::Generate();
  auto writer = *SegmentWriter::Create(ds->fs(), ds->path(), uuid);
  {
    auto db = fts_internal::OpenConnection(writer->FilePath("fts.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(fts_internal::CreateFtsTables(db->get(), {}, fts_internal::kFtsFormatWithContent).ok());
    auto insert = fts_internal::PrepareInsert(db->get());
    ASSERT_TRUE(insert.ok());
    ASSERT_TRUE(fts_internal::InsertDocument(db->get(), insert->get(), MakeRowAddress(0, 0), "red fox").ok());
    ASSERT_TRUE(fts_internal::InsertDocument(db->get(), insert->get(), MakeRowAddress(0, 1), "red red dog").ok());
  }
  ASSERT_TRUE(writer->AddExistingFile("fts.db").ok());
  IndexSegmentMeta meta;
  meta.name = "body_idx";
  meta.uuid = uuid;
  meta.index_type = "FTS";
  meta.properties_json = R"({"tokenizer":"unicode61"})";
  meta.files = *writer->Finish();
  auto seg = FtsSegment::Open(*SegmentFiles::Open(ds->fs(), ds->path(), meta));
  ASSERT_TRUE(seg.ok()) << seg.status().ToString();
  auto stats = (*seg)->Stats("red");
  ASSERT_TRUE(stats.ok());
  auto hits = (*seg)->Search("red", *stats, nullptr, 10);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 2u);
  EXPECT_EQ((*hits)[0].row, MakeRowAddress(0, 1));
}

TEST_F(FtsTest, DamagedPostingsAreCorruption) {
  auto ds = MakeDataset({{"red fox", "red red dog", "blue fox"}});
  auto files = BuildFiles(*ds, FragmentIds(*ds));
  ASSERT_TRUE(files.ok());
  std::string path = (*files)->FilePath("postings.bin");
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(bytes.size(), 60u);
  // A flipped byte fails the inventory checksum.
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x40;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << flipped;
  auto seg = FtsSegment::Open(*files);
  ASSERT_FALSE(seg.ok());
  EXPECT_EQ(seg.status().code(), StatusCode::kCorruption);
  // A file that matches its inventory but not the format is Corruption too, naming the file.
  std::string bad = bytes;
  bad.replace(0, 8, "NOTPOSTS");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bad;
  IndexSegmentMeta meta = (*files)->meta();
  for (auto& f : meta.files) {
    if (f.name == "postings.bin") f.checksum = Checksum64(bad);
  }
  seg = FtsSegment::Open(*SegmentFiles::Open(ds->fs(), ds->path(), meta));
  ASSERT_FALSE(seg.ok());
  EXPECT_EQ(seg.status().code(), StatusCode::kCorruption);
  EXPECT_NE(seg.status().message().find("postings.bin"), std::string::npos) << seg.status().ToString();
}

TEST_F(FtsTest, AFailedAllocationWhileCapturingTokensFailsTheBuildCleanly) {
  if (!failpoint::Enabled()) GTEST_SKIP() << "failpoints are not compiled in";
  auto ds = MakeDataset({{"red fox", "red red dog", "blue fox"}});
  // On whichever thread indexes the postings (BuildThreadLimit decides): the build fails, typed.
  failpoint::Arm("fts.postings_allocation", failpoint::Action::kError, 3);
  auto files = BuildFiles(*ds, FragmentIds(*ds));
  int hits = failpoint::HitCount("fts.postings_allocation");
  failpoint::DisarmAll();
  ASSERT_GE(hits, 3);
  ASSERT_FALSE(files.ok());
  EXPECT_EQ(files.status().code(), StatusCode::kResourceExhausted) << files.status().ToString();
}

TEST_F(FtsTest, AFragmentListedTwiceIsRefused) {
  auto ds = MakeDataset({{"red fox"}});
  auto files = BuildFiles(*ds, {0, 0});
  ASSERT_FALSE(files.ok());
  EXPECT_EQ(files.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(files.status().message().find("listed twice"), std::string::npos);
}

}  // namespace
}  // namespace vigil::index
