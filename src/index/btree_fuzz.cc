// Fuzz target for the BTREE segment decoder: open, then evaluate a few
// predicates. Nothing may crash; every failure must be Corruption (or
// InvalidArgument for a column type BTREE cannot index).
#include "index/scalar_format.h"
#include "index/scalar_fuzzing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vigil::index::fuzzing::FuzzOne(data, size, "btree.idx", "BTREE", vigil::index::OpenBtreeSegment);
  return 0;
}

void VigilFuzzSeeds(std::vector<std::string>* out) {
  auto build = [](const vigil::Dataset& ds, const vigil::Field& field, const std::vector<uint32_t>& fragments,
                  vigil::index::SegmentWriter* writer) {
    return vigil::index::internal::BuildBtreeSegmentPaged(ds, field, fragments, writer, nullptr, 8, 1 << 16);
  };
  vigil::index::fuzzing::BuildSeeds({0, 1, 2, 4}, "btree.idx", build, out);
}
