// IVF_PQ with 4-bit codes (num_bits = 4), searched by fast scan: the codes of 32
// rows are interleaved so that one 256-bit byte shuffle looks up 32 distances of
// two sub-quantizers at once from 8-bit quantized tables (vector_kernels.h). The
// kept candidates' distances are then recomputed from the float tables, so results
// carry the PQ (asymmetric) distance FAISS's IVFPQ scan would give them.
// Thread safety: PackedPq4Lists is immutable after Pack; the functions are pure.
#pragma once

#include <cstdint>
#include <vector>

#include "index/ivf_pq_format.h"
#include "index/vector_kernels.h"
#include "vigil/common/status.h"
#include "vigil/index/ivf_pq.h"

namespace vigil::index {

// Sub-quantizer m's code in a row's 4-bit code as the lists file stores it: byte
// m / 2, the low nibble for even m (FAISS's packing).
inline uint8_t Pq4Code(const uint8_t* code, uint32_t m) { return (code[m >> 1] >> ((m & 1) * 4)) & 0xF; }

// The inverted lists re-laid for scanning. Per list: blocks of 32 rows; per block
// and sub-quantizer m (padded to an even count m2 with code 0), 16 bytes whose byte
// i holds row i's code in the low nibble and row i + 16's in the high one.
class PackedPq4Lists {
 public:
  // `view` holds the codes of `model` (num_bits 4; code sizes checked by the caller).
  static PackedPq4Lists Pack(const IvfPqModel& model, const IvfPqListsView& view);

  uint32_t padded_sub_vectors() const { return m2_; }
  uint64_t Count(uint32_t list) const { return row_start_[list + 1] - row_start_[list]; }
  RowAddress Row(uint32_t list, uint64_t i) const { return rows_[row_start_[list] + i]; }
  const uint8_t* Block(uint32_t list, uint64_t block) const;
  uint8_t Code(uint32_t list, uint64_t i, uint32_t m) const;
  // Asks the CPU to load row i's address and code block ahead of use.
  void Prefetch(uint32_t list, uint64_t i) const;
  // Sum over the first m sub-quantizers of table[s * 16 + code(row i, s)].
  float TableDistance(uint32_t list, uint64_t i, uint32_t m, const float* table) const;
  size_t MemoryBytes() const;

 private:
  uint32_t m2_ = 0;
  std::vector<RowAddress> rows_;
  std::vector<uint64_t> row_start_;    // num_partitions + 1 entries
  std::vector<uint64_t> block_start_;  // first block of each list
  std::vector<uint8_t> blocks_;
};

// The PQ centroids of a 4-bit model laid out by dimension: by_dim[(m * dsub + t) * 16 + j]
// is coordinate t of centroid j of sub-quantizer m, so a table's 16 entries vectorize.
struct Pq4Codebook {
  static Pq4Codebook Of(const IvfPqModel& model);
  std::vector<float> by_dim;
};

// Approximate top-k rows of a num_bits = 4 model passing `filter` (may be null),
// nearest first, `query` prepared as for FAISS (unit length under cosine). Distances
// as FAISS reports them: squared L2, or the inner product under dot.
std::vector<ScoredRow> SearchPq4(const IvfPqModel& model, const Pq4Codebook& book, const PackedPq4Lists& lists,
                                 const float* query, uint32_t k, uint32_t nprobes, const RowFilter* filter);

}  // namespace vigil::index
