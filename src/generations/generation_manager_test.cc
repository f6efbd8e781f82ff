#include "vigil/generations/generation_manager.h"
#include "vigil/storage/filename.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "testutil/fake_env.h"
#include "testutil/temp_dir.h"
#include "vigil/common/failpoint.h"
#include "vigil/index/provider.h"
#include "vigil/ingest/datagen.h"
#include "vigil/meta/database.h"
#include "vigil/query/query.h"
#include "vigil/storage/fault_fs.h"

namespace vigil::generations {
namespace {

using query::IoRecorder;
using query::VectorHit;
using query::VectorQueryOptions;
using query::VectorSearch;
using ::testing::HasSubstr;

class GenerationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DatagenOptions o;
    o.rows = 2000;
    o.dim = 16;
    o.latent_dim = 4;
    o.columns = {"id", "category", "emb"};
    gen_ = *DataGenerator::Make(o);
    path_ = dir_.Join("db/docs.vgl");
    auto ds = *Dataset::Create(path_, gen_->schema(), {});
    auto reader = gen_->NewReader();
    ASSERT_TRUE(ds->Append(reader.get(), {}).ok());
    CreateIndex("emb_idx", "8", "4", false);
    CreateScalar("cat_idx", "category");
  }

  void CreateIndex(const std::string& name, const std::string& partitions, const std::string& subs, bool replace) {
    index::CreateIndexRequest req;
    req.dataset_path = path_;
    req.column = "emb";
    req.name = name;
    req.type = index::IndexType::kIvfPq;
    req.properties = {
        {"index_type", "IVF_PQ"}, {"metric", "l2"}, {"num_partitions", partitions}, {"num_sub_vectors", subs}};
    req.replace = replace;
    auto r = index::CreateVectorIndex(req);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  void CreateScalar(const std::string& name, const std::string& column) {
    index::CreateIndexRequest req;
    req.dataset_path = path_;
    req.column = column;
    req.name = name;
    req.type = index::IndexType::kBitmap;
    ASSERT_TRUE(index::CreateScalarIndex(req).ok());
  }

  std::vector<float> Embedding(uint64_t row) {
    std::vector<float> v(16);
    gen_->Embedding(row, v.data());
    return v;
  }

  std::string SegmentPathOf(const Manifest& m, const std::string& index_name) {
    for (const auto& s : m.segments) {
      if (s.name == index_name) return "_indices/" + s.uuid.ToString();
    }
    return "";
  }

  void Append(uint64_t first, size_t n) {
    auto ds = *Dataset::Open(path_);
    std::vector<RecordBatch> parts;
    parts.push_back(gen_->Batch(first, n));
    auto reader = MakeBatchReader(gen_->schema(), std::move(parts));
    ASSERT_TRUE(ds->Append(reader.get(), {}).ok());
  }

  void Build(const std::string& name) {
    index::BuildIndexRequest req;
    req.dataset_path = path_;
    req.name = name;
    auto r = index::BuildIndex(req);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  std::vector<VectorHit> Search(const Lease& lease, uint64_t row) {
    auto r = VectorSearch(lease.snapshot(), "emb", Embedding(row), VectorQueryOptions{.k = 10, .nprobes = 2});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::vector<VectorHit>{};
  }

  static void ExpectSame(const std::vector<VectorHit>& a, const std::vector<VectorHit>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].row, b[i].row);
      EXPECT_EQ(a[i].distance, b[i].distance);
    }
  }

  bool Exists(const std::string& rel) { return *DefaultFileSystem()->Exists(JoinPath(path_, rel)); }

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

class GenerationConcurrencyTest : public GenerationTest {};

