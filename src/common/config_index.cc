// The [mutation] and [caps] settings of vigil.toml: whether index requests are
// admitted at all, and the administrator's safety caps on what one may index.
#include "common/config_settings.h"

namespace vigil {

namespace config_detail {

std::vector<Setting> MutationSettings() {
  return {
      {"mutation", "enabled", Kind::kBool, 0, 0,
       "CREATE / REPLACE / DROP INDEX are admitted. false rejects them before a job\n"
       "is created (seed 000 section 10.2). An embedded root is one administrator's\n"
       "own directory, so mutation is on by default.",
       VIGIL_BOOL_(mutation, enabled)},
  };
}

std::vector<Setting> CapsSettings() {
  return {
      {"caps", "max_rows", Kind::kCount, 1, kIndexCapsLimits.max_rows,
       "Administrator safety caps, checked at admission and again on the worker's\n"
       "exact snapshot, before any provider call. Rows of the indexed snapshot.",
       VIGIL_NUM_(caps, max_rows)},

      {"caps", "max_fragments", Kind::kCount, 1, kIndexCapsLimits.max_fragments, "Fragments of the indexed snapshot.",
       VIGIL_NUM_(caps, max_fragments)},

      {"caps", "max_vector_dimension", Kind::kCount, 1, kIndexCapsLimits.max_vector_dimension,
       "Dimension of an indexed vector column.", VIGIL_NUM_(caps, max_vector_dimension)},

      {"caps", "max_partitions", Kind::kCount, 1, kIndexCapsLimits.max_partitions, "IVF num_partitions of one index.",
       VIGIL_NUM_(caps, max_partitions)},

      {"caps", "max_sub_vectors", Kind::kCount, 1, kIndexCapsLimits.max_sub_vectors,
       "PQ num_sub_vectors of one index; at most max_vector_dimension.", VIGIL_NUM_(caps, max_sub_vectors)},
  };
}

}  // namespace config_detail

}  // namespace vigil
