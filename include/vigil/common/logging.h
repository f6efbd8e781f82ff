// Process-wide logging through spdlog, to stderr. Thread-safe.
#pragma once

#include <spdlog/spdlog.h>

namespace vigil {

// Sets the level from VIGIL_LOG (trace|debug|info|warn|error|off); default warn.
void InitLogging();

}  // namespace vigil

#define VIGIL_LOG_DEBUG(...) SPDLOG_DEBUG(__VA_ARGS__)
#define VIGIL_LOG_INFO(...) ::spdlog::info(__VA_ARGS__)
#define VIGIL_LOG_WARN(...) ::spdlog::warn(__VA_ARGS__)
#define VIGIL_LOG_ERROR(...) ::spdlog::error(__VA_ARGS__)
