// Administrator safety caps on one index build (seed 000 sections 2.3 and
// 10.2): the one definition of vigil.toml's [caps] section, which the config
// (config.h) parses into this struct, and of what admission and the worker
// check (index/index_spec.h: CheckIndexCaps). Plain values owned by common,
// beside the other bounds, so that the config names no type of a layer above
// it. Thread-safe.
#pragma once

#include <cstdint>

#include "vigil/common/bounds.h"

namespace vigil {

struct IndexCaps {
  uint64_t max_rows = 100'000'000;       // rows of the indexed snapshot
  uint64_t max_fragments = 100'000;      // fragments of the indexed snapshot
  uint32_t max_vector_dimension = 4096;  // dimension of an indexed vector column
  uint32_t max_partitions = 65536;       // IVF num_partitions
  uint32_t max_sub_vectors = 1024;       // PQ num_sub_vectors; at most max_vector_dimension

  bool operator==(const IndexCaps&) const = default;
};

// The largest caps this build can honour (storage and IVF_PQ format limits):
// vigil.toml accepts nothing above them, and a worker refuses admitted caps beyond them.
inline constexpr IndexCaps kIndexCapsLimits{uint64_t{1} << 48, uint64_t{1} << 32, bounds::kMaxVectorDimension,
                                            uint32_t{1} << 20, bounds::kMaxVectorDimension};

}  // namespace vigil
