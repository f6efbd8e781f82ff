// Checksums for on-disk blocks, manifests, inventories and protocol frames:
// XXH3-64 from xxHash. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace vigil {

uint64_t Checksum64(const void* data, size_t size);
inline uint64_t Checksum64(std::string_view s) { return Checksum64(s.data(), s.size()); }

// Incremental XXH3-64 over several buffers; equals Checksum64 of their concatenation.
class StreamingChecksum {
 public:
  StreamingChecksum();
  ~StreamingChecksum();
  StreamingChecksum(const StreamingChecksum&) = delete;
  StreamingChecksum& operator=(const StreamingChecksum&) = delete;

  void Update(const void* data, size_t size);
  uint64_t Digest() const;

 private:
  void* state_;  // XXH3_state_t*
};

// 16 lower-case hex digits.
std::string ChecksumToHex(uint64_t sum);

}  // namespace vigil
