// What the kernel says about cgroups, parsed in one place for the worker's cgroup placement
// (cgroup.cc) and the isolation probe (isolation.cc): the cgroup mounts of
// /proc/self/mountinfo and the lines of /proc/<pid>/cgroup.
//
// Thread safety: free functions, thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vigil::worker {

struct CgroupMount {
  std::string root;  // the hierarchy path mounted there
  std::string mount_point;
  std::string fstype;  // "cgroup" (v1) or "cgroup2"
  std::vector<std::string> super_options;
};

// One line of /proc/<pid>/cgroup, "<id>:<controllers>:<path>"; v2's is "0::<path>".
struct CgroupLine {
  std::vector<std::string> controllers;
  std::string path;
  bool v2 = false;
};

// The cgroup and cgroup2 mounts of mountinfo text, with its octal escapes (\040) undone.
std::vector<CgroupMount> ParseCgroupMounts(std::string_view mountinfo);
// The lines of /proc/<pid>/cgroup text.
std::vector<CgroupLine> ParseCgroupLines(std::string_view text);

// The same, read from /proc/self/mountinfo and /proc/<pid>/cgroup (`pid` "self" for this
// process); empty when the file cannot be read (no such process, no /proc).
std::vector<CgroupMount> CgroupMounts();
std::vector<CgroupLine> ProcCgroupLines(const std::string& pid);

// The directory of hierarchy path `path` under mount `m`; empty when the path is outside what
// the mount shows.
std::string DirUnder(const CgroupMount& m, const std::string& path);

// The items of `s` between separators `sep`, empty ones dropped ("memory pids\n" by ' '
// gives "memory", "pids\n"; trim first where a newline may end the text).
std::vector<std::string> SplitNonEmpty(std::string_view s, char sep);
// The first line of a /proc or /sys file without its newline; empty when it cannot be read.
std::string ReadFirstLine(const std::string& path);

}  // namespace vigil::worker
