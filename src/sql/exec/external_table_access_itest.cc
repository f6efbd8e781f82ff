// CREATE EXTERNAL TABLE through a Session, on datasets LanceDB writes: registering a
// location is server-side file access (ADMIN, and only below [sql]
// external_table_allowed_directories, links resolved), a location outside is refused
// alike whether it exists or not, and a refused or failed probe writes nothing.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testutil/await_file.h"
#include "testutil/temp_dir.h"
#include "vigil/common/failpoint.h"
#include "vigil/lance/lance_table.h"
#include "vigil/sql/session.h"
#include "vigil/storage/root.h"

namespace vigil::sql {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// Alice may ALTER every table of database shop, and nothing else.
const auth::Principal kShopAlice{"alice", false, {{"local.shop.*", {auth::Privilege::kAlter, auth::Privilege::kShow}}}};

std::vector<std::string> FolderListing(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

class ExternalTableAccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string runner_dir = lance::DefaultRunnerDir();
    if (!std::filesystem::exists("/usr/bin/node") ||
        !std::filesystem::exists(runner_dir + "/node_modules/@lancedb/lancedb")) {
      GTEST_SKIP() << "node or the pinned LanceDB package is not installed (scripts/install-deps.sh)";
    }
    root_ = dir_.Join("root");
    allowed_ = dir_.Join("allowed");
    tenant_ = dir_.Join("tenant");  // another tenant's datasets, outside the allowlist
    ASSERT_TRUE(Root::Init(root_).ok());
    for (const std::string& d : {allowed_, tenant_}) {
      const std::string make =
          "/usr/bin/node " + runner_dir + "/testdata/lance_writer.mjs create " + d + " docs 300 8 > /dev/null";
      ASSERT_EQ(std::system(make.c_str()), 0) << make;
    }
    Allow("[\"" + allowed_ + "\"]");
    auto admin = Open(auth::Principal::LocalAdmin());
    ASSERT_TRUE(admin->Execute("CREATE DATABASE shop").ok());
  }

  void Allow(const std::string& toml_array) {
    std::ofstream(root_ + "/vigil.toml") << "[sql]\nexternal_table_allowed_directories = " << toml_array << "\n";
  }

  std::unique_ptr<Session> Open(const auth::Principal& who) {
    SessionOptions options;
    options.principal = who;
    auto s = Session::Open(root_, options);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }

  static Result<ResultSet> Attach(Session& s, const std::string& table, const std::string& location) {
    return s.Execute("CREATE EXTERNAL TABLE " + table + " ENGINE = lance LOCATION '" + location + "'");
  }

  bool Registered(const std::string& table) {
    auto r = Open(auth::Principal::LocalAdmin())->Execute("SHOW TABLES FROM shop");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return false;
    for (const auto& row : r->rows) {
      if (std::get<std::string>(row.at(0)) == table) return true;
    }
    return false;
  }

  testing::TempDir dir_;
  std::string root_;
  std::string allowed_;
  std::string tenant_;
};

TEST_F(ExternalTableAccessTest, RegisteringALocationNeedsAdmin) {
  auto alice = Open(kShopAlice);
  for (const std::string& location : {tenant_ + "/docs.lance", allowed_ + "/docs.lance"}) {
    Result<ResultSet> r = Attach(*alice, "shop.stolen", location);
    ASSERT_FALSE(r.ok()) << location;
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << r.status().ToString();
    EXPECT_THAT(r.status().message(),
                AllOf(HasSubstr("requires ADMIN"), HasSubstr("[sql] external_table_allowed_directories")));
    // Nothing of the dataset is told: no version, no columns, no indexes.
    EXPECT_THAT(r.status().message(), AllOf(Not(HasSubstr("version")), Not(HasSubstr("columns"))));
  }
  EXPECT_FALSE(Registered("stolen"));
  // Alice may still create a table of her own there: only the location needs ADMIN.
  EXPECT_TRUE(alice->Execute("CREATE TABLE shop.mine (x BIGINT NOT NULL)").ok());
}

