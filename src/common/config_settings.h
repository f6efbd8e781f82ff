// The settings of vigil.toml as a table, for the config*.cc files alone: each
// setting's section, name, kind, range, accessors on a Config and the comment
// the default file carries, one table per section (config_<section>.cc), and the
// value checks shared by the TOML reader (config_toml.cc) and ValidateConfig.
// Thread safety: the tables are immutable once built; everything here is pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vigil/common/bounds.h"
#include "vigil/common/config.h"
#include "vigil/common/status.h"

namespace vigil::config_detail {

inline constexpr uint64_t kKiB = uint64_t{1} << 10;
inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;
inline constexpr uint64_t kTiB = uint64_t{1} << 40;
inline constexpr uint64_t kPiB = uint64_t{1} << 50;
inline constexpr uint64_t kMinute = 60;
inline constexpr uint64_t kHour = 3600;
inline constexpr uint64_t kDay = 86400;

// Extra processes/threads a worker needs beyond its OpenMP pool: the main
// thread, OpenBLAS/FAISS helpers, the dynamic loader's and libc's own.
inline constexpr uint64_t kPidsHeadroom = 16;
inline constexpr uint64_t kMaxOmpThreads = 1024;

// kDurationMs: milliseconds, written only with a unit (or 0), since a bare number means
// seconds for kDuration but milliseconds in PostgreSQL's statement_timeout.
// kPathList: an array of absolute paths. kAddress: "host:port" (ParseListenAddress).
enum class Kind { kBool, kCount, kSize, kDuration, kDurationMs, kPath, kPathList, kAddress, kDatabaseUrl };

// One setting: where it lives, its type and range, how to read and write it on
// a Config, and the comment the default file carries above it.
struct Setting {
  std::string_view section;
  std::string_view name;
  Kind kind;
  uint64_t min = 0;
  uint64_t max = 0;
  std::string_view help;
  uint64_t (*get_num)(const Config&) = nullptr;
  void (*set_num)(Config&, uint64_t) = nullptr;
  bool (*get_bool)(const Config&) = nullptr;
  void (*set_bool)(Config&, bool) = nullptr;
  const std::string& (*get_str)(const Config&) = nullptr;
  void (*set_str)(Config&, std::string) = nullptr;
  const std::vector<std::string>& (*get_list)(const Config&) = nullptr;
  void (*set_list)(Config&, std::vector<std::string>) = nullptr;

  std::string Key() const { return std::string(section) + "." + std::string(name); }
};

#define VIGIL_NUM_(sec, field)                             \
  [](const Config& c) -> uint64_t { return c.sec.field; }, \
      [](Config& c, uint64_t v) { c.sec.field = static_cast<decltype(c.sec.field)>(v); }
#define VIGIL_BOOL_(sec, field) \
  nullptr, nullptr, [](const Config& c) -> bool { return c.sec.field; }, [](Config& c, bool v) { c.sec.field = v; }
#define VIGIL_STR_(sec, field)                                                                           \
  nullptr, nullptr, nullptr, nullptr, [](const Config& c) -> const std::string& { return c.sec.field; }, \
      [](Config& c, std::string v) { c.sec.field = std::move(v); }
#define VIGIL_LIST_(sec, field)                                                       \
  nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,                               \
      [](const Config& c) -> const std::vector<std::string>& { return c.sec.field; }, \
      [](Config& c, std::vector<std::string> v) { c.sec.field = std::move(v); }
// Each section's settings in file order.
std::vector<Setting> MutationSettings();
std::vector<Setting> WorkerSettings();
std::vector<Setting> CapsSettings();
std::vector<Setting> JobsSettings();
std::vector<Setting> GenerationsSettings();
std::vector<Setting> SqlSettings();
std::vector<Setting> ServerSettings();
std::vector<Setting> MetaSettings();
std::vector<Setting> LanceSettings();
std::vector<Setting> StorageSettings();

// Every setting, the sections in the order of kSections.
const std::vector<Setting>& Settings();
inline constexpr std::string_view kSections[] = {"mutation", "worker", "caps", "jobs",  "generations",
                                                 "sql",      "server", "meta", "lance", "storage"};
// The setting `section`.`name`; null when there is none.
const Setting* FindSetting(std::string_view section, std::string_view name);

// A number of setting `s` as the file writes it ("8GiB", "30s", "500ms", "12").
std::string FormatNumber(const Setting& s, uint64_t v);
// The value of `s` in `c` as a TOML literal.
std::string RenderValue(const Setting& s, const Config& c);
// InvalidArgument "<where>: <key>: <problem>".
Status Bad(const std::string& where, std::string_view key, const std::string& problem);
// InvalidArgument naming the allowed range when `v` lies outside it.
Status CheckRange(const Setting& s, uint64_t v);
// One entry of a kPathList: absolute, printable, without '..' components.
Status CheckListedPath(const std::string& p);
// Rules between settings: (key the problem is reported at, problem).
std::optional<std::pair<std::string, std::string>> CrossCheck(const Config& c);

}  // namespace vigil::config_detail
