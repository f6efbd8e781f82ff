// Crash tests of publication (REQ-ONLINE-004): a forked child is killed with
// SIGKILL at each publication boundary — BUILD INDEX before its commit, after
// its commit, after a commit but before the generation pointer swap, and in
// the middle of VACUUM. The parent then reopens the table and checks that it
// recovers to the last complete generation with nothing lost, and that what
// the killed child left behind is listed as orphans and later vacuumed.
// Scalar indexes only: FAISS/OpenMP is not fork-safe.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

#include "testutil/temp_dir.h"
#include "vigil/common/failpoint.h"
#include "vigil/generations/generation_manager.h"
#include "vigil/index/provider.h"
#include "vigil/ingest/datagen.h"
#include "vigil/query/query.h"
#include "vigil/storage/vacuum.h"

namespace vigil::generations {
namespace {

// Runs `fn` in a forked child with `failpoint` armed to kill; returns true when
// the child died of SIGKILL.
bool KilledAt(const std::string& failpoint, const std::function<void()>& fn) {
  pid_t pid = fork();
  if (pid == 0) {
    failpoint::Arm(failpoint, failpoint::Action::kKill);
    fn();
    _exit(0);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return false;
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

class GenerationCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!failpoint::Enabled()) GTEST_SKIP() << "failpoints are compiled out";
    DatagenOptions o;
    o.rows = 3000;
    o.dim = 4;
    o.latent_dim = 2;
    o.columns = {"id", "category", "emb"};
    gen_ = *DataGenerator::Make(o);
    path_ = dir_.Join("db/t.vgl");
    auto ds = *Dataset::Create(path_, gen_->schema(), {});
    Append(0, 2000);
    index::CreateIndexRequest r;
    r.dataset_path = path_;
    r.column = "category";
    r.name = "cat_idx";
    r.type = index::IndexType::kBitmap;
    ASSERT_TRUE(index::CreateScalarIndex(r).ok());
    Append(2000, 500);
  }

  void Append(uint64_t first, size_t n) {
    std::vector<RecordBatch> parts;
    parts.push_back(gen_->Batch(first, n));
    auto reader = MakeBatchReader(gen_->schema(), std::move(parts));
    ASSERT_TRUE((*Dataset::Open(path_))->Append(reader.get(), {}).ok());
  }

  static void Build(const std::string& path) {
    index::BuildIndexRequest req;
    req.dataset_path = path;
    req.name = "cat_idx";
    VIGIL_CHECK(index::BuildIndex(req).ok());
  }

  // Rows per category through the index of the manager's current generation.
  std::map<std::string, uint64_t> Counts(const GenerationManager& m) {
    Lease l = m.Acquire();
    std::map<std::string, uint64_t> out;
    for (uint32_t c = 0; c < 5; ++c) {
      std::string name = DataGenerator::CategoryName(c);
      query::ColumnPredicate p{"category", {index::ScalarPredicate::Op::kEq, {Value(name)}}};
      auto rows = query::FilterRows(l.snapshot(), {p});
      EXPECT_TRUE(rows.ok()) << rows.status().ToString();
      out[name] = rows.ok() ? rows->cardinality() : 0;
    }
    return out;
  }

  size_t SegmentsOfIndex(const GenerationManager& m) { return m.Acquire().snapshot().SegmentsOf("cat_idx").size(); }

  // Every remaining version opens with all of its segments.
  void ExpectEveryVersionComplete() {
    auto versions = *Dataset::ListVersions(path_);
    for (const auto& v : versions) {
      auto ds = Dataset::Open(path_, v.version);
      ASSERT_TRUE(ds.ok()) << ds.status().ToString();
      auto snap = query::TableSnapshot::Open(*ds);
      EXPECT_TRUE(snap.ok()) << "version " << v.version << ": " << snap.status().ToString();
      for (const auto& f : (*ds)->manifest().fragments) {
        EXPECT_TRUE(*DefaultFileSystem()->Exists(JoinPath(path_, f.path))) << f.path;
      }
    }
  }

  static VacuumOptions VacuumAll() {
    VacuumOptions o;
    o.retain_versions = 1;
    o.orphan_grace_micros = 0;
    o.may_still_write = [](const Orphan&) { return false; };
    return o;
  }

