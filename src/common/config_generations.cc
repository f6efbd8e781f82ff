// The [generations] settings of vigil.toml: how many index generations a table
// keeps open, the memory and disk they may hold, and how fresh a statement's view
// of the version catalog is.
#include "common/config_settings.h"

namespace vigil {

namespace config_detail {

std::vector<Setting> GenerationsSettings() {
  return {
      {"generations", "builders_per_table", Kind::kCount, 1, 16, "Index builds running at once per table.",
       VIGIL_NUM_(generations, builders_per_table)},

      {"generations", "physical_per_table", Kind::kCount, 3, 64,
       "Physical generations open per table: current, retired and one per\n"
       "builder, so at least builders_per_table + 2.",
       VIGIL_NUM_(generations, physical_per_table)},

      {"generations", "memory_budget_bytes", Kind::kSize, kMiB, kPiB,
       "Index segment bytes the open generations of a process's tables may hold;\n"
       "opening a generation past it is refused (RESOURCE_EXHAUSTED) and the\n"
       "current generation stays.",
       VIGIL_NUM_(generations, memory_budget_bytes)},

      {"generations", "disk_budget_bytes", Kind::kSize, kMiB, uint64_t{1} << 60,
       "Index segment bytes on disk that the open generations of a process's\n"
       "tables keep from VACUUM; opening a generation past it is refused.",
       VIGIL_NUM_(generations, disk_budget_bytes)},

      {"generations", "catalog_staleness", Kind::kDurationMs, 0, 3'600'000,
       "A table's newest version is committed in the metadata store and then linked\n"
       "as a manifest file. A statement sees every linked version at once (one file\n"
       "check); the store is asked again only this long after it last was, which\n"
       "bounds how late a version committed but not yet linked (its writer died\n"
       "between the two) is seen. \"<n>ms|s|m|h\"; 0 asks the store every statement.",
       VIGIL_NUM_(generations, catalog_staleness_ms)},
  };
}

}  // namespace config_detail

}  // namespace vigil
