#include "vigil/common/checksum.h"

#include <xxhash.h>

#include "vigil/common/status.h"

namespace vigil {

uint64_t Checksum64(const void* data, size_t size) { return XXH3_64bits(data, size); }

StreamingChecksum::StreamingChecksum() : state_(XXH3_createState()) {
  VIGIL_CHECK(state_ != nullptr);
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}

StreamingChecksum::~StreamingChecksum() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void StreamingChecksum::Update(const void* data, size_t size) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data, size);
}

uint64_t StreamingChecksum::Digest() const { return XXH3_64bits_digest(static_cast<XXH3_state_t*>(state_)); }

std::string ChecksumToHex(uint64_t sum) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i) {
    s[i] = kHex[sum & 0xF];
    sum >>= 4;
  }
  return s;
}

}  // namespace vigil
