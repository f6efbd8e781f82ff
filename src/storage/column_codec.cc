#include "storage/column_codec.h"

#include <zstd.h>

#include <memory>

#include "vigil/common/bounds.h"

namespace vigil::codec {

namespace {

struct DctxDeleter {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};

ZSTD_DCtx* ThreadDctx() {
  thread_local std::unique_ptr<ZSTD_DCtx, DctxDeleter> ctx(ZSTD_createDCtx());
  return ctx.get();
}

// Validity bytes must be 0 or 1 and mark exactly `null_count` rows null.
Status CheckValidity(std::string_view bytes, uint32_t null_count) {
  uint64_t nulls = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    uint8_t b = static_cast<uint8_t>(bytes[i]);
    if (b > 1) return Status::Corruption("validity byte of row " + std::to_string(i) + " is " + std::to_string(b));
    nulls += (b == 0);
  }
  if (nulls != null_count) {
    return Status::Corruption("validity marks " + std::to_string(nulls) + " nulls; the footer says " +
                              std::to_string(null_count));
  }
  return Status::OK();
}

Status CheckOffsets(const std::vector<uint64_t>& offsets, uint64_t bytes) {
  if (offsets.front() != 0) return Status::Corruption("first string offset is " + std::to_string(offsets.front()));
  for (size_t i = 1; i < offsets.size(); ++i) {
    if (offsets[i] < offsets[i - 1] || offsets[i] > bytes) {
      return Status::Corruption("string offset " + std::to_string(i) + " is " + std::to_string(offsets[i]) +
                                " (previous " + std::to_string(offsets[i - 1]) + ", " + std::to_string(bytes) +
                                " bytes)");
    }
  }
  if (offsets.back() != bytes) {
    return Status::Corruption("string offsets end at " + std::to_string(offsets.back()) + " but the block holds " +
                              std::to_string(bytes) + " string bytes");
  }
  return Status::OK();
}

}  // namespace

uint32_t CountNulls(const Column& column) {
  uint32_t nulls = 0;
  for (uint8_t v : column.validity()) nulls += (v == 0);
  return nulls;
}

std::string EncodeBlock(const Column& column, uint32_t null_count) {
  const size_t rows = column.size();
  std::string out;
  if (null_count > 0) {
    out.reserve(rows);
    for (uint8_t v : column.validity()) PutU8(&out, v != 0 ? 1 : 0);
  }
  if (column.type().id != TypeId::kString) {
    VIGIL_CHECK(column.raw_data().size() == rows * column.type().FixedWidth());
    out += column.raw_data();
    return out;
  }
  const std::vector<uint64_t>& offsets = column.offsets();
  VIGIL_CHECK(offsets.size() == rows + 1);
  const uint64_t base = offsets[0];
  for (uint64_t off : offsets) PutU64(&out, off - base);
  out.append(column.raw_data(), base, offsets[rows] - base);
  return out;
}

