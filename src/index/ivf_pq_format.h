// The on-disk format of IVF_PQ segments, independent of FAISS. Two files:
//
//   ivf_pq.model  "VGLIVFM1" | u8 metric (0 l2, 1 cosine, 2 dot) | u8 num_bits | u16 0 |
//                 u32 dim | u32 num_partitions | u32 num_sub_vectors |
//                 f32 centroids[num_partitions * dim] |
//                 f32 pq_centroids[num_sub_vectors * 2^num_bits * dim / num_sub_vectors] |
//                 u64 XXH3-64 of everything before
//   ivf_pq.lists  "VGLIVFL1" | u32 num_partitions | u32 code_size | u64 num_rows |
//                 u64 count[num_partitions] |
//                 per partition: u64 row_address[count] then u8 codes[count * code_size] |
//                 (code_size = num_sub_vectors * num_bits / 8 rounded up; 4-bit codes
//                 packed two per byte, the low nibble first)
//                 u64 XXH3-64 of everything before
//
// Integers and floats are little-endian. Decoders bound every count by the
// input size before allocating and return Corruption on any defect.
// Pure functions and values; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/index/ivf_pq.h"

namespace vigil::index {

inline constexpr char kIvfPqModelFile[] = "ivf_pq.model";
inline constexpr char kIvfPqListsFile[] = "ivf_pq.lists";
constexpr uint32_t kIvfPqMaxPartitions = kIndexCapsLimits.max_partitions;

// Structural checks of a model (sizes agree, CheckIvfPqBits, sub-vectors divide dim,
// finite values). Corruption names the defect; callers re-label for user input.
Status CheckIvfPqModel(const IvfPqModel& model);

std::string EncodeIvfPqModel(const IvfPqModel& model);
Result<IvfPqModel> DecodeIvfPqModel(std::string_view bytes);

// Writes a lists file as consecutive pieces through `append`. ids[l] and codes[l]
// hold list l (codes[l].size() == ids[l].size() * code_size).
Status WriteIvfPqLists(uint32_t code_size, const std::vector<std::vector<int64_t>>& ids,
                       const std::vector<std::vector<uint8_t>>& codes,
                       const std::function<Status(std::string_view)>& append);
std::string EncodeIvfPqLists(uint32_t code_size, const std::vector<std::vector<int64_t>>& ids,
                             const std::vector<std::vector<uint8_t>>& codes);

// A verified lists file; views into the bytes it was parsed from (keep them alive).
struct IvfPqListsView {
  uint32_t num_partitions = 0;
  uint32_t code_size = 0;
  uint64_t num_rows = 0;
  std::vector<uint64_t> counts;  // rows per list
  std::vector<uint64_t> starts;  // byte offset of each list's row addresses
  std::string_view bytes;

  RowAddress RowAt(uint32_t list, uint64_t i) const;
  const uint8_t* Codes(uint32_t list) const;
};
Result<IvfPqListsView> ParseIvfPqLists(std::string_view bytes);

}  // namespace vigil::index
