#include "vigil/storage/vacuum.h"
#include "vigil/storage/filename.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>

#include "testutil/temp_dir.h"
#include "vigil/ingest/datagen.h"
#include "vigil/storage/fault_fs.h"

namespace vigil {
namespace {

class VacuumTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DatagenOptions o;
    o.rows = 400;
    o.dim = 4;
    o.latent_dim = 2;
    o.columns = {"id", "category", "emb"};
    gen_ = *DataGenerator::Make(o);
    path_ = dir_.Join("t.vgl");
    auto ds = *Dataset::Create(path_, gen_->schema(), {});
    for (int i = 0; i < 3; ++i) Append(i * 100, 100);  // versions 2, 3, 4
  }

  void Append(uint64_t first, size_t n) {
    auto ds = *Dataset::Open(path_);
    std::vector<RecordBatch> parts;
    parts.push_back(gen_->Batch(first, n));
    auto reader = MakeBatchReader(gen_->schema(), std::move(parts));
    ASSERT_TRUE(ds->Append(reader.get(), {}).ok());
  }

  bool Exists(const std::string& rel) { return access(JoinPath(path_, rel).c_str(), F_OK) == 0; }

  void MakeDir(const std::string& rel, const std::string& file) {
    ASSERT_TRUE(DefaultFileSystem()->CreateDirs(JoinPath(path_, rel)).ok());
    ASSERT_TRUE(WriteFileDurably(DefaultFileSystem(), JoinPath(JoinPath(path_, rel), file), "x").ok());
  }

  static bool NoWriter(const Orphan&) { return false; }

  testing::TempDir dir_;
  std::shared_ptr<const DataGenerator> gen_;
  std::string path_;
};

