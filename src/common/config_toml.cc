// The TOML reader of vigil.toml: parses the file, finds each key's setting,
// applies and checks its value, and names the file, key and line:column of any
// problem. The only translation unit that includes toml++ (header-only, without
// exceptions: parse errors come back as values).
#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#define TOML_ENABLE_FORMATTER 0
#include <toml++/toml.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/config_settings.h"
#include "vigil/common/env.h"
#include "vigil/common/file_system.h"

namespace vigil {

namespace {

using config_detail::Bad;
using config_detail::CheckListedPath;
using config_detail::CheckRange;
using config_detail::CrossCheck;
using config_detail::FindSetting;
using config_detail::FormatNumber;
using config_detail::Kind;
using config_detail::kSections;
using config_detail::Setting;
using config_detail::Settings;

std::string_view TypeName(toml::node_type t) {
  switch (t) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a floating-point number";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    default:
      return "nothing";
  }
}

std::string Pos(const std::string& path, const toml::source_region& r) {
  if (r.begin.line == 0) return path;
  return path + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
}

std::string ExpectedOf(const Setting& s) {
  switch (s.kind) {
    case Kind::kBool:
      return "true or false";
    case Kind::kCount:
      return s.min > 0 ? "a positive integer" : "a non-negative integer";
    case Kind::kSize:
      return "an integer (bytes) or a size string like \"8GiB\"";
    case Kind::kDuration:
      return "an integer (seconds) or a duration string like \"30s\", \"10m\", \"7d\"";
    case Kind::kDurationMs:
      return "a duration string like \"500ms\", \"60s\", \"5m\", or 0 (no timeout)";
    case Kind::kPath:
      return "a string";
    case Kind::kAddress:
      return "a string \"host:port\" like \"127.0.0.1:7431\"";
    case Kind::kPathList:
      return "an array of absolute paths like [\"/srv/imports\"]";
    case Kind::kDatabaseUrl:
      return "a string \"postgresql://user@host:port/db\" or \"\"";
  }
  return "";
}

// Applies one value node to `c`; the message has no position (the caller adds it).
// `at` is set to the element of an array at fault.
Status Apply(const Setting& s, const toml::node& v, Config* c, const toml::node** at) {
  std::string wrong = "expected " + ExpectedOf(s) + ", got " + std::string(TypeName(v.type()));
  switch (s.kind) {
    case Kind::kPathList: {
      const toml::array* array = v.as_array();
      if (array == nullptr) return Status::InvalidArgument(wrong);
      if (array->size() > s.max) {
        return Status::InvalidArgument("has " + std::to_string(array->size()) + " entries; at most " +
                                       std::to_string(s.max) + " are allowed");
      }
      std::vector<std::string> paths;
      for (const toml::node& e : *array) {
        *at = &e;
        const std::string entry = "entry " + std::to_string(paths.size() + 1) + " ";
        if (!e.is_string()) {
          return Status::InvalidArgument(entry + "is " + std::string(TypeName(e.type())) + "; expected a string");
        }
        Status st = CheckListedPath(e.as_string()->get());
        if (!st.ok()) return Status::InvalidArgument(entry + st.message());
        paths.push_back(e.as_string()->get());
      }
      *at = nullptr;
      s.set_list(*c, std::move(paths));
      return Status::OK();
    }
    case Kind::kBool:
      if (!v.is_boolean()) return Status::InvalidArgument(wrong);
      s.set_bool(*c, v.as_boolean()->get());
      return Status::OK();
    case Kind::kDatabaseUrl: {
      if (!v.is_string()) return Status::InvalidArgument(wrong);
      VIGIL_RETURN_IF_ERROR(CheckMetaUrl(v.as_string()->get()));
      s.set_str(*c, v.as_string()->get());
      return Status::OK();
    }
    case Kind::kAddress: {
      if (!v.is_string()) return Status::InvalidArgument(wrong);
      VIGIL_RETURN_IF_ERROR(ParseListenAddress(v.as_string()->get()).status());
      s.set_str(*c, v.as_string()->get());
      return Status::OK();
    }
    case Kind::kPath: {
      if (!v.is_string()) return Status::InvalidArgument(wrong);
      const std::string& p = v.as_string()->get();
      if (!p.empty() && p != kCgroupParentV1) {
        if (p.front() != '/') {
          return Status::InvalidArgument("must be empty, \"v1\" or an absolute path (got \"" + p + "\")");
        }
        if (p.size() > 4096 || p.find('\0') != std::string::npos) {
          return Status::InvalidArgument("is not a usable path");
        }
        if (("/" + p + "/").find("/../") != std::string::npos) {
          return Status::InvalidArgument("must not contain '..' (got \"" + p + "\")");
        }
      }
      s.set_str(*c, p);
      return Status::OK();
    }
    case Kind::kDurationMs: {
      uint64_t n = 0;
      if (v.is_integer() && v.as_integer()->get() == 0) {
        n = 0;
      } else if (v.is_string()) {
        VIGIL_ASSIGN_OR_RETURN(n, ParseDurationMs(v.as_string()->get()));
      } else if (v.is_integer()) {
        return Status::InvalidArgument("a number needs a unit here (got " + std::to_string(v.as_integer()->get()) +
                                       "); expected " + ExpectedOf(s));
      } else {
        return Status::InvalidArgument(wrong);
      }
      VIGIL_RETURN_IF_ERROR(CheckRange(s, n));
      s.set_num(*c, n);
      return Status::OK();
    }
    case Kind::kCount:
    case Kind::kSize:
    case Kind::kDuration: {
      uint64_t n = 0;
      if (v.is_integer()) {
        int64_t i = v.as_integer()->get();
        if (i < 0 || (i == 0 && s.min > 0)) {
          return Status::InvalidArgument(std::string(s.min > 0 ? "must be positive" : "must not be negative") +
                                         " (got " + std::to_string(i) + "); allowed " + FormatNumber(s, s.min) + ".." +
                                         FormatNumber(s, s.max));
        }
        n = static_cast<uint64_t>(i);
      } else if (v.is_string() && s.kind != Kind::kCount) {
        Result<uint64_t> parsed =
            s.kind == Kind::kSize ? ParseSize(v.as_string()->get()) : ParseDuration(v.as_string()->get());
        if (!parsed.ok()) return parsed.status();
        n = *parsed;
      } else {
        return Status::InvalidArgument(wrong);
      }
      VIGIL_RETURN_IF_ERROR(CheckRange(s, n));
      s.set_num(*c, n);
      return Status::OK();
    }
  }
  return Status::Internal("unhandled setting kind");
}

std::string KnownNames(std::string_view section) {
  std::string out;
  for (const Setting& s : Settings()) {
    if (s.section != section) continue;
    if (!out.empty()) out += ", ";
    out += s.name;
  }
  return out;
}

std::string KnownSections() {
  std::string out;
  for (std::string_view s : kSections) {
    if (!out.empty()) out += ", ";
    out.append("[").append(s).append("]");
  }
  return out;
}

bool Less(const toml::source_position& a, const toml::source_position& b) {
  return a.line != b.line ? a.line < b.line : a.column < b.column;
}

}  // namespace

