// Fuzz target: the .npy and .fvecs readers must reject any input with a
// Status, never crash, and only yield valid batches.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "vigil/ingest/ingest.h"

namespace {

void Drain(const std::string& data, vigil::IngestFormat format) {
  vigil::IngestOptions o;
  o.format = format;
  o.batch_rows = 3;
  auto reader = vigil::OpenIngestReaderFromBuffer(data, "fuzz.bin", o);
  if (!reader.ok()) return;
  for (int i = 0; i < 1000; ++i) {
    auto batch = (*reader)->Next();
    if (!batch.ok() || !*batch) return;
    VIGIL_CHECK((*batch)->Validate().ok());
  }
}

std::string Npy(const std::string& descr, int rows, int dim, int width) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                     std::to_string(dim) + "), }\n";
  std::string h = "\x93NUMPY";
  h += '\x01';
  h += '\x00';
  h.push_back(static_cast<char>(dict.size()));
  h.push_back(0);
  std::string data(static_cast<size_t>(rows) * dim * width, '\0');
  for (size_t i = 0; i < data.size(); i += width) data[i + width - 1] = 0x3c;  // small positive values
  return h + dict + data;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  Drain(input, vigil::IngestFormat::kNpy);
  Drain(input, vigil::IngestFormat::kFvecs);
  return 0;
}

void VigilFuzzSeeds(std::vector<std::string>* out) {
  out->push_back(Npy("<f4", 4, 3, 4));
  out->push_back(Npy("<f2", 5, 2, 2));
  std::string fvecs;
  for (int r = 0; r < 4; ++r) {
    int32_t dim = 2;
    float v[2] = {0.5f, -1.0f};
    fvecs.append(reinterpret_cast<const char*>(&dim), 4);
    fvecs.append(reinterpret_cast<const char*>(v), 8);
  }
  out->push_back(fvecs);
}
