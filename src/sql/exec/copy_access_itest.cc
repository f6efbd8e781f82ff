// COPY ... FROM 'path' through a Session: PostgreSQL's rule for server-side
// files (ADMIN, and only below [sql] copy_allowed_directories, links resolved),
// client-side loading of the user's own files, regular files only (a FIFO
// never hangs), and errors that quote at most a short excerpt of a bad file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testutil/temp_dir.h"
#include "vigil/sql/session.h"
#include "vigil/storage/root.h"

namespace vigil::sql {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::string_literals;

const auth::Principal kAlice{"alice", false, {{"local.db.*", {auth::Privilege::kAlter}}}};

void WriteFile(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

class CopyAccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.Join("root");
    allowed_ = dir_.Join("allowed");
    outside_ = dir_.Join("outside");
    ASSERT_TRUE(Root::Init(root_).ok());
    ASSERT_EQ(::mkdir(allowed_.c_str(), 0700), 0);
    ASSERT_EQ(::mkdir((allowed_ + "/sub").c_str(), 0700), 0);
    ASSERT_EQ(::mkdir(outside_.c_str(), 0700), 0);
    WriteFile(allowed_ + "/rows.csv", "x\n1\n2\n");
    WriteFile(outside_ + "/secret.csv", "x\n7\n");
    AllowDirectories("[\"" + allowed_ + "\"]");
    auto admin = Open(auth::Principal::LocalAdmin(), FileAccess::kClient);
    ASSERT_TRUE(admin->Execute("CREATE TABLE db.t (x BIGINT NOT NULL)").ok());
  }

  void AllowDirectories(const std::string& toml_array) {
    std::ofstream(root_ + "/vigil.toml") << "[sql]\ncopy_allowed_directories = " << toml_array << "\n";
  }

  std::unique_ptr<Session> Open(const auth::Principal& who, FileAccess access) {
    SessionOptions options;
    options.principal = who;
    options.file_access = access;
    auto s = Session::Open(root_, options);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }

  Status Copy(Session& s, const std::string& path) {
    return s.Execute("COPY db.t FROM '" + path + "' WITH (FORMAT csv)").status();
  }

  int64_t Rows() {
    auto s = Open(auth::Principal::LocalAdmin(), FileAccess::kClient);
    auto r = s->Execute("SELECT count(*) FROM db.t");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::get<int64_t>(r->rows.at(0).at(0)) : -1;
  }

  testing::TempDir dir_;
  std::string root_;
  std::string allowed_;
  std::string outside_;
};

// Runs `fn` on a thread. When it has not returned after 10 s (it blocks on the
// FIFO) a writer opens and closes the FIFO to release it and `*hung` is set, so
// a regression fails the test instead of hanging it.
template <typename Fn>
auto WithFifoWatchdog(const std::string& fifo, bool* hung, Fn fn) {
  auto done = std::async(std::launch::async, fn);
  *hung = done.wait_for(std::chrono::seconds(10)) != std::future_status::ready;
  while (done.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
    int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (w >= 0) ::close(w);
  }
  return done.get();
}

TEST_F(CopyAccessTest, ServerSideIsTheDefaultAndNeedsTheAllowlist) {
  auto s = Session::Open(root_);  // no FileAccess given: server-side, as LocalAdmin
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Status outside = Copy(**s, outside_ + "/secret.csv");
  EXPECT_EQ(outside.code(), StatusCode::kPermissionDenied) << outside.ToString();
  EXPECT_THAT(outside.message(), HasSubstr("[sql] copy_allowed_directories"));
  EXPECT_TRUE(Copy(**s, allowed_ + "/rows.csv").ok());
  EXPECT_EQ(Rows(), 2);
}

TEST_F(CopyAccessTest, ServerSideNeedsAdmin) {
  auto alice = Open(kAlice, FileAccess::kServer);
  Status st = Copy(*alice, allowed_ + "/rows.csv");
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st.ToString();
  EXPECT_THAT(st.message(), AllOf(HasSubstr("requires ADMIN"), HasSubstr("server-side file access"),
                                  HasSubstr("[sql] copy_allowed_directories")));
  // Alice may write the table: INSERT works, only the file is refused.
  EXPECT_TRUE(alice->Execute("INSERT INTO db.t VALUES (5)").ok());
  EXPECT_EQ(Rows(), 1);
}