// A reader holding an old generation keeps its exact results while a REPLACE
// and an append commit and the manager publishes the new version.
TEST_F(GenerationTest, LeaseKeepsExactResultsThroughReplace) {
  auto manager = *GenerationManager::Open(path_);
  Lease old_lease = manager->Acquire();
  auto query = Embedding(42);
  VectorQueryOptions opts{.k = 10, .nprobes = 2};
  auto before = *VectorSearch(old_lease.snapshot(), "emb", query, opts);
  CreateIndex("emb_idx", "16", "2", /*replace=*/true);
  ASSERT_TRUE(manager->Refresh().ok());
  Lease new_lease = manager->Acquire();
  EXPECT_GT(new_lease.version(), old_lease.version());
  EXPECT_EQ(manager->live_generations(), 2u);
  auto again = *VectorSearch(old_lease.snapshot(), "emb", query, opts);
  ASSERT_EQ(again.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(again[i].row, before[i].row);
    EXPECT_EQ(again[i].distance, before[i].distance);
  }
  IoRecorder rec;
  ASSERT_TRUE(VectorSearch(new_lease.snapshot(), "emb", query, opts, {}, &rec).ok());
  EXPECT_EQ(rec.segments_used().size(), 1u);
  EXPECT_FALSE(
      rec.segments_used().count(SegmentPathOf(old_lease.snapshot().manifest(), "emb_idx")));  // the replacement segment
  // Unchanged segments are shared between the generations, not reopened.
  for (const auto& meta : old_lease.snapshot().manifest().segments) {
    if (meta.name != "emb_idx") {
      EXPECT_EQ(old_lease.snapshot().Segment(meta.uuid), new_lease.snapshot().Segment(meta.uuid));
    }
  }
  old_lease.Release();
  EXPECT_EQ(manager->live_generations(), 1u);
}

TEST_F(GenerationConcurrencyTest, ReadersNeverSeeAHalfPublishedGeneration) {
  auto manager = *GenerationManager::Open(path_);
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::thread reader([&] {
    while (!stop) {
      Lease l = manager->Acquire();
      // Every generation is complete: each segment named by its manifest is open.
      for (const auto& meta : l.snapshot().manifest().segments) {
        if (!l.snapshot().Segment(meta.uuid)) ++bad;
      }
    }
  });
  for (int i = 0; i < 3; ++i) {
    CreateIndex("emb_idx", "8", "4", /*replace=*/true);
    ASSERT_TRUE(manager->Refresh().ok());
  }
  stop = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(manager->current_version(), *Dataset::LatestVersion(path_));
}

// REQ-LEASE-001 / REQ-ONLINE-005: an old lease keeps its exact results and its
// files through REPLACE, BUILD and VACUUM; its release retires only its
// generation, and the next VACUUM may then reclaim its files.
TEST_F(GenerationTest, LeaseKeepsResultsAndFilesThroughReplaceBuildAndVacuum) {
  auto manager = *GenerationManager::Open(path_);
  Lease old_lease = manager->Acquire();
  const std::string old_segment = SegmentPathOf(old_lease.snapshot().manifest(), "emb_idx");
  std::weak_ptr<index::Segment> old_handle = old_lease.snapshot().SegmentsOf("emb_idx").front();
  auto before = Search(old_lease, 42);
  CreateIndex("emb_idx", "16", "2", /*replace=*/true);
  Append(2000, 300);
  Build("emb_idx");
  Build("cat_idx");
  ASSERT_TRUE(manager->Refresh().ok());
  Lease middle = manager->Acquire();
  auto report = VacuumTable(path_, VacuumAll(), {manager.get()}, nullptr, "", 0);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->failures.empty());
  EXPECT_TRUE(Exists(old_segment));
  EXPECT_TRUE(Exists(ManifestPath(old_lease.version())));
  ExpectSame(Search(old_lease, 42), before);
  EXPECT_EQ(middle.snapshot().SegmentsOf("emb_idx").size(), 2u);
  EXPECT_EQ(manager->live_generations(), 2u);

  old_lease.Release();
  old_lease.Release();  // a second release does nothing
  EXPECT_EQ(manager->live_generations(), 1u);
  EXPECT_TRUE(old_handle.expired());  // its replaced segment was closed
  EXPECT_TRUE(middle.valid());
  ASSERT_TRUE(VacuumTable(path_, VacuumAll(), {manager.get()}, nullptr, "", 0).ok());
  EXPECT_FALSE(Exists(old_segment));
  // The current generation still answers exactly as before the vacuum.
  auto now = Search(middle, 42);
  Lease again = manager->Acquire();
  ExpectSame(Search(again, 42), now);
}

