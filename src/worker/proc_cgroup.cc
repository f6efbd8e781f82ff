#include "worker/proc_cgroup.h"

#include <cctype>

#include "vigil/common/file_system.h"

namespace vigil::worker {

namespace {

constexpr size_t kMaxProcFileBytes = 4 << 20;

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isdigit(static_cast<unsigned char>(s[i + 2])) && std::isdigit(static_cast<unsigned char>(s[i + 3]))) {
      out.push_back(static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    out.push_back(text.substr(0, eol));
    if (eol == std::string_view::npos) break;
    text.remove_prefix(eol + 1);
  }
  return out;
}

}  // namespace

std::vector<std::string> SplitNonEmpty(std::string_view s, char sep) {
  std::vector<std::string> out;
  while (!s.empty()) {
    const size_t at = s.find(sep);
    if (at != 0) out.emplace_back(s.substr(0, at));
    if (at == std::string_view::npos) break;
    s.remove_prefix(at + 1);
  }
  return out;
}

std::vector<CgroupMount> ParseCgroupMounts(std::string_view mountinfo) {
  std::vector<CgroupMount> out;
  for (std::string_view line : Lines(mountinfo)) {
    const std::vector<std::string> f = SplitNonEmpty(line, ' ');
    size_t dash = 0;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (f.size() < 5 || dash + 3 >= f.size()) continue;  // no " - fstype source options" part
    CgroupMount m{Unescape(f[3]), Unescape(f[4]), f[dash + 1], SplitNonEmpty(f[dash + 3], ',')};
    if (m.fstype == "cgroup" || m.fstype == "cgroup2") out.push_back(std::move(m));
  }
  return out;
}

std::vector<CgroupLine> ParseCgroupLines(std::string_view text) {
  std::vector<CgroupLine> out;
  for (std::string_view line : Lines(text)) {
    const size_t a = line.find(':');
    const size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    CgroupLine c;
    c.controllers = SplitNonEmpty(line.substr(a + 1, b - a - 1), ',');
    c.path = std::string(line.substr(b + 1));
    c.v2 = line.substr(0, a) == "0" && c.controllers.empty();
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<CgroupMount> CgroupMounts() {
  Result<std::string> text = ReadKernelFile("/proc/self/mountinfo", kMaxProcFileBytes);
  return text.ok() ? ParseCgroupMounts(*text) : std::vector<CgroupMount>{};
}

std::vector<CgroupLine> ProcCgroupLines(const std::string& pid) {
  Result<std::string> text = ReadKernelFile("/proc/" + pid + "/cgroup", kMaxProcFileBytes);
  return text.ok() ? ParseCgroupLines(*text) : std::vector<CgroupLine>{};
}

std::string DirUnder(const CgroupMount& m, const std::string& path) {
  std::string rel;
  if (m.root == "/") {
    rel = path;
  } else if (path == m.root) {
    rel = "/";
  } else if (path.rfind(m.root + "/", 0) == 0) {
    rel = path.substr(m.root.size());
  } else {
    return "";
  }
  if (rel == "/") return m.mount_point;
  return (m.mount_point == "/" ? "" : m.mount_point) + rel;
}

std::string ReadFirstLine(const std::string& path) {
  Result<std::string> text = ReadKernelFile(path, kMaxProcFileBytes);
  if (!text.ok()) return "";
  return text->substr(0, text->find('\n'));
}

}  // namespace vigil::worker
