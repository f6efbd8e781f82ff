// 128-bit random identifiers (RFC 4122 version 4) for fragments, segments,
// attempts and incarnations. Values are immutable; Generate() is thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "vigil/common/status.h"

namespace vigil {

class Uuid {
 public:
  Uuid() = default;  // the nil UUID
  explicit Uuid(const std::array<uint8_t, 16>& bytes) : bytes_(bytes) {}

  // A new random v4 UUID from the kernel's CSPRNG.
  static Uuid Generate();
  // Parses the canonical 36-character lower- or upper-case hex form.
  static Result<Uuid> Parse(std::string_view text);

  // Canonical lower-case form, e.g. "3f1e0c2a-8b7d-4c1e-9a2b-0d4e5f607182".
  std::string ToString() const;
  bool IsNil() const;
  const std::array<uint8_t, 16>& bytes() const { return bytes_; }

  auto operator<=>(const Uuid&) const = default;

 private:
  std::array<uint8_t, 16> bytes_{};
};

}  // namespace vigil
