#include "vigil/common/hex.h"

#include <array>
#include <cstring>

namespace vigil {

namespace {

// The two digits of every byte value, so that each byte is one copy.
constexpr std::array<char, 512> MakePairs() {
  constexpr char kDigits[] = "0123456789abcdef";
  std::array<char, 512> pairs{};
  for (size_t b = 0; b < 256; ++b) {
    pairs[2 * b] = kDigits[b >> 4];
    pairs[2 * b + 1] = kDigits[b & 15];
  }
  return pairs;
}

constexpr std::array<char, 512> kPairs = MakePairs();

}  // namespace

void AppendLowerHex(std::string& out, std::string_view bytes) {
  size_t at = out.size();
  out.resize(at + bytes.size() * 2);
  char* dst = out.data() + at;
  for (unsigned char c : bytes) {
    std::memcpy(dst, &kPairs[2 * size_t{c}], 2);
    dst += 2;
  }
}

}  // namespace vigil
