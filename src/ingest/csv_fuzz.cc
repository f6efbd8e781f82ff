// Fuzz target: the CSV reader (schema inference and a fixed typed schema) must
// reject any input with a Status, never crash, and only yield valid batches.
#include <cstdint>
#include <string>
#include <vector>

#include "vigil/ingest/ingest.h"

namespace {

void Drain(const std::string& data, vigil::SchemaPtr schema) {
  vigil::IngestOptions o;
  o.format = vigil::IngestFormat::kCsv;
  o.schema = std::move(schema);
  o.batch_rows = 7;
  auto reader = vigil::OpenIngestReaderFromBuffer(data, "fuzz.csv", o);
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
      {-1, "id", DataType::Of(TypeId::kInt32), false},
      {-1, "d", DataType::Of(TypeId::kDate), true},
      {-1, "ts", DataType::Of(TypeId::kTimestamp), true},
      {-1, "p", DataType::Decimal(6, 2), true},
      {-1, "v", DataType::Vector(vigil::VectorElement::kFloat16, 2), true},
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
  out->push_back("id,d,ts,p,v\n1,2024-01-01,2024-01-01T00:00:00Z,12.5,\"[1,2]\"\n2,,,,\n");
  out->push_back("id,name\n1,\"a \"\"b\"\"\nc\"\r\n2,x\n");
  out->push_back("a,b,c\ntrue,1.5,[1,2]\nfalse,2,\"[3,4]\"\n");
}
