#include "server/upload_spool.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "testutil/fake_env.h"
#include "testutil/temp_dir.h"
#include "vigil/storage/fault_fs.h"
#include "vigil/storage/filename.h"

namespace vigil::server {
namespace {

namespace fs = std::filesystem;

class StringSource : public BodySource {
 public:
  explicit StringSource(std::string text) : text_(std::move(text)) {}
  Result<size_t> Read(char* buf, size_t max) override {
    const size_t n = std::min(max, text_.size() - pos_);
    text_.copy(buf, n, pos_);
    pos_ += n;
    return n;
  }

 private:
  std::string text_;
  size_t pos_ = 0;
};

class UploadSpoolTest : public ::testing::Test {
 protected:
  std::string SpoolDir() const { return dir_.path() + "/" + UploadSpoolPath(); }
  // The entries of the spool directory.
  std::vector<std::string> Entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(SpoolDir())) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  // A directory as a server that was killed leaves it: a body and a lock nobody holds.
  std::string LeftByAKilledServer(const std::string& name) {
    const std::string d = SpoolDir() + "/" + name;
    fs::create_directories(d);
    std::ofstream(d + "/lock");
    std::ofstream(d + "/upload-1") << "id\n1\n";
    return d;
  }

  testing::TempDir dir_;
};

TEST_F(UploadSpoolTest, ABodyIsSpooledHashedAndRemovedWithItsHandle) {
  auto spool = UploadSpool::Open(dir_.path(), Env::Default());
  ASSERT_TRUE(spool.ok()) << spool.status().ToString();
  EXPECT_EQ(fs::path((*spool)->dir()).parent_path().string(), SpoolDir());
  StringSource body("abc");
  auto spooled = (*spool)->Spool(body);
  ASSERT_TRUE(spooled.ok()) << spooled.status().ToString();
  EXPECT_EQ((*spooled)->bytes, 3u);
  EXPECT_EQ((*spooled)->sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string path = (*spooled)->path;
  EXPECT_EQ(fs::path(path).parent_path().string(), (*spool)->dir());
  std::ifstream in(path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "abc");
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  spooled->reset();
  EXPECT_FALSE(fs::exists(path));
  // The spool's own directory goes with it.
  const std::string own = (*spool)->dir();
  spool->reset();
  EXPECT_FALSE(fs::exists(own));
}

TEST_F(UploadSpoolTest, OpeningRemovesWhatStoppedServersLeftAndKeepsALiveOnes) {
  const std::string killed = LeftByAKilledServer("4242-killed");
  const std::string live = LeftByAKilledServer("4343-live");
  auto held = FileLock::Acquire(live + "/lock");  // its server still runs
  ASSERT_TRUE(held.ok());
  fs::create_directories(SpoolDir());
  std::ofstream(SpoolDir() + "/upload-AbC123") << "id\n2\n";  // an older version's loose body
  auto spool = UploadSpool::Open(dir_.path(), Env::Default());
  ASSERT_TRUE(spool.ok()) << spool.status().ToString();
  EXPECT_EQ((*spool)->removed_at_open(), 2);
  EXPECT_FALSE(fs::exists(killed));
  EXPECT_FALSE(fs::exists(SpoolDir() + "/upload-AbC123"));
  EXPECT_TRUE(fs::exists(live + "/upload-1"));
  // Two live spools never take one directory, and neither removes the other's.
  auto second = UploadSpool::Open(dir_.path(), Env::Default());
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ((*second)->removed_at_open(), 0);
  EXPECT_NE((*second)->dir(), (*spool)->dir());
  EXPECT_EQ(Entries().size(), 3u);  // live, and the two spools
  EXPECT_TRUE(fs::exists((*spool)->dir() + "/lock"));
}

TEST_F(UploadSpoolTest, ADiskThatFillsUpFailsTheSpoolAndLeavesNoFile) {
  FaultInjectionFileSystem faults(DefaultFileSystem());
  testing::FakeEnv env(testing::FakeEnv::kDefaultStartMicros, &faults);
  auto spool = UploadSpool::Open(dir_.path(), &env);
  ASSERT_TRUE(spool.ok()) << spool.status().ToString();
  faults.FailOperation(2, FaultInjectionFileSystem::Fault::kNoSpace);  // the file opens; its first append fails
  StringSource body(std::string(300'000, 'x'));
  auto spooled = (*spool)->Spool(body);
  ASSERT_FALSE(spooled.ok());
  EXPECT_EQ(spooled.status().code(), StatusCode::kResourceExhausted) << spooled.status().ToString();
  faults.ClearFaults();
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator((*spool)->dir())) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"lock"});
}

}  // namespace
}  // namespace vigil::server