  testing::TempDir dir_;
  std::shared_ptr<const DataGenerator> gen_;
  std::string path_;
};

TEST_F(GenerationCrashTest, KillBeforeBuildCommitKeepsTheLastGenerationAndLeavesAnOrphan) {
  auto before = *GenerationManager::Open(path_);
  auto expected = Counts(*before);
  uint64_t version = before->current_version();
  before.reset();
  const std::string path = path_;
  ASSERT_TRUE(KilledAt("build.after_segment_write", [path] { Build(path); }));
  auto m = *GenerationManager::Open(path_);
  EXPECT_EQ(m->current_version(), version);
  EXPECT_EQ(SegmentsOfIndex(*m), 1u);
  EXPECT_EQ(Counts(*m), expected);
  auto orphans = *ListOrphans(path_);
  ASSERT_EQ(orphans.size(), 1u);
  EXPECT_EQ(orphans[0].kind, Orphan::Kind::kSegment);
  auto report = *Vacuum(path_, VacuumAll());
  EXPECT_EQ(report.removed_paths.size(), 1u + report.removed_versions.size());
  EXPECT_TRUE(ListOrphans(path_)->empty());
  Build(path_);  // the build can simply run again
  ASSERT_TRUE(m->Refresh().ok());
  EXPECT_EQ(SegmentsOfIndex(*m), 2u);
  EXPECT_EQ(Counts(*m), expected);
}

TEST_F(GenerationCrashTest, KillAfterBuildCommitRecoversTheCommittedGeneration) {
  auto expected = Counts(**GenerationManager::Open(path_));
  const std::string path = path_;
  ASSERT_TRUE(KilledAt("build.after_commit", [path] { Build(path); }));
  auto m = *GenerationManager::Open(path_);
  EXPECT_EQ(m->current_version(), *Dataset::LatestVersion(path_));
  EXPECT_EQ(SegmentsOfIndex(*m), 2u);
  EXPECT_EQ(Counts(*m), expected);
  EXPECT_TRUE(ListOrphans(path_)->empty());
}

TEST_F(GenerationCrashTest, KillBetweenCommitAndPointerSwapRecoversOnOpen) {
  auto expected = Counts(**GenerationManager::Open(path_));
  const std::string path = path_;
  ASSERT_TRUE(KilledAt("generations.before_swap", [path] {
    auto m = *GenerationManager::Open(path);
    Build(path);
    (void)m->Refresh();
  }));
  auto m = *GenerationManager::Open(path_);
  EXPECT_EQ(m->current_version(), *Dataset::LatestVersion(path_));
  EXPECT_EQ(SegmentsOfIndex(*m), 2u);
  EXPECT_EQ(Counts(*m), expected);
  ExpectEveryVersionComplete();
}

TEST_F(GenerationCrashTest, KillDuringVacuumLeavesEveryRemainingVersionComplete) {
  // Versions whose files only old versions reference: a REPLACE and a delete.
  index::CreateIndexRequest r;
  r.dataset_path = path_;
  r.column = "category";
  r.name = "cat_idx";
  r.type = index::IndexType::kBitmap;
  r.replace = true;
  ASSERT_TRUE(index::CreateScalarIndex(r).ok());
  ASSERT_TRUE((*Dataset::Open(path_))->Delete({MakeRowAddress(0, 1), MakeRowAddress(0, 2)}, {}).ok());
  ASSERT_TRUE((*Dataset::Open(path_))->Delete({MakeRowAddress(0, 3)}, {}).ok());
  auto expected = Counts(**GenerationManager::Open(path_));
  uint64_t latest = *Dataset::LatestVersion(path_);
  const std::string path = path_;
  for (const char* fp : {"vacuum.after_manifest_remove", "vacuum.after_file_remove"}) {
    ASSERT_TRUE(KilledAt(fp, [path] { (void)Vacuum(path, VacuumAll()); })) << fp;
    auto m = *GenerationManager::Open(path_);
    EXPECT_EQ(m->current_version(), latest) << fp;
    EXPECT_EQ(Counts(*m), expected) << fp;
    EXPECT_EQ(m->Acquire().snapshot().dataset()->CountRows(), 2497u);
    ExpectEveryVersionComplete();
  }
  auto report = *Vacuum(path_, VacuumAll());
  EXPECT_TRUE(report.failures.empty());
  EXPECT_EQ(Dataset::ListVersions(path_)->size(), 1u);
  EXPECT_TRUE(ListOrphans(path_)->empty());
  auto m = *GenerationManager::Open(path_);
  EXPECT_EQ(Counts(*m), expected);
}

}  // namespace
}  // namespace vigil::generations
