// Internals of the IVF_PQ segment shared with its tests and the benchmark:
// the FAISS thread settings and the deterministic training sample.
// Thread safety: SampleOrdinals and TrainingSampleSize are pure; ConfigureFaissThreads
// changes process-wide BLAS settings and the calling thread's OpenMP settings.
#pragma once

#include <cstdint>
#include <vector>

#include "vigil/index/index_spec.h"

namespace vigil::index {

constexpr uint64_t kIvfPqSampleSeed = 0x5eed1f9c0ffee;
constexpr uint32_t kIvfPqMinTrainingRows = 256;  // 2^num_bits PQ centroids per sub-vector

constexpr uint64_t kIvfPqParallelMinRows = 65536;

// BLAS single-threaded (when the BLAS is OpenBLAS; FAISS with both multi-threaded
// is ~2.5x slower) and OpenMP threads = usable cores, at most the process's initial
// OpenMP limit (OMP_NUM_THREADS: worker.omp_threads in a worker), or 1 for jobs of
// fewer than kIvfPqParallelMinRows rows, whose parallel regions cost more than they save.
// Returns the OpenMP thread count.
int ConfigureFaissThreads(uint64_t rows);

// Rows of the training sample: sample_rate per partition, at least
// kIvfPqMinTrainingRows, at most `live_rows`.
uint64_t TrainingSampleSize(const IvfPqParams& params, uint64_t live_rows);

// `n` distinct ordinals in [0, live_rows), ascending, deterministic for (live_rows, n).
// Ordinals count live rows in fragment order, then offset order.
std::vector<uint64_t> SampleOrdinals(uint64_t live_rows, uint64_t n);

}  // namespace vigil::index