TEST_F(CopyAccessTest, AdminReadsOnlyBelowTheAllowedDirectories) {
  auto admin = Open(auth::Principal::LocalAdmin(), FileAccess::kServer);
  for (const std::string& path : {outside_ + "/secret.csv", "/etc/passwd"s, dir_.Join("missing/x.csv")}) {
    Status st = Copy(*admin, path);
    EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << path << ": " << st.ToString();
    EXPECT_THAT(st.message(), HasSubstr("a server-side COPY reads only files below [sql] copy_allowed_directories"));
    EXPECT_THAT(st.message(), Not(HasSubstr("root:")));
  }
  Status relative = Copy(*admin, "allowed/rows.csv");
  EXPECT_EQ(relative.code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(relative.message(), HasSubstr("absolute path"));
  EXPECT_EQ(Rows(), 0);

  EXPECT_TRUE(Copy(*admin, allowed_ + "/rows.csv").ok());
  EXPECT_TRUE(Copy(*admin, allowed_ + "/sub/../rows.csv").ok());
  EXPECT_EQ(Rows(), 4);
  // Inside an allowed directory, a missing file is reported as such.
  EXPECT_EQ(Copy(*admin, allowed_ + "/none.csv").code(), StatusCode::kNotFound);
}

TEST_F(CopyAccessTest, SymlinksAndDotDotCannotLeaveTheAllowedDirectories) {
  auto admin = Open(auth::Principal::LocalAdmin(), FileAccess::kServer);
  ASSERT_EQ(::symlink((outside_ + "/secret.csv").c_str(), (allowed_ + "/link.csv").c_str()), 0);
  ASSERT_EQ(::symlink(outside_.c_str(), (allowed_ + "/out").c_str()), 0);
  ASSERT_EQ(::symlink("/etc/passwd", (allowed_ + "/passwd.csv").c_str()), 0);
  for (const std::string& path : {allowed_ + "/link.csv", allowed_ + "/out/secret.csv", allowed_ + "/passwd.csv",
                                  allowed_ + "/../outside/secret.csv", allowed_ + "/sub/../../outside/secret.csv"}) {
    Status st = Copy(*admin, path);
    EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << path << ": " << st.ToString();
    EXPECT_THAT(st.message(), HasSubstr("[sql] copy_allowed_directories")) << path;
  }
  EXPECT_EQ(Rows(), 0);
  // A link that stays inside is followed.
  ASSERT_EQ(::symlink((allowed_ + "/rows.csv").c_str(), (allowed_ + "/sub/alias.csv").c_str()), 0);
  EXPECT_TRUE(Copy(*admin, allowed_ + "/sub/alias.csv").ok());
  EXPECT_EQ(Rows(), 2);
}

TEST_F(CopyAccessTest, EmptyAllowlistMeansNoServerSideFiles) {
  std::ofstream(root_ + "/vigil.toml") << "[sql]\n";
  auto admin = Open(auth::Principal::LocalAdmin(), FileAccess::kServer);
  Status st = Copy(*admin, allowed_ + "/rows.csv");
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(st.message(), HasSubstr("server-side file access is off ([sql] copy_allowed_directories"));
  // The client side is not affected by the setting.
  auto client = Open(auth::Principal::LocalAdmin(), FileAccess::kClient);
  EXPECT_TRUE(Copy(*client, allowed_ + "/rows.csv").ok());
}

// The refusals come before the file is opened: a FIFO outside would otherwise be
// "not a regular file" (or block).
TEST_F(CopyAccessTest, RefusedPathsAreNeverOpened) {
  const std::string fifo = outside_ + "/pipe.csv";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const auth::Principal& who : {kAlice, auth::Principal::LocalAdmin()}) {
    auto s = Open(who, FileAccess::kServer);
    bool hung = false;
    Status st = WithFifoWatchdog(fifo, &hung, [&] { return Copy(*s, fifo); });
    EXPECT_FALSE(hung);
    EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << who.name << ": " << st.ToString();
  }
}

