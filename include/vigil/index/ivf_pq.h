// IVF_PQ vector segments on FAISS. The trained model (coarse centroids and PQ
// codebooks) and the inverted lists (row addresses and PQ codes) are stored in
// Vigil's own checksummed format; on open the FAISS IndexIVFPQ is rebuilt from
// them (FAISS's read_index is not safe on corrupt input).
//
// Distances (`_distance`): l2 = squared Euclidean; cosine = 1 - cos(a, b)
// (vectors normalized at build and query; zero vectors rejected); dot = 1 - a.b.
// Thread safety: IvfPqSegment is immutable and thread-safe; building is single-threaded
// per call (FAISS uses OpenMP internally).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/index/index_spec.h"
#include "vigil/index/segment.h"
#include "vigil/storage/dataset.h"

namespace vigil::index {

// The most rows one IvfPqSegment::Search returns (k, or k x refine_factor in a query).
constexpr uint32_t kIvfPqMaxSearchK = uint32_t{1} << 20;

// 4-bit codes (fast scan) allow at most this many sub-vectors: their 8-bit
// distance sums must stay below 2^16.
constexpr uint32_t kIvfPq4MaxSubVectors = 256;

struct IvfPqModel {
  Metric metric = Metric::kL2;
  uint32_t dim = 0;
  uint32_t num_partitions = 0;
  uint32_t num_sub_vectors = 0;
  uint32_t num_bits = 8;            // 8, or 4 (searched by fast scan)
  std::vector<float> centroids;     // num_partitions x dim
  std::vector<float> pq_centroids;  // num_sub_vectors x 2^num_bits x (dim / num_sub_vectors)
};

struct ScoredRow {
  RowAddress row = 0;
  float distance = 0;
};

// OK for the supported code widths: 8 bits, or 4 bits with at most
// kIvfPq4MaxSubVectors sub-vectors. InvalidArgument names what is wrong.
Status CheckIvfPqBits(uint32_t num_bits, uint32_t num_sub_vectors);

// Bytes of one row's PQ code (num_sub_vectors x num_bits, rounded up to bytes).
uint32_t IvfPqCodeSize(const IvfPqModel& model);

// Distance between two vectors under `metric`, as defined above (exact).
float ExactDistance(Metric metric, const float* a, const float* b, uint32_t dim);

// Trains the model on a sample of the live rows of `fragments` (sample_rate rows
// per partition, at least 256 rows). InvalidArgument for NaN/infinite vectors,
// zero vectors under cosine, or fewer rows than partitions.
Result<IvfPqModel> TrainIvfPq(const Dataset& dataset, const Field& field, const std::vector<uint32_t>& fragments,
                              const IvfPqParams& params, const ProgressFn& progress);

// Encodes the live rows of `fragments` with `model` (streaming, in batches) and
// writes the segment files. Reuses a model trained earlier for delta segments.
Status BuildIvfPqSegment(const Dataset& dataset, const Field& field, const std::vector<uint32_t>& fragments,
                         const IvfPqModel& model, SegmentWriter* writer, const ProgressFn& progress);

class IvfPqSegment : public Segment {
 public:
  // Reads and verifies the files, then rebuilds the FAISS index. Corruption on any defect.
  static Result<std::shared_ptr<IvfPqSegment>> Open(std::shared_ptr<SegmentFiles> files);
  ~IvfPqSegment() override;

  // Approximate top-k rows passing `filter` (may be null), nearest first.
  // `query` has model().dim elements (normalized internally for cosine).
  Result<std::vector<ScoredRow>> Search(const float* query, uint32_t k, uint32_t nprobes,
                                        const RowFilter* filter) const;
  const IvfPqModel& model() const { return model_; }
  uint64_t num_rows() const { return num_rows_; }
  size_t MemoryBytes() const override;

 private:
  IvfPqSegment(std::shared_ptr<SegmentFiles> files, IvfPqModel model);
  IvfPqModel model_;
  uint64_t num_rows_ = 0;
  struct Faiss;
  std::unique_ptr<Faiss> faiss_;
};

}  // namespace vigil::index