TEST_F(VacuumTest, RetainKeepsNewestVersionsAndTheFilesTheyReference) {
  ASSERT_TRUE(Dataset::Open(path_).ok());
  auto v2 = *Dataset::Open(path_, 2);
  std::string only_v2_deletion;
  // A delete at version 5 gives fragment 0 a deletion file that versions 2-4 do not have.
  auto latest = *Dataset::Open(path_);
  ASSERT_TRUE(latest->Delete({MakeRowAddress(0, 1)}, {}).ok());
  VacuumOptions o;
  o.retain_versions = 2;
  auto report = Vacuum(path_, o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->removed_versions, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_TRUE(report->failures.empty());
  EXPECT_FALSE(Exists(ManifestPath(2)));
  EXPECT_TRUE(Exists(ManifestPath(4)));
  auto newest = *Dataset::Open(path_);
  EXPECT_EQ(newest->CountRows(), 299u);
  auto old = *Dataset::Open(path_, 4);
  EXPECT_EQ(old->CountRows(), 300u);
  // Every file the remaining versions reference is still there.
  for (uint64_t v : {4, 5}) {
    auto ds = *Dataset::Open(path_, v);
    for (const auto& f : ds->manifest().fragments) {
      EXPECT_TRUE(Exists(f.path)) << f.path;
      if (f.deletion) {
        EXPECT_TRUE(Exists(f.deletion->path));
      }
    }
  }
}

TEST_F(VacuumTest, ProtectedAndUnknownAttemptVersionsStay) {
  auto latest = *Dataset::Open(path_);
  TransactionProperties p;
  p.attempt_id = "att-unknown";
  p.job_id = 7;
  ASSERT_TRUE(latest->Delete({MakeRowAddress(1, 0)}, p).ok());                    // version 5 by the unknown attempt
  ASSERT_TRUE((*Dataset::Open(path_))->Delete({MakeRowAddress(1, 1)}, {}).ok());  // version 6
  auto v5 = *Dataset::Open(path_, 5);
  std::string v5_deletion = v5->manifest().FindFragment(1)->deletion->path;
  VacuumOptions o;
  o.retain_versions = 1;
  o.protected_versions = {2};
  o.unknown_attempts = {"att-unknown"};
  auto report = *Vacuum(path_, o);
  EXPECT_EQ(report.removed_versions, (std::vector<uint64_t>{1, 3, 4}));
  EXPECT_EQ((*Dataset::Open(path_, 2))->CountRows(), 100u);
  EXPECT_TRUE(Exists(ManifestPath(5)));
  EXPECT_TRUE(Exists(v5_deletion));
}

TEST_F(VacuumTest, OlderThanKeepsRecentVersions) {
  VacuumOptions o;
  o.retain_versions = 1;
  o.older_than_micros = int64_t{3600} * 1000000;  // everything was committed just now
  auto report = *Vacuum(path_, o);
  EXPECT_TRUE(report.removed_versions.empty());
  EXPECT_TRUE(Exists(ManifestPath(1)));
}

TEST_F(VacuumTest, OrphansAreListedAndRemovedOnlyWhenNoWriterRemains) {
  std::string seg = Uuid::Generate().ToString();
  MakeDir("_indices/" + seg, "ivf.bin");
  MakeDir("_staging/att-1", "attempt.lock");
  MakeDir("_staging/att-2", "partial");
  auto orphans = ListOrphans(path_);
  ASSERT_TRUE(orphans.ok()) << orphans.status().ToString();
  ASSERT_EQ(orphans->size(), 3u);
  EXPECT_EQ((*orphans)[0].kind, Orphan::Kind::kSegment);
  EXPECT_EQ((*orphans)[0].id, seg);
  EXPECT_EQ((*orphans)[1].id, "att-1");

  // Without the caller's proof nothing is removed; young orphans wait out the grace period.
  VacuumOptions o;
  auto report = *Vacuum(path_, o);
  EXPECT_EQ(report.kept_orphans.size(), 3u);
  o.may_still_write = NoWriter;
  report = *Vacuum(path_, o);
  EXPECT_EQ(report.kept_orphans.size(), 3u);

  o.orphan_grace_micros = 0;
  o.may_still_write = [](const Orphan& orphan) { return orphan.id == "att-1"; };  // att-1 still runs
  report = *Vacuum(path_, o);
  EXPECT_FALSE(Exists("_indices/" + seg));
  EXPECT_FALSE(Exists("_staging/att-2"));
  EXPECT_TRUE(Exists("_staging/att-1/attempt.lock"));
  ASSERT_EQ(report.kept_orphans.size(), 1u);
  EXPECT_EQ(report.kept_orphans[0].id, "att-1");
  EXPECT_EQ((*Dataset::Open(path_))->CountRows(), 300u);
}

TEST_F(VacuumTest, NeverFollowsOrRemovesLinksNorUnexpectedNames) {
  testing::TempDir outside;
  std::string victim = outside.Join("victim");
  ASSERT_TRUE(DefaultFileSystem()->CreateDirs(victim).ok());
  ASSERT_TRUE(WriteFileDurably(DefaultFileSystem(), JoinPath(victim, "precious"), "p").ok());
  ASSERT_TRUE(DefaultFileSystem()->CreateDirs(JoinPath(path_, "_staging")).ok());
  ASSERT_EQ(symlink(victim.c_str(), JoinPath(path_, "_staging/att-link").c_str()), 0);
  std::string seg = Uuid::Generate().ToString();
  MakeDir("_indices/" + seg, "a");
  ASSERT_EQ(symlink(victim.c_str(), JoinPath(path_, "_indices/" + seg + "/inner").c_str()), 0);
  MakeDir("_indices/not-a-uuid", "keep");
  ASSERT_TRUE(WriteFileDurably(DefaultFileSystem(), JoinPath(path_, "data/notes.txt"), "n").ok());

  VacuumOptions o;
  o.orphan_grace_micros = 0;
  o.may_still_write = NoWriter;
  auto report = *Vacuum(path_, o);
  EXPECT_TRUE(Exists("_staging/att-link"));
  EXPECT_TRUE(Exists("_indices/" + seg + "/inner"));
  EXPECT_FALSE(Exists("_indices/" + seg + "/a"));  // the regular file beside the link went
  EXPECT_TRUE(Exists("_indices/not-a-uuid/keep"));
  EXPECT_TRUE(Exists("data/notes.txt"));
  EXPECT_EQ(access(JoinPath(victim, "precious").c_str(), F_OK), 0);
  EXPECT_FALSE(report.skipped.empty());
}

TEST_F(VacuumTest, FailedDeleteIsReportedKeptAndRetried) {
  FaultInjectionFileSystem fault(DefaultFileSystem());
  DatasetOptions dso;
  dso.fs = &fault;
  std::string seg = Uuid::Generate().ToString();
  MakeDir("_indices/" + seg, "f");
  VacuumOptions o;
  o.retain_versions = 1;
  o.orphan_grace_micros = 0;
  o.may_still_write = NoWriter;
  fault.FailFrom(1, FaultInjectionFileSystem::Fault::kIoError);
  auto failed = Vacuum(path_, o, dso);
  EXPECT_FALSE(failed.ok());  // even listing fails: nothing is removed
  fault.ClearFaults();
  // Fail only removals: every manifest removal fails, so no file of theirs goes.
  fault.ResetCount();
  auto first = Vacuum(path_, VacuumOptions{.retain_versions = 1}, dso);
  ASSERT_TRUE(first.ok());
  // Now fail the segment directory removal on a fresh run.
  int64_t n = 0;
  {
    FaultInjectionFileSystem counter(DefaultFileSystem());
    DatasetOptions c;
    c.fs = &counter;
    VacuumOptions dry = o;
    dry.dry_run = true;
    ASSERT_TRUE(Vacuum(path_, dry, c).ok());
    n = counter.OperationCount();
  }
  fault.ResetCount();
  fault.FailFrom(n + 1, FaultInjectionFileSystem::Fault::kIoError);  // every removal after listing
  auto report = Vacuum(path_, o, dso);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_FALSE(report->failures.empty());
  EXPECT_TRUE(Exists("_indices/" + seg));
  fault.ClearFaults();
  report = Vacuum(path_, o, dso);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->failures.empty());
  EXPECT_FALSE(Exists("_indices/" + seg));
  EXPECT_EQ((*Dataset::Open(path_))->CountRows(), 300u);
}

