#include "vigil/storage/dataset.h"
#include "vigil/storage/filename.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "testutil/temp_dir.h"
#include "vigil/common/failpoint.h"
#include "vigil/storage/fault_fs.h"
#include "vigil/storage/vacuum.h"

namespace vigil {
namespace {

SchemaPtr TestSchema() {
  return *Schema::Make({{-1, "id", DataType::Of(TypeId::kInt64), false},
                        {-1, "name", DataType::Of(TypeId::kString), true},
                        {-1, "emb", DataType::Vector(VectorElement::kFloat32, 4), false}});
}

RecordBatch Rows(const SchemaPtr& schema, int64_t first, int64_t count) {
  RecordBatch b = RecordBatch::Empty(schema);
  for (int64_t i = first; i < first + count; ++i) {
    Value name = i % 7 == 0 ? Value(std::monostate{}) : Value("row" + std::to_string(i));
    float f = static_cast<float>(i);
    VIGIL_CHECK(b.AppendRow({i, name, std::vector<float>{f, f + 1, f + 2, f + 3}}).ok());
  }
  return b;
}

std::unique_ptr<RecordBatchReader> Reader(const SchemaPtr& schema, std::vector<std::pair<int64_t, int64_t>> ranges) {
  std::vector<RecordBatch> batches;
  for (auto [first, count] : ranges) batches.push_back(Rows(schema, first, count));
  return MakeBatchReader(schema, std::move(batches));
}

// All ids of a version, in scan order, with their row addresses.
std::vector<int64_t> Ids(const Dataset& ds, std::vector<RowAddress>* addrs = nullptr) {
  auto scan = ds.Scan({.columns = {"id"}});
  VIGIL_CHECK(scan.ok());
  std::vector<int64_t> ids;
  for (;;) {
    auto b = (*scan)->Next();
    VIGIL_CHECK(b.ok());
    if (!b->has_value()) break;
    const auto& batch = **b;
    for (size_t r = 0; r < batch.num_rows; ++r) {
      ids.push_back(batch.columns[0].values<int64_t>()[r]);
      if (addrs) addrs->push_back(batch.row_addresses[r]);
    }
  }
  return ids;
}

TransactionProperties Props(std::string op) {
  TransactionProperties p;
  p.operation = std::move(op);
  return p;
}

class DatasetTest : public ::testing::Test {
 protected:
  std::string Path() { return dir_.Join("db/t.vgl"); }
  DatasetOptions SmallFragments() {
    DatasetOptions o;
    o.max_rows_per_fragment = 1000;
    o.writer.rows_per_block = 128;
    return o;
  }
  testing::TempDir dir_;
};

TEST_F(DatasetTest, CreateAppendScanAcrossFragmentsAndBlocks) {
  auto ds = Dataset::Create(Path(), TestSchema(), Props("CREATE_TABLE"), SmallFragments());
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ((*ds)->version(), 1u);
  EXPECT_EQ((*ds)->CountRows(), 0u);
  auto reader = Reader(TestSchema(), {{0, 700}, {700, 1800}});
  auto v2 = (*ds)->Append(reader.get(), Props("APPEND"));
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ((*v2)->version(), 2u);
  EXPECT_EQ((*v2)->manifest().parent_version, 1u);
  EXPECT_EQ((*v2)->manifest().fragments.size(), 3u);  // 1000 + 1000 + 500
  EXPECT_EQ((*v2)->CountRows(), 2500u);
  auto ids = Ids(**v2);
  ASSERT_EQ(ids.size(), 2500u);
  for (int64_t i = 0; i < 2500; ++i) ASSERT_EQ(ids[i], i);
  // Row-level reads through the fragment reader agree with the scan.
  auto frag = (*v2)->OpenFragment(1);
  ASSERT_TRUE(frag.ok());
  auto row = (*frag)->ReadRow(5, {0, 1, 2});
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(std::get<int64_t>((*row)[0]), 1005);
  EXPECT_EQ(std::get<std::string>((*row)[1]), "row1005");
}

TEST_F(DatasetTest, OpenAnyVersionAndListHistory) {
  auto ds = *Dataset::Create(Path(), TestSchema(), Props("CREATE_TABLE"));
  auto r1 = Reader(TestSchema(), {{0, 10}});
  TransactionProperties p = Props("APPEND");
  p.job_id = 42;
  p.attempt_id = "attempt-1";
  p.idempotency_key = "key-1";
  auto v2 = *ds->Append(r1.get(), p);
  auto r2 = Reader(TestSchema(), {{10, 5}});
  auto v3 = *v2->Append(r2.get(), Props("APPEND"));
  EXPECT_EQ(v3->CountRows(), 15u);
  auto old = Dataset::Open(Path(), 2);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ((*old)->CountRows(), 10u);
  EXPECT_EQ(Ids(**old).size(), 10u);
  auto latest = Dataset::Open(Path());
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ((*latest)->version(), 3u);
  auto versions = Dataset::ListVersions(Path());
  ASSERT_TRUE(versions.ok());
  ASSERT_EQ(versions->size(), 3u);
  EXPECT_EQ((*versions)[0].txn.operation, "CREATE_TABLE");
  EXPECT_EQ((*versions)[1].txn.job_id, 42);
  EXPECT_EQ((*versions)[1].txn.attempt_id, "attempt-1");
  EXPECT_EQ((*versions)[1].txn.idempotency_key, "key-1");
  EXPECT_EQ((*versions)[2].live_rows, 15u);
  // Bytes: what each version's data files take on disk (v3 adds one fragment to v2's).
  uint64_t on_disk_v2 = 0, on_disk_v3 = 0;
  for (const FragmentMeta& f : (*old)->manifest().fragments)
    on_disk_v2 += std::filesystem::file_size(Path() + "/" + f.path);
  for (const FragmentMeta& f : (*latest)->manifest().fragments)
    on_disk_v3 += std::filesystem::file_size(Path() + "/" + f.path);
  EXPECT_EQ((*versions)[0].bytes, 0u);
  EXPECT_EQ((*versions)[1].bytes, on_disk_v2);
  EXPECT_EQ((*versions)[2].bytes, on_disk_v3);
  EXPECT_GT(on_disk_v3, on_disk_v2);
  EXPECT_EQ((*old)->manifest().BytesNotIn((*latest)->manifest()), 0u);
  EXPECT_EQ((*latest)->manifest().BytesNotIn((*old)->manifest()), on_disk_v3 - on_disk_v2);
  EXPECT_EQ(Dataset::Open(Path(), 9).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Dataset::Create(Path(), TestSchema(), Props("CREATE_TABLE")).status().code(), StatusCode::kAlreadyExists);
}

TEST_F(DatasetTest, DeleteHidesRowsAndKeepsHistory) {
  auto ds = *Dataset::Create(Path(), TestSchema(), Props("CREATE_TABLE"), SmallFragments());
  auto r = Reader(TestSchema(), {{0, 1500}});
  auto v2 = *ds->Append(r.get(), Props("APPEND"));
  std::vector<RowAddress> addrs;
  auto ids = Ids(*v2, &addrs);
  std::vector<RowAddress> victims = {addrs[3], addrs[999], addrs[1000], addrs[1499]};
  auto v3 = v2->Delete(victims, Props("DELETE"));
  ASSERT_TRUE(v3.ok()) << v3.status().ToString();
  EXPECT_EQ((*v3)->CountRows(), 1496u);
  auto after = Ids(**v3);
  EXPECT_EQ(after.size(), 1496u);
  for (int64_t gone : {3, 999, 1000, 1499}) {
    EXPECT_EQ(std::count(after.begin(), after.end(), gone), 0) << gone;
  }
  // A second delete in the same fragment keeps the earlier deletions.
  auto v4 = (*v3)->Delete({addrs[4]}, Props("DELETE"));
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ((*v4)->CountRows(), 1495u);
  EXPECT_EQ(Ids(**Dataset::Open(Path(), 2)).size(), 1500u);
  EXPECT_EQ(v2->Delete({MakeRowAddress(0, 5000)}, Props("DELETE")).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(v2->Delete({MakeRowAddress(77, 0)}, Props("DELETE")).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(DatasetTest, ConcurrentAppendsBothSucceedByRebasing) {
  auto ds = *Dataset::Create(Path(), TestSchema(), Props("CREATE_TABLE"));
  auto ra = Reader(TestSchema(), {{0, 10}});
  auto rb = Reader(TestSchema(), {{100, 10}});
  auto a = ds->Append(ra.get(), Props("APPEND"));  // both based on version 1
  auto b = ds->Append(rb.get(), Props("APPEND"));
  ASSERT_TRUE(a.ok() && b.ok()) << b.status().ToString();
  EXPECT_EQ((*a)->version(), 2u);
  EXPECT_EQ((*b)->version(), 3u);
  EXPECT_EQ((*b)->CountRows(), 20u);
  EXPECT_EQ((*b)->manifest().fragments.size(), 2u);
  EXPECT_NE((*b)->manifest().fragments[0].id, (*b)->manifest().fragments[1].id);
}

TEST_F(DatasetTest, ThreadsRacingAppendsLoseNothing) {
  auto ds = *Dataset::Create(Path(), TestSchema(), Props("CREATE_TABLE"));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        auto r = Reader(TestSchema(), {{t * 1000 + i * 10, 10}});
        if (!ds->Append(r.get(), Props("APPEND")).ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  auto latest = *Dataset::Open(Path());
  EXPECT_EQ(latest->version(), 21u);
  EXPECT_EQ(latest->CountRows(), 200u);
}

// Eight writers appending at once: each round of their race has one winner, so a writer can
// lose many rounds in a row. An append rebases on any of them and gives up only past
// max_append_commit_retries (with the general budget of 16, 8 of the 320 appends gave up).
TEST_F(DatasetTest, ManyWritersRacingAppendsAllCommit) {
  auto ds = *Dataset::Create(Path(), TestSchema(), Props("CREATE_TABLE"));
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        auto r = Reader(TestSchema(), {{t * 1000 + i, 1}});
        Status st = ds->Append(r.get(), Props("APPEND")).status();
        EXPECT_TRUE(st.ok()) << st.ToString();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ((*Dataset::Open(Path()))->CountRows(), 320u);
}

// An append that lost its race rebases max_append_commit_retries times, not more.
TEST_F(DatasetTest, AnAppendGivesUpAfterItsBudgetOfLostRaces) {
  for (int budget : {0, 1}) {
    const std::string path = Path() + std::to_string(budget);
    DatasetOptions o;
    o.max_append_commit_retries = budget;
    auto base = *Dataset::Create(path, TestSchema(), Props("CREATE_TABLE"), o);
    auto first = Reader(TestSchema(), {{0, 10}});
    ASSERT_TRUE(base->Append(first.get(), Props("APPEND")).ok());
    auto second = Reader(TestSchema(), {{100, 10}});
    auto lost = base->Append(second.get(), Props("APPEND"));  // publishes version 2 again: lost
    if (budget == 0) {
      EXPECT_EQ(lost.status().code(), StatusCode::kCommitConflict);
      EXPECT_THAT(lost.status().message(), ::testing::HasSubstr("gave up after 0 rebases"));
      EXPECT_EQ((*Dataset::Open(path, std::nullopt, o))->CountRows(), 10u);
    } else {
      ASSERT_TRUE(lost.ok()) << lost.status().ToString();
      EXPECT_EQ((*lost)->version(), 3u);
      EXPECT_EQ((*lost)->CountRows(), 20u);
    }
  }
}

TEST_F(DatasetTest, ConflictingDeletesOfOneFragmentConflict) {
  auto ds = *Dataset::Create(Path(), TestSchema(), Props("CREATE_TABLE"));
  auto r = Reader(TestSchema(), {{0, 10}});
  auto v2 = *ds->Append(r.get(), Props("APPEND"));
  ASSERT_TRUE(v2->Delete({MakeRowAddress(0, 1)}, Props("DELETE")).ok());
  auto second = v2->Delete({MakeRowAddress(0, 2)}, Props("DELETE"));
  EXPECT_EQ(second.status().code(), StatusCode::kCommitConflict);
  EXPECT_EQ((*Dataset::Open(Path()))->CountRows(), 9u);
  // An append based on the old version still rebases over the delete.
  auto r2 = Reader(TestSchema(), {{10, 5}});
  auto v4 = v2->Append(r2.get(), Props("APPEND"));
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ((*v4)->CountRows(), 14u);
}

TEST_F(DatasetTest, LatestVersionAfterAKnownVersionSeesEveryNewerOne) {
  auto ds = *Dataset::Create(Path(), TestSchema(), Props("CREATE_TABLE"));
  EXPECT_EQ(*Dataset::LatestVersionAfter(Path(), 1), 1u);
  auto r1 = Reader(TestSchema(), {{0, 10}});
  auto v2 = *ds->Append(r1.get(), Props("APPEND"));
  auto r2 = Reader(TestSchema(), {{10, 10}});
  ASSERT_TRUE(v2->Append(r2.get(), Props("APPEND")).ok());
  EXPECT_EQ(*Dataset::LatestVersionAfter(Path(), 1), 3u);
  EXPECT_EQ(*Dataset::LatestVersionAfter(Path(), 3), 3u);
  // A known version whose manifest is gone is not trusted: the listing decides.
  ASSERT_TRUE(DefaultFileSystem()->RemoveFile(JoinPath(Path(), ManifestPath(3))).ok());
  EXPECT_EQ(*Dataset::LatestVersionAfter(Path(), 3), 2u);
  EXPECT_EQ(Dataset::LatestVersionAfter(dir_.Join("db/none.vgl"), 1).status().code(), StatusCode::kNotFound);
}

TEST_F(DatasetTest, SchemaMismatchAndBadRowsCommitNothing) {
  auto ds = *Dataset::Create(Path(), TestSchema(), Props("CREATE_TABLE"));
  auto other = *Schema::Make({{-1, "x", DataType::Of(TypeId::kInt64), false}});
  RecordBatch b = RecordBatch::Empty(other);
  ASSERT_TRUE(b.AppendRow({int64_t{1}}).ok());
  auto bad = MakeBatchReader(other, {b});
  EXPECT_EQ(ds->Append(bad.get(), Props("APPEND")).status().code(), StatusCode::kInvalidArgument);
  // A NOT NULL violation in the second batch: the first batch's files are not committed either.
  RecordBatch nulls = Rows(TestSchema(), 10, 1);
  nulls.columns[0] = Column(DataType::Of(TypeId::kInt64));
  nulls.columns[0].AppendNull();
  auto reader = MakeBatchReader(TestSchema(), {Rows(TestSchema(), 0, 10), std::move(nulls)});
  auto st = ds->Append(reader.get(), Props("APPEND")).status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("NOT NULL"), std::string::npos);
  EXPECT_EQ(*Dataset::LatestVersion(Path()), 1u);
  auto files = DefaultFileSystem()->ListDir(JoinPath(Path(), "data"));
  ASSERT_TRUE(files.ok());
  EXPECT_TRUE(files->empty());
}

TEST_F(DatasetTest, CorruptNewestManifestNamesNewestGoodVersion) {
  auto ds = *Dataset::Create(Path(), TestSchema(), Props("CREATE_TABLE"));
  auto r = Reader(TestSchema(), {{0, 10}});
  ASSERT_TRUE(ds->Append(r.get(), Props("APPEND")).ok());
  std::string m2 = JoinPath(Path(), ManifestPath(2));
  {
    std::fstream f(m2, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(20);
    f.put('\x7f');
  }
  auto opened = Dataset::Open(Path());
  ASSERT_EQ(opened.status().code(), StatusCode::kCorruption);
  EXPECT_NE(opened.status().message().find("newest version 2 is corrupt"), std::string::npos);
  EXPECT_NE(opened.status().message().find("newest good version is 1"), std::string::npos);
  auto recovered = Dataset::OpenNewestValid(Path());
  ASSERT_TRUE(recovered.ok());
  EXPECT_EQ((*recovered)->version(), 1u);
  std::vector<uint64_t> corrupt;
  auto versions = Dataset::ListVersions(Path(), {}, &corrupt);
  ASSERT_TRUE(versions.ok());
  EXPECT_EQ(versions->size(), 1u);
  EXPECT_EQ(corrupt, std::vector<uint64_t>{2});
}

TEST_F(DatasetTest, LeftoverTempFileNeverBlocksCommits) {
  auto ds = *Dataset::Create(Path(), TestSchema(), Props("CREATE_TABLE"));
  // A torn temp manifest from a crashed writer.
  ASSERT_TRUE(WriteFileDurably(DefaultFileSystem(), JoinPath(Path(), "_versions/.tmp-crashed"), "VGLMA").ok());
  auto r = Reader(TestSchema(), {{0, 3}});
  auto v2 = ds->Append(r.get(), Props("APPEND"));
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ((*Dataset::Open(Path()))->version(), 2u);
}

// ENOSPC or EIO at every I/O operation of an append: the error is reported,
// and the previous version stays the newest readable one with its rows.
TEST_F(DatasetTest, FaultAtEveryOperationOfAnAppendLeavesPreviousVersion) {
  FaultInjectionFileSystem probe(DefaultFileSystem());
  DatasetOptions opts = SmallFragments();
  opts.fs = &probe;
  opts.cache = nullptr;
  auto base = *Dataset::Create(Path(), TestSchema(), Props("CREATE_TABLE"), opts);
  auto seed = Reader(TestSchema(), {{0, 50}});
  base = *base->Append(seed.get(), Props("APPEND"));
  probe.ResetCount();
  {
    auto r = Reader(TestSchema(), {{50, 1200}});
    testing::TempDir scratch;
    auto copy = Dataset::Create(scratch.Join("t.vgl"), TestSchema(), Props("CREATE_TABLE"), opts);
    probe.ResetCount();
    ASSERT_TRUE((*copy)->Append(r.get(), Props("APPEND")).ok());
  }
  const int64_t ops = probe.OperationCount();
  ASSERT_GT(ops, 10);
  int reported = 0;
  for (int64_t n = 1; n <= ops; ++n) {
    for (auto fault : {FaultInjectionFileSystem::Fault::kNoSpace, FaultInjectionFileSystem::Fault::kIoError}) {
      probe.ClearFaults();
      probe.ResetCount();
      probe.FailOperation(n, fault);
      auto r = Reader(TestSchema(), {{50, 1200}});
      auto result = base->Append(r.get(), Props("APPEND"));
      probe.ClearFaults();
      auto latest = Dataset::Open(Path(), std::nullopt, opts);
      ASSERT_TRUE(latest.ok()) << "op " << n << ": " << latest.status().ToString();
      if (result.ok()) {
        // The fault hit a best-effort step (temp-file removal); the commit is whole.
        EXPECT_EQ((*latest)->CountRows(), 1250u);
      } else {
        ++reported;
        EXPECT_TRUE(result.status().code() == StatusCode::kIOError ||
                    result.status().code() == StatusCode::kResourceExhausted)
            << result.status().ToString();
        // Either nothing was published, or the manifest was linked but its directory
        // fsync failed (reported); the previous version is intact in both cases.
        uint64_t v = (*latest)->version();
        EXPECT_TRUE(v == base->version() || v == base->version() + 1) << v;
        EXPECT_EQ(Ids(**Dataset::Open(Path(), base->version(), opts)).size(), 50u);
      }
      // Reset to the base version for the next round.
      for (uint64_t v = (*latest)->version(); v > base->version(); --v) {
        ASSERT_TRUE(DefaultFileSystem()->RemoveFile(JoinPath(Path(), ManifestPath(v))).ok());
      }
    }
  }
  EXPECT_GE(reported, ops);  // nearly every operation is on the acknowledged path
}

// ---- With a version catalog as the commit point ----

class CatalogDatasetTest : public DatasetTest {
 protected:
  void TearDown() override { failpoint::DisarmAll(); }
  DatasetOptions WithCatalog() {
    DatasetOptions o = SmallFragments();
    o.versions = catalog_;
    return o;
  }
  // Entries of `_versions` that are claims.
  std::vector<std::string> Claims() {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(Path() + "/_versions")) {
      const std::string name = e.path().filename().string();
      if (ParseClaimManifestName(name)) out.push_back(name);
    }
    return out;
  }
  std::shared_ptr<MemoryVersionCatalog> catalog_ = std::make_shared<MemoryVersionCatalog>();
};

TEST_F(CatalogDatasetTest, EveryCommitIsAClaimTheCatalogAcceptsThenALinkedManifest) {
  auto ds = Dataset::Create(Path(), TestSchema(), Props("CREATE_TABLE"), WithCatalog());
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  auto reader = Reader(TestSchema(), {{0, 10}});
  TransactionProperties props = Props("APPEND");
  props.attempt_id = "attempt-1";
  auto v2 = (*ds)->Append(reader.get(), props);
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  auto claims = catalog_->claims();
  ASSERT_EQ(claims.size(), 2u);
  EXPECT_EQ(claims[2].txn.attempt_id, "attempt-1");
  EXPECT_EQ(ParseClaimManifestName(claims[2].manifest.substr(std::string("_versions/").size())), 2u);
  // Linked under the plain name, the claim file gone: file readers see the same history.
  EXPECT_TRUE(Claims().empty());
  EXPECT_EQ(Dataset::LatestVersion(Path()).value(), 2u);
  EXPECT_EQ(Dataset::LatestVersion(Path(), WithCatalog()).value(), 2u);
  EXPECT_EQ(Ids(*Dataset::Open(Path(), std::nullopt, WithCatalog()).value()).size(), 10u);
}

TEST_F(CatalogDatasetTest, AWriterThatLostTheClaimRebasesOnTheWinner) {
  auto base = Dataset::Create(Path(), TestSchema(), Props("CREATE_TABLE"), WithCatalog());
  ASSERT_TRUE(base.ok());
  auto first = Reader(TestSchema(), {{0, 5}});
  ASSERT_TRUE((*base)->Append(first.get(), Props("APPEND")).ok());
  // `base` still stands at version 1: its claim of version 2 is refused, and it rebases.
  auto second = Reader(TestSchema(), {{100, 3}});
  auto v3 = (*base)->Append(second.get(), Props("APPEND"));
  ASSERT_TRUE(v3.ok()) << v3.status().ToString();
  EXPECT_EQ((*v3)->version(), 3u);
  EXPECT_EQ(Ids(**v3).size(), 8u);
  EXPECT_EQ(catalog_->claims().size(), 3u);
  EXPECT_TRUE(Claims().empty()) << "the refused claim's file is removed";
}

TEST_F(CatalogDatasetTest, AVersionClaimedButNotYetLinkedIsLinkedByTheNextReader) {
  auto ds = Dataset::Create(Path(), TestSchema(), Props("CREATE_TABLE"), WithCatalog());
  ASSERT_TRUE(ds.ok());
  failpoint::Arm("commit.after_catalog_claim", failpoint::Action::kError);
  auto reader = Reader(TestSchema(), {{0, 4}});
  EXPECT_FALSE((*ds)->Append(reader.get(), Props("APPEND")).ok());  // a writer cut after its claim
  failpoint::DisarmAll();
  // Committed in the catalog, not yet under its name: a file reader sees version 1 ...
  EXPECT_EQ(Claims().size(), 1u);
  EXPECT_EQ(Dataset::LatestVersion(Path()).value(), 1u);
  // ... a catalog reader sees version 2 and links it, for every reader after it.
  auto opened = Dataset::Open(Path(), std::nullopt, WithCatalog());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ((*opened)->version(), 2u);
  EXPECT_EQ(Ids(**opened).size(), 4u);
  EXPECT_EQ(Dataset::LatestVersion(Path()).value(), 2u);
  // The claim is spent once linked: VACUUM finds it an orphan.
  auto orphans = ListOrphans(Path());
  ASSERT_TRUE(orphans.ok()) << orphans.status().ToString();
  ASSERT_EQ(orphans->size(), 1u);
  EXPECT_EQ((*orphans)[0].kind, Orphan::Kind::kManifestTemp);
}

TEST_F(CatalogDatasetTest, AFencedAttemptCommitsNothing) {
  auto ds = Dataset::Create(Path(), TestSchema(), Props("CREATE_TABLE"), WithCatalog());
  ASSERT_TRUE(ds.ok());
  catalog_->FenceAttempt("late-attempt");
  TransactionProperties props = Props("CREATE_INDEX");
  props.attempt_id = "late-attempt";
  auto reader = Reader(TestSchema(), {{0, 4}});
  auto refused = (*ds)->Append(reader.get(), props);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition) << refused.status().ToString();
  EXPECT_EQ(catalog_->claims().size(), 1u);
  EXPECT_TRUE(Claims().empty());
  EXPECT_EQ(Dataset::LatestVersion(Path(), WithCatalog()).value(), 1u);
  EXPECT_EQ(Dataset::LatestVersion(Path()).value(), 1u);
}

TEST_F(CatalogDatasetTest, ACatalogNamingNoClaimOfItsVersionIsCorruption) {
  auto ds = Dataset::Create(Path(), TestSchema(), Props("CREATE_TABLE"), WithCatalog());
  ASSERT_TRUE(ds.ok());
  ASSERT_TRUE(catalog_->Claim(VersionClaim{2, "../../outside", Props("APPEND")}).ok());
  auto opened = Dataset::Open(Path(), std::nullopt, WithCatalog());
  EXPECT_EQ(opened.status().code(), StatusCode::kCorruption) << opened.status().ToString();
  EXPECT_NE(opened.status().message().find("no claim of it"), std::string::npos) << opened.status().ToString();
}

TEST_F(CatalogDatasetTest, ADatasetMadeBeforeItsCatalogIsAdoptedByItsFirstClaim) {
  auto legacy = Dataset::Create(Path(), TestSchema(), Props("CREATE_TABLE"), SmallFragments());
  ASSERT_TRUE(legacy.ok());
  auto reader = Reader(TestSchema(), {{0, 3}});
  ASSERT_TRUE((*legacy)->Append(reader.get(), Props("APPEND")).ok());
  // No catalog versions yet: the newest file counts, and the first claim continues from it.
  auto opened = Dataset::Open(Path(), std::nullopt, WithCatalog());
  ASSERT_TRUE(opened.ok());
  EXPECT_EQ((*opened)->version(), 2u);
  auto more = Reader(TestSchema(), {{10, 2}});
  auto v3 = (*opened)->Append(more.get(), Props("APPEND"));
  ASSERT_TRUE(v3.ok()) << v3.status().ToString();
  ASSERT_EQ(catalog_->claims().size(), 1u);
  EXPECT_EQ(catalog_->claims().begin()->first, 3u);
  // From now on the catalog decides. The dataset is marked: a writer without the catalog is
  // refused and commits nothing.
  EXPECT_TRUE(std::filesystem::exists(JoinPath(Path(), kCatalogMarkerFile)));
  auto stray = Dataset::Open(Path(), std::nullopt, SmallFragments());
  ASSERT_TRUE(stray.ok());
  auto bypass = Reader(TestSchema(), {{20, 1}});
  auto refused = (*stray)->Append(bypass.get(), Props("APPEND"));
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("through the metadata store of its root"), std::string::npos);
  EXPECT_EQ(Dataset::LatestVersion(Path()).value(), 3u);
  // A writer that ignores the mark (a binary from before it) links a manifest past the
  // catalog's newest version: it is not read.
  ASSERT_TRUE(std::filesystem::remove(JoinPath(Path(), kCatalogMarkerFile)));
  auto unmarked = Reader(TestSchema(), {{20, 1}});
  ASSERT_TRUE((*stray)->Append(unmarked.get(), Props("APPEND")).ok());
  EXPECT_EQ(Dataset::LatestVersion(Path()).value(), 4u);
  EXPECT_EQ(Dataset::LatestVersion(Path(), WithCatalog()).value(), 3u);
  auto versions = Dataset::ListVersions(Path(), WithCatalog());
  ASSERT_TRUE(versions.ok());
  EXPECT_EQ(versions->back().version, 3u);
  // A catalog writer whose claim of version 4 is accepted but finds the name taken by such a
  // manifest says so (Corruption), never that its own commit is the one published.
  auto clash = Reader(TestSchema(), {{30, 1}});
  auto v4 = (*v3)->Append(clash.get(), Props("APPEND"));
  EXPECT_EQ(v4.status().code(), StatusCode::kCorruption) << v4.status().ToString();
  EXPECT_NE(v4.status().message().find("outside the catalog"), std::string::npos) << v4.status().ToString();
}

}  // namespace
}  // namespace vigil
