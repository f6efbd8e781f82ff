// The [lance] settings of vigil.toml: how the Lance runner of external Lance
// tables is started, and how long a read of a dataset may take.
#include "common/config_settings.h"

namespace vigil {

namespace config_detail {

std::vector<Setting> LanceSettings() {
  return {
      {"lance", "node", Kind::kPath, 0, 0,
       "The Node executable that runs the Lance runner of external Lance tables\n"
       "(CREATE EXTERNAL TABLE ... ENGINE = lance) in the isolated worker.",
       VIGIL_STR_(lance, node)},

      {"lance", "runner", Kind::kPath, 0, 0,
       "The Lance runner program (lance_runner.mjs, with its node_modules beside it).\n"
       "Empty: the one in this build's source tree, src/lance/runner.",
       VIGIL_STR_(lance, runner)},

      {"lance", "read_timeout_seconds", Kind::kDuration, 1, 3600,
       "How long a read of an external Lance dataset may take (CREATE EXTERNAL TABLE's\n"
       "probe, SHOW INDEX, vigil_indexes / vigil_index_entries, an index request's\n"
       "admission); past it the runner is killed and the statement fails with\n"
       "DEADLINE_EXCEEDED. Seconds or \"<n>s|m|h|d\".",
       VIGIL_NUM_(lance, read_timeout_seconds)},
  };
}

}  // namespace config_detail

}  // namespace vigil
