// The registry of vigil.toml settings: every section's table in file order, the
// lookup of one setting, and the checks of values and of rules between settings
// that the TOML reader and ValidateConfig share.
#include "vigil/common/config.h"

#include <string>
#include <utility>
#include <vector>

#include "common/config_settings.h"

namespace vigil {

namespace config_detail {

const std::vector<Setting>& Settings() {
  static const std::vector<Setting> kSettings = [] {
    std::vector<Setting> all;
    for (std::vector<Setting> (*section)() :
         {MutationSettings, WorkerSettings, CapsSettings, JobsSettings, GenerationsSettings, SqlSettings,
          ServerSettings, MetaSettings, LanceSettings, StorageSettings}) {
      for (Setting& s : section()) all.push_back(std::move(s));
    }
    return all;
  }();
  return kSettings;
}

const Setting* FindSetting(std::string_view section, std::string_view name) {
  for (const Setting& s : Settings()) {
    if (s.section == section && s.name == name) return &s;
  }
  return nullptr;
}

std::string FormatNumber(const Setting& s, uint64_t v) {
  switch (s.kind) {
    case Kind::kSize:
      return FormatSize(v);
    case Kind::kDuration:
      return FormatDuration(v);
    case Kind::kDurationMs:
      return FormatDurationMs(v);
    default:
      return std::to_string(v);
  }
}

Status Bad(const std::string& where, std::string_view key, const std::string& problem) {
  return Status::InvalidArgument(where + ": " + std::string(key) + ": " + problem);
}

Status CheckRange(const Setting& s, uint64_t v) {
  if (v < s.min || v > s.max) {
    std::string range = FormatNumber(s, s.min) + ".." + FormatNumber(s, s.max);
    return Status::InvalidArgument("must be in " + range + " (got " + FormatNumber(s, v) + ")");
  }
  return Status::OK();
}

// One entry of a kPathList: absolute, printable, without '..' components.
Status CheckListedPath(const std::string& p) {
  if (p.empty() || p.front() != '/') return Status::InvalidArgument("must be an absolute path (got \"" + p + "\")");
  if (p.size() > 4096) return Status::InvalidArgument("is not a usable path (longer than 4096 bytes)");
  for (char ch : p) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {
      return Status::InvalidArgument("is not a usable path (it holds a control character)");
    }
  }
  if ((p + "/").find("/../") != std::string::npos) {
    return Status::InvalidArgument("must not contain '..' (got \"" + p + "\")");
  }
  return Status::OK();
}

// Rules between settings: (key the problem is reported at, problem).
std::optional<std::pair<std::string, std::string>> CrossCheck(const Config& c) {
  if (uint64_t{c.worker.pids_max} < uint64_t{c.worker.omp_threads} + kPidsHeadroom) {
    return std::make_pair(std::string("worker.pids_max"), "must be at least worker.omp_threads + " +
                                                              std::to_string(kPidsHeadroom) + " = " +
                                                              std::to_string(c.worker.omp_threads + kPidsHeadroom) +
                                                              " (got " + std::to_string(c.worker.pids_max) + ")");
  }
  if (c.caps.max_sub_vectors > c.caps.max_vector_dimension) {
    return std::make_pair(std::string("caps.max_sub_vectors"),
                          "must not exceed caps.max_vector_dimension = " + std::to_string(c.caps.max_vector_dimension) +
                              " (got " + std::to_string(c.caps.max_sub_vectors) + ")");
  }
  if (c.jobs.reconcile_max_backoff_seconds < c.jobs.reconcile_initial_backoff_seconds) {
    return std::make_pair(std::string("jobs.reconcile_max_backoff_seconds"),
                          "must be at least jobs.reconcile_initial_backoff_seconds = " +
                              FormatDuration(c.jobs.reconcile_initial_backoff_seconds) + " (got " +
                              FormatDuration(c.jobs.reconcile_max_backoff_seconds) + ")");
  }
  if (uint64_t{c.generations.physical_per_table} < uint64_t{c.generations.builders_per_table} + 2) {
    return std::make_pair(std::string("generations.physical_per_table"),
                          "must be at least generations.builders_per_table + 2 = " +
                              std::to_string(c.generations.builders_per_table + 2) + " (got " +
                              std::to_string(c.generations.physical_per_table) + ")");
  }
  return std::nullopt;
}

}  // namespace config_detail

using config_detail::Bad;
using config_detail::CheckListedPath;
using config_detail::CheckRange;
using config_detail::CrossCheck;
using config_detail::Kind;
using config_detail::Setting;
using config_detail::Settings;

Status ValidateConfig(const Config& config) {
  for (const Setting& s : Settings()) {
    if (s.kind == Kind::kBool) continue;
    if (s.kind == Kind::kAddress) {
      Status st = ParseListenAddress(s.get_str(config)).status();
      if (!st.ok()) return Bad("config", s.Key(), st.message());
      continue;
    }
    if (s.kind == Kind::kDatabaseUrl) {
      Status st = CheckMetaUrl(s.get_str(config));
      if (!st.ok()) return Bad("config", s.Key(), st.message());
      continue;
    }
    if (s.kind == Kind::kPath) {
      const std::string& p = s.get_str(config);
      if (!p.empty() && p != kCgroupParentV1 && p.front() != '/') {
        return Bad("config", s.Key(), "must be empty, \"v1\" or an absolute path");
      }
      continue;
    }
    if (s.kind == Kind::kPathList) {
      const std::vector<std::string>& paths = s.get_list(config);
      if (paths.size() > s.max) return Bad("config", s.Key(), "has more than " + std::to_string(s.max) + " entries");
      for (const std::string& p : paths) {
        Status st = CheckListedPath(p);
        if (!st.ok()) return Bad("config", s.Key(), st.message());
      }
      continue;
    }
    Status st = CheckRange(s, s.get_num(config));
    if (!st.ok()) return Bad("config", s.Key(), st.message());
  }
  if (auto problem = CrossCheck(config)) return Bad("config", problem->first, problem->second);
  return Status::OK();
}

}  // namespace vigil
