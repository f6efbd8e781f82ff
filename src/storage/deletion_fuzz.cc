// Fuzz target for DeletionVector::Decode. Each input is decoded as a deletion
// file and again resealed (valid magic and checksum), so mutations reach the
// roaring layout checks. A vector that decodes must round-trip. Nothing may
// crash; every failure must be Corruption.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "vigil/common/checksum.h"
#include "vigil/storage/deletion.h"

namespace {

void Check(const std::string& bytes) {
  auto dv = vigil::DeletionVector::Decode(bytes);
  VIGIL_CHECK(dv.ok() || dv.status().code() == vigil::StatusCode::kCorruption);
  if (!dv.ok()) return;
  auto again = vigil::DeletionVector::Decode(dv->Encode());
  VIGIL_CHECK(again.ok() && again->Cardinality() == dv->Cardinality());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  Check(bytes);
  if (size >= 16) {
    std::memcpy(bytes.data(), "VGLDEL01", 8);
    uint64_t sum = vigil::Checksum64(bytes.data(), size - 8);
    std::memcpy(bytes.data() + size - 8, &sum, 8);
    Check(bytes);
  }
  return 0;
}

void VigilFuzzSeeds(std::vector<std::string>* out) {
  vigil::DeletionVector empty, sparse, mixed;
  sparse.Add(3);
  sparse.Add(70000);
  for (uint32_t i = 0; i < 20; ++i) mixed.Add(i * 5);
  for (uint32_t i = 100000; i < 100300; ++i) mixed.Add(i);
  for (uint32_t i = 200000; i < 212000; i += 2) mixed.Add(i);
  for (const auto* dv : {&empty, &sparse, &mixed}) out->push_back(dv->Encode());
}
