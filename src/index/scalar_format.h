// Private to the index layer: what the BTREE and BITMAP segments share —
// key kinds and their on-disk encoding, a bounds-checked byte reader, the
// common file footer, predicate checks, and the sorted (key, row address)
// input both builders start from.
//
// Common file shape: magic (8 bytes), body, metadata block, then a 40-byte
// footer: u64 metadata offset, u64 metadata size, u64 row count, u64 XXH3-64
// of the metadata block, magic. All integers little-endian.
// Pure functions and value types; thread-safe.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/byte_io.h"
#include "vigil/index/scalar.h"

namespace vigil::index::internal {

// How the values of a column are held as keys: bool and every integer-like
// type (INT*, DATE, TIMESTAMP, DECIMAL unscaled) as int64, FLOAT/DOUBLE as
// double bits (canonical: -0 stored as +0, every NaN as one quiet NaN), STRING as bytes.
enum class KeyKind : uint8_t { kBool = 1, kInt = 2, kFloat = 3, kString = 4 };
KeyKind KeyKindOf(const DataType& type);

// Whether `v` is a predicate value that can be compared with values of `type`.
bool Comparable(const Value& v, const DataType& type);
// InvalidArgument when `p` has the wrong number of values for its op or a
// non-null value that cannot be compared with `type`.
Status ValidatePredicateShape(const ScalarPredicate& p, const DataType& type);

// Fixed key of a non-string value as stored (int64 bits or canonical double bits).
int64_t FixedKeyOf(const Value& v, KeyKind kind);
// Whether a stored fixed key is valid for `kind` (bools 0/1, doubles canonical).
bool ValidFixedKey(int64_t key, KeyKind kind);
// The Value of a stored fixed key.
Value FixedKeyValue(int64_t key, KeyKind kind);
// Order-preserving int64 for canonical double bits (NaN last), and back.
int64_t FloatSortKey(int64_t bits);
int64_t FloatFromSortKey(int64_t sort_key);

using ::vigil::ByteReader;
using ::vigil::PutU16;
using ::vigil::PutU32;
using ::vigil::PutU64;
using ::vigil::PutU8;

// A key in a page directory or dictionary: 8 bytes (fixed kinds) or u32 length + bytes.
void PutKey(std::string* out, const Value& key, KeyKind kind);
// False when truncated, too long or of the wrong kind.
bool ReadKey(ByteReader* r, KeyKind kind, Value* key);

constexpr size_t kFooterSize = 40;
struct Footer {
  uint64_t meta_offset = 0;
  uint64_t meta_size = 0;
  uint64_t num_rows = 0;
  uint64_t meta_checksum = 0;
};
std::string EncodeFooter(const Footer& f, std::string_view magic);
// Reads and checks the magic, footer and metadata block of a file (size
// bounds, checksum). Returns the verified metadata bytes. Corruption names `what`.
Result<std::string> ReadMetadata(const RandomAccessFile& file, std::string_view magic, std::string_view what,
                                 Footer* footer);

// The live rows of a build, sorted by (key, row address).
struct SortedKeys {
  KeyKind kind = KeyKind::kInt;
  std::vector<std::pair<int64_t, RowAddress>> fixed;  // fixed kinds, keys as stored
  std::string arena;                                  // kString: every value's bytes
  std::vector<uint64_t> offsets;                      // kString: value i is arena[offsets[i], offsets[i+1])
  std::vector<RowAddress> rows;                       // kString: row of value i
  std::vector<uint32_t> order;                        // kString: value indexes in sorted order

  size_t size() const { return kind == KeyKind::kString ? order.size() : fixed.size(); }
  RowAddress RowAt(size_t i) const { return kind == KeyKind::kString ? rows[order[i]] : fixed[i].second; }
  std::string_view StringAt(size_t i) const {
    uint32_t v = order[i];
    return std::string_view(arena).substr(offsets[v], offsets[v + 1] - offsets[v]);
  }
  Value ValueAt(size_t i) const;
  bool SameKey(size_t i, size_t j) const;
};

// Checks `field` against `type_ok` and the dataset (InvalidArgument, before any
// file is written), then reads the live rows of `fragments` and sorts them.
Result<SortedKeys> CollectSortedKeys(const Dataset& dataset, const Field& field, const std::vector<uint32_t>& fragments,
                                     bool (*type_ok)(const DataType&), std::string_view index_type,
                                     const ProgressFn& progress);

// Whether row address `row` lies in one of the sorted `covered` fragments.
bool CoveredRow(const std::vector<uint32_t>& covered, RowAddress row);

// BTREE build with explicit page limits (tests use tiny pages).
Status BuildBtreeSegmentPaged(const Dataset& dataset, const Field& field, const std::vector<uint32_t>& fragments,
                              SegmentWriter* writer, const ProgressFn& progress, size_t max_page_entries,
                              size_t max_page_bytes);

}  // namespace vigil::index::internal
