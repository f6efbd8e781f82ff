// Sizes and durations as vigil.toml writes them: "8GiB", "30s", "500ms", parsed
// and formatted.
#include <limits>
#include <string>
#include <utility>

#include "common/config_settings.h"

namespace vigil {

namespace {

using config_detail::kDay;
using config_detail::kGiB;
using config_detail::kHour;
using config_detail::kKiB;
using config_detail::kMiB;
using config_detail::kMinute;
using config_detail::kPiB;
using config_detail::kTiB;

// Splits "<digits><ws>*<unit>" and parses the number; InvalidArgument on overflow or no digits.
Status SplitNumber(std::string_view text, std::string_view what, uint64_t* number, std::string_view* unit) {
  size_t i = 0;
  while (i < text.size() && text[i] == ' ') ++i;
  size_t start = i;
  uint64_t n = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    uint64_t d = static_cast<uint64_t>(text[i] - '0');
    if (n > (std::numeric_limits<uint64_t>::max() - d) / 10) {
      return Status::InvalidArgument(std::string(what) + " \"" + std::string(text) + "\" is too large");
    }
    n = n * 10 + d;
    ++i;
  }
  if (i == start) {
    return Status::InvalidArgument(std::string(what) + " \"" + std::string(text.substr(0, 64)) +
                                   "\" must start with a non-negative whole number");
  }
  while (i < text.size() && text[i] == ' ') ++i;
  std::string_view u = text.substr(i);
  while (!u.empty() && u.back() == ' ') u.remove_suffix(1);
  *number = n;
  *unit = u;
  return Status::OK();
}

Result<uint64_t> Scale(std::string_view text, std::string_view what, uint64_t n, uint64_t mult) {
  if (mult != 0 && n > std::numeric_limits<uint64_t>::max() / mult) {
    return Status::InvalidArgument(std::string(what) + " \"" + std::string(text) + "\" is too large");
  }
  return n * mult;
}

}  // namespace

Result<uint64_t> ParseSize(std::string_view text) {
  uint64_t n = 0;
  std::string_view unit;
  VIGIL_RETURN_IF_ERROR(SplitNumber(text, "size", &n, &unit));
  static constexpr std::pair<std::string_view, uint64_t> kUnits[] = {
      {"", 1}, {"B", 1}, {"KiB", kKiB}, {"MiB", kMiB}, {"GiB", kGiB}, {"TiB", kTiB}, {"PiB", kPiB}};
  for (const auto& u : kUnits) {
    if (u.first == unit) return Scale(text, "size", n, u.second);
  }
  return Status::InvalidArgument("size \"" + std::string(text.substr(0, 64)) + "\" has unknown unit '" +
                                 std::string(unit.substr(0, 16)) +
                                 "'; use B, KiB, MiB, GiB, TiB or PiB (binary units)");
}

Result<uint64_t> ParseDuration(std::string_view text) {
  uint64_t n = 0;
  std::string_view unit;
  VIGIL_RETURN_IF_ERROR(SplitNumber(text, "duration", &n, &unit));
  static constexpr std::pair<std::string_view, uint64_t> kUnits[] = {
      {"", 1}, {"s", 1}, {"m", kMinute}, {"h", kHour}, {"d", kDay}};
  for (const auto& u : kUnits) {
    if (u.first == unit) return Scale(text, "duration", n, u.second);
  }
  return Status::InvalidArgument("duration \"" + std::string(text.substr(0, 64)) + "\" has unknown unit '" +
                                 std::string(unit.substr(0, 16)) + "'; use s, m, h or d");
}

Result<uint64_t> ParseDurationMs(std::string_view text) {
  uint64_t n = 0;
  std::string_view unit;
  VIGIL_RETURN_IF_ERROR(SplitNumber(text, "duration", &n, &unit));
  if (unit.empty() && n == 0) return uint64_t{0};
  static constexpr std::pair<std::string_view, uint64_t> kUnits[] = {
      {"ms", 1}, {"s", 1000}, {"m", kMinute * 1000}, {"h", kHour * 1000}, {"d", kDay * 1000}};
  for (const auto& u : kUnits) {
    if (u.first == unit) return Scale(text, "duration", n, u.second);
  }
  if (unit.empty()) {
    return Status::InvalidArgument("duration \"" + std::string(text.substr(0, 64)) +
                                   "\" needs a unit: ms, s, m, h or d");
  }
  return Status::InvalidArgument("duration \"" + std::string(text.substr(0, 64)) + "\" has unknown unit '" +
                                 std::string(unit.substr(0, 16)) + "'; use ms, s, m, h or d");
}

std::string FormatDurationMs(uint64_t ms) {
  if (ms == 0) return "0";
  if (ms % 1000 != 0) return std::to_string(ms) + "ms";
  return FormatDuration(ms / 1000);
}

std::string FormatSize(uint64_t bytes) {
  static constexpr std::pair<std::string_view, uint64_t> kUnits[] = {
      {"PiB", kPiB}, {"TiB", kTiB}, {"GiB", kGiB}, {"MiB", kMiB}, {"KiB", kKiB}};
  if (bytes == 0) return "0";
  for (const auto& u : kUnits) {
    if (bytes % u.second == 0) return std::to_string(bytes / u.second) + std::string(u.first);
  }
  return std::to_string(bytes);
}

std::string FormatDuration(uint64_t seconds) {
  static constexpr std::pair<std::string_view, uint64_t> kUnits[] = {{"d", kDay}, {"h", kHour}, {"m", kMinute}};
  if (seconds == 0) return "0";
  for (const auto& u : kUnits) {
    if (seconds % u.second == 0) return std::to_string(seconds / u.second) + std::string(u.first);
  }
  return std::to_string(seconds) + "s";
}

}  // namespace vigil
