// Process-level tests of vigil.toml's index settings through the `vigil`
// binary: a raised [caps] cap reaches the worker, which builds what admission
// admitted; a worker out of memory names worker.memory_bytes; doctor says where
// worker.omp_threads comes from.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testutil/run_command.h"
#include "testutil/temp_dir.h"
#include "vigil/common/config.h"

namespace vigil {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Ran {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

Ran RunVigil(const std::string& args) {
  testing::CommandResult ran =
      testing::RunCommand("env -u VIGIL_ROOT " + std::string(VIGIL_CLI_BINARY) + " " + args + " 2>&1");
  return Ran{ran.exit_code, std::move(ran.output)};
}

class IndexSettingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.Join("root");
    ASSERT_EQ(RunVigil("init " + root_).exit_code, 0);
  }
  // vigil.toml with `text`, plus a supervisor that does not outlive the test by long.
  void Config(const std::string& text) {
    std::ofstream(root_ + "/vigil.toml") << "[jobs]\nsupervise_idle_exit_seconds = 1\n\n" << text;
  }

  // Imports `rows` x `dim` vectors as db.t (id BIGINT, vector VECTOR(FLOAT32, dim)).
  void ImportVectors(int rows, int dim) {
    const std::string path = dir_.Join("t.fvecs");
    {
      std::ofstream out(path, std::ios::binary);
      for (int i = 0; i < rows; ++i) {
        out.write(reinterpret_cast<const char*>(&dim), sizeof(dim));
        for (int d = 0; d < dim; ++d) {
          const float x = static_cast<float>((i * 7 + d * 3) % 11) + 0.01f * static_cast<float>(i % 13);
          out.write(reinterpret_cast<const char*>(&x), sizeof(x));
        }
      }
    }
    Ran r = RunVigil("--root " + root_ + " import db.t " + path + " --create");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  Ran Sql(const std::string& sql) { return RunVigil("--root " + root_ + " sql --csv -c \"" + sql + "\""); }

  testing::TempDir dir_;
  std::string root_;
};

TEST_F(IndexSettingsTest, ARaisedDimensionCapIsHonouredByTheWorker) {
  Config("[caps]\nmax_vector_dimension = 8192\n");
  ImportVectors(300, 4608);
  Ran created =
      Sql("CREATE INDEX emb_idx ON db.t (vector) USING ANN PROPERTIES ('index_type' = 'IVF_PQ', 'metric' = 'l2', "
          "'num_partitions' = '2', 'num_sub_vectors' = '8', 'max_iterations' = '2')");
  ASSERT_EQ(created.exit_code, 0) << created.output;
  Ran shown = Sql("SHOW INDEX JOBS");
  EXPECT_THAT(shown.output, HasSubstr(",emb_idx,CREATE,")) << shown.output;
  EXPECT_THAT(shown.output, HasSubstr(",FINISHED,COMMITTED,")) << shown.output;
  Ran index = Sql("SHOW INDEX FROM db.t");
  EXPECT_THAT(index.output, HasSubstr("emb_idx")) << index.output;
  EXPECT_THAT(index.output, HasSubstr("max_iterations")) << index.output;

  // Without the raised cap, admission refuses and says which cap and where it comes from.
  Config("");
  Ran refused =
      Sql("CREATE INDEX emb2_idx ON db.t (vector) USING ANN PROPERTIES ('index_type' = 'IVF_PQ', 'metric' = 'l2', "
          "'num_partitions' = '2', 'num_sub_vectors' = '8')");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.output, HasSubstr("vector dimension 4608 of column 'vector' exceeds "
                                        "caps.max_vector_dimension = 4096 (the default"));
}

TEST_F(IndexSettingsTest, AWorkerOutOfMemoryNamesWorkerMemoryBytes) {
  // 5000 partitions x 64 sub-vectors: a ~330 MB precomputed table, beyond 256 MiB.
  Config("[worker]\nmemory_bytes = \"256MiB\"\n");
  ImportVectors(5000, 64);
  Ran created =
      Sql("CREATE INDEX emb_idx ON db.t (vector) USING ANN PROPERTIES ('index_type' = 'IVF_PQ', 'metric' = 'l2', "
          "'num_partitions' = '5000', 'num_sub_vectors' = '64', 'max_iterations' = '1', 'sample_rate' = '1')");
  EXPECT_NE(created.exit_code, 0) << created.output;
  EXPECT_THAT(created.output, HasSubstr("memory limit worker.memory_bytes = 256MiB")) << created.output;
  EXPECT_THAT(created.output, Not(HasSubstr("INTERNAL"))) << created.output;
}

TEST_F(IndexSettingsTest, DoctorShowsTheUsableCoresDefaultOfOmpThreads) {
  Ran doctor = RunVigil("--root " + root_ + " doctor");
  ASSERT_EQ(doctor.exit_code, 0) << doctor.output;
  EXPECT_THAT(doctor.output, HasSubstr("worker.omp_threads = " + std::to_string(DefaultOmpThreads(256)) +
                                       "   (default: usable cores)"));
  Config("[worker]\nomp_threads = 1\n");
  doctor = RunVigil("--root " + root_ + " doctor");
  EXPECT_THAT(doctor.output, HasSubstr("worker.omp_threads = 1   (vigil.toml)"));
}

}  // namespace
}  // namespace vigil