TEST_F(CopyAccessTest, ClientSideReadsTheUsersOwnFilesAsBefore) {
  auto client = Open(auth::Principal::LocalAdmin(), FileAccess::kClient);
  EXPECT_TRUE(Copy(*client, outside_ + "/secret.csv").ok());
  ASSERT_EQ(::symlink((outside_ + "/secret.csv").c_str(), dir_.Join("link.csv").c_str()), 0);
  EXPECT_TRUE(Copy(*client, dir_.Join("link.csv")).ok());
  EXPECT_TRUE(Copy(*client, allowed_ + "/../outside/secret.csv").ok());
  EXPECT_EQ(Rows(), 3);
  EXPECT_EQ(Copy(*client, dir_.Join("none.csv")).code(), StatusCode::kNotFound);
}

TEST_F(CopyAccessTest, AFifoIsRefusedPromptlyInBothModes) {
  const std::string fifo = allowed_ + "/pipe.csv";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (FileAccess access : {FileAccess::kClient, FileAccess::kServer}) {
    auto s = Open(auth::Principal::LocalAdmin(), access);
    bool hung = false;
    Status st = WithFifoWatchdog(fifo, &hung, [&] { return Copy(*s, fifo); });
    EXPECT_FALSE(hung) << "COPY from a FIFO blocked";
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
    EXPECT_THAT(st.message(), HasSubstr("pipe.csv is not a regular file (a FIFO)"));
    Status dir = Copy(*s, allowed_ + "/sub");
    EXPECT_EQ(dir.code(), StatusCode::kInvalidArgument) << dir.ToString();
    EXPECT_THAT(dir.message(), HasSubstr("is not a regular file (a directory)"));
  }
  auto client = Open(auth::Principal::LocalAdmin(), FileAccess::kClient);
  EXPECT_THAT(Copy(*client, "/dev/zero").message(), HasSubstr("/dev/zero is not a regular file (a character device)"));
  EXPECT_EQ(Rows(), 0);
}

// A binary file whose first line looks like a secret: the error names the file and
// the place and quotes at most a 32-byte escaped excerpt, never the line.
TEST_F(CopyAccessTest, ErrorsQuoteAtMostAShortExcerptOfAFileThatIsNotInput) {
  const std::string key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  const std::string file = allowed_ + "/creds.bin";
  WriteFile(file, "AWS_SECRET_ACCESS_KEY=" + key +
                      "\n\x7f"
                      "ELF\x02\x01\x01\0\0\0\xff\xfe\n"s);
  WriteFile(allowed_ + "/elf.bin",
            "\x7f"
            "ELF\x02\x01\x01\0\0\0"s +
                key + "\n");
  for (FileAccess access : {FileAccess::kClient, FileAccess::kServer}) {
    auto s = Open(auth::Principal::LocalAdmin(), access);
    for (const char* format : {"csv", "jsonl"}) {
      for (const std::string& path : {file, allowed_ + "/elf.bin"}) {
        Status st = s->Execute("COPY db.t FROM '" + path + "' WITH (FORMAT " + format + ")").status();
        SCOPED_TRACE(path + " as " + format + ": " + st.ToString());
        EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
        EXPECT_THAT(st.message(), HasSubstr(path + ":1:"));
        EXPECT_THAT(st.message(), Not(HasSubstr("EXAMPLEKEY")));
        EXPECT_THAT(st.message(), Not(HasSubstr("wJalr")));
        EXPECT_LT(st.message().size(), path.size() + 200);
        for (char c : st.message()) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << int(static_cast<unsigned char>(c));
      }
    }
    Status csv = s->Execute("COPY db.t FROM '" + file + "' WITH (FORMAT csv)").status();
    EXPECT_THAT(csv.message(), HasSubstr("column name 'AWS_SECRET_ACCESS_KEY=...' has an invalid character"));
    Status elf = s->Execute("COPY db.t FROM '" + allowed_ + "/elf.bin' WITH (FORMAT csv)").status();
    EXPECT_THAT(elf.message(), HasSubstr("column name '\\x7f...' must start with a letter"));
  }
  EXPECT_EQ(Rows(), 0);
}

}  // namespace
}  // namespace vigil::sql
