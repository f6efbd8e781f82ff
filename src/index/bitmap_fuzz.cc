// Fuzz target for the BITMAP segment decoder: open, then evaluate a few
// predicates. Nothing may crash; every failure must be Corruption (or
// InvalidArgument / NotSupported for a column type or operator BITMAP does not answer).
#include "index/scalar_fuzzing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vigil::index::fuzzing::FuzzOne(data, size, "bitmap.idx", "BITMAP", vigil::index::OpenBitmapSegment);
  return 0;
}

void VigilFuzzSeeds(std::vector<std::string>* out) {
  auto build = [](const vigil::Dataset& ds, const vigil::Field& field, const std::vector<uint32_t>& fragments,
                  vigil::index::SegmentWriter* writer) {
    return vigil::index::BuildBitmapSegment(ds, field, fragments, writer, nullptr);
  };
  vigil::index::fuzzing::BuildSeeds({0, 1, 3, 4}, "bitmap.idx", build, out);
}
