// vigil.toml's [generations] budgets through SQL: the index segments a
// statement's generations open are charged to generations.memory_budget_bytes
// and generations.disk_budget_bytes; a table whose segments do not fit is
// refused with RESOURCE_EXHAUSTED naming the setting, and fits under the default.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "testutil/temp_dir.h"
#include "vigil/index/provider.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/jobs/table_catalog.h"
#include "vigil/sql/session.h"
#include "vigil/storage/root.h"

namespace vigil::sql {
namespace {

using ::testing::HasSubstr;

class GenerationBudgetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_dir_ = dir_.Join("root");
    ASSERT_TRUE(Root::Init(root_dir_).ok());
    SessionOptions client;
    client.file_access = FileAccess::kClient;  // COPY reads the test's own file
    auto s = std::move(*Session::Open(root_dir_, client));
    const std::string csv = dir_.Join("rows.csv");
    {
      std::ofstream out(csv);
      out << "id\n";
      for (int i = 0; i < 150'000; ++i) out << i << "\n";
    }
    ASSERT_TRUE(s->Execute("CREATE TABLE d.t (id BIGINT NOT NULL)").ok());
    ASSERT_TRUE(s->Execute("COPY d.t FROM '" + csv + "'").ok());
    Root root = *Root::Open(root_dir_);
    auto store = *jobs::OpenRootJobStore(root);
    jobs::TableCatalog catalog(&root, &*store, [] { return int64_t{1}; });
    index::CreateIndexRequest req;
    const jobs::TableEntry entry = *catalog.Lookup(*ParseTableName("d.t"));
    req.dataset_path = entry.locator;
    req.dataset = catalog.Options(entry);
    req.column = "id";
    req.name = "id_idx";
    req.type = index::IndexType::kBtree;
    auto built = index::CreateScalarIndex(req);
    ASSERT_TRUE(built.ok()) << built.status().ToString();
  }
  Result<ResultSet> Count(const std::string& config) {
    std::ofstream(root_dir_ + "/vigil.toml") << config;
    VIGIL_ASSIGN_OR_RETURN(auto s, Session::Open(root_dir_));
    return s->Execute("SELECT count(*) FROM d.t WHERE id < 1000");
  }

  testing::TempDir dir_;
  std::string root_dir_;
};

TEST_F(GenerationBudgetTest, MemoryBudgetRefusesSegmentsThatDoNotFit) {
  auto fits = Count("");
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  EXPECT_EQ(std::get<int64_t>(fits->rows[0][0]), 1000);
  auto refused = Count("[generations]\nmemory_budget_bytes = \"1MiB\"\n");
  ASSERT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status().ToString();
  EXPECT_THAT(refused.status().message(), HasSubstr("generations.memory_budget_bytes"));
}

TEST_F(GenerationBudgetTest, DiskBudgetRefusesSegmentsThatDoNotFit) {
  auto refused = Count("[generations]\ndisk_budget_bytes = \"1MiB\"\n");
  ASSERT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status().ToString();
  EXPECT_THAT(refused.status().message(), HasSubstr("generations.disk_budget_bytes"));
}

}  // namespace
}  // namespace vigil::sql
