// IndexIVFPQ's precomputed distance table (term 2 of the L2 distance by residual,
// "use_precomputed_table = 1") computed the way FAISS computes it, faster: FAISS
// makes one function call per (list, sub-quantizer, centroid) inner product of
// dsub floats, which makes it most of the time of opening a segment; here each
// lane of a vectorized loop over the 2^nbits centroids sums the same products in
// the same order, so the table is bit for bit FAISS's (ivf_pq_test checks it).
// Thread safety: see ivf_pq_internal.h.
#include <faiss/IndexFlat.h>
#include <faiss/utils/distances.h>

#include <vector>

#include "index/ivf_pq_internal.h"

namespace vigil::index {

void PrecomputeIvfPqTable(faiss::IndexIVFPQ* ivf) {
  const faiss::ProductQuantizer& pq = ivf->pq;
  const size_t nlist = ivf->nlist, m_count = pq.M, ksub = pq.ksub, dsub = pq.dsub;
  const auto* flat = dynamic_cast<const faiss::IndexFlat*>(ivf->quantizer);
  const bool table_fits = nlist * m_count * ksub * sizeof(float) <= faiss::precomputed_table_max_bytes;
  if (!ivf->by_residual || ivf->metric_type != faiss::METRIC_L2 || flat == nullptr ||
      flat->metric_type != faiss::METRIC_L2 || ivf->use_precomputed_table != 0 || !table_fits) {
    ivf->precompute_table();  // FAISS decides: no table, or a kind not computed here
    return;
  }
  ivf->use_precomputed_table = 1;
  // Squared norms of the PQ centroids, and the centroids sub-dimension-major:
  // by_dim[(m * dsub + j) * ksub + k] = centroid k of sub-quantizer m, dimension j.
  std::vector<float> r_norms(m_count * ksub), by_dim(m_count * dsub * ksub);
  for (size_t m = 0; m < m_count; ++m) {
    for (size_t k = 0; k < ksub; ++k) {
      const float* c = pq.get_centroids(m, k);
      r_norms[m * ksub + k] = faiss::fvec_norm_L2sqr(c, dsub);
      for (size_t j = 0; j < dsub; ++j) by_dim[(m * dsub + j) * ksub + k] = c[j];
    }
  }
  ivf->precomputed_table.resize(nlist * m_count * ksub);
  const float* centroids = flat->get_xb();
  for (size_t list = 0; list < nlist; ++list) {
    const float* centroid = centroids + list * pq.d;
    float* tab = &ivf->precomputed_table[list * m_count * ksub];
    for (size_t m = 0; m < m_count; ++m) {
      float* out = tab + m * ksub;
      const float* x = centroid + m * dsub;
      for (size_t k = 0; k < ksub; ++k) out[k] = 0;
      for (size_t j = 0; j < dsub; ++j) {  // FAISS's order: res += x[j] * y[j], j ascending
        const float xj = x[j];
        const float* y = &by_dim[(m * dsub + j) * ksub];
        for (size_t k = 0; k < ksub; ++k) out[k] += xj * y[k];
      }
      const float* norms = &r_norms[m * ksub];
      for (size_t k = 0; k < ksub; ++k) out[k] = norms[k] + 2.0f * out[k];
    }
  }
}

}  // namespace vigil::index