TEST_F(GenerationTest, ReleaseRetiresOnlyItsGeneration) {
  auto manager = *GenerationManager::Open(path_);
  Lease a = manager->Acquire();
  CreateIndex("emb_idx", "16", "2", true);
  ASSERT_TRUE(manager->Refresh().ok());
  Lease b = manager->Acquire();
  Lease b2 = manager->Acquire();  // a second reader of the same generation shares its segments
  EXPECT_EQ(b.snapshot().SegmentsOf("emb_idx").front(), b2.snapshot().SegmentsOf("emb_idx").front());
  CreateIndex("emb_idx", "8", "2", true);
  ASSERT_TRUE(manager->Refresh().ok());
  std::weak_ptr<index::Segment> a_seg = a.snapshot().SegmentsOf("emb_idx").front();
  std::weak_ptr<index::Segment> b_seg = b.snapshot().SegmentsOf("emb_idx").front();
  EXPECT_EQ(manager->live_generations(), 3u);
  b.Release();
  EXPECT_FALSE(b_seg.expired());  // b2 still reads it
  EXPECT_EQ(manager->live_generations(), 3u);
  a.Release();
  EXPECT_TRUE(a_seg.expired());
  EXPECT_FALSE(b_seg.expired());
  EXPECT_EQ(manager->live_generations(), 2u);
  auto hits = Search(b2, 7);
  EXPECT_FALSE(hits.empty());
  b2.Release();
  EXPECT_TRUE(b_seg.expired());
  EXPECT_EQ(manager->live_generations(), 1u);
}

// REQ-LEASE-002: the physical bound (current + retired + building) holds under a
// reader that never lets go; a refused Refresh leaves the current generation usable.
TEST_F(GenerationTest, PhysicalBoundHoldsUnderAReaderThatNeverLetsGo) {
  GenerationsOptions o;
  o.physical_per_table = 3;
  auto manager = *GenerationManager::Open(path_, o);
  Lease forever = manager->Acquire();
  for (int i = 0; i < 4; ++i) {
    CreateIndex("emb_idx", i % 2 ? "8" : "16", "2", true);
    ASSERT_TRUE(manager->Refresh().ok()) << i;
    EXPECT_LE(manager->live_generations(), 2u);
  }
  Lease second = manager->Acquire();  // now two retired-or-current generations are held
  CreateIndex("emb_idx", "8", "4", true);
  ASSERT_TRUE(manager->Refresh().ok());  // current + 2 held retired = 3
  EXPECT_EQ(manager->live_generations(), 3u);
  Lease third = manager->Acquire();
  uint64_t current = manager->current_version();
  CreateIndex("emb_idx", "16", "4", true);
  auto refused = manager->Refresh();
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status().ToString();
  EXPECT_EQ(manager->current_version(), current);
  EXPECT_EQ(manager->live_generations(), 3u);
  Lease usable = manager->Acquire();
  EXPECT_EQ(usable.version(), current);
  EXPECT_FALSE(Search(usable, 3).empty());
  second.Release();
  ASSERT_TRUE(manager->Refresh().ok());  // room again
  EXPECT_EQ(manager->current_version(), *Dataset::LatestVersion(path_));
  EXPECT_LE(manager->live_generations(), 3u);
  EXPECT_FALSE(Search(forever, 3).empty());
}

// With slot_wait, a Refresh that finds the physical bound full waits for a leased older
// generation to retire (as a reader's statement ends) instead of being refused.
TEST_F(GenerationTest, ARefreshWithSlotWaitWaitsForALeaseToEnd) {
  GenerationsOptions o;
  o.physical_per_table = 2;
  o.slot_wait = std::chrono::minutes(1);
  auto manager = *GenerationManager::Open(path_, o);
  Lease old = manager->Acquire();
  CreateIndex("emb_idx", "8", "2", true);
  ASSERT_TRUE(manager->Refresh().ok());  // the old one leased + the current one = 2
  CreateIndex("emb_idx", "16", "2", true);
  failpoint::Arm("generations.wait_for_slot", failpoint::Action::kDelay, 0, StatusCode::kIOError, 1);
  std::atomic<bool> refreshed{false};
  std::thread refresh([&] {
    EXPECT_TRUE(manager->Refresh().ok());
    refreshed = true;
  });
  while (failpoint::HitCount("generations.wait_for_slot") == 0 && !refreshed.load()) std::this_thread::yield();
  EXPECT_EQ(failpoint::HitCount("generations.wait_for_slot"), 1) << "the Refresh did not wait for room";
  EXPECT_FALSE(refreshed.load());
  old.Release();  // the statement ends: room for the newest
  refresh.join();
  failpoint::DisarmAll();
  EXPECT_EQ(manager->current_version(), *Dataset::LatestVersion(path_));
}

