// The [storage] settings of vigil.toml: how a process reads tables (its cache
// of decoded column blocks).
#include "common/config_settings.h"

namespace vigil {

namespace config_detail {

std::vector<Setting> StorageSettings() {
  return {
      {"storage", "block_cache_bytes", Kind::kSize, 0, kPiB,
       "Decoded column blocks of table fragments one process keeps in memory, shared\n"
       "by every table it reads; the least recently used go first. A process takes\n"
       "the size from the root its SQL sessions open (`vigil serve`, `vigil sql`).\n"
       "0: nothing is cached and every read decodes its blocks again. Bytes or\n"
       "\"<n>KiB|MiB|GiB|TiB\".",
       VIGIL_NUM_(storage, block_cache_bytes)},
  };
}

}  // namespace config_detail

}  // namespace vigil
