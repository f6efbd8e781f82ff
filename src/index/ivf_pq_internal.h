// Internals of the IVF_PQ segment shared with its tests and the benchmark:
// the FAISS thread settings, the deterministic training sample and training.
// Thread safety: SampleOrdinals and TrainingSampleSize are pure; ConfigureFaissThreads
// changes process-wide BLAS settings and the calling thread's OpenMP settings; the
// training functions use the calling thread's OpenMP team (one call at a time per index).
#pragma once

#include <cstdint>
#include <vector>

#include <faiss/IndexIVFPQ.h>
#include <faiss/impl/ProductQuantizer.h>

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

// Trains pq's sub-quantizers on n x pq->d vectors like ProductQuantizer::train
// (FAISS's k-means with pq->cp, on the same points), each sub-quantizer alone on one
// of `threads` OpenMP threads (a coarse grain that pays off at any size), assigning
// points without BLAS. Throws what FAISS throws.
void TrainProductQuantizer(faiss::ProductQuantizer* pq, size_t n, const float* x, int threads);

// IndexIVFPQ::train (without polysemous training) with the sub-quantizers trained by
// TrainProductQuantizer on `threads` threads; the coarse k-means is FAISS's, on the
// caller's OpenMP settings. Throws what FAISS throws.
void TrainIvfPqIndex(faiss::IndexIVFPQ* ivf, size_t n, const float* x, int threads);

// IndexIVFPQ::precompute_table with the same table (bit for bit) computed without a
// function call per inner product, for an L2 index by residual on a flat quantizer
// (the table Vigil's segments use); any other index gets FAISS's own call.
void PrecomputeIvfPqTable(faiss::IndexIVFPQ* ivf);

}  // namespace vigil::index
