#include "testutil/golden.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "testutil/golden_runner.h"
#include "testutil/temp_dir.h"

namespace vigil::testing {
namespace {

TEST(GoldenTest, FormatRoundTrips) {
  const std::string text =
      "# a comment\nparse\nSHOW TABLES\n----\nSHOW TABLES\n\nparse x y\nA\nB\n----\nerror: E at 1:1: m\n\n"
      "statement ok\nDROP TABLE t\n";
  auto recs = ParseGolden(text);
  ASSERT_TRUE(recs.ok()) << recs.status().ToString();
  ASSERT_EQ(recs->size(), 3u);
  EXPECT_EQ((*recs)[0].comment, "# a comment\n");
  EXPECT_EQ((*recs)[1].args, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ((*recs)[1].input, "A\nB");
  EXPECT_EQ((*recs)[1].line, 7);
  EXPECT_FALSE((*recs)[2].has_expected);
  EXPECT_EQ(FormatGolden(*recs), text);
  EXPECT_FALSE(ParseGolden("parse\n----\nx\n").ok());
}

TEST(GoldenTest, FilesAreSortedAndNarrowedByPath) {
  TempDir dir;
  for (const char* name : {"b.test", "a.test", "notes.txt"}) std::ofstream(dir.Join(name)) << "";
  std::vector<std::filesystem::path> all = GoldenFiles(dir.path());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].filename(), "a.test");
  const std::string dir_name = std::filesystem::path(dir.path()).filename().string();
  ::setenv("VIGIL_GOLDEN_FILE", (dir_name + "/b.test").c_str(), 1);
  std::vector<std::filesystem::path> one = GoldenFiles(dir.path());
  ::setenv("VIGIL_GOLDEN_FILE", "other/b.test", 1);
  std::vector<std::filesystem::path> none = GoldenFiles(dir.path());
  ::unsetenv("VIGIL_GOLDEN_FILE");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].filename(), "b.test");
  EXPECT_TRUE(none.empty());
}

TEST(GoldenTest, AnEmptyDirectoryIsAFailingParameter) {
  TempDir dir;
  EXPECT_EQ(GoldenFiles(dir.path()), std::vector<std::filesystem::path>{dir.path()});
  EXPECT_EQ(ReadGoldenFile(dir.path()).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace vigil::testing
