// Lower-case hexadecimal text of bytes: the one encoder for blobs shown as
// text, digests and fingerprints. Pure functions; thread-safe.
#pragma once

#include <cstddef>
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

}  // namespace vigil
