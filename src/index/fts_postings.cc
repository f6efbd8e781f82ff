// The `postings.bin` format of full-text segments; see fts_postings.h.
#include "index/fts_postings.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "vigil/common/byte_io.h"

namespace vigil::index::fts_internal {

namespace {

constexpr char kMagic[] = "VGFTSPS1";
constexpr uint32_t kFormat = 1;
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8 * 5;
constexpr size_t kBlockInfoBytes = 4 + 4 + 8 + 4 + 4 + kMaxBlockImpacts * 8;

// Writes `v` as a LEB128 varint at `p` (at most 5 bytes); returns the end.
char* WriteVarint(char* p, uint32_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

// False when the varint runs past `end` or does not fit 32 bits.
bool GetVarint(const char** p, const char* end, uint32_t* v) {
  uint32_t result = 0;
  for (int shift = 0; shift <= 28 && *p < end; shift += 7) {
    auto byte = static_cast<uint8_t>(**p);
    ++*p;
    if (shift == 28 && byte > 0x0f) return false;
    result |= static_cast<uint32_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

// The Pareto frontier of (tf, length) over the block's documents: tf
// descending, length strictly descending, folded to kMaxBlockImpacts pairs
// that still bound every document. Frequencies from kExactTfs up share one
// pair (the largest tf, the shortest length), a looser but valid bound.
uint32_t BlockImpacts(const uint32_t* docs, const uint32_t* tfs, size_t count, const std::vector<uint32_t>& lengths,
                      Impact* out) {
  constexpr uint32_t kExactTfs = 16;
  std::array<uint32_t, kExactTfs> shortest;
  shortest.fill(UINT32_MAX);
  Impact high{0, UINT32_MAX};
  for (size_t i = 0; i < count; ++i) {
    uint32_t length = lengths[docs[i]];
    if (tfs[i] < kExactTfs) {
      shortest[tfs[i]] = std::min(shortest[tfs[i]], length);
    } else {
      high = {std::max(high.tf, tfs[i]), std::min(high.length, length)};
    }
  }
  uint32_t n = 0;
  auto offer = [&](Impact p) {
    if (n > 0 && p.length >= out[n - 1].length) return;  // dominated by a pair already kept
    if (n == kMaxBlockImpacts) {
      out[n - 1].length = p.length;  // the last pair now bounds this one too
    } else {
      out[n++] = p;
    }
  };
  if (high.tf > 0) offer(high);
  for (uint32_t tf = kExactTfs - 1; tf >= 1; --tf) {
    if (shortest[tf] != UINT32_MAX) offer({tf, shortest[tf]});
  }
  return n;
}

void PutBlockInfo(std::string* out, const BlockInfo& b) {
  PutU32(out, b.last_doc);
  PutU32(out, b.count);
  PutU64(out, b.offset);
  PutU32(out, b.size);
  PutU32(out, b.impact_count);
  for (const Impact& i : b.impacts) {
    PutU32(out, i.tf);
    PutU32(out, i.length);
  }
}

}  // namespace

std::string EncodePostings(const std::vector<RowAddress>& rows, const std::vector<uint32_t>& lengths,
                           uint64_t total_tokens, std::vector<const TermPostings*> terms) {
  std::sort(terms.begin(), terms.end(), [](const TermPostings* a, const TermPostings* b) { return a->key < b->key; });
  size_t postings = 0;
  for (const TermPostings* t : terms) postings += t->docs.size();
  std::string dictionary, table, data;
  data.reserve(postings * 3);
  uint64_t blocks = 0;
  for (const TermPostings* term : terms) {
    const TermPostings& p = *term;
    auto num_blocks = static_cast<uint32_t>((p.docs.size() + kPostingsBlockDocs - 1) / kPostingsBlockDocs);
    PutU16(&dictionary, static_cast<uint16_t>(p.key.size()));
    dictionary += p.key;
    PutU32(&dictionary, static_cast<uint32_t>(p.docs.size()));
    PutU32(&dictionary, num_blocks);
    uint32_t base = 0;
    for (size_t begin = 0; begin < p.docs.size(); begin += kPostingsBlockDocs) {
      size_t end = std::min(p.docs.size(), begin + kPostingsBlockDocs);
      BlockInfo info;
      info.last_doc = p.docs[end - 1];
      info.count = static_cast<uint32_t>(end - begin);
      info.offset = data.size();
      data.resize(info.offset + (end - begin) * 10);
      char* out = data.data() + info.offset;
      for (size_t i = begin; i < end; ++i) {
        out = WriteVarint(out, p.docs[i] - base);
        base = p.docs[i] + 1;
      }
      for (size_t i = begin; i < end; ++i) out = WriteVarint(out, p.tfs[i] - 1);
      data.resize(static_cast<size_t>(out - data.data()));
      info.size = static_cast<uint32_t>(data.size() - info.offset);
      info.impact_count = BlockImpacts(&p.docs[begin], &p.tfs[begin], end - begin, lengths, info.impacts);
      PutBlockInfo(&table, info);
      ++blocks;
    }
  }
  std::string out(kMagic, 8);
  PutU32(&out, kFormat);
  PutU32(&out, kPostingsBlockDocs);
  PutU64(&out, rows.size());
  PutU64(&out, total_tokens);
  PutU64(&out, terms.size());
  PutU64(&out, blocks);
  PutU64(&out, data.size());
  for (RowAddress row : rows) PutU64(&out, row);
  for (uint32_t length : lengths) PutU32(&out, length);
  out += dictionary;
  out += table;
  out += data;
  return out;
}

Status PostingsIndex::Corrupt(const std::string& why) const { return Status::Corruption(what_ + ": " + why); }

Result<std::unique_ptr<PostingsIndex>> PostingsIndex::Parse(std::string bytes, const std::string& what) {
  std::unique_ptr<PostingsIndex> index(new PostingsIndex());
  index->bytes_ = std::move(bytes);
  index->what_ = what;
  VIGIL_RETURN_IF_ERROR(index->ParseAll());
  return index;
}

Status PostingsIndex::ParseAll() {
  ByteReader in(bytes_);
  std::string_view magic;
  uint32_t format = 0, block_docs = 0;
  uint64_t terms = 0, blocks = 0, data_bytes = 0;
  if (!in.Bytes(8, &magic) || !in.U32(&format) || !in.U32(&block_docs) || !in.U64(&documents_) ||
      !in.U64(&total_tokens_) || !in.U64(&terms) || !in.U64(&blocks) || !in.U64(&data_bytes)) {
    return Corrupt("truncated header");
  }
  if (magic != std::string_view(kMagic, 8)) return Corrupt("bad magic");
  if (format != kFormat) return Corrupt("unknown postings format " + std::to_string(format));
  if (block_docs != kPostingsBlockDocs) return Corrupt("unexpected block size " + std::to_string(block_docs));
  if (documents_ > UINT32_MAX || documents_ > in.remaining() / 12) return Corrupt("document count exceeds the file");
  std::string_view rows, lengths;
  VIGIL_CHECK(in.Bytes(documents_ * 8, &rows) && in.Bytes(documents_ * 4, &lengths));
  rows_ = rows.data();
  lengths_ = lengths.data();
  uint64_t sum = 0;
  for (uint64_t d = 0; d < documents_; ++d) sum += length(static_cast<uint32_t>(d));
  if (sum != total_tokens_) return Corrupt("document lengths do not add up to the token total");
  if (data_bytes > in.remaining()) return Corrupt("block data exceeds the file");
  size_t tail = in.remaining() - data_bytes;
  std::string_view head;
  VIGIL_CHECK(in.Bytes(tail, &head));
  VIGIL_CHECK(in.Bytes(data_bytes, &data_));
  if (blocks > head.size() / kBlockInfoBytes) return Corrupt("block table exceeds the file");
  size_t table_bytes = blocks * kBlockInfoBytes;
  VIGIL_RETURN_IF_ERROR(ParseDictionary(head.substr(0, head.size() - table_bytes), terms));
  return ParseBlocks(head.substr(head.size() - table_bytes), blocks);
}

Status PostingsIndex::ParseDictionary(std::string_view bytes, uint64_t terms) {
  if (terms > bytes.size() / 10) return Corrupt("term count exceeds the dictionary");
  ByteReader in(bytes);
  terms_.reserve(terms);
  uint64_t next_block = 0;
  for (uint64_t t = 0; t < terms; ++t) {
    uint16_t key_bytes = 0;
    Term term;
    if (!in.U16(&key_bytes) || !in.Bytes(key_bytes, &term.key) || !in.U32(&term.doc_freq) ||
        !in.U32(&term.num_blocks)) {
      return Corrupt("truncated dictionary");
    }
    if (!terms_.empty() && !(terms_.back().key < term.key)) return Corrupt("dictionary terms out of order");
    if (term.doc_freq == 0 || term.doc_freq > documents_ ||
        term.num_blocks != (term.doc_freq + kPostingsBlockDocs - 1) / kPostingsBlockDocs) {
      return Corrupt("term '" + std::string(term.key.substr(0, 64)) + "' has inconsistent counts");
    }
    term.first_block = static_cast<uint32_t>(next_block);
    next_block += term.num_blocks;
    if (next_block > UINT32_MAX) return Corrupt("too many blocks");
    terms_.push_back(term);
  }
  if (in.remaining() != 0) return Corrupt("trailing bytes after the dictionary");
  return Status::OK();
}

Status PostingsIndex::ParseBlocks(std::string_view bytes, uint64_t count) {
  ByteReader in(bytes);
  blocks_.resize(count);
  for (BlockInfo& b : blocks_) {
    bool ok =
        in.U32(&b.last_doc) && in.U32(&b.count) && in.U64(&b.offset) && in.U32(&b.size) && in.U32(&b.impact_count);
    for (Impact& i : b.impacts) ok = ok && in.U32(&i.tf) && in.U32(&i.length);
    VIGIL_CHECK(ok);
    if (b.count == 0 || b.count > kPostingsBlockDocs || b.last_doc >= documents_ || b.impact_count == 0 ||
        b.impact_count > kMaxBlockImpacts || b.offset > data_.size() || b.size > data_.size() - b.offset) {
      return Corrupt("malformed block table");
    }
  }
  uint64_t next_block = 0;
  for (const Term& t : terms_) {
    uint64_t docs = 0;
    for (uint32_t i = 0; i < t.num_blocks; ++i) {
      const BlockInfo& b = blocks_[t.first_block + i];
      if (i > 0 && b.last_doc <= blocks_[t.first_block + i - 1].last_doc) return Corrupt("blocks out of order");
      docs += b.count;
    }
    if (docs != t.doc_freq) return Corrupt("term '" + std::string(t.key.substr(0, 64)) + "' block counts differ");
    next_block += t.num_blocks;
  }
  if (next_block != count) return Corrupt("dictionary and block table disagree");
  return Status::OK();
}

const PostingsIndex::Term* PostingsIndex::Find(std::string_view key) const {
  auto it =
      std::lower_bound(terms_.begin(), terms_.end(), key, [](const Term& t, std::string_view k) { return t.key < k; });
  return it != terms_.end() && it->key == key ? &*it : nullptr;
}

RowAddress PostingsIndex::row(uint32_t doc) const {
  RowAddress r;
  std::memcpy(&r, rows_ + static_cast<size_t>(doc) * 8, 8);
  return r;
}

uint32_t PostingsIndex::length(uint32_t doc) const {
  uint32_t n;
  std::memcpy(&n, lengths_ + static_cast<size_t>(doc) * 4, 4);
  return n;
}

Status PostingsIndex::DecodeBlock(uint32_t i, bool first_of_term, uint32_t* docs, uint32_t* tfs) const {
  VIGIL_CHECK(i < blocks_.size() && (first_of_term || i > 0));
  const BlockInfo& b = blocks_[i];
  const char* p = data_.data() + b.offset;
  const char* end = p + b.size;
  // A term's first block counts gaps from document 0, a later one from after the previous block.
  uint64_t base = first_of_term ? 0 : blocks_[i - 1].last_doc + 1ULL;
  for (uint32_t j = 0; j < b.count; ++j) {
    uint32_t gap = 0;
    if (!GetVarint(&p, end, &gap) || base + gap >= documents_) return Corrupt("malformed posting block");
    docs[j] = static_cast<uint32_t>(base + gap);
    base = docs[j] + 1ULL;
  }
  for (uint32_t j = 0; j < b.count; ++j) {
    if (!GetVarint(&p, end, &tfs[j]) || tfs[j] == UINT32_MAX) return Corrupt("malformed posting block");
    ++tfs[j];
  }
  if (p != end || docs[b.count - 1] != b.last_doc) return Corrupt("malformed posting block");
  return Status::OK();
}

size_t PostingsIndex::MemoryBytes() const {
  return sizeof(*this) + bytes_.capacity() + terms_.capacity() * sizeof(Term) + blocks_.capacity() * sizeof(BlockInfo);
}

}  // namespace vigil::index::fts_internal