TEST_F(GenerationTest, BuilderSlotAndBudgetsAreAdmittedBeforeWork) {
  // The first generation's segments are charged too: the budget leaves 1 KiB of memory beyond them.
  uint64_t initial = 0;
  auto opened = Dataset::Open(path_);
  ASSERT_TRUE(opened.ok());
  for (const auto& seg : (*opened)->manifest().segments) {
    for (const auto& f : seg.files) initial += f.size;
  }
  ResourceBudget budget(/*memory=*/initial + 1024, /*disk=*/initial + (1 << 20));
  GenerationsOptions o;
  o.budget = &budget;
  auto manager = *GenerationManager::Open(path_, o);
  EXPECT_EQ(budget.memory_used(), initial);
  {
    auto ticket = manager->BeginBuild(0, 1000);
    ASSERT_TRUE(ticket.ok());
    EXPECT_EQ(manager->BeginBuild(0, 0).status().code(), StatusCode::kBusy);
    CreateIndex("emb_idx", "16", "2", true);
    EXPECT_EQ(manager->Refresh().status().code(), StatusCode::kBusy);
    EXPECT_EQ(budget.disk_used(), initial + 1000);
  }
  EXPECT_EQ(budget.disk_used(), initial);
  EXPECT_EQ(manager->BeginBuild(0, uint64_t{1} << 30).status().code(), StatusCode::kResourceExhausted);
  // The new segment does not fit in 1 KiB of memory: refused before opening anything.
  uint64_t current = manager->current_version();
  EXPECT_EQ(manager->Refresh().status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(manager->current_version(), current);
  EXPECT_FALSE(Search(manager->Acquire(), 1).empty());
  EXPECT_EQ(budget.memory_used(), initial);
}

// A failed refresh (I/O errors while opening the next generation) keeps the
// current generation; the retry after the fault is repaired publishes.
TEST_F(GenerationTest, FailedRefreshKeepsCurrentAndIsRetried) {
  FaultInjectionFileSystem fault(DefaultFileSystem());
  DatasetOptions dso;
  dso.fs = &fault;
  auto manager = *GenerationManager::Open(path_, dso);
  uint64_t current = manager->current_version();
  CreateIndex("emb_idx", "16", "2", true);
  query::PurgeUnusedSegments();
  fault.FailFrom(3, FaultInjectionFileSystem::Fault::kIoError);
  EXPECT_FALSE(manager->Refresh().ok());
  EXPECT_EQ(manager->current_version(), current);
  EXPECT_EQ(manager->live_generations(), 1u);
  fault.ClearFaults();
  EXPECT_FALSE(Search(manager->Acquire(), 5).empty());
  ASSERT_TRUE(manager->Refresh().ok());
  EXPECT_GT(manager->current_version(), current);
}

class PinTest : public GenerationTest {
 protected:
  void SetUp() override {
    GenerationTest::SetUp();
    db_ = *meta::Database::Open("sqlite://" + dir_.Join("meta.db"));
    pins_ = *VersionPinStore::Open(db_.get(), 0);
  }
  std::unique_ptr<meta::Database> db_;
  std::unique_ptr<VersionPinStore> pins_;
};

TEST_F(PinTest, PinsFollowLeasesExpireAndFailedUnpinsAreRetried) {
  testing::FakeEnv env(1'000'000'000);
  GenerationsOptions o;
  o.pins = pins_.get();
  o.table = "db.docs";
  o.pin_ttl_ms = 10'000;
  o.dataset.env = &env;
  auto manager = *GenerationManager::Open(path_, o);
  uint64_t v1 = manager->current_version();
  EXPECT_EQ(*pins_->LiveVersions("db.docs", env.NowMs()), (std::set<uint64_t>{v1}));
  Lease held = manager->Acquire();
  CreateIndex("emb_idx", "16", "2", true);
  ASSERT_TRUE(manager->Refresh().ok());
  uint64_t v2 = manager->current_version();
  EXPECT_EQ(*pins_->LiveVersions("db.docs", env.NowMs()), (std::set<uint64_t>{v1, v2}));
  // Another process's VACUUM sees the pins and keeps v1.
  auto report = *VacuumTable(path_, VacuumAll(), {}, pins_.get(), "db.docs", env.NowMs());
  EXPECT_TRUE(Exists(ManifestPath(v1)));

  // The unpin fails (the table is unavailable): ownership stays and is retried.
  auto conn = *db_->Acquire();
  ASSERT_TRUE(conn->ExecuteScript("ALTER TABLE vigil_version_pins RENAME TO vigil_version_pins_away").ok());
  held.Release();
  EXPECT_FALSE(manager->Maintain().ok());
  EXPECT_EQ(manager->pending_unpins(), 1u);
  ASSERT_TRUE(conn->ExecuteScript("ALTER TABLE vigil_version_pins_away RENAME TO vigil_version_pins").ok());
  EXPECT_TRUE(manager->Maintain().ok());
  EXPECT_EQ(manager->pending_unpins(), 0u);
  EXPECT_EQ(*pins_->LiveVersions("db.docs", env.NowMs()), (std::set<uint64_t>{v2}));

  // Heartbeats renew; a process that stops heartbeating loses its pins at expiry.
  env.AdvanceMs(9'000);
  ASSERT_TRUE(manager->Maintain().ok());
  env.AdvanceMs(9'000);
  EXPECT_EQ(*pins_->LiveVersions("db.docs", env.NowMs()), (std::set<uint64_t>{v2}));
  env.AdvanceMs(20'000);
  EXPECT_TRUE(pins_->LiveVersions("db.docs", env.NowMs())->empty());
  EXPECT_EQ(*pins_->PurgeExpired(env.NowMs()), 1);
  ASSERT_TRUE(manager->Maintain().ok());
  // Shutdown removes every pin.
  env.SetMs(env.NowMs() - 20'000);
  ASSERT_TRUE(pins_->Pin("db.docs", v2, manager->owner(), env.NowMs(), 10'000).ok());
  ASSERT_TRUE(manager->Shutdown().ok());
  EXPECT_TRUE(pins_->List("db.docs")->empty());
}

class PinConcurrencyTest : public PinTest {};

// The maintenance thread heartbeats the pins on its own; Shutdown joins it and unpins.
TEST_F(PinConcurrencyTest, BackgroundMaintenanceHeartbeatsUntilShutdown) {
  testing::FakeEnv env(5'000'000);
  GenerationsOptions o;
  o.pins = pins_.get();
  o.pin_ttl_ms = 1'000;
  o.maintain_interval = std::chrono::milliseconds(1);
  o.dataset.env = &env;
  auto manager = *GenerationManager::Open(path_, o);
  env.SetMs(50'000);  // the open-time pin (expiring at 6,000) is live again only once heartbeated
  bool renewed = false;
  for (int i = 0; i < 10'000 && !renewed; ++i) {
    renewed = !pins_->LiveVersions(path_, env.NowMs())->empty();
    if (!renewed) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(renewed);
  ASSERT_TRUE(manager->Shutdown().ok());
  EXPECT_TRUE(pins_->List(path_)->empty());
}

TEST_F(GenerationTest, ShutdownJoinsLeasesAndBuilds) {
  auto manager = *GenerationManager::Open(path_);
  Lease held = manager->Acquire();
  auto ticket = *manager->BeginBuild(0, 0);
  EXPECT_EQ(manager->Shutdown(std::chrono::milliseconds(0)).code(), StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(manager->Acquire().valid());
  EXPECT_FALSE(Search(held, 9).empty());  // still readable while shutdown waits
  std::thread releaser([&] {
    held.Release();
    ticket.Release();
  });
  EXPECT_TRUE(manager->Shutdown().ok());
  releaser.join();
  EXPECT_EQ(manager->live_generations(), 0u);
  EXPECT_EQ(manager->Refresh().status().code(), StatusCode::kFailedPrecondition);
}

// Recovery never reads an older version silently: a corrupt newest manifest is Corruption
// naming the newest good version.
TEST_F(GenerationTest, CorruptNewestManifestIsAnErrorNamingTheNewestGoodVersion) {
  const uint64_t good = *Dataset::LatestVersion(path_);
  ASSERT_TRUE(WriteFileDurably(DefaultFileSystem(), JoinPath(path_, ManifestPath(good + 1)), "garbage").ok());
  auto manager = GenerationManager::Open(path_);
  ASSERT_EQ(manager.status().code(), StatusCode::kCorruption) << manager.status().ToString();
  EXPECT_THAT(manager.status().message(), HasSubstr("newest good version is " + std::to_string(good)));
}

// A segment whose files do not verify is left out of the newest generation: its fragments are
// scanned, so the answer is the exact one for the newest version.
TEST_F(GenerationTest, CorruptSegmentIsLeftOutAndItsFragmentsScanned) {
  CreateIndex("emb_idx", "16", "2", true);
  const uint64_t newest = *Dataset::LatestVersion(path_);
  auto ds = *Dataset::Open(path_);
  std::string seg = SegmentPathOf(ds->manifest(), "emb_idx");
  for (const auto& f : ds->manifest().segments) {
    if (f.name != "emb_idx") continue;
    for (const auto& file : f.files) {
      std::string bytes = *DefaultFileSystem()->ReadFile(JoinPath(JoinPath(path_, seg), file.name), 1 << 30);
      bytes[bytes.size() / 2] ^= 0x10;  // one flipped bit
      const std::string path = JoinPath(JoinPath(path_, seg), file.name);
      ASSERT_TRUE(DefaultFileSystem()->RemoveFile(path).ok());
      ASSERT_TRUE(WriteFileDurably(DefaultFileSystem(), path, bytes).ok());
    }
  }
  query::PurgeUnusedSegments();
  auto manager = GenerationManager::Open(path_);
  ASSERT_TRUE(manager.ok()) << manager.status().ToString();
  EXPECT_EQ((*manager)->current_version(), newest);
  Lease lease = (*manager)->Acquire();
  ASSERT_EQ(lease.snapshot().unusable_segments().size(), 1u);
  EXPECT_EQ(lease.snapshot().unusable_segments()[0].index_name, "emb_idx");
  EXPECT_EQ(lease.snapshot().unusable_segments()[0].reason.code(), StatusCode::kCorruption);
  EXPECT_TRUE(lease.snapshot().IndexOn("emb", "IVF_PQ").empty());
  auto exact = VectorSearch(lease.snapshot(), "emb", Embedding(11),
                            VectorQueryOptions{.k = 10, .nprobes = 20, .refine_factor = 0, .use_index = false});
  ASSERT_TRUE(exact.ok()) << exact.status().ToString();
  ExpectSame(Search(lease, 11), *exact);
}

// Appends, deletes and updates (delete + append) commit while BUILD INDEX runs:
// afterwards updated rows come back only with their new values and deleted rows never.
TEST_F(GenerationConcurrencyTest, BuildWithConcurrentAppendsAndDeletes) {
  index::CreateIndexRequest btree;
  btree.dataset_path = path_;
  btree.column = "id";
  btree.name = "id_idx";
  btree.type = index::IndexType::kBtree;
  ASSERT_TRUE(index::CreateScalarIndex(btree).ok());
  auto manager = *GenerationManager::Open(path_);
  Lease before = manager->Acquire();
  Append(2000, 500);
  constexpr int kChanges = 40;
  std::atomic<bool> writer_ok{true};
  std::thread writer([&] {
    for (int j = 0; j < kChanges; ++j) {
      auto ds = *Dataset::Open(path_);
      // Delete id 100+j; update id 500+j (delete, then append it with a new category).
      auto del = ds->Delete({MakeRowAddress(0, 100 + j), MakeRowAddress(0, 500 + j)}, {});
      if (!del.ok()) writer_ok = false;
      RecordBatch b = RecordBatch::Empty(gen_->schema());
      auto st = b.AppendRow({int64_t{500 + j}, std::string("updated_") + std::to_string(j), Embedding(500 + j)});
      if (!st.ok()) writer_ok = false;
      std::vector<RecordBatch> parts;
      parts.push_back(std::move(b));
      auto reader = MakeBatchReader(gen_->schema(), std::move(parts));
      if (!(*Dataset::Open(path_))->Append(reader.get(), {}).ok()) writer_ok = false;
    }
  });
  for (const char* name : {"emb_idx", "cat_idx", "id_idx"}) {
    index::BuildIndexRequest req;
    req.dataset_path = path_;
    req.name = name;
    // A build that loses every rebase to the writer (slow under sanitizers) says COMMIT_CONFLICT
    // with nothing committed; as its message says, it is retried.
    auto r = index::BuildIndex(req);
    for (int retry = 0; retry < 20 && r.status().code() == StatusCode::kCommitConflict; ++retry) {
      r = index::BuildIndex(req);
    }
    EXPECT_TRUE(r.ok()) << name << ": " << r.status().ToString();
  }
  writer.join();
  ASSERT_TRUE(writer_ok.load());
  ASSERT_TRUE(manager->Refresh().ok());
  Lease after = manager->Acquire();
  auto ids = [&](int64_t id) {
    query::ColumnPredicate p{"id", {index::ScalarPredicate::Op::kEq, {Value(id)}}};
    return *query::FilterRows(after.snapshot(), {p});
  };
  for (int j = 0; j < kChanges; ++j) {
    EXPECT_EQ(ids(100 + j).cardinality(), 0u) << "deleted id " << 100 + j << " came back";
    auto rows = ids(500 + j);
    ASSERT_EQ(rows.cardinality(), 1u) << "updated id " << 500 + j;
    auto batch = *query::TakeRows(after.snapshot(), {*rows.begin()}, {"category"});
    EXPECT_EQ(std::string(batch.columns[0].StringAt(0)), "updated_" + std::to_string(j));
    query::ColumnPredicate old_cat{"category", {index::ScalarPredicate::Op::kEq, {Value(gen_->Category(500 + j))}}};
    query::ColumnPredicate id{"id", {index::ScalarPredicate::Op::kEq, {Value(int64_t{500 + j})}}};
    EXPECT_EQ(query::FilterRows(after.snapshot(), {old_cat, id})->cardinality(), 0u);
  }
  EXPECT_EQ(after.snapshot().dataset()->CountRows(), 2500u - kChanges);
  // The lease taken before everything still sees the original table.
  EXPECT_EQ(before.snapshot().dataset()->CountRows(), 2000u);
  auto hits = *VectorSearch(after.snapshot(), "emb", Embedding(510), VectorQueryOptions{.k = 5, .nprobes = 8});
  for (const auto& h : hits) EXPECT_NE(h.row, MakeRowAddress(0, 510));
}

// Readers acquire and release continuously while publications and a VACUUM
// run; every lease stays complete and readable (run under TSan).
TEST_F(GenerationConcurrencyTest, AcquireReleaseRacesPublicationAndVacuum) {
  auto manager = *GenerationManager::Open(path_);
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      while (!stop) {
        Lease l = manager->Acquire();
        auto r = VectorSearch(l.snapshot(), "emb", Embedding(3), VectorQueryOptions{.k = 3, .nprobes = 2});
        if (!r.ok() || r->empty()) ++bad;
      }
    });
  }
  for (int i = 0; i < 3; ++i) {
    CreateIndex("emb_idx", i % 2 ? "8" : "16", "2", true);
    auto r = manager->Refresh();
    EXPECT_TRUE(r.ok() || r.status().code() == StatusCode::kResourceExhausted) << r.status().ToString();
    EXPECT_TRUE(VacuumTable(path_, VacuumAll(), {manager.get()}, nullptr, "", 0).ok());
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace vigil::generations