// Deletion files are named by filename.h and parsed by the same code: a superseded one is an
// orphan that VACUUM removes, and a dropped dataset goes away completely (its _identity too).
TEST_F(VacuumTest, SupersededDeletionFilesAreReclaimed) {
  auto ds = *Dataset::Open(path_);
  ds = *ds->Delete({MakeRowAddress(0, 1)}, {});
  const std::string first = ds->manifest().FindFragment(0)->deletion->path;
  ds = *ds->Delete({MakeRowAddress(0, 2)}, {});
  const std::string second = ds->manifest().FindFragment(0)->deletion->path;
  ASSERT_NE(first, second);
  ASSERT_TRUE(ParseDeletionFileName(first.substr(first.find('/') + 1)).has_value()) << first;
  VacuumOptions o;
  o.retain_versions = 1;
  o.orphan_grace_micros = 0;
  o.may_still_write = NoWriter;
  auto report = Vacuum(path_, o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_FALSE(Exists(first));
  EXPECT_TRUE(Exists(second));
  EXPECT_EQ((*Dataset::Open(path_))->CountRows(), 298u);

  auto reclaimed = ReclaimDroppedDataset(path_, true);
  ASSERT_TRUE(reclaimed.ok()) << reclaimed.status().ToString();
  EXPECT_TRUE(reclaimed->failures.empty());
  EXPECT_TRUE(reclaimed->skipped.empty());
  EXPECT_FALSE(std::filesystem::exists(path_));  // nothing left: not even _deletions or _identity
}

TEST_F(VacuumTest, DroppedDatasetIsReclaimedOnlyWithProofAndNeverThroughLinks) {
  testing::TempDir outside;
  ASSERT_TRUE(WriteFileDurably(DefaultFileSystem(), outside.Join("precious"), "p").ok());
  MakeDir("_staging/att-9", "partial");
  ASSERT_TRUE(DefaultFileSystem()->CreateDirs(JoinPath(path_, "_indices")).ok());
  ASSERT_EQ(symlink(outside.path().c_str(), JoinPath(path_, "_indices/" + Uuid::Generate().ToString()).c_str()), 0);
  EXPECT_EQ(ReclaimDroppedDataset(path_, false).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Exists(ManifestPath(1)));
  auto report = ReclaimDroppedDataset(path_, true);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->removed_versions.size(), 4u);
  EXPECT_FALSE(Exists("_versions"));
  EXPECT_FALSE(Exists("data"));
  EXPECT_FALSE(Exists("_staging"));
  EXPECT_TRUE(Exists("_indices"));  // the link stays, so its folder stays
  EXPECT_EQ(access(outside.Join("precious").c_str(), F_OK), 0);
  EXPECT_FALSE(Dataset::Open(path_).ok());
}

}  // namespace
}  // namespace vigil
