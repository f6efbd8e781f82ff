#include "vigil/common/hex.h"

#include <array>
#include <cstring>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

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

#ifdef __SSE2__
// 16 bytes to 32 digits: each byte's two nibbles side by side, each nibble n as '0' + n, plus
// 'a' - '0' - 10 when n > 9.
void SixteenToHex(const char* src, char* dst) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  const __m128i low_nibbles = _mm_set1_epi8(0x0f);
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), low_nibbles);
  const __m128i lo = _mm_and_si128(v, low_nibbles);
  const __m128i nine = _mm_set1_epi8(9), zero = _mm_set1_epi8('0'), gap = _mm_set1_epi8('a' - '0' - 10);
  for (const __m128i& nibbles : {_mm_unpacklo_epi8(hi, lo), _mm_unpackhi_epi8(hi, lo)}) {
    const __m128i letters = _mm_and_si128(_mm_cmpgt_epi8(nibbles, nine), gap);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_add_epi8(_mm_add_epi8(nibbles, zero), letters));
    dst += 16;
  }
}
#endif

void AppendLowerHex(std::string& out, std::string_view bytes) {
  size_t at = out.size();
  out.resize(at + bytes.size() * 2);
  char* dst = out.data() + at;
  size_t i = 0;
#ifdef __SSE2__
  for (; i + 16 <= bytes.size(); i += 16, dst += 32) SixteenToHex(bytes.data() + i, dst);
#endif
  for (; i < bytes.size(); ++i, dst += 2) {
    std::memcpy(dst, &kPairs[2 * size_t{static_cast<unsigned char>(bytes[i])}], 2);
  }
}

int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> ParseHex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = HexDigitValue(hex[2 * i]), lo = HexDigitValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  return out;
}

}  // namespace vigil
