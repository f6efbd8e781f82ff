// Native postings of a full-text segment (`postings.bin` beside `fts.db`):
// per term, the documents containing it and the term's frequency in each, in
// blocks of kPostingsBlockDocs documents. Each block records a few (tf,
// document length) pairs that bound every document of the block from above,
// so a top-k search computes a block's best possible BM25 score for any idf
// and average length and skips blocks that cannot enter the top k.
//
// Layout (little-endian): a header, row addresses (u64 per document, the
// document's number is its position), document lengths (u32 each), the
// dictionary (terms in strictly ascending byte order: u16 length, bytes, u32
// document frequency, u32 block count), the block table (BlockInfo each), and
// the block data (document gaps then tf - 1, LEB128 varints).
//
// Thread safety: EncodePostings is a pure function; PostingsIndex is
// immutable after Parse and safe to share.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/storage/column.h"

namespace vigil::index::fts_internal {

inline constexpr char kPostingsFileName[] = "postings.bin";
inline constexpr uint32_t kPostingsBlockDocs = 128;
inline constexpr uint32_t kMaxBlockImpacts = 4;
inline constexpr size_t kMaxTermBytes = 32768;  // FTS5's longest stored token

// A (tf, document length) pair: no document of its block has a higher tf and a lower length.
struct Impact {
  uint32_t tf = 0;
  uint32_t length = 0;
};

struct BlockInfo {
  uint32_t last_doc = 0;
  uint32_t count = 0;   // documents in the block, 1..kPostingsBlockDocs
  uint64_t offset = 0;  // into the block data
  uint32_t size = 0;    // bytes
  uint32_t impact_count = 0;
  Impact impacts[kMaxBlockImpacts];
};

// One term's postings: documents ascending, each with the term's frequency.
struct TermPostings {
  std::string key;
  std::vector<uint32_t> docs;
  std::vector<uint32_t> tfs;
};

// The bytes of a postings file over documents with row addresses `rows` and
// token counts `lengths` (their sum is `total_tokens`); `terms` in any order.
std::string EncodePostings(const std::vector<RowAddress>& rows, const std::vector<uint32_t>& lengths,
                           uint64_t total_tokens, std::vector<const TermPostings*> terms);

// A parsed, validated `postings.bin`.
class PostingsIndex {
 public:
  struct Term {
    std::string_view key;
    uint32_t doc_freq = 0;
    uint32_t first_block = 0;
    uint32_t num_blocks = 0;
  };

  // Corruption (naming `what`) unless `bytes` holds a well-formed postings file.
  static Result<std::unique_ptr<PostingsIndex>> Parse(std::string bytes, const std::string& what);

  uint64_t documents() const { return documents_; }
  uint64_t total_tokens() const { return total_tokens_; }
  // Null when no document contains `key`.
  const Term* Find(std::string_view key) const;
  RowAddress row(uint32_t doc) const;
  uint32_t length(uint32_t doc) const;
  const BlockInfo& block(uint32_t i) const { return blocks_[i]; }
  // Decodes block `i` (the first of its term or not) into `docs` and `tfs`
  // (block(i).count each); Corruption when malformed.
  Status DecodeBlock(uint32_t i, bool first_of_term, uint32_t* docs, uint32_t* tfs) const;
  size_t MemoryBytes() const;
  const std::string& what() const { return what_; }

 private:
  PostingsIndex() = default;
  Status ParseAll();
  Status ParseDictionary(std::string_view bytes, uint64_t terms);
  Status ParseBlocks(std::string_view bytes, uint64_t count);
  Status Corrupt(const std::string& why) const;

  std::string bytes_;
  std::string what_;
  uint64_t documents_ = 0;
  uint64_t total_tokens_ = 0;
  const char* rows_ = nullptr;
  const char* lengths_ = nullptr;
  std::string_view data_;
  std::vector<Term> terms_;
  std::vector<BlockInfo> blocks_;
};

}  // namespace vigil::index::fts_internal
