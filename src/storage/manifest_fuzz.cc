// Fuzz target for DecodeManifest. Each input is decoded as a manifest file and
// again with its payload reframed under a valid length and checksum, so
// mutations reach the JSON validation. A manifest that decodes must re-encode
// to bytes that decode. Nothing may crash; every failure must be Corruption.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "vigil/common/checksum.h"
#include "vigil/storage/manifest.h"

namespace {

void Check(const std::string& bytes) {
  auto m = vigil::DecodeManifest(bytes, "fuzz");
  VIGIL_CHECK(m.ok() || m.status().code() == vigil::StatusCode::kCorruption);
  if (!m.ok()) return;
  auto again = vigil::DecodeManifest(vigil::EncodeManifest(*m));
  VIGIL_CHECK(again.ok());
}

std::string Frame(std::string_view payload) {
  std::string out = "VGLMANI1";
  uint32_t n = static_cast<uint32_t>(payload.size());
  out.append(reinterpret_cast<const char*>(&n), 4);
  out += payload;
  uint64_t sum = vigil::Checksum64(payload);
  out.append(reinterpret_cast<const char*>(&sum), 8);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  Check(std::string(input));
  if (size >= 20) Check(Frame(input.substr(12, size - 20)));
  return 0;
}

void VigilFuzzSeeds(std::vector<std::string>* out) {
  using namespace vigil;
  Manifest m;
  m.version = 3;
  m.parent_version = 2;
  m.dataset_id = Uuid::Generate();
  auto schema = Schema::Make({{-1, "id", DataType::Of(TypeId::kInt64), false},
                              {-1, "emb", DataType::Vector(VectorElement::kFloat32, 4), true}});
  VIGIL_CHECK(schema.ok());
  m.schema = *schema;
  m.txn.operation = "CREATE_TABLE";
  out->push_back(EncodeManifest(m));
  m.fragments.push_back(FragmentMeta{0, "data/a.frag", 10, 100, 7, std::nullopt});
  m.fragments.push_back(FragmentMeta{2, "data/b.frag", 20, 200, 8, DeletionFileRef{"_deletions/2-3.del", 3, 9}});
  m.next_fragment_id = 3;
  IndexSegmentMeta s;
  s.name = "idx";
  s.uuid = Uuid::Generate();
  s.field_ids = {1};
  s.index_type = "IVF_PQ";
  s.properties_json = "{}";
  s.built_at_version = 2;
  s.covered_fragments = {0, 2};
  s.files = {{"a.bin", 1, 2}};
  m.segments.push_back(s);
  m.txn.job_id = 5;
  m.txn.extra["k"] = "v";
  out->push_back(EncodeManifest(m));
}
