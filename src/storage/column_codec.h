// Private to the storage layer: little-endian byte helpers and the encoding of
// one column block inside a fragment file.
//
// Decoded block layout, in order:
//   validity   rows bytes (1 = valid), present only when null_count > 0
//   offsets    STRING only: rows + 1 u64 offsets into the bytes, the first 0
//   values     STRING bytes, or rows * FixedWidth() fixed-width values
// A stored block is the decoded bytes, raw or as one zstd frame.
// Pure functions and value types; thread-safe.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "vigil/common/status.h"
#include "vigil/storage/column.h"
#include "vigil/storage/schema.h"

namespace vigil::codec {

static_assert(std::endian::native == std::endian::little, "on-disk formats assume little-endian");

enum class BlockEncoding : uint8_t { kRaw = 0, kZstd = 1 };

inline void PutU8(std::string* out, uint8_t v) { out->push_back(static_cast<char>(v)); }
inline void PutU16(std::string* out, uint16_t v) { out->append(reinterpret_cast<const char*>(&v), 2); }
inline void PutU32(std::string* out, uint32_t v) { out->append(reinterpret_cast<const char*>(&v), 4); }
inline void PutU64(std::string* out, uint64_t v) { out->append(reinterpret_cast<const char*>(&v), 8); }

// Reads fixed-width little-endian values from a buffer without ever passing its end.
class ByteReader {
 public:
  explicit ByteReader(std::string_view data) : data_(data) {}

  size_t remaining() const { return data_.size() - pos_; }
  size_t position() const { return pos_; }
  // Each returns false (consuming nothing) when too few bytes remain.
  bool U8(uint8_t* v) { return Fixed(v); }
  bool U16(uint16_t* v) { return Fixed(v); }
  bool U32(uint32_t* v) { return Fixed(v); }
  bool U64(uint64_t* v) { return Fixed(v); }
  bool I32(int32_t* v) { return Fixed(v); }
  bool Bytes(size_t n, std::string_view* out) {
    if (n > remaining()) return false;
    *out = data_.substr(pos_, n);
    pos_ += n;
    return true;
  }

 private:
  template <typename T>
  bool Fixed(T* v) {
    if (sizeof(T) > remaining()) return false;
    std::memcpy(v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }

  std::string_view data_;
  size_t pos_ = 0;
};

// Rows of `column` marked null.
uint32_t CountNulls(const Column& column);

// The decoded bytes of `column` (layout above); `null_count` from CountNulls.
std::string EncodeBlock(const Column& column, uint32_t null_count);

// Chooses the stored form of `decoded`: zstd at `level` when it saves at least
// 10%, else raw; VECTOR blocks are always raw. Fills `stored` when compressed
// (raw blocks are written from `decoded` itself). IOError only on a zstd failure.
Result<BlockEncoding> CompressBlock(std::string_view decoded, const DataType& type, int level,
                                    std::string* stored);

// The decoded bytes of a stored block: `stored` itself when raw, else its zstd
// frame inflated to exactly `decoded_size` bytes. Corruption on any mismatch.
Result<std::string> DecompressBlock(std::string stored, BlockEncoding encoding, uint64_t decoded_size);

// Rebuilds a column of `rows` rows from decoded bytes, validating every size,
// offset and validity byte. Raw fixed-width blocks without nulls move the buffer
// into the column without touching the values. Corruption names the defect.
Result<Column> DecodeBlock(std::string decoded, const DataType& type, uint32_t rows, uint32_t null_count);

// The exact decoded size of a fixed-width block, or the minimum for STRING.
uint64_t MinDecodedSize(const DataType& type, uint32_t rows, uint32_t null_count);

// OK when `type` is one the storage formats can hold (known id, valid decimal
// and vector parameters); Corruption naming `what` otherwise.
Status ValidateStoredType(const DataType& type, std::string_view what);

}  // namespace vigil::codec
