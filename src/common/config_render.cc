// vigil.toml written out: the commented default file, a Config as such a file,
// and the effective settings `vigil doctor` lists.
#include <algorithm>
#include <string>
#include <vector>

#include "common/config_settings.h"

namespace vigil {

namespace config_detail {

std::string TomlString(const std::string& text) {
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"' || ch == '\\') out.push_back('\\');
    out.push_back(ch);
  }
  return out + "\"";
}

// The value as a TOML literal.
std::string RenderValue(const Setting& s, const Config& c) {
  switch (s.kind) {
    case Kind::kBool:
      return s.get_bool(c) ? "true" : "false";
    case Kind::kCount:
      return std::to_string(s.get_num(c));
    case Kind::kSize:
    case Kind::kDuration: {
      std::string f = FormatNumber(s, s.get_num(c));
      // Plain byte or second counts render as integers.
      if (!f.empty() && f.back() >= '0' && f.back() <= '9') return f;
      return "\"" + f + "\"";
    }
    case Kind::kDurationMs: {
      std::string f = FormatNumber(s, s.get_num(c));
      return f == "0" ? f : "\"" + f + "\"";
    }
    case Kind::kPath:
    case Kind::kAddress:
    case Kind::kDatabaseUrl:
      return TomlString(s.get_str(c));
    case Kind::kPathList: {
      std::string out = "[";
      for (const std::string& p : s.get_list(c)) out += (out.size() > 1 ? ", " : "") + TomlString(p);
      return out + "]";
    }
  }
  return "";
}

}  // namespace config_detail

using config_detail::RenderValue;
using config_detail::Setting;
using config_detail::Settings;

std::string RenderDefaultConfig() { return RenderConfig(Config()); }

std::string RenderConfig(const Config& config) {
  const Config defaults;
  std::string out =
      "# vigil.toml: administrator settings of this root (seed 000 section 10.2).\n"
      "#\n"
      "# Every setting is listed with its default, commented out; uncomment a line to\n"
      "# change it. Sizes are bytes or strings like \"8GiB\" (B, KiB, MiB, GiB, TiB,\n"
      "# PiB); durations are seconds or strings like \"30s\", \"10m\", \"1h\", \"7d\".\n"
      "# Unknown keys, wrong types and out-of-range values are errors; run\n"
      "# `vigil --root DIR doctor` to check this file and see the effective values.\n";
  std::string_view current;
  for (const Setting& s : Settings()) {
    if (s.section != current) {
      current = s.section;
      out += "\n[" + std::string(current) + "]\n";
    } else {
      out += "\n";
    }
    std::string_view help = s.help;
    while (!help.empty()) {
      size_t nl = help.find('\n');
      out += "# " + std::string(help.substr(0, nl)) + "\n";
      help = nl == std::string_view::npos ? std::string_view() : help.substr(nl + 1);
    }
    const std::string value = RenderValue(s, config);
    out += (value == RenderValue(s, defaults) ? "# " : "") + std::string(s.name) + " = " + value + "\n";
  }
  return out;
}

std::vector<ConfigEntry> EffectiveSettings(const Config& config, const ConfigSource* source) {
  std::vector<ConfigEntry> out;
  for (const Setting& s : Settings()) {
    const std::string key = s.Key();
    std::string from = key == "worker.omp_threads" ? "default: usable cores" : "default";
    if (source != nullptr &&
        std::find(source->keys_set.begin(), source->keys_set.end(), key) != source->keys_set.end()) {
      from = std::string(kConfigFile);
    }
    out.push_back({key, RenderValue(s, config), std::move(from)});
  }
  return out;
}

}  // namespace vigil
