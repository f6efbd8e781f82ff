// Crash test: a child process appends numbered batches in a loop and is
// killed with SIGKILL, at random moments and at each named failpoint of the
// commit path. After every kill the table must open, its newest version must
// verify (every block read back), and it must hold exactly the acknowledged
// batches plus at most the one in flight, whole or absent.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <set>

#include "testutil/temp_dir.h"
#include "vigil/common/failpoint.h"
#include "vigil/storage/dataset.h"

namespace vigil {
namespace {

constexpr int64_t kBatchRows = 300;

SchemaPtr CrashSchema() {
  return *Schema::Make({{-1, "id", DataType::Of(TypeId::kInt64), false},
                        {-1, "tag", DataType::Of(TypeId::kString), false},
                        {-1, "emb", DataType::Vector(VectorElement::kFloat32, 8), false}});
}

DatasetOptions Options() {
  DatasetOptions o;
  o.max_rows_per_fragment = 200;  // every batch spans two fragments
  o.writer.rows_per_block = 64;
  o.cache = nullptr;
  return o;
}

RecordBatch BatchPart(int64_t batch, int64_t begin, int64_t end) {
  RecordBatch b = RecordBatch::Empty(CrashSchema());
  for (int64_t i = begin; i < end; ++i) {
    int64_t id = batch * kBatchRows + i;
    std::vector<float> v(8, static_cast<float>(id));
    VIGIL_CHECK(b.AppendRow({id, "batch" + std::to_string(batch), v}).ok());
  }
  return b;
}

// Child: append batches from `first` on, writing each acknowledged batch number to `ack_fd`.
[[noreturn]] void RunWriter(const std::string& path, int64_t first, int ack_fd, const std::string& failpoints) {
  if (!failpoints.empty()) VIGIL_CHECK(failpoint::ArmFromSpec(failpoints).ok());
  for (int64_t batch = first;; ++batch) {
    auto ds = Dataset::Open(path, std::nullopt, Options());
    if (!ds.ok()) _exit(3);
    std::vector<RecordBatch> parts;
    parts.push_back(BatchPart(batch, 0, kBatchRows / 2));
    parts.push_back(BatchPart(batch, kBatchRows / 2, kBatchRows));
    auto reader = MakeBatchReader(CrashSchema(), std::move(parts));
    TransactionProperties p;
    p.operation = "APPEND";
    p.extra["batch"] = std::to_string(batch);
    if (!(*ds)->Append(reader.get(), p).ok()) _exit(4);
    std::string line = std::to_string(batch) + "\n";
    if (write(ack_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) _exit(5);
  }
}

struct KillResult {
  std::vector<int64_t> acked;
};

// Verifies the table holds whole batches 0..n-1 (n returned); every block is read back.
int64_t VerifyTable(const std::string& path) {
  auto ds = Dataset::Open(path, std::nullopt, Options());
  EXPECT_TRUE(ds.ok()) << ds.status().ToString();
  if (!ds.ok()) return -1;
  auto scan = (*ds)->Scan();
  EXPECT_TRUE(scan.ok());
  std::set<int64_t> ids;
  for (;;) {
    auto b = (*scan)->Next();
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (!b.ok() || !b->has_value()) break;
    const RecordBatch& batch = **b;
    for (size_t r = 0; r < batch.num_rows; ++r) {
      int64_t id = batch.columns[0].values<int64_t>()[r];
      EXPECT_EQ(batch.columns[1].StringAt(r), "batch" + std::to_string(id / kBatchRows));
      EXPECT_EQ(batch.columns[2].values<float>()[r * 8 + 7], static_cast<float>(id));
      EXPECT_TRUE(ids.insert(id).second) << "duplicate id " << id;
    }
  }
  int64_t batches = static_cast<int64_t>(ids.size()) / kBatchRows;
  EXPECT_EQ(static_cast<int64_t>(ids.size()), batches * kBatchRows) << "a partial batch is visible";
  if (!ids.empty()) {
    EXPECT_EQ(*ids.begin(), 0);
    EXPECT_EQ(*ids.rbegin(), batches * kBatchRows - 1) << "batches are not contiguous";
  }
  return batches;
}

// Runs one writer child from the current state and kills it (at its failpoint, or `delay_us`
// after it acknowledged `acks_first` batches); checks the invariant.
void KillOnce(const std::string& path, const std::string& failpoints, int delay_us, int acks_first = 0) {
  int64_t before = VerifyTable(path);
  ASSERT_GE(before, 0);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    RunWriter(path, before, fds[1], failpoints);
  }
  close(fds[1]);
  std::string acks;
  char buf[4096];
  ssize_t n;
  if (failpoints.empty()) {
    while (std::count(acks.begin(), acks.end(), '\n') < acks_first && (n = read(fds[0], buf, sizeof buf)) > 0) {
      acks.append(buf, static_cast<size_t>(n));
    }
    usleep(static_cast<useconds_t>(delay_us));
    kill(pid, SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "writer exited on its own with status " << status;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) acks.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int64_t acked = before;
  for (size_t pos = 0; pos < acks.size();) {
    size_t nl = acks.find('\n', pos);
    if (nl == std::string::npos) break;
    acked = std::stoll(acks.substr(pos, nl - pos)) + 1;
    pos = nl + 1;
  }
  int64_t after = VerifyTable(path);
  EXPECT_TRUE(after == acked || after == acked + 1)
      << "acknowledged " << acked << " batches, table holds " << after << " (failpoints '" << failpoints << "')";
}

class CrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.Join("crash.vgl");
    ASSERT_TRUE(Dataset::Create(path_, CrashSchema(), {}, Options()).ok());
  }
  testing::TempDir dir_;
  std::string path_;
};

// Each kill lands at a random moment after the writer acknowledged 0-2 batches, so the kills
// fall within writes (not only before the first one) however fast the machine writes.
TEST_F(CrashTest, RandomKills) {
  std::mt19937 rng(20261130);
  int64_t acked_at_least = 0;
  for (int i = 0; i < 150; ++i) {
    const int acks_first = static_cast<int>(rng() % 3);
    KillOnce(path_, "", static_cast<int>(rng() % 20000), acks_first);
    if (HasFatalFailure()) return;
    acked_at_least += acks_first;
  }
  EXPECT_GE(VerifyTable(path_), acked_at_least);
}

TEST_F(CrashTest, KillsAtEveryCommitFailpoint) {
  const char* points[] = {"commit.between_batches", "commit.after_fragments", "commit.after_manifest_temp",
                          "commit.after_manifest_link", "commit.after_dir_sync"};
  int kills = 0;
  for (const char* fp : points) {
    for (int hit = 1; hit <= 12; ++hit) {
      KillOnce(path_, std::string(fp) + "=kill@" + std::to_string(hit), 0);
      if (HasFatalFailure()) return;
      ++kills;
    }
  }
  EXPECT_EQ(kills, 60);
  EXPECT_GT(VerifyTable(path_), 50);
}

}  // namespace
}  // namespace vigil
