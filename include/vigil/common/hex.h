// Hexadecimal text of bytes: the one encoder (lower-case) for blobs shown as
// text, digests and fingerprints, and the one decoder. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace vigil {

// Appends two lower-case hex digits per byte of `bytes` to `out`.
void AppendLowerHex(std::string& out, std::string_view bytes);

inline std::string LowerHex(std::string_view bytes) {
  std::string out;
  AppendLowerHex(out, bytes);
  return out;
}

// The value of the hex digit `c` (either case); -1 when it is not one.
int HexDigitValue(char c);

// The bytes `hex` spells, two digits (either case) per byte; nullopt when it is not that.
std::optional<std::string> ParseHex(std::string_view hex);

}  // namespace vigil
