// Deletion file format: "VGLDEL01", the bitmap in the portable roaring format
// (github.com/RoaringBitmap/RoaringFormatSpec), then a u64 XXH3 of everything
// before it. Decode verifies the checksum, then walks the roaring layout itself
// (sizes, sorted keys and values, run bounds, cardinalities) before CRoaring
// sees the bytes, so even a forged checksum cannot reach an unchecked parser.
#include "vigil/storage/deletion.h"

#include <bit>
#include <cstring>

#include "storage/column_codec.h"
#include "vigil/common/checksum.h"

namespace vigil {

namespace {

constexpr std::string_view kDeletionMagic = "VGLDEL01";
constexpr size_t kChecksumSize = 8;
constexpr uint32_t kCookieNoRuns = 12346;
constexpr uint32_t kCookieWithRuns = 12347;
constexpr uint32_t kNoOffsetThreshold = 4;
constexpr uint32_t kMaxArrayCardinality = 4096;
constexpr size_t kBitsetBytes = 8192;

Status Corrupt(const std::string& what) { return Status::Corruption("deletion file: " + what); }

Status CheckRuns(codec::ByteReader* r, uint32_t card, const std::string& what) {
  uint16_t n_runs = 0;
  std::string_view runs;
  if (!r->U16(&n_runs) || !r->Bytes(size_t{n_runs} * 4, &runs)) return Corrupt(what + " is truncated");
  int64_t prev_end = -1;
  uint64_t total = 0;
  for (size_t i = 0; i < n_runs; ++i) {
    uint16_t start = 0, length = 0;
    std::memcpy(&start, runs.data() + i * 4, 2);
    std::memcpy(&length, runs.data() + i * 4 + 2, 2);
    if (start <= prev_end || uint32_t{start} + length > 0xFFFF)
      return Corrupt(what + " has a bad run " + std::to_string(i));
    prev_end = start + length;
    total += uint64_t{length} + 1;
  }
  if (total != card)
    return Corrupt(what + " runs hold " + std::to_string(total) + " values; its header says " + std::to_string(card));
  return Status::OK();
}

Status CheckBitset(codec::ByteReader* r, uint32_t card, const std::string& what) {
  std::string_view words;
  if (!r->Bytes(kBitsetBytes, &words)) return Corrupt(what + " is truncated");
  uint64_t total = 0;
  for (size_t i = 0; i < kBitsetBytes; i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, words.data() + i, 8);
    total += std::popcount(w);
  }
  if (total != card)
    return Corrupt(what + " has " + std::to_string(total) + " bits set; its header says " + std::to_string(card));
  return Status::OK();
}

Status CheckArray(codec::ByteReader* r, uint32_t card, const std::string& what) {
  std::string_view values;
  if (!r->Bytes(size_t{card} * 2, &values)) return Corrupt(what + " is truncated");
  int32_t prev = -1;
  for (size_t i = 0; i < card; ++i) {
    uint16_t v = 0;
    std::memcpy(&v, values.data() + i * 2, 2);
    if (v <= prev) return Corrupt(what + " values are not strictly increasing at " + std::to_string(i));
    prev = v;
  }
  return Status::OK();
}

struct RoaringHeader {
  uint32_t containers = 0;
  bool has_runs = false;
  std::string_view run_flags;  // one bit per container when has_runs
  std::string_view keys;       // per container: u16 key, u16 cardinality - 1
  std::string_view offsets;    // per container: u32 byte offset; may be absent
};

Result<RoaringHeader> ParseRoaringHeader(codec::ByteReader* r) {
  RoaringHeader h;
  uint32_t cookie = 0;
  if (!r->U32(&cookie)) return Corrupt("roaring header is truncated");
  if (cookie == kCookieNoRuns) {
    if (!r->U32(&h.containers)) return Corrupt("roaring header is truncated");
  } else if ((cookie & 0xFFFF) == kCookieWithRuns) {
    h.containers = (cookie >> 16) + 1;
    h.has_runs = true;
    if (!r->Bytes((h.containers + 7) / 8, &h.run_flags)) return Corrupt("roaring run flags are truncated");
  } else {
    return Corrupt("unknown roaring cookie " + std::to_string(cookie));
  }
  if (h.containers > 65536) return Corrupt(std::to_string(h.containers) + " roaring containers exceed 65536");
  if (!r->Bytes(size_t{h.containers} * 4, &h.keys)) return Corrupt("roaring container headers are truncated");
  const bool has_offsets = !h.has_runs || h.containers >= kNoOffsetThreshold;
  if (has_offsets && !r->Bytes(size_t{h.containers} * 4, &h.offsets)) return Corrupt("roaring offsets are truncated");
  return h;
}

// Validates the portable roaring layout of `bytes` completely (every byte used).
Status CheckRoaringLayout(std::string_view bytes) {
  codec::ByteReader r(bytes);
  VIGIL_ASSIGN_OR_RETURN(RoaringHeader h, ParseRoaringHeader(&r));
  int32_t prev_key = -1;
  for (size_t i = 0; i < h.containers; ++i) {
    uint16_t key = 0, card_minus_one = 0;
    uint32_t offset = 0;
    std::memcpy(&key, h.keys.data() + i * 4, 2);
    std::memcpy(&card_minus_one, h.keys.data() + i * 4 + 2, 2);
    const std::string what = "roaring container " + std::to_string(i);
    if (key <= prev_key) return Corrupt(what + " key " + std::to_string(key) + " is out of order");
    prev_key = key;
    if (!h.offsets.empty()) std::memcpy(&offset, h.offsets.data() + i * 4, 4);
    if (!h.offsets.empty() && offset != r.position())
      return Corrupt(what + " offset " + std::to_string(offset) + " is wrong");
    const uint32_t card = uint32_t{card_minus_one} + 1;
    const bool is_run = h.has_runs && ((static_cast<uint8_t>(h.run_flags[i / 8]) >> (i % 8)) & 1);
    if (is_run) {
      VIGIL_RETURN_IF_ERROR(CheckRuns(&r, card, what));
    } else if (card > kMaxArrayCardinality) {
      VIGIL_RETURN_IF_ERROR(CheckBitset(&r, card, what));
    } else {
      VIGIL_RETURN_IF_ERROR(CheckArray(&r, card, what));
    }
  }
  if (r.remaining() != 0) return Corrupt(std::to_string(r.remaining()) + " bytes follow the roaring bitmap");
  return Status::OK();
}

}  // namespace

