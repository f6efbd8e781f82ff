// How many threads one index build may use: the cores this process may run
// on, at most its initial OpenMP limit (OMP_NUM_THREADS, which a worker gets
// from `worker.omp_threads`). IVF_PQ builds run that many OpenMP threads; an
// FTS build indexes its native postings on a second thread when it is 2 or more.
//
// Thread safety: reads process-wide state once; safe from any thread.
#pragma once

namespace vigil::index {

// Read once, before any omp_set_num_threads lowers the OpenMP limit.
int BuildThreadLimit();

}  // namespace vigil::index
