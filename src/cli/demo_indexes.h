// The index part of `vigil demo`. Single-threaded.
#pragma once

#include <string>

#include "vigil/common/status.h"
#include "vigil/storage/datagen.h"

namespace vigil::cli {

// Builds emb_idx (IVF_PQ), cat_idx (BITMAP), ts_idx (BTREE) and body_idx (FTS)
// on the demo table at `table_path` and prints one query of each kind.
Status RunIndexDemo(const std::string& table_path, const DataGenerator& gen);

}  // namespace vigil::cli
