// The POSIX file system's input files, private files and kernel files.
#include "vigil/common/file_system.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "testutil/temp_dir.h"

namespace vigil {
namespace {

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(InputFileTest, ARegularFileIsReadAndItsFactsComeFromTheDescriptor) {
  testing::TempDir dir;
  const std::string path = dir.Join("in.csv");
  WriteText(path, "a,b\n1,2\n");
  ASSERT_EQ(::chmod(path.c_str(), 0604), 0);
  FileFacts facts;
  auto file = DefaultFileSystem()->NewInputFile(path, InputLinks::kFollow, &facts);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(facts.size, 8u);
  EXPECT_EQ(facts.mode, 0604u);
  EXPECT_EQ(facts.owner_uid, static_cast<uint32_t>(::geteuid()));
  std::string text;
  ASSERT_TRUE((*file)->Read(0, 8, &text).ok());
  EXPECT_EQ(text, "a,b\n1,2\n");
}

TEST(InputFileTest, AFifoADirectoryAndAMissingFileAreRefusedWithoutBlocking) {
  testing::TempDir dir;
  const std::string fifo = dir.Join("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // No writer ever opens the FIFO: an open that blocked would hang the test.
  auto f = DefaultFileSystem()->NewInputFile(fifo, InputLinks::kFollow, nullptr);
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(f.status().message().find("a FIFO"), std::string::npos) << f.status().ToString();
  auto d = DefaultFileSystem()->NewInputFile(dir.path(), InputLinks::kFollow, nullptr);
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("a directory"), std::string::npos);
  auto missing = DefaultFileSystem()->NewInputFile(dir.Join("nope"), InputLinks::kFollow, nullptr);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(InputFileTest, LinksAreFollowedOrRefusedAsAsked) {
  testing::TempDir dir;
  WriteText(dir.Join("real"), "x");
  ASSERT_EQ(::symlink(dir.Join("real").c_str(), dir.Join("link").c_str()), 0);
  ASSERT_EQ(::mkdir(dir.Join("sub").c_str(), 0700), 0);
  WriteText(dir.Join("sub/file"), "y");
  ASSERT_EQ(::symlink(dir.Join("sub").c_str(), dir.Join("sublink").c_str()), 0);
  FileSystem* fs = DefaultFileSystem();
  EXPECT_TRUE(fs->NewInputFile(dir.Join("link"), InputLinks::kFollow, nullptr).ok());
  EXPECT_FALSE(fs->NewInputFile(dir.Join("link"), InputLinks::kRefuseLast, nullptr).ok());
  // kRefuseLast looks at the last component only; kRefuseAny at every one.
  EXPECT_TRUE(fs->NewInputFile(dir.Join("sublink/file"), InputLinks::kRefuseLast, nullptr).ok());
  auto any = fs->NewInputFile(dir.Join("sublink/file"), InputLinks::kRefuseAny, nullptr);
  EXPECT_EQ(any.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(any.status().message().find("symbolic link"), std::string::npos);
  EXPECT_TRUE(fs->NewInputFile(dir.Join("sub/file"), InputLinks::kRefuseAny, nullptr).ok());
  EXPECT_EQ(fs->NewInputFile("relative/file", InputLinks::kRefuseAny, nullptr).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(PrivateFileTest, IsCreatedForItsOwnerAloneAndNeverReplacesAFile) {
  testing::TempDir dir;
  const std::string path = dir.Join("secret");
  auto file = DefaultFileSystem()->NewPrivateWritableFile(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_TRUE((*file)->Append("s").ok());
  ASSERT_TRUE((*file)->Close().ok());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(DefaultFileSystem()->NewPrivateWritableFile(path).status().code(), StatusCode::kAlreadyExists);
  auto data = DefaultFileSystem()->NewWritableFile(dir.Join("data"));
  ASSERT_TRUE(data.ok());
  ASSERT_EQ(::stat(dir.Join("data").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST(KernelFileTest, IsReadToItsEndAndBounded) {
  auto status = ReadKernelFile("/proc/self/status", 1 << 20);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_NE(status->find("Pid:"), std::string::npos);  // stat(2) says 0 bytes; the text is there
  EXPECT_EQ(ReadKernelFile("/proc/self/status", 16).status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace vigil
