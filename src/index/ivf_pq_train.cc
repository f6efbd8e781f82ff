// IVF_PQ training: FAISS's coarse k-means, then the PQ sub-quantizers on the
// sample's residuals, one sub-quantizer per OpenMP thread. FAISS trains them one
// after another, each k-means parallel inside, assigning points through BLAS; on
// sub-vectors of a few dimensions those parallel regions are too short to pay for
// their synchronisation and the BLAS product mostly moves memory. Here each
// sub-quantizer's k-means (FAISS's Clustering) runs alone on its thread with
// SubspaceAssignIndex for the assignment step: no BLAS in the training threads
// (whose per-thread buffers a memory-limited worker could not allocate), ~5x less
// time on 2 cores, and the same reconstruction error.
// Thread safety: see ivf_pq_internal.h.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <vector>

#include <faiss/Clustering.h>
#include <faiss/IndexFlat.h>
#include <faiss/impl/FaissAssert.h>
#include <faiss/utils/utils.h>

#include "index/ivf_pq_internal.h"

namespace vigil::index {

namespace {

// A flat L2 index answering only k = 1 searches (the assignment step of k-means), by
// a loop over centroids stored dimension-major that the compiler vectorizes.
class SubspaceAssignIndex : public faiss::IndexFlatL2 {
 public:
  using faiss::IndexFlatL2::IndexFlatL2;

  void search(idx_t n, const float* x, idx_t k, float* distances, idx_t* labels,
              const faiss::SearchParameters* params = nullptr) const override {
    FAISS_THROW_IF_NOT_MSG(k == 1 && params == nullptr, "SubspaceAssignIndex answers k = 1 only");
    const size_t nb = static_cast<size_t>(ntotal), dim = static_cast<size_t>(d);
    FAISS_THROW_IF_NOT(nb > 0);
    std::vector<float> by_dim(dim * nb);
    const float* xb = get_xb();
    for (size_t c = 0; c < nb; ++c) {
      for (size_t j = 0; j < dim; ++j) by_dim[j * nb + c] = xb[c * dim + j];
    }
    std::vector<float> dist(nb);
    for (idx_t i = 0; i < n; ++i) {
      const float* q = x + static_cast<size_t>(i) * dim;
      std::fill(dist.begin(), dist.end(), 0.0f);
      for (size_t j = 0; j < dim; ++j) {
        const float qj = q[j];
        const float* col = &by_dim[j * nb];
        for (size_t c = 0; c < nb; ++c) {
          const float diff = qj - col[c];
          dist[c] += diff * diff;
        }
      }
      const size_t best = static_cast<size_t>(std::min_element(dist.begin(), dist.end()) - dist.begin());
      labels[i] = static_cast<idx_t>(best);
      distances[i] = dist[best];
    }
  }
};

}  // namespace

void TrainProductQuantizer(faiss::ProductQuantizer* pq, size_t n, const float* x, int threads) {
  const int64_t subs = static_cast<int64_t>(pq->M);
  std::exception_ptr failure;
#pragma omp parallel for schedule(dynamic, 1) num_threads(std::max(1, threads))
  for (int64_t m = 0; m < subs; ++m) {
    omp_set_num_threads(1);  // FAISS's regions inside this thread run on it alone
    try {
      std::vector<float> slice(n * pq->dsub);
      for (size_t j = 0; j < n; ++j) {
        std::memcpy(&slice[j * pq->dsub], x + j * pq->d + m * pq->dsub, pq->dsub * sizeof(float));
      }
      faiss::Clustering clus(static_cast<int>(pq->dsub), static_cast<int>(pq->ksub), pq->cp);
      SubspaceAssignIndex assign(static_cast<faiss::Index::idx_t>(pq->dsub));
      clus.train(static_cast<faiss::Index::idx_t>(n), slice.data(), assign);
      pq->set_params(clus.centroids.data(), static_cast<int>(m));
    } catch (...) {
#pragma omp critical(vigil_pq_train_failure)
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

void TrainIvfPqIndex(faiss::IndexIVFPQ* ivf, size_t n, const float* x, int threads) {
  FAISS_THROW_IF_NOT_MSG(!ivf->do_polysemous_training, "polysemous training is not supported");
  ivf->train_q1(n, x, false, ivf->metric_type);
  // The PQ sample and its residuals, as IndexIVFPQ::train_residual takes them.
  size_t pq_rows = n;
  const float* pq_x = faiss::fvecs_maybe_subsample(ivf->d, &pq_rows, ivf->pq.cp.max_points_per_centroid * ivf->pq.ksub,
                                                   x, false, ivf->pq.cp.seed);
  std::unique_ptr<const float[]> owned(pq_x == x ? nullptr : pq_x);
  std::vector<float> residuals;
  if (ivf->by_residual) {
    std::vector<faiss::Index::idx_t> assign(pq_rows);
    ivf->quantizer->assign(static_cast<faiss::Index::idx_t>(pq_rows), pq_x, assign.data());
    residuals.resize(pq_rows * ivf->d);
    ivf->quantizer->compute_residual_n(static_cast<faiss::Index::idx_t>(pq_rows), pq_x, residuals.data(),
                                       assign.data());
    pq_x = residuals.data();
  }
  TrainProductQuantizer(&ivf->pq, pq_rows, pq_x, threads);
  ivf->precompute_table();
  ivf->is_trained = true;
}

}  // namespace vigil::index
