// The thread budget of index builds; see build_threads.h.
#include "index/build_threads.h"

#include <omp.h>

#include <algorithm>

#include "vigil/common/config.h"

namespace vigil::index {

int BuildThreadLimit() {
  static const int limit = std::min(static_cast<int>(UsableCores()), std::max(1, omp_get_max_threads()));
  return limit;
}

}  // namespace vigil::index
