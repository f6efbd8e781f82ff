// Top-k over native postings; see fts_postings_search.h.
#include "index/fts_postings_search.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "index/fts_bm25.h"

namespace vigil::index::fts_internal {

namespace {

constexpr uint32_t kEnd = std::numeric_limits<uint32_t>::max();
// Bounds are inflated by this factor before pruning, so rounding never drops a hit.
constexpr double kSlack = 1 + 1e-9;

bool IsBarewordByte(char c) {
  auto u = static_cast<unsigned char>(c);
  return u >= 0x80 || (u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || u == '_';
}

bool IsQuerySpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// One term's postings, read block by block.
class Cursor {
 public:
  Cursor(const PostingsIndex* index, const PostingsIndex::Term* term, double idf, double avg, Status* error)
      : index_(index), idf_(idf), avg_(avg), error_(error) {
    if (term == nullptr) return;
    doc_freq_ = term->doc_freq;
    first_block_ = block_ = shallow_ = term->first_block;
    end_block_ = term->first_block + term->num_blocks;
    for (uint32_t b = block_; b < end_block_; ++b) max_score_ = std::max(max_score_, Bound(b));
    Load(block_);
  }

  uint32_t doc() const { return doc_; }
  uint32_t doc_freq() const { return doc_freq_; }
  double max_score() const { return max_score_; }
  double Score(uint32_t length) const { return Bm25TermScore(idf_, tfs_[pos_], length, avg_); }

  void Next() {
    if (doc_ == kEnd) return;
    if (++pos_ < count_) {
      doc_ = docs_[pos_];
    } else {
      Load(block_ + 1);
    }
  }

  // Moves to the first document >= target.
  void Advance(uint32_t target) {
    if (doc_ >= target) return;
    if (index_->block(block_).last_doc < target) {
      uint32_t b = block_ + 1;
      while (b < end_block_ && index_->block(b).last_doc < target) ++b;
      Load(b);
      if (doc_ == kEnd) return;
    }
    while (docs_[pos_] < target) ++pos_;
    doc_ = docs_[pos_];
  }

  // The score bound of the block that would hold `target` and that block's last
  // document; 0 and kEnd when the postings end before `target`.
  double BlockBound(uint32_t target, uint32_t* last) {
    shallow_ = std::max(shallow_, block_);
    while (shallow_ < end_block_ && index_->block(shallow_).last_doc < target) ++shallow_;
    if (shallow_ >= end_block_) {
      *last = kEnd;
      return 0;
    }
    *last = index_->block(shallow_).last_doc;
    return Bound(shallow_);
  }

 private:
  double Bound(uint32_t b) const {
    const BlockInfo& info = index_->block(b);
    double best = 0;
    for (uint32_t i = 0; i < info.impact_count; ++i) {
      best = std::max(best, Bm25TermScore(idf_, info.impacts[i].tf, info.impacts[i].length, avg_));
    }
    return best;
  }

  void Load(uint32_t b) {
    block_ = b;
    pos_ = 0;
    if (b >= end_block_) {
      doc_ = kEnd;
      return;
    }
    Status st = index_->DecodeBlock(b, b == first_block_, docs_, tfs_);
    if (!st.ok()) {
      if (error_->ok()) *error_ = st;
      end_block_ = b;
      doc_ = kEnd;
      return;
    }
    count_ = index_->block(b).count;
    doc_ = docs_[0];
  }

  const PostingsIndex* index_;
  double idf_;
  double avg_;
  Status* error_;
  double max_score_ = 0;
  uint32_t doc_freq_ = 0;
  uint32_t first_block_ = 0, block_ = 0, end_block_ = 0, shallow_ = 0;
  uint32_t pos_ = 0, count_ = 0;
  uint32_t doc_ = kEnd;
  uint32_t docs_[kPostingsBlockDocs];
  uint32_t tfs_[kPostingsBlockDocs];
};

// The search state shared by both modes.
class Search {
 public:
  Search(const PostingsIndex& index, const std::vector<std::string>& terms, const FtsStats& stats,
         const RowFilter* filter, uint32_t k)
      : index_(index), filter_(filter), top_(k) {
    double avg = static_cast<double>(stats.total_tokens) / static_cast<double>(stats.documents);
    cursors_.reserve(terms.size());
    for (size_t i = 0; i < terms.size(); ++i) {
      auto df = stats.doc_freq.find(PhraseKey(static_cast<int>(i)));
      double idf = Bm25Idf(stats.documents, df == stats.doc_freq.end() ? 0 : df->second);
      cursors_.emplace_back(&index, index.Find(terms[i]), idf, avg, &error_);
    }
  }

  Result<std::vector<FtsHit>> Any();
  Result<std::vector<FtsHit>> All();

 private:
  double Threshold() const { return top_.full() ? top_.worst().score : -std::numeric_limits<double>::infinity(); }

  // Whether no document in [doc, end] can beat the threshold; `end` is the
  // last document every cursor's bound block covers.
  bool BlocksCannotCompete(uint32_t doc, uint32_t* end) {
    if (!top_.full()) return false;
    double bound = 0;
    *end = kEnd;
    for (Cursor& c : cursors_) {
      uint32_t last = kEnd;
      bound += c.BlockBound(doc, &last);
      *end = std::min(*end, last);
    }
    return bound * kSlack < Threshold() && *end != kEnd;
  }

  // Offers `doc` scored over every cursor positioned on it, in phrase order.
  void Collect(uint32_t doc) {
    uint32_t length = index_.length(doc);
    double score = 0;
    for (const Cursor& c : cursors_) {
      if (c.doc() == doc) score += c.Score(length);
    }
    top_.Offer(FtsHit{index_.row(doc), score});
  }

  bool Accept(uint32_t doc) const { return filter_ == nullptr || filter_->Accept(index_.row(doc)); }

  Result<std::vector<FtsHit>> Finish() {
    if (!error_.ok()) return error_;
    return top_.Take();
  }

  const PostingsIndex& index_;
  const RowFilter* filter_;
  TopK top_;
  Status error_;
  std::vector<Cursor> cursors_;
};

Result<std::vector<FtsHit>> Search::Any() {
  const size_t n = cursors_.size();
  std::vector<size_t> order(n);  // by max score, ascending
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return cursors_[a].max_score() < cursors_[b].max_score(); });
  std::vector<double> prefix(n);  // prefix[j]: the bound of the j+1 weakest terms together
  for (size_t j = 0; j < n; ++j) prefix[j] = cursors_[order[j]].max_score() + (j ? prefix[j - 1] : 0);
  size_t essential = 0;  // order[0, essential) cannot make a hit on their own: only probed
  for (;;) {
    while (essential < n && prefix[essential] * kSlack < Threshold()) ++essential;
    if (essential == n) break;
    uint32_t doc = kEnd;
    for (size_t j = essential; j < n; ++j) doc = std::min(doc, cursors_[order[j]].doc());
    if (doc == kEnd) break;
    uint32_t end = kEnd;
    if (BlocksCannotCompete(doc, &end)) {
      for (size_t j = essential; j < n; ++j) cursors_[order[j]].Advance(end + 1);
      continue;
    }
    if (Accept(doc)) {
      uint32_t length = index_.length(doc);
      double partial = 0;
      for (size_t j = essential; j < n; ++j) {
        if (cursors_[order[j]].doc() == doc) partial += cursors_[order[j]].Score(length);
      }
      bool competitive = true;
      for (size_t j = essential; j-- > 0;) {
        if ((partial + prefix[j]) * kSlack < Threshold()) {
          competitive = false;
          break;
        }
        Cursor& c = cursors_[order[j]];
        c.Advance(doc);
        if (c.doc() == doc) partial += c.Score(length);
      }
      if (competitive) Collect(doc);
    }
    for (size_t j = essential; j < n; ++j) {
      if (cursors_[order[j]].doc() == doc) cursors_[order[j]].Next();
    }
  }
  return Finish();
}

Result<std::vector<FtsHit>> Search::All() {
  std::vector<Cursor*> by_rarity;
  for (Cursor& c : cursors_) by_rarity.push_back(&c);
  std::sort(by_rarity.begin(), by_rarity.end(),
            [](const Cursor* a, const Cursor* b) { return a->doc_freq() < b->doc_freq(); });
  uint32_t doc = by_rarity.empty() ? kEnd : by_rarity.front()->doc();
  while (doc != kEnd) {
    bool aligned = true;
    for (Cursor* c : by_rarity) {
      c->Advance(doc);
      if (c->doc() != doc) {
        doc = c->doc();
        aligned = false;
        break;
      }
    }
    if (!aligned) continue;
    uint32_t end = kEnd;
    if (BlocksCannotCompete(doc, &end)) {
      doc = end + 1;
      continue;
    }
    if (Accept(doc)) Collect(doc);
    doc = doc + 1 == kEnd ? kEnd : doc + 1;
  }
  return Finish();
}

}  // namespace

