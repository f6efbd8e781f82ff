#include "testutil/golden.h"

#include <fstream>
#include <sstream>

namespace vigil::testing {

namespace {

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::string cur;
  for (char c : text) {
    if (c == '\n') {
      if (!cur.empty() && cur.back() == '\r') cur.pop_back();
      lines.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) lines.push_back(std::move(cur));
  return lines;
}

bool IsBlank(const std::string& s) { return s.find_first_not_of(" \t") == std::string::npos; }

}  // namespace

Result<std::vector<GoldenRecord>> ParseGolden(const std::string& text) {
  std::vector<std::string> lines = SplitLines(text);
  std::vector<GoldenRecord> out;
  size_t i = 0;
  while (i < lines.size()) {
    if (IsBlank(lines[i])) {
      ++i;
      continue;
    }
    GoldenRecord r;
    while (i < lines.size() && !lines[i].empty() && lines[i][0] == '#') r.comment += lines[i++] + "\n";
    if (i >= lines.size() || IsBlank(lines[i])) {
      if (!r.comment.empty()) {
        r.line = static_cast<int>(i);
        out.push_back(std::move(r));  // a trailing comment block: no directive
      }
      continue;
    }
    r.line = static_cast<int>(i + 1);
    std::istringstream header(lines[i++]);
    header >> r.directive;
    for (std::string a; header >> a;) r.args.push_back(a);
    std::vector<std::string> input;
    while (i < lines.size() && !IsBlank(lines[i]) && lines[i] != "----") input.push_back(lines[i++]);
    if (input.empty()) {
      return Status::InvalidArgument("golden line " + std::to_string(r.line) + ": record '" + r.directive +
                                     "' has no input");
    }
    for (size_t k = 0; k < input.size(); ++k) r.input += (k ? "\n" : "") + input[k];
    if (i < lines.size() && lines[i] == "----") {
      r.has_expected = true;
      ++i;
      std::vector<std::string> expected;
      while (i < lines.size() && !IsBlank(lines[i])) expected.push_back(lines[i++]);
      for (size_t k = 0; k < expected.size(); ++k) r.expected += (k ? "\n" : "") + expected[k];
    }
    out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<GoldenRecord>> ReadGoldenFile(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return Status::NotFound("no golden file " + path.string());
  std::ifstream in(path);
  if (!in) return Status::IOError("cannot read golden file " + path.string());
  std::stringstream text;
  text << in.rdbuf();
  return ParseGolden(text.str());
}

std::string FormatGolden(const std::vector<GoldenRecord>& records) {
  std::string out;
  for (size_t k = 0; k < records.size(); ++k) {
    const GoldenRecord& r = records[k];
    if (k > 0) out += "\n";
    out += r.comment;
    if (r.directive.empty()) continue;
    out += r.directive;
    for (const std::string& a : r.args) out += " " + a;
    out += "\n" + r.input + "\n";
    if (r.has_expected) {
      out += "----\n";
      if (!r.expected.empty()) out += r.expected + "\n";
    }
  }
  return out;
}

std::string FormatGoldenError(const std::string& code, uint32_t line, uint32_t column, const std::string& message) {
  return "error: " + code + " at " + std::to_string(line) + ":" + std::to_string(column) + ": " + message;
}

}  // namespace vigil::testing
