#include "testutil/golden_runner.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>

namespace vigil::testing {

namespace {

// Whether `path` ends with `suffix`, compared component by component.
bool EndsWith(const std::filesystem::path& path, const std::filesystem::path& suffix) {
  std::vector<std::filesystem::path> a(path.begin(), path.end());
  std::vector<std::filesystem::path> b(suffix.begin(), suffix.end());
  return b.size() <= a.size() && std::equal(b.rbegin(), b.rend(), a.rbegin());
}

}  // namespace

std::vector<std::filesystem::path> GoldenFiles(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".test") files.push_back(entry.path());
  }
  if (files.empty()) return {dir};
  std::sort(files.begin(), files.end());
  const char* only = std::getenv("VIGIL_GOLDEN_FILE");
  if (only == nullptr || *only == '\0') return files;
  std::erase_if(files, [&](const std::filesystem::path& f) {
    return !EndsWith(f, std::filesystem::path(only).lexically_normal());
  });
  return files;
}

std::string GoldenFileName(const ::testing::TestParamInfo<std::filesystem::path>& info) {
  return info.param.stem().string();
}

bool GoldenRewrite() { return std::getenv("VIGIL_GOLDEN_REWRITE") != nullptr; }

size_t RunGoldenFile(const std::filesystem::path& path, const GoldenRunFn& run) {
  Result<std::vector<GoldenRecord>> records = ReadGoldenFile(path);
  if (!records.ok()) {
    ADD_FAILURE() << path.string() << ": " << records.status().ToString();
    return 0;
  }
  const bool rewrite = GoldenRewrite();
  size_t ran = 0;
  for (GoldenRecord& r : *records) {
    if (r.directive.empty()) continue;
    std::optional<std::string> actual = run(r);
    if (!actual) continue;
    ++ran;
    if (rewrite) {
      r.has_expected = r.has_expected || !actual->empty();
      r.expected = *actual;
      continue;
    }
    EXPECT_EQ(*actual, r.expected) << path.filename().string() << ":" << r.line << "\n" << r.input;
  }
  if (rewrite) std::ofstream(path) << FormatGolden(*records);
  return ran;
}

}  // namespace vigil::testing