Result<BlockEncoding> CompressBlock(std::string_view decoded, const DataType& type, int level, std::string* stored) {
  if (type.id == TypeId::kVector || decoded.empty()) return BlockEncoding::kRaw;
  stored->resize(ZSTD_compressBound(decoded.size()));
  size_t n = ZSTD_compress(stored->data(), stored->size(), decoded.data(), decoded.size(), level);
  if (ZSTD_isError(n)) return Status::IOError(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
  if (n > decoded.size() - decoded.size() / 10) {
    stored->clear();
    return BlockEncoding::kRaw;
  }
  stored->resize(n);
  return BlockEncoding::kZstd;
}

Result<std::string> DecompressBlock(std::string stored, BlockEncoding encoding, uint64_t decoded_size) {
  if (encoding == BlockEncoding::kRaw) {
    if (stored.size() != decoded_size) {
      return Status::Corruption("raw block is " + std::to_string(stored.size()) + " bytes; the footer says " +
                                std::to_string(decoded_size));
    }
    return stored;
  }
  if (decoded_size > bounds::kMaxBlockBytes) {
    return Status::Corruption("decoded block size " + std::to_string(decoded_size) + " exceeds the limit");
  }
  unsigned long long frame = ZSTD_getFrameContentSize(stored.data(), stored.size());
  if (frame != decoded_size) {
    return Status::Corruption("zstd frame declares " +
                              (frame >= ZSTD_CONTENTSIZE_ERROR ? std::string("no size") : std::to_string(frame)) +
                              "; the footer says " + std::to_string(decoded_size));
  }
  std::string out(decoded_size, '\0');
  size_t n = ZSTD_decompressDCtx(ThreadDctx(), out.data(), out.size(), stored.data(), stored.size());
  if (ZSTD_isError(n)) return Status::Corruption(std::string("zstd: ") + ZSTD_getErrorName(n));
  if (n != decoded_size) {
    return Status::Corruption("zstd block inflated to " + std::to_string(n) + " bytes; the footer says " +
                              std::to_string(decoded_size));
  }
  return out;
}

uint64_t MinDecodedSize(const DataType& type, uint32_t rows, uint32_t null_count) {
  uint64_t size = null_count > 0 ? rows : 0;
  if (type.id == TypeId::kString) return size + (static_cast<uint64_t>(rows) + 1) * 8;
  return size + static_cast<uint64_t>(rows) * type.FixedWidth();
}

Result<Column> DecodeBlock(std::string decoded, const DataType& type, uint32_t rows, uint32_t null_count) {
  const uint64_t min = MinDecodedSize(type, rows, null_count);
  const bool is_string = type.id == TypeId::kString;
  if (decoded.size() < min || (!is_string && decoded.size() != min)) {
    return Status::Corruption("decoded block is " + std::to_string(decoded.size()) + " bytes; " + std::to_string(rows) +
                              " rows of " + type.ToString() + " need " + (is_string ? "at least " : "") +
                              std::to_string(min));
  }
  Column column(type);
  size_t pos = 0;
  if (null_count > 0) {
    std::string_view validity(decoded.data(), rows);
    VIGIL_RETURN_IF_ERROR(CheckValidity(validity, null_count));
    column.mutable_validity().assign(validity.begin(), validity.end());
    pos = rows;
  }
  if (is_string) {
    std::vector<uint64_t>& offsets = column.mutable_offsets();
    offsets.resize(static_cast<size_t>(rows) + 1);
    std::memcpy(offsets.data(), decoded.data() + pos, offsets.size() * 8);
    pos += offsets.size() * 8;
    VIGIL_RETURN_IF_ERROR(CheckOffsets(offsets, decoded.size() - pos));
  }
  if (pos > 0) decoded.erase(0, pos);
  column.mutable_data() = std::move(decoded);
  Status st = column.SetSizeFromBuffers(rows);
  if (!st.ok()) return Status::Corruption("block buffers disagree: " + st.message());
  return column;
}

Status ValidateStoredType(const DataType& type, std::string_view what) {
  const auto id = static_cast<uint8_t>(type.id);
  if (id < static_cast<uint8_t>(TypeId::kBool) || id > static_cast<uint8_t>(TypeId::kVector)) {
    return Status::Corruption(std::string(what) + " has unknown type id " + std::to_string(id));
  }
  if (type.id == TypeId::kDecimal && (type.precision < 1 || type.precision > 18 || type.scale > type.precision)) {
    return Status::Corruption(std::string(what) + " has invalid DECIMAL(" + std::to_string(type.precision) + "," +
                              std::to_string(type.scale) + ")");
  }
  if (type.id == TypeId::kVector) {
    const auto el = static_cast<uint8_t>(type.element);
    if (el != static_cast<uint8_t>(VectorElement::kFloat16) && el != static_cast<uint8_t>(VectorElement::kFloat32)) {
      return Status::Corruption(std::string(what) + " has unknown vector element type " + std::to_string(el));
    }
    if (type.dim < 1 || type.dim > bounds::kMaxVectorDimension) {
      return Status::Corruption(std::string(what) + " has vector dimension " + std::to_string(type.dim));
    }
  }
  return Status::OK();
}

}  // namespace vigil::codec