std::string DeletionVector::Encode() const {
  Roaring bits = bits_;
  bits.runOptimize();
  std::string out(kDeletionMagic);
  const size_t payload = roaring_bitmap_portable_size_in_bytes(&bits.roaring);
  out.resize(kDeletionMagic.size() + payload);
  size_t written = roaring_bitmap_portable_serialize(&bits.roaring, out.data() + kDeletionMagic.size());
  VIGIL_CHECK(written == payload);
  codec::PutU64(&out, Checksum64(out));
  return out;
}

Result<DeletionVector> DeletionVector::Decode(std::string_view bytes) {
  if (bytes.size() < kDeletionMagic.size() + kChecksumSize) {
    return Corrupt("file is " + std::to_string(bytes.size()) + " bytes; at least " +
                   std::to_string(kDeletionMagic.size() + kChecksumSize) + " expected");
  }
  if (bytes.substr(0, kDeletionMagic.size()) != kDeletionMagic) return Corrupt("bad magic");
  const std::string_view covered = bytes.substr(0, bytes.size() - kChecksumSize);
  uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + covered.size(), kChecksumSize);
  if (Checksum64(covered) != stored) return Corrupt("checksum mismatch");
  const std::string_view payload = covered.substr(kDeletionMagic.size());
  VIGIL_RETURN_IF_ERROR(CheckRoaringLayout(payload));
  if (roaring_bitmap_portable_deserialize_size(payload.data(), payload.size()) != payload.size()) {
    return Corrupt("roaring bitmap size disagrees with the file");
  }
  roaring_bitmap_t* raw = roaring_bitmap_portable_deserialize_safe(payload.data(), payload.size());
  if (raw == nullptr) return Corrupt("roaring bitmap does not decode");
  DeletionVector dv;
  dv.bits_ = Roaring(raw);
  return dv;
}

}  // namespace vigil
