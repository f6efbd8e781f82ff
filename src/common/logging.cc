#include "vigil/common/logging.h"

#include <spdlog/sinks/stdout_sinks.h>

#include <cstdlib>

namespace vigil {

void InitLogging() {
  auto logger = spdlog::stderr_logger_mt("vigil");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  const char* level = std::getenv("VIGIL_LOG");
  spdlog::set_level(level ? spdlog::level::from_str(level) : spdlog::level::warn);
}

}  // namespace vigil
