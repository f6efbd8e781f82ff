// Little-endian encoding helpers shared by Vigil's binary formats (fragment
// blocks and footers, scalar index pages and dictionaries): appenders for
// fixed-width integers and a reader that never passes the end of its buffer.
// Values; not thread-safe for concurrent mutation.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace vigil {

static_assert(std::endian::native == std::endian::little, "Vigil's on-disk formats are little-endian");

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
  bool I64(int64_t* v) { return Fixed(v); }
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

}  // namespace vigil
