// Fuzz target for the IVF_PQ segment decoders (DecodeIvfPqModel, ParseIvfPqLists).
// The first byte picks the decoder and whether the trailing checksum is
// resealed, so mutations reach the structural checks. A file that decodes must
// re-encode to the same bytes. Nothing may crash; every failure must be Corruption.
// Lists that parse are also packed as 4-bit codes and searched by fast scan.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "index/ivf_pq_fastscan.h"
#include "index/ivf_pq_format.h"
#include "vigil/common/checksum.h"

namespace {

using vigil::index::IvfPqListsView;

void Reseal(std::string* bytes) {
  if (bytes->size() < 8) return;
  uint64_t sum = vigil::Checksum64(bytes->data(), bytes->size() - 8);
  std::memcpy(bytes->data() + bytes->size() - 8, &sum, 8);
}

void CheckModel(const std::string& bytes) {
  auto m = vigil::index::DecodeIvfPqModel(bytes);
  VIGIL_CHECK(m.ok() || m.status().code() == vigil::StatusCode::kCorruption);
  if (m.ok()) VIGIL_CHECK(vigil::index::EncodeIvfPqModel(*m) == bytes);
}

// Reads the lists as the 4-bit codes of a small L2 model (two sub-vectors per code
// byte, one dimension each) and searches them: every row comes back at most once,
// nearest first.
void SearchAsFourBit(const IvfPqListsView& v) {
  if (v.num_partitions == 0 || v.num_partitions > 64 || v.code_size == 0 || v.code_size > 128) return;
  vigil::index::IvfPqModel m;
  m.num_bits = 4;
  m.num_sub_vectors = 2 * v.code_size;
  m.dim = m.num_sub_vectors;
  m.num_partitions = v.num_partitions;
  for (uint32_t i = 0; i < m.num_partitions * m.dim; ++i) m.centroids.push_back(static_cast<float>(i % 7) * 0.5f);
  for (uint32_t i = 0; i < m.num_sub_vectors * 16; ++i) m.pq_centroids.push_back(static_cast<float>(i % 16) * 0.25f);
  auto lists = vigil::index::PackedPq4Lists::Pack(m, v);
  auto book = vigil::index::Pq4Codebook::Of(m);
  std::vector<float> query(m.dim, 1.0f);
  const uint32_t k = 5;
  auto rows = vigil::index::SearchPq4(m, book, lists, query.data(), k, m.num_partitions, nullptr);
  VIGIL_CHECK(rows.size() == std::min<uint64_t>(k, v.num_rows));
  for (size_t i = 1; i < rows.size(); ++i) VIGIL_CHECK(rows[i - 1].distance <= rows[i].distance);
}

void CheckLists(const std::string& bytes) {
  auto v = vigil::index::ParseIvfPqLists(bytes);
  VIGIL_CHECK(v.ok() || v.status().code() == vigil::StatusCode::kCorruption);
  if (!v.ok()) return;
  std::vector<std::vector<int64_t>> ids(v->num_partitions);
  std::vector<std::vector<uint8_t>> codes(v->num_partitions);
  for (uint32_t l = 0; l < v->num_partitions; ++l) {
    for (uint64_t i = 0; i < v->counts[l]; ++i) ids[l].push_back(static_cast<int64_t>(v->RowAt(l, i)));
    codes[l].assign(v->Codes(l), v->Codes(l) + v->counts[l] * v->code_size);
  }
  VIGIL_CHECK(vigil::index::EncodeIvfPqLists(v->code_size, ids, codes) == bytes);
  SearchAsFourBit(*v);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 2) Reseal(&bytes);
  if (data[0] & 1) {
    CheckLists(bytes);
  } else {
    CheckModel(bytes);
  }
  return 0;
}

void VigilFuzzSeeds(std::vector<std::string>* out) {
  vigil::index::IvfPqModel m;
  m.metric = vigil::index::Metric::kDot;
  m.dim = 4;
  m.num_partitions = 3;
  m.num_sub_vectors = 2;
  for (int i = 0; i < 12; ++i) m.centroids.push_back(static_cast<float>(i) - 5.5f);
  for (int i = 0; i < 4 * 256; ++i) m.pq_centroids.push_back(static_cast<float>(i % 17) * 0.125f);
  for (char selector : {'\0', '\2'}) out->push_back(selector + vigil::index::EncodeIvfPqModel(m));
  std::vector<std::vector<int64_t>> ids = {{1, 2, int64_t{3} << 32}, {}, {7}};
  std::vector<std::vector<uint8_t>> codes = {{1, 2, 3, 4, 5, 6}, {}, {9, 8}};
  for (char selector : {'\1', '\3'}) out->push_back(selector + vigil::index::EncodeIvfPqLists(2, ids, codes));
  m.num_bits = 4;
  m.pq_centroids.resize(4 * 16);
  out->push_back('\0' + vigil::index::EncodeIvfPqModel(m));
}
