#include "vigil/common/uuid.h"

#include <sys/random.h>

#include <cerrno>

#include "vigil/common/hex.h"

namespace vigil {

Uuid Uuid::Generate() {
  std::array<uint8_t, 16> b{};
  size_t got = 0;
  while (got < b.size()) {
    ssize_t n = getrandom(b.data() + got, b.size() - got, 0);
    if (n < 0) {
      VIGIL_CHECK(errno == EINTR);
      continue;
    }
    got += static_cast<size_t>(n);
  }
  b[6] = static_cast<uint8_t>((b[6] & 0x0F) | 0x40);  // version 4
  b[8] = static_cast<uint8_t>((b[8] & 0x3F) | 0x80);  // RFC 4122 variant
  return Uuid(b);
}

Result<Uuid> Uuid::Parse(std::string_view text) {
  if (text.size() != 36) {
    return Status::InvalidArgument("UUID must have 36 characters, got " + std::to_string(text.size()));
  }
  std::array<uint8_t, 16> b{};
  size_t out = 0;
  for (size_t i = 0; i < text.size();) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (text[i] != '-') return Status::InvalidArgument("UUID has no '-' at position " + std::to_string(i));
      ++i;
      continue;
    }
    int hi = HexDigitValue(text[i]);
    int lo = i + 1 < text.size() ? HexDigitValue(text[i + 1]) : -1;
    if (hi < 0 || lo < 0) {
      return Status::InvalidArgument("UUID has a non-hex character near position " + std::to_string(i));
    }
    b[out++] = static_cast<uint8_t>(hi << 4 | lo);
    i += 2;
  }
  return Uuid(b);
}

std::string Uuid::ToString() const {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(36);
  for (size_t i = 0; i < bytes_.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
    s.push_back(kHex[bytes_[i] >> 4]);
    s.push_back(kHex[bytes_[i] & 0xF]);
  }
  return s;
}

bool Uuid::IsNil() const {
  for (uint8_t x : bytes_) {
    if (x != 0) return false;
  }
  return true;
}

}  // namespace vigil