TEST_F(ExternalTableAccessTest, LocationsOutsideTheAllowlistAreRefusedAlike) {
  auto admin = Open(auth::Principal::LocalAdmin());
  const std::vector<std::string> before = FolderListing(tenant_);
  ASSERT_EQ(::symlink((tenant_ + "/docs.lance").c_str(), (allowed_ + "/link.lance").c_str()), 0);
  ASSERT_EQ(::symlink(tenant_.c_str(), (allowed_ + "/out").c_str()), 0);
  // An existing dataset, a missing one, a folder that only looks like one, and links out.
  ASSERT_EQ(::mkdir((tenant_ + "/fake.lance").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((tenant_ + "/fake.lance/_versions").c_str(), 0700), 0);
  for (const std::string& location :
       {tenant_ + "/docs.lance", tenant_ + "/none.lance", tenant_ + "/fake.lance", dir_.Join("nowhere/x.lance"),
        allowed_ + "/link.lance", allowed_ + "/out/docs.lance", allowed_ + "/out/none.lance"}) {
    Result<ResultSet> r = Attach(*admin, "shop.x", location);
    ASSERT_FALSE(r.ok()) << location;
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << location << ": " << r.status().ToString();
    // The same words for each: whether the path exists is not told.
    EXPECT_EQ(r.status().message(), "CREATE EXTERNAL TABLE local.shop.x: LOCATION '" + location +
                                        "' is refused: an external table's dataset must lie below [sql] "
                                        "external_table_allowed_directories in vigil.toml, with symbolic links "
                                        "resolved");
  }
  EXPECT_FALSE(Registered("x"));
  // Nothing was written beside or into the other tenant's datasets.
  std::vector<std::string> after = FolderListing(tenant_);
  after.erase(std::remove(after.begin(), after.end(), "fake.lance"), after.end());
  EXPECT_EQ(after, before);
  EXPECT_EQ(FolderListing(tenant_ + "/fake.lance"), std::vector<std::string>{"_versions"});

  // Inside, a missing dataset is said to be missing, and a link that stays inside is
  // registered as the path it resolves to.
  EXPECT_EQ(Attach(*admin, "shop.x", allowed_ + "/none.lance").status().code(), StatusCode::kNotFound);
  ASSERT_EQ(::mkdir((allowed_ + "/sub").c_str(), 0700), 0);
  ASSERT_EQ(::symlink((allowed_ + "/docs.lance").c_str(), (allowed_ + "/sub/alias.lance").c_str()), 0);
  Result<ResultSet> made = Attach(*admin, "shop.alias", allowed_ + "/sub/alias.lance");
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_THAT(made->message, HasSubstr("Lance dataset " + allowed_ + "/docs.lance at version 1"));
  Result<ResultSet> shown = admin->Execute("SHOW INDEX FROM shop.alias");
  EXPECT_TRUE(shown.ok()) << shown.status().ToString();
}

TEST_F(ExternalTableAccessTest, TheSettingDecidesWhereExternalTablesMayLive) {
  std::ofstream(root_ + "/vigil.toml") << "[sql]\n";  // the default: none
  Result<ResultSet> off = Attach(*Open(auth::Principal::LocalAdmin()), "shop.docs", allowed_ + "/docs.lance");
  ASSERT_FALSE(off.ok());
  EXPECT_EQ(off.status().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(off.status().message(),
              HasSubstr("external tables are off ([sql] external_table_allowed_directories in vigil.toml is empty)"));
  Allow("[\"" + tenant_ + "\"]");
  auto tenant_admin = Open(auth::Principal::LocalAdmin());
  EXPECT_EQ(Attach(*tenant_admin, "shop.docs", allowed_ + "/docs.lance").status().code(),
            StatusCode::kPermissionDenied);
  Result<ResultSet> made = Attach(*tenant_admin, "shop.docs", tenant_ + "/docs.lance");
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_TRUE(Registered("docs"));
}

// #48 item 10: a database whose only table is external has an empty directory, yet DROP
// DATABASE is refused while the table is registered (else the registration came back with a
// database created again under the name); once the table is dropped, the database goes.
TEST_F(ExternalTableAccessTest, DropDatabaseIsRefusedWhileAnExternalTableIsRegistered) {
  auto admin = Open(auth::Principal::LocalAdmin());
  ASSERT_TRUE(Attach(*admin, "shop.docs", allowed_ + "/docs.lance").ok());
  auto refused = admin->Execute("DROP DATABASE shop");
  ASSERT_EQ(refused.status().code(), StatusCode::kFailedPrecondition) << refused.status().ToString();
  EXPECT_THAT(refused.status().message(), HasSubstr("database 'shop' is not empty (tables docs (external))"));
  EXPECT_TRUE(Registered("docs"));
  ASSERT_TRUE(admin->Execute("DROP TABLE shop.docs").ok());
  ASSERT_TRUE(admin->Execute("DROP DATABASE shop").ok());
  ASSERT_TRUE(admin->Execute("CREATE DATABASE shop").ok());
  EXPECT_FALSE(Registered("docs"));
}

// #48 item 10, the DDL race: CREATE EXTERNAL TABLE reaches its registration while DROP DATABASE
// of the same database is between its check (no table) and the directory's removal. The
// registration waits for the drop's lock and then finds the database gone: it fails, and no
// registration is left behind in a dropped database (a later CREATE DATABASE shows no table).
TEST_F(ExternalTableAccessTest, ARegistrationRacingDropDatabaseFailsAndLeavesNothing) {
  const std::string drop_release = dir_.Join("drop-release");
  const std::string register_passed = dir_.Join("register-passed");
  std::ofstream(register_passed).put('\n');  // the registration only signals it reached the lock
  failpoint::Arm("jobs.drop_database.locked", failpoint::Action::kPause, 1, StatusCode::kIOError, 0, drop_release);
  failpoint::Arm("catalog.register_table.before_lock", failpoint::Action::kPause, 1, StatusCode::kIOError, 0,
                 register_passed);
  auto dropper = Open(auth::Principal::LocalAdmin());
  auto creator = Open(auth::Principal::LocalAdmin());
  std::future<Result<ResultSet>> dropped;
  std::future<Result<ResultSet>> created;
  // Released on every way out (before the futures wait), so a failed assertion never hangs.
  struct Release {
    std::string path;
    ~Release() { std::ofstream(path).put('\n'); }
  } release{drop_release};
  dropped = std::async(std::launch::async, [&] { return dropper->Execute("DROP DATABASE shop"); });
  ASSERT_TRUE(testing::AwaitFile(drop_release + ".reached")) << "DROP DATABASE never reached its pause";
  created = std::async(std::launch::async, [&] { return Attach(*creator, "shop.docs", allowed_ + "/docs.lance"); });
  ASSERT_TRUE(testing::AwaitFile(register_passed + ".reached")) << "the registration never reached the catalog's lock";
  std::ofstream(drop_release).put('\n');
  Result<ResultSet> drop = dropped.get();
  Result<ResultSet> create = created.get();
  failpoint::DisarmAll();
  ASSERT_TRUE(drop.ok()) << drop.status().ToString();
  ASSERT_EQ(create.status().code(), StatusCode::kNotFound) << create.status().ToString();
  EXPECT_THAT(create.status().message(), HasSubstr("database 'shop' does not exist (it was dropped)"));
  EXPECT_FALSE(std::filesystem::exists(root_ + "/shop"));
  ASSERT_TRUE(dropper->Execute("CREATE DATABASE shop").ok());
  EXPECT_FALSE(Registered("docs"));
}

// [lance] read_timeout_seconds bounds a read of a dataset: a runner slower than it (here a
// "node" that only sleeps) is killed and the statement fails naming the setting; nothing is
// registered.
TEST_F(ExternalTableAccessTest, AReadPastLanceReadTimeoutIsCutOffNamingTheSetting) {
  const std::string slow = dir_.Join("slow-node");
  std::ofstream(slow) << "#!/bin/sh\nexec sleep 600\n";
  ASSERT_EQ(::chmod(slow.c_str(), 0755), 0);
  std::ofstream(root_ + "/vigil.toml") << "[sql]\nexternal_table_allowed_directories = [\"" << allowed_
                                       << "\"]\n[lance]\nnode = \"" << slow << "\"\nread_timeout_seconds = 1\n";
  Result<ResultSet> r = Attach(*Open(auth::Principal::LocalAdmin()), "shop.docs", allowed_ + "/docs.lance");
  ASSERT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().ToString();
  EXPECT_THAT(r.status().message(), HasSubstr("of 1000 ms ([lance] read_timeout_seconds); it was killed"));
  EXPECT_FALSE(Registered("docs"));
}

}  // namespace
}  // namespace vigil::sql