std::optional<PlainQuery> ParsePlainQuery(std::string_view query) {
  PlainQuery plain;
  bool saw_and = false, saw_or = false, expect_word = true;
  size_t i = 0;
  while (i < query.size()) {
    if (IsQuerySpace(query[i])) {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < query.size() && IsBarewordByte(query[i])) ++i;
    if (i == start || (i < query.size() && !IsQuerySpace(query[i]))) return std::nullopt;
    std::string_view word = query.substr(start, i - start);
    if (word == "NOT" || word == "NEAR") return std::nullopt;
    if (word == "AND" || word == "OR") {
      if (expect_word) return std::nullopt;  // an operator first or after another
      (word == "OR" ? saw_or : saw_and) = true;
      expect_word = true;
      continue;
    }
    if (!expect_word) saw_and = true;  // two words side by side: an implicit AND
    plain.words.emplace_back(word);
    expect_word = false;
  }
  if (plain.words.empty() || expect_word || (saw_or && saw_and)) return std::nullopt;
  plain.any = saw_or;
  return plain;
}

FtsStats PostingsStats(const PostingsIndex& index, const std::vector<std::string>& terms) {
  FtsStats stats;
  stats.documents = index.documents();
  stats.total_tokens = index.total_tokens();
  for (size_t i = 0; i < terms.size(); ++i) {
    const PostingsIndex::Term* term = index.Find(terms[i]);
    stats.doc_freq[PhraseKey(static_cast<int>(i))] = term ? term->doc_freq : 0;
  }
  return stats;
}

Result<std::vector<FtsHit>> PostingsTopK(const PostingsIndex& index, const std::vector<std::string>& terms, bool any,
                                         const FtsStats& table_stats, const RowFilter* filter, uint32_t k) {
  if (k == 0 || terms.empty()) return std::vector<FtsHit>{};
  if (table_stats.documents == 0) return Status::InvalidArgument("table statistics cover no documents");
  Search search(index, terms, table_stats, filter, k);
  return any ? search.Any() : search.All();
}

}  // namespace vigil::index::fts_internal
