// Fuzz target: the JSON Lines reader (inferred and fixed schemas) must reject
// any input with a Status, never crash, and only yield valid batches.
#include <cstdint>
#include <string>
#include <vector>

#include "vigil/ingest/ingest.h"

namespace {

void Drain(const std::string& data, vigil::SchemaPtr schema) {
  vigil::IngestOptions o;
  o.format = vigil::IngestFormat::kJsonl;
  o.schema = std::move(schema);
  o.batch_rows = 5;
  auto reader = vigil::OpenIngestReaderFromBuffer(data, "fuzz.jsonl", o);
  if (!reader.ok()) return;
  for (int i = 0; i < 1000; ++i) {
    auto batch = (*reader)->Next();
    if (!batch.ok() || !*batch) return;
    VIGIL_CHECK((*batch)->Validate().ok());
  }
}

vigil::SchemaPtr TypedSchema() {
  using vigil::DataType;
  using vigil::TypeId;
  static const vigil::SchemaPtr kSchema = *vigil::Schema::Make({
      {-1, "id", DataType::Of(TypeId::kInt64), false},
      {-1, "ok", DataType::Of(TypeId::kBool), true},
      {-1, "x", DataType::Of(TypeId::kFloat32), true},
      {-1, "ts", DataType::Of(TypeId::kTimestamp), true},
      {-1, "p", DataType::Decimal(10, 3), true},
      {-1, "emb", DataType::Vector(vigil::VectorElement::kFloat32, 3), true},
  });
  return kSchema;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  Drain(input, nullptr);
  Drain(input, TypedSchema());
  return 0;
}

void VigilFuzzSeeds(std::vector<std::string>* out) {
  out->push_back(
      "{\"id\": 1, \"ok\": true, \"x\": 1.5, \"ts\": \"2024-01-01T00:00:00Z\", \"p\": 1.25, \"emb\": [1, 2, 3]}\n"
      "{\"id\": 2, \"ok\": null, \"p\": \"3.5\"}\n");
  out->push_back("{\"a\": \"x\", \"b\": [0.5, 1e3]}\n\n{\"a\": \"2024-01-01\", \"b\": [1, 2]}\n");
}