Result<Config> ParseConfig(std::string_view text, const std::string& path, std::vector<std::string>* keys_set) {
  toml::parse_result parsed = toml::parse(text, std::string_view(path));
  if (!parsed) {
    const toml::parse_error& e = parsed.error();
    return Status::InvalidArgument(Pos(path, e.source()) + ": syntax error: " + std::string(e.description()));
  }
  const toml::table& root = parsed.table();
  Config config;
  // Every set key with its position, to report cross-field errors and to list in file order.
  std::vector<std::pair<toml::source_position, std::string>> seen;
  std::map<std::string, toml::source_region> where;
  for (auto&& entry : root) {
    const toml::key& section = entry.first;
    const toml::node& node = entry.second;
    if (std::find(std::begin(kSections), std::end(kSections), section.str()) == std::end(kSections)) {
      return Status::InvalidArgument(Pos(path, section.source()) + ": unknown section [" + std::string(section.str()) +
                                     "]; known sections: " + KnownSections());
    }
    const toml::table* table = node.as_table();
    if (table == nullptr) {
      return Bad(Pos(path, node.source()), section.str(),
                 "expected a table ([" + std::string(section.str()) + "]), got " + std::string(TypeName(node.type())));
    }
    for (auto&& kv : *table) {
      const toml::key& name = kv.first;
      const toml::node& value = kv.second;
      std::string key = std::string(section.str()) + "." + std::string(name.str());
      const Setting* s = FindSetting(section.str(), name.str());
      if (s == nullptr) {
        return Status::InvalidArgument(Pos(path, name.source()) + ": unknown setting " + key + "; known in [" +
                                       std::string(section.str()) + "]: " + KnownNames(section.str()));
      }
      const toml::node* at = nullptr;
      Status st = Apply(*s, value, &config, &at);
      if (!st.ok()) return Bad(Pos(path, at != nullptr ? at->source() : value.source()), key, st.message());
      seen.emplace_back(name.source().begin, key);
      where[key] = value.source();
    }
  }
  if (where.count("worker.omp_threads") == 0) config.worker.omp_threads = DefaultOmpThreads(config.worker.pids_max);
  if (auto problem = CrossCheck(config)) {
    auto it = where.find(problem->first);
    return Bad(it == where.end() ? path : Pos(path, it->second), problem->first, problem->second);
  }
  if (keys_set != nullptr) {
    std::sort(seen.begin(), seen.end(), [](const auto& a, const auto& b) { return Less(a.first, b.first); });
    keys_set->clear();
    for (auto& k : seen) keys_set->push_back(std::move(k.second));
  }
  return config;
}

Result<Config> LoadConfig(const std::string& root_dir, ConfigSource* source) {
  std::string path = root_dir.empty() ? std::string(kConfigFile)
                                      : (root_dir.back() == '/' ? root_dir : root_dir + "/") + std::string(kConfigFile);
  if (source != nullptr) *source = ConfigSource{path, false, {}};
  Result<std::string> text = Env::Default()->fs()->ReadFile(path, kMaxConfigBytes);
  if (text.status().Is(StatusCode::kNotFound)) return Config{};
  if (text.status().Is(StatusCode::kResourceExhausted)) {
    return Status::ResourceExhausted(path + " is larger than " + FormatSize(kMaxConfigBytes));
  }
  VIGIL_RETURN_IF_ERROR(text.status());
  std::vector<std::string> keys;
  VIGIL_ASSIGN_OR_RETURN(Config config, ParseConfig(*text, path, &keys));
  if (source != nullptr) {
    source->file_found = true;
    source->keys_set = std::move(keys);
  }
  return config;
}

}  // namespace vigil
