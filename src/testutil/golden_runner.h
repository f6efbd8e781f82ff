// The one runner of golden files (golden.h) for GoogleTest suites: each record
// of a file goes through the suite's function and its output is compared with
// the record's expected lines. A suite is parameterized by file, one test per
// file named after the file's stem:
//
//   class ExecGoldenTest : public ::testing::TestWithParam<std::filesystem::path> {};
//   TEST_P(ExecGoldenTest, Matches) {
//     ExecEnv env;
//     EXPECT_GT(RunGoldenFile(GetParam(), [&](const GoldenRecord& r) { return env.Run(r); }), 5u);
//   }
//   GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ExecGoldenTest);
//   INSTANTIATE_TEST_SUITE_P(Exec, ExecGoldenTest, ::testing::ValuesIn(GoldenFiles(dir)), GoldenFileName);
//
// Running one file:
//   VIGIL_GOLDEN_FILE=exec/ddl.test <test binary>    only the files whose path ends with it
//   <test binary> --gtest_filter='Exec/*/ddl'        or by test name (ctest -R 'Exec/.*/ddl$')
// VIGIL_GOLDEN_REWRITE=1 writes each record's actual output into the file instead
// of comparing (review the diff before committing it).
// Not thread-safe: one golden test at a time per process.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "testutil/golden.h"

namespace vigil::testing {

// The *.test files of `dir`, sorted, narrowed by VIGIL_GOLDEN_FILE when it is set.
// A directory without any golden file gives {dir}, so the suite fails instead of
// silently running nothing.
std::vector<std::filesystem::path> GoldenFiles(const std::filesystem::path& dir);
// The test name of a golden-file parameter: the file's stem ("ddl").
std::string GoldenFileName(const ::testing::TestParamInfo<std::filesystem::path>& info);
// Whether VIGIL_GOLDEN_REWRITE is set.
bool GoldenRewrite();

// A record's actual output, or nullopt for a directive the suite does not run.
using GoldenRunFn = std::function<std::optional<std::string>(const GoldenRecord& record)>;

// Runs every record of `path` with a directive through `run` and EXPECTs its output
// to equal the expected lines (failures name file:line and show the input); under
// VIGIL_GOLDEN_REWRITE stores the outputs and rewrites the file. Returns how many
// records ran.
size_t RunGoldenFile(const std::filesystem::path& path, const GoldenRunFn& run);

}  // namespace vigil::testing
