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

#include "vigil/common/byte_io.h"
#include "vigil/common/status.h"
#include "vigil/storage/column.h"
#include "vigil/storage/schema.h"

namespace vigil::codec {

enum class BlockEncoding : uint8_t { kRaw = 0, kZstd = 1 };

using ::vigil::ByteReader;
using ::vigil::PutU16;
using ::vigil::PutU32;
using ::vigil::PutU64;
using ::vigil::PutU8;

// Rows of `column` marked null.
uint32_t CountNulls(const Column& column);

// The decoded bytes of `column` (layout above); `null_count` from CountNulls.
std::string EncodeBlock(const Column& column, uint32_t null_count);

// Chooses the stored form of `decoded`: zstd at `level` when it saves at least
// 10%, else raw; VECTOR blocks are always raw. Fills `stored` when compressed
// (raw blocks are written from `decoded` itself). IOError only on a zstd failure.
Result<BlockEncoding> CompressBlock(std::string_view decoded, const DataType& type, int level, std::string* stored);

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
