#include "vigil/storage/fault_fs.h"

#include <gtest/gtest.h>

#include "testutil/temp_dir.h"
#include "vigil/storage/dataset.h"

namespace vigil {
namespace {

TEST(FaultFsTest, FailsTheNthOperation) {
  testing::TempDir dir;
  FaultInjectionFileSystem fs(DefaultFileSystem());
  fs.FailOperation(2, FaultInjectionFileSystem::Fault::kNoSpace);
  auto f = fs.NewWritableFile(dir.Join("a"));  // op 1
  ASSERT_TRUE(f.ok());
  Status st = (*f)->Append("hello");  // op 2
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE((*f)->Append("hello").ok());  // op 3: one-shot fault is gone
  EXPECT_EQ(fs.OperationCount(), 3);
  fs.FailFrom(1, FaultInjectionFileSystem::Fault::kIoError);
  EXPECT_EQ((*f)->Sync().code(), StatusCode::kIOError);
  EXPECT_EQ(fs.ListDir(dir.path()).status().code(), StatusCode::kIOError);
  fs.ClearFaults();
  EXPECT_TRUE(fs.ListDir(dir.path()).ok());
}

// A file written by other means (e.g. by SQLite) is made durable by SyncFile, which
// counts as an operation and survives a simulated power cut.
TEST(FaultFsTest, SyncFileSyncsAFileWrittenElsewhere) {
  testing::TempDir dir;
  ASSERT_TRUE(WriteFileDurably(DefaultFileSystem(), dir.Join("a"), "0123456789").ok());
  FaultInjectionFileSystem fs(DefaultFileSystem());
  EXPECT_EQ(fs.SyncFile(dir.Join("missing")).code(), StatusCode::kNotFound);
  fs.FailOperation(1, FaultInjectionFileSystem::Fault::kIoError);
  EXPECT_EQ(fs.SyncFile(dir.Join("a")).code(), StatusCode::kIOError);
  ASSERT_TRUE(fs.SyncFile(dir.Join("a")).ok());
  ASSERT_TRUE(fs.DropUnsyncedData().ok());
  EXPECT_EQ(*DefaultFileSystem()->ReadFile(dir.Join("a"), 100), "0123456789");
}

TEST(FaultFsTest, TornWriteKeepsOnlyAPrefix) {
  testing::TempDir dir;
  FaultInjectionFileSystem fs(DefaultFileSystem());
  auto f = *fs.NewWritableFile(dir.Join("a"));
  fs.FailOperation(1, FaultInjectionFileSystem::Fault::kTornWrite);
  EXPECT_FALSE(f->Append("0123456789").ok());
  ASSERT_TRUE(f->Close().ok());
  EXPECT_EQ(*DefaultFileSystem()->ReadFile(dir.Join("a"), 100), "01234");
}

TEST(FaultFsTest, DropUnsyncedDataLosesWhatWasNotDurable) {
  testing::TempDir dir;
  FaultInjectionFileSystem fs(DefaultFileSystem());
  {
    auto f = *fs.NewWritableFile(dir.Join("synced"));
    ASSERT_TRUE(f->Append("durable").ok());
    ASSERT_TRUE(f->Sync().ok());
    ASSERT_TRUE(f->Append("-lost").ok());
    ASSERT_TRUE(f->Close().ok());
  }
  ASSERT_TRUE(fs.SyncDir(dir.path()).ok());
  {
    auto f = *fs.NewWritableFile(dir.Join("entry_not_synced"));
    ASSERT_TRUE(f->Append("x").ok());
    ASSERT_TRUE(f->Sync().ok());
  }
  ASSERT_TRUE(fs.DropUnsyncedData().ok());
  EXPECT_EQ(*DefaultFileSystem()->ReadFile(dir.Join("synced"), 100), "durable");
  EXPECT_FALSE(*DefaultFileSystem()->Exists(dir.Join("entry_not_synced")));
}

// After a simulated power cut right after an acknowledged append, the append
// is still there: every commit fsyncs files and directories before returning.
TEST(FaultFsTest, AcknowledgedCommitsSurviveAPowerCut) {
  testing::TempDir dir;
  FaultInjectionFileSystem fs(DefaultFileSystem());
  DatasetOptions o;
  o.fs = &fs;
  o.cache = nullptr;
  auto schema = *Schema::Make({{-1, "id", DataType::Of(TypeId::kInt64), false}});
  auto ds = Dataset::Create(dir.Join("db/t.vgl"), schema, {}, o);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  RecordBatch b = RecordBatch::Empty(schema);
  for (int64_t i = 0; i < 100; ++i) ASSERT_TRUE(b.AppendRow({i}).ok());
  auto reader = MakeBatchReader(schema, {b});
  ASSERT_TRUE((*ds)->Append(reader.get(), {}).ok());
  ASSERT_TRUE(fs.DropUnsyncedData().ok());
  auto reopened = Dataset::Open(dir.Join("db/t.vgl"), std::nullopt, o);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  EXPECT_EQ((*reopened)->version(), 2u);
  auto scan = *(*reopened)->Scan();
  auto batch = scan->Next();
  ASSERT_TRUE(batch.ok() && batch->has_value()) << batch.status().ToString();
  EXPECT_EQ((*batch)->num_rows, 100u);
}

}  // namespace
}  // namespace vigil
