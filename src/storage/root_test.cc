#include "vigil/storage/root.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testutil/temp_dir.h"

namespace vigil {
namespace {

using ::testing::HasSubstr;

TEST(TableNameTest, ParsesTwoAndThreeParts) {
  auto n = ParseTableName("db.t");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->ToString(), "local.db.t");
  n = ParseTableName("other.db_1._t");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->catalog, "other");
  EXPECT_EQ(n->table, "_t");
  EXPECT_THAT(ParseTableName("t").status().message(), HasSubstr("must be db.table or catalog.db.table"));
  EXPECT_THAT(ParseTableName("a.b.c.d").status().message(), HasSubstr("must be db.table"));
  EXPECT_THAT(ParseTableName("db.").status().message(), HasSubstr("table name is empty"));
  EXPECT_THAT(ParseTableName("1db.t").status().message(), HasSubstr("database name '1db'"));
  EXPECT_THAT(ParseTableName("db.t-x").status().message(), HasSubstr("table name 't-x'"));
  EXPECT_FALSE(ParseTableName("db." + std::string(65, 'a')).ok());
}

TEST(RootTest, InitOpenAndTablePaths) {
  testing::TempDir dir;
  std::string path = dir.Join("root");
  auto root = Root::Init(path);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_FALSE(root->marker().incarnation.IsNil());
  EXPECT_EQ(Root::Init(path).status().code(), StatusCode::kAlreadyExists);
  auto opened = Root::Open(path);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(opened->marker().incarnation, root->marker().incarnation);
  EXPECT_EQ(opened->marker().catalog, "local");
  EXPECT_GT(opened->marker().created_micros, 0);

  const Uuid id = Uuid::Generate();
  auto tp = opened->TableIncarnationPath(*ParseTableName("db.docs"), id);
  ASSERT_TRUE(tp.ok());
  EXPECT_EQ(*tp, path + "/db/docs." + id.ToString() + ".vgl");
  EXPECT_EQ(*opened->LegacyTablePath(*ParseTableName("db.docs")), path + "/db/docs.vgl");
  EXPECT_FALSE(opened->TableIncarnationPath(*ParseTableName("remote.db.docs"), id).ok());
}

TEST(RootTest, ReservedDatabaseNamesAreRefusedOnEveryPath) {
  testing::TempDir dir;
  auto root = Root::Init(dir.Join("root"));
  ASSERT_TRUE(root.ok());
  for (const char* db : {"_dropped", "_meta", "_x"}) {
    TableName name{"local", db, "orders"};
    EXPECT_THAT(ParseTableName(std::string(db) + ".orders").status().message(), HasSubstr("is reserved")) << db;
    EXPECT_THAT(root->TableIncarnationPath(name, Uuid::Generate()).status().message(), HasSubstr("is reserved"));
    EXPECT_THAT(root->LegacyTablePath(name).status().message(), HasSubstr("is reserved"));
    EXPECT_THAT(root->EnsureDatabase(db).message(), HasSubstr("is reserved"));
    EXPECT_THAT(root->DatabaseExists(db).status().message(), HasSubstr("is reserved"));
  }
  EXPECT_FALSE(std::filesystem::exists(dir.Join("root/_x")));
}

TEST(RootTest, RefusesNonEmptyNonRootAndDetectsNonRoot) {
  testing::TempDir dir;
  std::ofstream(dir.Join("file.txt")) << "x";
  EXPECT_EQ(Root::Init(dir.path()).status().code(), StatusCode::kFailedPrecondition);
  auto st = Root::Open(dir.path()).status();
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("is not a vigil root"));
  std::ofstream(dir.Join(std::string(kRootMarkerFile))) << "{not json";
  EXPECT_EQ(Root::Open(dir.path()).status().code(), StatusCode::kCorruption);
}

TEST(RootTest, ListsDatabasesAndTables) {
  testing::TempDir dir;
  auto root = Root::Init(dir.Join("r"));
  ASSERT_TRUE(root.ok());
  FileSystem* fs = DefaultFileSystem();
  const Uuid id = Uuid::Generate();
  ASSERT_TRUE(fs->CreateDirs(dir.Join("r/sales/orders.vgl")).ok());
  ASSERT_TRUE(fs->CreateDirs(dir.Join("r/sales/items." + id.ToString() + ".vgl")).ok());
  ASSERT_TRUE(fs->CreateDirs(dir.Join("r/sales/items.not-a-uuid.vgl")).ok());
  ASSERT_TRUE(fs->CreateDirs(dir.Join("r/sales/.items.vgl.importing-x")).ok());
  ASSERT_TRUE(fs->CreateDirs(dir.Join("r/analytics")).ok());
  ASSERT_TRUE(fs->CreateDirs(dir.Join("r/not-a-db")).ok());
  EXPECT_EQ(*root->ListDatabases(), (std::vector<std::string>{"analytics", "sales"}));
  auto dirs = root->ListTableDirs("sales");
  ASSERT_TRUE(dirs.ok());
  ASSERT_EQ(dirs->size(), 2u);
  EXPECT_EQ((*dirs)[0].parts.table, "items");
  EXPECT_EQ((*dirs)[0].parts.incarnation, id);
  EXPECT_EQ((*dirs)[1].parts.table, "orders");
  EXPECT_FALSE((*dirs)[1].parts.incarnation.has_value());
  EXPECT_TRUE(root->ListTableDirs("analytics")->empty());
  EXPECT_EQ(root->ListTableDirs("missing").status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(root->ListTableDirs("../x").ok());
}

TEST(RootTest, CreateAndDropDatabases) {
  testing::TempDir dir;
  auto root = Root::Init(dir.Join("root"));
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  ASSERT_TRUE(root->CreateDatabase("db").ok());
  EXPECT_EQ(root->CreateDatabase("db").code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(root->CreateDatabase("_meta").message(), HasSubstr("reserved"));
  EXPECT_EQ(root->CreateDatabase("1x").code(), StatusCode::kInvalidArgument);
  // _meta and _dropped are never listed as databases.
  std::filesystem::create_directories(dir.Join("root/_meta"));
  std::filesystem::create_directories(dir.Join("root/_dropped"));
  EXPECT_EQ(*root->ListDatabases(), (std::vector<std::string>{"db"}));
  std::filesystem::create_directories(dir.Join("root/db/t.vgl"));
  EXPECT_THAT(root->DropDatabase("db").message(), HasSubstr("is not empty (tables t)"));
  std::filesystem::remove(dir.Join("root/db/t.vgl"));
  ASSERT_TRUE(root->DropDatabase("db").ok());
  EXPECT_EQ(root->DropDatabase("db").code(), StatusCode::kNotFound);
  EXPECT_TRUE(root->ListDatabases()->empty());
}

}  // namespace
}  // namespace vigil
