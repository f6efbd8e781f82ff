// Unit tests for native full-text postings: the file format (round trip,
// impact bounds, damage), the builder on one thread or two, and which query
// texts the native path takes.
#include "index/fts_postings.h"

#include <gtest/gtest.h>

#include <random>

#include "index/fts_postings_builder.h"
#include "index/fts_postings_search.h"
#include "index/fts_tokenizer.h"
#include "vigil/common/failpoint.h"

namespace vigil::index::fts_internal {
namespace {

// Documents of `n` tokens drawn from a vocabulary of `vocabulary` words, skewed to the first ones.
std::vector<std::vector<std::string>> RandomDocs(size_t docs, size_t vocabulary, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<std::string>> out(docs);
  for (auto& doc : out) {
    size_t n = 1 + rng() % 12;
    for (size_t i = 0; i < n; ++i) {
      size_t a = rng() % vocabulary, b = rng() % vocabulary;
      doc.push_back("w" + std::to_string(std::min(a, b)));
    }
  }
  return out;
}

std::string BuildFile(const std::vector<std::vector<std::string>>& docs, bool parallel) {
  PostingsBuilder builder(parallel);
  for (size_t d = 0; d < docs.size(); ++d) {
    builder.BeginDocument(MakeRowAddress(3, static_cast<uint32_t>(d * 2)));
    for (const auto& t : docs[d]) builder.AddToken(t, false);
    builder.EndDocument();
  }
  builder.Finish();
  auto file = builder.TakeFile();
  VIGIL_CHECK(file.ok());
  return *file;
}

TEST(FtsPostingsTest, RoundTripKeepsEveryPostingAndBoundsEveryBlock) {
  auto docs = RandomDocs(2000, 50, 7);
  std::string file = BuildFile(docs, false);
  auto index = PostingsIndex::Parse(file, "postings.bin");
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  ASSERT_EQ((*index)->documents(), docs.size());
  // Expected tf per (term, doc).
  std::map<std::string, std::map<uint32_t, uint32_t>> want;
  uint64_t tokens = 0;
  for (uint32_t d = 0; d < docs.size(); ++d) {
    for (const auto& t : docs[d]) ++want[t][d];
    tokens += docs[d].size();
    EXPECT_EQ((*index)->length(d), docs[d].size());
    EXPECT_EQ((*index)->row(d), MakeRowAddress(3, d * 2));
  }
  EXPECT_EQ((*index)->total_tokens(), tokens);
  EXPECT_EQ((*index)->Find("w50"), nullptr);
  uint32_t docs_out[kPostingsBlockDocs], tfs_out[kPostingsBlockDocs];
  size_t multi_block_terms = 0;
  for (const auto& [term, postings] : want) {
    const PostingsIndex::Term* t = (*index)->Find(term);
    ASSERT_NE(t, nullptr) << term;
    ASSERT_EQ(t->doc_freq, postings.size());
    multi_block_terms += t->num_blocks > 1;
    std::map<uint32_t, uint32_t> got;
    for (uint32_t b = 0; b < t->num_blocks; ++b) {
      const BlockInfo& info = (*index)->block(t->first_block + b);
      ASSERT_TRUE((*index)->DecodeBlock(t->first_block + b, b == 0, docs_out, tfs_out).ok());
      for (uint32_t i = 0; i < info.count; ++i) {
        got[docs_out[i]] = tfs_out[i];
        uint32_t length = (*index)->length(docs_out[i]);
        bool bounded = false;
        for (uint32_t j = 0; j < info.impact_count; ++j) {
          bounded = bounded || (info.impacts[j].tf >= tfs_out[i] && info.impacts[j].length <= length);
        }
        EXPECT_TRUE(bounded) << term << " doc " << docs_out[i];
      }
    }
    EXPECT_EQ(got, postings) << term;
  }
  EXPECT_GT(multi_block_terms, 10u);
}

TEST(FtsPostingsTest, ConcurrentIndexingWritesTheSameFileAsOneThread) {
  auto docs = RandomDocs(5000, 300, 11);
  EXPECT_EQ(BuildFile(docs, true), BuildFile(docs, false));
}

TEST(FtsPostingsTest, WithoutAThreadToStartTheBuildIndexesOnItsOwn) {
  if (!failpoint::Enabled()) GTEST_SKIP() << "failpoints are not compiled in";
  auto docs = RandomDocs(1500, 80, 13);
  failpoint::Arm("fts.postings_thread", failpoint::Action::kError);
  std::string file = BuildFile(docs, true);
  int hits = failpoint::HitCount("fts.postings_thread");
  failpoint::DisarmAll();
  EXPECT_EQ(hits, 1);
  EXPECT_EQ(file, BuildFile(docs, false));
}

TEST(FtsPostingsTest, ConcurrentIndexingStopsWhenTheBuildIsAbandoned) {
  PostingsBuilder builder(true);
  for (uint32_t d = 0; d < 3000; ++d) {
    builder.BeginDocument(d);
    builder.AddToken("x", false);
    builder.EndDocument();
  }
  // Destroyed without Finish, as after a failed build: must not hang or crash.
}

TEST(FtsPostingsTest, AFailedAllocationOnTheIndexingThreadIsResourceExhausted) {
  if (!failpoint::Enabled()) GTEST_SKIP() << "failpoints are not compiled in";
  failpoint::Arm("fts.postings_allocation", failpoint::Action::kError, 700);
  PostingsBuilder builder(true);
  for (uint32_t d = 0; d < 3000; ++d) {  // more batches than the queue holds: the drain must go on
    builder.BeginDocument(d);
    builder.AddToken("x", false);
    builder.EndDocument();
  }
  builder.Finish();
  auto file = builder.TakeFile();
  failpoint::DisarmAll();
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kResourceExhausted);
}

TEST(FtsPostingsTest, AFailedAllocationInsideFts5sTokenizerIsSqlitesOutOfMemory) {
  if (!failpoint::Enabled()) GTEST_SKIP() << "failpoints are not compiled in";
  PostingsBuilder builder(false);  // indexes inside the tokenizer callback
  auto db = OpenConnection(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(CaptureDocumentTokens(db->get(), {}, &builder).ok());
  ASSERT_TRUE(CreateFtsTables(db->get(), {}, kFtsFormat).ok());
  auto insert = PrepareInsert(db->get());
  ASSERT_TRUE(insert.ok());
  failpoint::Arm("fts.postings_allocation", failpoint::Action::kError, 2);
  builder.BeginDocument(1);
  Status st = InsertDocument(db->get(), insert->get(), 1, "red fox dog");
  failpoint::DisarmAll();
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
}

TEST(FtsPostingsTest, TruncatedFilesAreCorruption) {
  std::string file = BuildFile(RandomDocs(300, 20, 3), false);
  for (size_t n = 0; n < file.size(); n += 1 + n / 16) {
    auto index = PostingsIndex::Parse(file.substr(0, n), "p");
    ASSERT_FALSE(index.ok()) << n;
    EXPECT_EQ(index.status().code(), StatusCode::kCorruption) << n;
  }
}

TEST(FtsPostingsTest, DamagedFilesAreCorruptionOrDecodeSafely) {
  std::string file = BuildFile(RandomDocs(300, 20, 5), false);
  std::mt19937_64 rng(9);
  uint32_t docs[kPostingsBlockDocs], tfs[kPostingsBlockDocs];
  int parsed = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string damaged = file;
    for (int i = 0; i < 1 + round % 3; ++i) damaged[rng() % damaged.size()] ^= static_cast<char>(1 + rng() % 255);
    auto index = PostingsIndex::Parse(damaged, "p");
    if (!index.ok()) {
      ASSERT_EQ(index.status().code(), StatusCode::kCorruption) << index.status().ToString();
      continue;
    }
    ++parsed;
    for (int t = 0; t < 20; ++t) {
      const PostingsIndex::Term* term = (*index)->Find("w" + std::to_string(t));
      if (term == nullptr) continue;
      for (uint32_t b = 0; b < term->num_blocks; ++b) {
        Status st = (*index)->DecodeBlock(term->first_block + b, b == 0, docs, tfs);
        ASSERT_TRUE(st.ok() || st.code() == StatusCode::kCorruption) << st.ToString();
      }
    }
  }
  EXPECT_GT(parsed, 0);  // damage inside block data parses and is caught (or not) by decoding
}

TEST(FtsPostingsTest, OnlyPlainWordQueriesTakeTheNativePath) {
  struct Case {
    const char* query;
    bool plain;
    bool any;
    std::vector<std::string> words;
  };
  const Case cases[] = {
      {"alpha", true, false, {"alpha"}},
      {"alpha beta", true, false, {"alpha", "beta"}},
      {" alpha\tAND\nbeta ", true, false, {"alpha", "beta"}},
      {"alpha OR beta OR alpha", true, true, {"alpha", "beta", "alpha"}},
      {"or and", true, false, {"or", "and"}},
      {"caf\xc3\xa9 OR x_1", true, true, {"caf\xc3\xa9", "x_1"}},
      {"alpha OR beta gamma", false, false, {}},
      {"alpha AND beta OR gamma", false, false, {}},
      {"\"alpha beta\"", false, false, {}},
      {"alph*", false, false, {}},
      {"NOT alpha", false, false, {}},
      {"alpha NOT beta", false, false, {}},
      {"NEAR(alpha beta)", false, false, {}},
      {"NEAR", false, false, {}},
      {"doc: alpha", false, false, {}},
      {"(alpha)", false, false, {}},
      {"^alpha", false, false, {}},
      {"alpha-beta", false, false, {}},
      {"OR alpha", false, false, {}},
      {"alpha OR", false, false, {}},
      {"alpha OR OR beta", false, false, {}},
      {"", false, false, {}},
      {"   ", false, false, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.query);
    auto plain = ParsePlainQuery(c.query);
    ASSERT_EQ(plain.has_value(), c.plain);
    if (!plain) continue;
    EXPECT_EQ(plain->any, c.any);
    EXPECT_EQ(plain->words, c.words);
  }
}

}  // namespace
}  // namespace vigil::index::fts_internal
