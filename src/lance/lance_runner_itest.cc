// RunLance against the real runner and a dataset LanceDB writes: inspect and a
// CREATE with its progress, the runner's refusals as typed statuses, a deadline
// that kills the runner's whole process group, and a runner that dies or exits
// without a result (an outcome the caller cannot know).
#include "vigil/lance/lance_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <unistd.h>

#include "testutil/temp_dir.h"
#include "vigil/lance/lance_table.h"

namespace vigil::lance {
namespace {

using ::testing::HasSubstr;

const std::string kRunnerDir = DefaultRunnerDir();

class LanceRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists("/usr/bin/node") ||
        !std::filesystem::exists(kRunnerDir + "/node_modules/@lancedb/lancedb")) {
      GTEST_SKIP() << "node or the pinned LanceDB package is not installed (scripts/install-deps.sh)";
    }
    const std::string make =
        "/usr/bin/node " + kRunnerDir + "/testdata/lance_writer.mjs create " + dir_.path() + " docs 500 8 > /dev/null";
    ASSERT_EQ(std::system(make.c_str()), 0);
    dataset_ = dir_.path() + "/docs.lance";
    options_.script_path = kRunnerDir + "/lance_runner.mjs";
  }

  // Whether a process whose command line contains `marker` is alive.
  static bool Running(const std::string& marker) {
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      std::ifstream in(e.path() / "cmdline", std::ios::binary);
      std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (cmdline.find(marker) != std::string::npos) return true;
    }
    return false;
  }

  std::string Script(const std::string& body) {
    const std::string path = dir_.path() + "/script.mjs";
    std::ofstream(path) << body;
    return path;
  }

  testing::TempDir dir_;
  std::string dataset_;
  LanceRunnerOptions options_;
};

TEST_F(LanceRunnerTest, InspectsAndCreatesAnIndexWithProgress) {
  Result<nlohmann::json> seen = RunLance({{"op", "inspect"}, {"dataset", dataset_}}, options_);
  ASSERT_TRUE(seen.ok()) << seen.status().ToString();
  EXPECT_EQ((*seen)["version"], 1);
  EXPECT_EQ((*seen)["fields"].size(), 4u);
  std::vector<std::string> phases;
  Result<nlohmann::json> made = RunLance({{"op", "create_index"},
                                          {"dataset", dataset_},
                                          {"expected_version", 1},
                                          {"name", "id_idx"},
                                          {"column", "id"},
                                          {"index_type", "BTREE"}},
                                         options_, [&](const nlohmann::json& p) { phases.push_back(p["phase"]); });
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ(phases, (std::vector<std::string>{"OPENING", "BUILDING"}));
  EXPECT_EQ((*made)["base_version"], 1);
  EXPECT_EQ((*made)["version"], 2);
  EXPECT_EQ((*made)["index"]["indexed_rows"], 500);
  EXPECT_FALSE((*made).contains("event"));
}

TEST_F(LanceRunnerTest, RefusalsAreTypedStatuses) {
  const nlohmann::json create = {{"op", "create_index"}, {"dataset", dataset_}, {"expected_version", 7},
                                 {"name", "ix"},         {"column", "id"},      {"index_type", "BTREE"}};
  Status stale = RunLance(create, options_).status();
  EXPECT_EQ(stale.code(), StatusCode::kFailedPrecondition) << stale.ToString();
  EXPECT_EQ(SubCodeOf(stale.message()), "STALE_ADMISSION");
  nlohmann::json bad = create;
  bad["index_type"] = "HNSW";
  EXPECT_EQ(RunLance(bad, options_).status().code(), StatusCode::kInvalidArgument);
  nlohmann::json missing = {{"op", "inspect"}, {"dataset", dir_.path() + "/nope.lance"}};
  EXPECT_EQ(RunLance(missing, options_).status().code(), StatusCode::kNotFound);
  LanceRunnerOptions no_node = options_;
  no_node.node_path = dir_.path() + "/no-node";
  EXPECT_THAT(RunLance(missing, no_node).status().message(), HasSubstr("cannot start the Lance runner"));
  EXPECT_EQ(RunLance(missing, LanceRunnerOptions{}).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(LanceRunnerTest, TheDeadlineKillsTheRunnerAndWhatItStarted) {
  // The script starts a grandchild that would outlive it, then waits forever.
  const std::string marker = "vigil-lance-deadline-" + std::to_string(getpid());
  options_.script_path = Script(
      "import {spawn} from 'node:child_process';\n"
      "spawn('/bin/sleep', ['300', '" +
      marker +
      "'], {stdio: 'ignore'});\n"
      "process.stdout.write(JSON.stringify({event: 'progress', phase: 'STARTED'}) + '\\n');\n"
      "setInterval(() => {}, 1000);\n");
  options_.timeout = std::chrono::milliseconds(5000);  // Node starts within it on a loaded machine
  int progress = 0;
  Status st = RunLance({{"op", "inspect"}}, options_, [&](const nlohmann::json&) { ++progress; }).status();
  EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded) << st.ToString();
  EXPECT_EQ(progress, 1);
  // `sleep` ignores nothing: SIGKILL of the group ended it; give the kernel a moment to reap it.
  for (int i = 0; i < 250 && Running(marker); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(Running(marker));
}

TEST_F(LanceRunnerTest, ARunnerThatDiesOrExitsWithoutAResultIsAnUnknownOutcome) {
  options_.script_path = Script("process.exit(3);\n");
  Status exited = RunLance({{"op", "inspect"}}, options_).status();
  EXPECT_EQ(exited.code(), StatusCode::kInternal);
  EXPECT_THAT(exited.message(), HasSubstr("exited with status 3 without a result; the request may have taken effect"));
  options_.script_path = Script("process.kill(process.pid, 'SIGKILL');\n");
  EXPECT_THAT(RunLance({{"op", "inspect"}}, options_).status().message(), HasSubstr("killed by signal 9"));
  options_.script_path = Script("console.log('not json');\n");
  EXPECT_EQ(RunLance({{"op", "inspect"}}, options_).status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace vigil::lance
