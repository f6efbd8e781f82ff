// `vigil sql --url`: the shell on a real `vigil serve` prints the same bytes as
// the shell on a local root (tables, CSV, JSON, errors mid-script and exit
// status), carries session settings, waits for jobs before the next statement,
// refuses bad tokens and unprotected token files without ever showing a
// token; and, against a scripted fake server, retries as it promises: a lost
// connection under the same Idempotency-Key, a 503 only for reads.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/serve_fixture.h"
#include "testutil/run_command.h"
#include "testutil/temp_dir.h"

namespace vigil {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Out {
  int exit_code = -1;
  std::string stdout_text;
  std::string stderr_text;
  std::string all() const { return stdout_text + stderr_text; }
};

// Runs `vigil ARGS` (shell-quoted) without the VIGIL_* environment, stdout and stderr
// captured apart; `stdin_file` (optional) is its standard input.
Out Vigil(const std::string& dir, const std::string& args, const std::string& stdin_file = "") {
  const std::string err = dir + "/stderr.txt";
  const std::string cmd = "env -u VIGIL_ROOT -u VIGIL_URL -u VIGIL_TOKEN_FILE " + std::string(VIGIL_CLI_BINARY) + " " +
                          args + " 2>" + err + " <" + (stdin_file.empty() ? "/dev/null" : stdin_file);
  Out o;
  testing::CommandResult ran = testing::RunCommand(cmd);
  o.stdout_text = std::move(ran.output);
  o.exit_code = ran.exit_code;
  std::ifstream e(err);
  o.stderr_text.assign(std::istreambuf_iterator<char>(e), {});
  return o;
}

std::vector<std::string> Tokens(const std::string& text) {
  static const std::regex kToken("vgl_[0-9a-f]{16}_[0-9a-f]{64}");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kToken); it != std::sregex_iterator(); ++it) {
    out.push_back(it->str());
  }
  return out;
}

void WriteFile(const std::string& path, const std::string& text, mode_t mode = 0600) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  ::chmod(path.c_str(), mode);
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (size_t p = text.find(from); p != std::string::npos; p = text.find(from, p + to.size())) {
    text.replace(p, from.size(), to);
  }
  return text;
}

class SqlRemoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    remote_root_ = dir_.Join("remote");
    local_root_ = dir_.Join("local");
    Out made = Vigil(dir_.path(), "init " + remote_root_);
    ASSERT_EQ(made.exit_code, 0) << made.all();
    std::vector<std::string> tokens = Tokens(made.all());
    ASSERT_EQ(tokens.size(), 1u) << made.all();
    admin_ = tokens[0];
    ASSERT_EQ(Vigil(dir_.path(), "init " + local_root_).exit_code, 0);
    // The local shell's on-demand supervisor leaves soon after its jobs.
    {
      std::ifstream in(local_root_ + "/vigil.toml");
      std::string toml((std::istreambuf_iterator<char>(in)), {});
      const std::string key = "# supervise_idle_exit_seconds = \"1m\"";
      ASSERT_NE(toml.find(key), std::string::npos) << toml;
      std::ofstream(local_root_ + "/vigil.toml", std::ios::trunc)
          << Replace(toml, key, "supervise_idle_exit_seconds = 1");
    }
    token_file_ = dir_.Join("token");
    WriteFile(token_file_, "  " + admin_ + "\n\n");  // whitespace around the token is trimmed
    server_ = std::make_unique<ServeProcess>(remote_root_);
    ASSERT_GT(server_->port(), 0) << "vigil serve did not report its port";
  }

  // The shell through the server, and on the local root, with the same flags.
  Out Remote(const std::string& flags, const std::string& stdin_file = "") {
    Out o =
        Vigil(dir_.path(), "sql --url " + server_->url() + " --token-file " + token_file_ + " " + flags, stdin_file);
    EXPECT_THAT(o.all(), Not(HasSubstr(admin_))) << "the token must never be printed";
    return o;
  }
  Out Local(const std::string& flags, const std::string& stdin_file = "") {
    return Vigil(dir_.path(), "--root " + local_root_ + " sql " + flags, stdin_file);
  }

  testing::TempDir dir_;
  std::string remote_root_, local_root_, admin_, token_file_;
  std::unique_ptr<ServeProcess> server_;
};

// Results of every kind, an error mid-script (the rest still runs), an error carrying its
// position in the script, and a syntax error that ends the script.
constexpr char kScript[] = R"(CREATE DATABASE DB;
CREATE TABLE DB.t (id BIGINT NOT NULL, name STRING, score DOUBLE);
INSERT INTO DB.t VALUES (1, 'plain', 1.5), (2, 'a,b "q"', NULL), (3, NULL, -0.25),
  (4, 'héllo wörld', 1e300), (5, 'tab	and
newline', 3.0);
SELECT * FROM DB.t ORDER BY id;
SELECT * FROM DB.missing;
SELECT id, name FROM DB.t WHERE id > 2 ORDER BY id;
  SELECT TIMESTAMP 'garbage';
SELECT count(*) AS n, sum(id) AS total, avg(score) AS mean, NULL AS absent FROM DB.t;
SELECT 'a cell longer than the table shows, which the table cuts with dots at sixty characters' AS long_cell;
SHOW TABLES FROM DB;
DELETE FROM DB.t WHERE id = 4;
SELECT id FROM DB.t ORDER BY id DESC; SELECT 1 AS one, 'x' AS x
;
SELEC 2;
SELECT 3;
)";

TEST_F(SqlRemoteTest, AScriptPrintsTheSameBytesThroughTheServerAsOnALocalRoot) {
  struct Case {
    std::string flags;
    std::string input;  // "-f", "-c" or "stdin"
  };
  int run = 0;
  for (const Case& c : {Case{"", "-f"}, Case{"--csv", "-f"}, Case{"--json", "-f"}, Case{"", "stdin"},
                        Case{"--csv", "-c"}, Case{"--json", "stdin"}}) {
    SCOPED_TRACE(c.flags + " " + c.input);
    const std::string db = "d" + std::to_string(run++);  // each run its own database on both roots
    const std::string script = Replace(kScript, "DB", db);
    const std::string file = dir_.Join("script.sql");
    WriteFile(file, script);
    std::string flags = c.flags;
    std::string in;
    if (c.input == "-f") flags += " -f " + file;
    if (c.input == "stdin") in = file;
    if (c.input == "-c") {
      // Each -c one statement (quoted for the shell): up to the syntax error.
      for (const std::string& s : {"CREATE DATABASE " + db, "CREATE TABLE " + db + ".t (id BIGINT, s STRING)",
                                   "INSERT INTO " + db + ".t VALUES (1, 'one'), (2, NULL)",
                                   "SELECT * FROM " + db + ".nope", "SELECT s, id FROM " + db + ".t ORDER BY id"}) {
        flags += " -c \"" + s + "\"";
      }
    }
    Out remote = Remote(flags, in);
    Out local = Local(flags, in);
    EXPECT_EQ(remote.exit_code, 1) << remote.stderr_text;
    EXPECT_EQ(local.exit_code, 1) << local.stderr_text;
    EXPECT_EQ(remote.stdout_text, local.stdout_text) << "remote stderr: " << remote.stderr_text;
    EXPECT_EQ(remote.stderr_text, local.stderr_text);
    EXPECT_THAT(remote.stderr_text, HasSubstr("error: NOT_FOUND: "));
    if (c.input != "-c") {
      EXPECT_THAT(remote.stderr_text, HasSubstr("error: INVALID_ARGUMENT: line 9, column 10: invalid TIMESTAMP"));
      EXPECT_THAT(remote.stderr_text, HasSubstr("error: INVALID_ARGUMENT: line 16, column 1: "));
    }
  }
}

TEST_F(SqlRemoteTest, ATableAndAnErrorLookExactlyAsTheLocalShellPrintsThem) {
  const std::string setup =
      "-c \"CREATE TABLE db.t (id BIGINT NOT NULL, s STRING)\" -c \"INSERT INTO db.t VALUES "
      "(1, 'one'), (2, NULL)\"";
  ASSERT_EQ(Remote(setup).exit_code, 0);
  Out table = Remote("-c \"SELECT * FROM db.t ORDER BY id\" -c \"SELECT * FROM db.nope\" -c \"SELECT 7 AS seven\"");
  EXPECT_EQ(table.exit_code, 1);
  EXPECT_EQ(table.stdout_text,
            "+----+------+\n"
            "| id | s    |\n"
            "+----+------+\n"
            "| 1  | one  |\n"
            "| 2  | NULL |\n"
            "+----+------+\n"
            "(2 rows)\n"
            "+-------+\n"
            "| seven |\n"
            "+-------+\n"
            "| 7     |\n"
            "+-------+\n"
            "(1 row)\n");
  EXPECT_EQ(table.stderr_text, "error: NOT_FOUND: table local.db.nope does not exist\n");
}

TEST_F(SqlRemoteTest, ASettingLastsForTheStatementsAfterIt) {
  const std::string slow =
      "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 50000000) SELECT COUNT(*) AS c FROM n";
  const std::string flags = "--csv -c \"SET statement_timeout = 1\" -c \"" + slow +
                            "\" -c \"SET statement_timeout = DEFAULT\" -c \"SELECT 2 AS two\"";
  Out remote = Remote(flags);
  Out local = Local(flags);
  EXPECT_EQ(remote.exit_code, 1);
  EXPECT_THAT(remote.stderr_text, HasSubstr("error: DEADLINE_EXCEEDED: "));
  EXPECT_EQ(remote.stdout_text, "two\n2\n");
  EXPECT_EQ(remote.stdout_text, local.stdout_text);
  EXPECT_EQ(remote.stderr_text, local.stderr_text);
  EXPECT_EQ(remote.exit_code, local.exit_code);
}

// The server keeps no session between requests; the shell replays the statements it
// prepared, so PREPARE, EXECUTE and DEALLOCATE behave as on a local root.
TEST_F(SqlRemoteTest, APreparedStatementLastsUntilDeallocated) {
  ASSERT_EQ(
      Remote("-c \"CREATE TABLE db.t (id BIGINT NOT NULL)\" -c \"INSERT INTO db.t VALUES (1), (2), (3)\"").exit_code,
      0);
  ASSERT_EQ(
      Local("-c \"CREATE TABLE db.t (id BIGINT NOT NULL)\" -c \"INSERT INTO db.t VALUES (1), (2), (3)\"").exit_code, 0);
  const std::string flags =
      "--csv -c \"PREPARE above AS SELECT id FROM db.t WHERE id > \\$1 ORDER BY id\" -c \"EXECUTE above(1)\" "
      "-c \"PREPARE below AS SELECT id FROM db.t WHERE id < \\$1\" -c \"EXECUTE above(2)\" -c \"DEALLOCATE above\" "
      "-c \"EXECUTE above(0)\" -c \"EXECUTE below(2)\"";
  Out remote = Remote(flags);
  Out local = Local(flags);
  EXPECT_EQ(remote.exit_code, 1);
  EXPECT_EQ(remote.stdout_text, "id\n2\n3\nid\n3\nid\n1\n");
  EXPECT_EQ(remote.stdout_text, local.stdout_text);
  EXPECT_EQ(remote.stderr_text, local.stderr_text);
  EXPECT_THAT(remote.stderr_text, HasSubstr("error: NOT_FOUND: prepared statement above does not exist"));
}

TEST_F(SqlRemoteTest, AOneShotRunWaitsForEachStatementsJobsBeforeTheNext) {
  const std::string flags =
      "--csv -c \"CREATE TABLE db.t (id BIGINT NOT NULL, c STRING NOT NULL)\" -c \"INSERT INTO db.t VALUES (1, 'a'), "
      "(2, 'b')\" -c \"CREATE INDEX c_idx ON db.t (c) USING BITMAP\" -c \"SELECT JobId, State FROM vigil_index_jobs\"";
  Out remote = Remote(flags);
  Out local = Local(flags);
  ASSERT_EQ(remote.exit_code, 0) << remote.stderr_text;
  ASSERT_EQ(local.exit_code, 0) << local.stderr_text;
  EXPECT_EQ(remote.stdout_text, "JobId\n1\nJobId,State\n1,FINISHED\n");
  EXPECT_EQ(remote.stdout_text, local.stdout_text);
  EXPECT_THAT(remote.stderr_text, HasSubstr("job 1: FINISHED"));

  Out detached = Remote("--csv --detach -c \"CREATE INDEX id_idx ON db.t (id) USING BTREE\"");
  ASSERT_EQ(detached.exit_code, 0) << detached.stderr_text;
  EXPECT_EQ(detached.stdout_text, "JobId\n2\n");
  EXPECT_THAT(detached.stderr_text, Not(HasSubstr("job 2: ")));
}

// A vector is printed from its elements on both sides, so the table, CSV and JSON a remote
// shell prints are the local ones, byte for byte.
TEST_F(SqlRemoteTest, VectorsPrintAsLocallyInEveryFormat) {
  const std::string make =
      "-c \"CREATE TABLE db.v (id BIGINT NOT NULL, emb VECTOR(FLOAT32, 3), h VECTOR(FLOAT16, 2))\" -c \"INSERT "
      "INTO db.v VALUES (1, '[0.1, 7.03853069e-26, -2.5e20]', '[1, 0.5]'), (2, NULL, NULL), (3, '[1e-5, 3, "
      "123456789]', '[-0.25, 65504]')\"";
  ASSERT_EQ(Remote(make).exit_code, 0);
  ASSERT_EQ(Local(make).exit_code, 0);
  const std::string select = " -c \"SELECT * FROM db.v ORDER BY id\"";
  for (const std::string format : {"", "--csv", "--json"}) {
    SCOPED_TRACE(format);
    Out remote = Remote(format + select);
    Out local = Local(format + select);
    ASSERT_EQ(remote.exit_code, 0) << remote.stderr_text;
    EXPECT_EQ(remote.stdout_text, local.stdout_text);
    EXPECT_THAT(remote.stdout_text, HasSubstr("[0.1,7.03853069e-26,-2.5e+20]"));
    EXPECT_THAT(remote.stdout_text, HasSubstr("[1e-05,3,123456792]"));
    EXPECT_THAT(remote.stdout_text, HasSubstr("[-0.25,65504]"));
  }
  EXPECT_EQ(Local("--csv" + select).stdout_text,
            "id,emb,h\n1,\"[0.1,7.03853069e-26,-2.5e+20]\",\"[1,0.5]\"\n2,,\n3,\"[1e-05,3,123456792]\","
            "\"[-0.25,65504]\"\n");
}

TEST_F(SqlRemoteTest, AnIssuedTokenIsPrintedWholeAndBlobsComeBackAsHexText) {
  Out made = Vigil(dir_.path(), "sql --url " + server_->url() + " --token-file " + token_file_ +
                                    " -c \"CREATE USER bob\" -c \"SELECT x'00ff' AS b\"");
  ASSERT_EQ(made.exit_code, 0) << made.stderr_text;
  std::vector<std::string> tokens = Tokens(made.stdout_text);
  ASSERT_EQ(tokens.size(), 1u) << made.stdout_text;  // not cut at 60 characters
  EXPECT_NE(tokens[0], admin_);
  EXPECT_THAT(made.stdout_text, HasSubstr("| x'00ff' |"));
  // Bob has no grant: his statements are denied, and his token file works like any other.
  WriteFile(dir_.Join("bob"), tokens[0]);
  Out bob = Vigil(dir_.path(), "sql --url " + server_->url() + " --token-file " + dir_.Join("bob") +
                                   " --csv -c \"CREATE DATABASE bobs\" -c \"SELECT 1 AS one\"");
  EXPECT_EQ(bob.exit_code, 1);
  EXPECT_THAT(bob.stderr_text, HasSubstr("error: PERMISSION_DENIED: "));
  EXPECT_EQ(bob.stdout_text, "one\n1\n");
  Out csv = Remote("--csv -c \"SELECT x'00ff' AS b\"");
  EXPECT_EQ(csv.stdout_text, "b\nx'00ff'\n");
}

TEST_F(SqlRemoteTest, ABadTokenIsUnauthenticatedAndStopsTheScript) {
  const std::string bad = "vgl_0000000000000000_" + std::string(64, 'a');
  WriteFile(dir_.Join("bad"), bad + "\n");
  Out o = Vigil(dir_.path(), "sql --url " + server_->url() + " --token-file " + dir_.Join("bad") +
                                 " -c \"SELECT 1\" -c \"SELECT 2\"");
  EXPECT_NE(o.exit_code, 0);
  EXPECT_EQ(o.stdout_text, "");
  EXPECT_THAT(o.stderr_text, HasSubstr("error: UNAUTHENTICATED: "));
  EXPECT_THAT(o.stderr_text, HasSubstr("check the token file " + dir_.Join("bad")));
  EXPECT_EQ(Tokens(o.stderr_text).size(), 0u);
  EXPECT_THAT(o.all(), Not(HasSubstr(std::string(64, 'a'))));
  // Reported once: the second statement is not sent.
  EXPECT_EQ(o.stderr_text.find("UNAUTHENTICATED"), o.stderr_text.rfind("UNAUTHENTICATED"));
}

TEST_F(SqlRemoteTest, ATokenFileOthersCanReadIsRefused) {
  for (mode_t mode : {0640, 0604, 0660, 0644}) {
    SCOPED_TRACE(mode);
    ::chmod(token_file_.c_str(), mode);
    Out o = Remote("-c \"SELECT 1\"");
    EXPECT_NE(o.exit_code, 0);
    EXPECT_EQ(o.stdout_text, "");
    EXPECT_THAT(o.stderr_text, HasSubstr("is accessible by group or others"));
    EXPECT_THAT(o.stderr_text, HasSubstr("chmod 600 " + token_file_));
  }
  ::chmod(token_file_.c_str(), 0400);
  EXPECT_EQ(Remote("-c \"SELECT 1\"").exit_code, 0);
  WriteFile(dir_.Join("empty"), " \n");
  Out empty =
      Vigil(dir_.path(), "sql --url " + server_->url() + " --token-file " + dir_.Join("empty") + " -c 'SELECT 1'");
  EXPECT_NE(empty.exit_code, 0);
  EXPECT_THAT(empty.stderr_text, HasSubstr("is empty"));
  WriteFile(dir_.Join("two"), admin_ + " " + admin_ + "\n");
  Out two = Vigil(dir_.path(), "sql --url " + server_->url() + " --token-file " + dir_.Join("two") + " -c 'SELECT 1'");
  EXPECT_NE(two.exit_code, 0);
  EXPECT_THAT(two.stderr_text, HasSubstr("exactly one bearer token"));
  EXPECT_THAT(two.all(), Not(HasSubstr(admin_)));
}

TEST_F(SqlRemoteTest, FlagsThatDoNotGoTogetherAreRefused) {
  Out both = Vigil(dir_.path(), "--root " + local_root_ + " sql --url " + server_->url() + " --token-file " +
                                    token_file_ + " -c 'SELECT 1'");
  EXPECT_NE(both.exit_code, 0);
  EXPECT_THAT(both.stderr_text, HasSubstr("--root (or VIGIL_ROOT) and --url (or VIGIL_URL) cannot be used together"));
  Out no_token = Vigil(dir_.path(), "sql --url " + server_->url() + " -c 'SELECT 1'");
  EXPECT_NE(no_token.exit_code, 0);
  EXPECT_THAT(no_token.stderr_text, HasSubstr("--url needs --token-file"));
  Out no_url = Vigil(dir_.path(), "--root " + local_root_ + " sql --token-file " + token_file_ + " -c 'SELECT 1'");
  EXPECT_NE(no_url.exit_code, 0);
  EXPECT_THAT(no_url.stderr_text, HasSubstr("only for --url"));
  // The environment names the server and the token file as well.
  Out env = Vigil(dir_.path(), "sql --csv -c 'SELECT 5 AS five'");
  EXPECT_NE(env.exit_code, 0);  // no root, no URL
  const std::string cmd = "VIGIL_URL=" + server_->url() + " VIGIL_TOKEN_FILE=" + token_file_ + " " +
                          std::string(VIGIL_CLI_BINARY) + " sql --csv -c 'SELECT 5 AS five' 2>&1";
  const testing::CommandResult ran = testing::RunCommand("env -u VIGIL_ROOT " + cmd);
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_EQ(ran.output, "five\n5\n");
  Out help = Vigil(dir_.path(), "sql --help");
  EXPECT_THAT(help.stdout_text, HasSubstr("--url"));
  EXPECT_THAT(help.stdout_text, HasSubstr("BLOB comes back as hex"));
  EXPECT_THAT(help.stdout_text, HasSubstr("its own request"));
}

// A scripted HTTP/1.1 server on 127.0.0.1: each request gets the next answer of the script
// (nullopt: the connection is closed without one); every request is recorded.
class FakeServer {
 public:
  struct Request {
    std::string method, target, body;
    std::map<std::string, std::string> headers;  // names lower-case
  };
  using Answer = std::optional<std::string>;

  explicit FakeServer(std::vector<Answer> answers) : answers_(std::move(answers)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    const int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Request> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

  static std::string Json(int status, const std::string& body, const std::string& extra = "") {
    const bool problem = status >= 400;
    return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/" +
           (problem ? "problem+json" : "json") + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra +
           "\r\n" + body;
  }
  static std::string Result(const std::string& column, int64_t value) {
    return Json(200, R"({"results":[{"columns":[")" + column + R"("],"rows":[[)" + std::to_string(value) +
                         R"(]],"message":"","notices":[],"warnings":[],"admitted_jobs":[]}]})");
  }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int conn = ::accept(fd_, nullptr, nullptr);
      if (conn < 0) continue;
      Connection(conn);
      ::close(conn);
    }
  }

  // Requests on one connection until the client closes it or an answer is a drop.
  void Connection(int conn) {
    std::string buf;
    while (!stop_) {
      size_t end;
      while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
        if (!Read(conn, &buf)) return;
      }
      Request req;
      std::string head = buf.substr(0, end);
      buf.erase(0, end + 4);
      size_t line_end = head.find("\r\n");
      std::string first = head.substr(0, line_end);
      req.method = first.substr(0, first.find(' '));
      req.target = first.substr(first.find(' ') + 1, first.rfind(' ') - first.find(' ') - 1);
      size_t length = 0;
      for (size_t pos = line_end; pos != std::string::npos && pos < head.size();) {
        size_t next = head.find("\r\n", pos + 2);
        std::string h = head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
        pos = next;
        const size_t colon = h.find(':');
        if (colon == std::string::npos) continue;
        std::string name = h.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        std::string value = h.substr(colon + 1);
        value.erase(0, value.find_first_not_of(' '));
        if (name == "content-length") length = std::stoul(value);
        req.headers[name] = value;
      }
      while (buf.size() < length) {
        if (!Read(conn, &buf)) return;
      }
      req.body = buf.substr(0, length);
      buf.erase(0, length);
      Answer answer;
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(req);
        answer = requests_.size() <= answers_.size() ? answers_[requests_.size() - 1]
                                                     : Answer(Json(500, R"({"code":"INTERNAL","detail":"no more"})"));
      }
      if (!answer) return;  // dropped without an answer
      if (::send(conn, answer->data(), answer->size(), MSG_NOSIGNAL) < 0) return;
    }
  }

  bool Read(int conn, std::string* buf) {
    pollfd p{conn, POLLIN, 0};
    if (::poll(&p, 1, 10'000) <= 0) return false;
    char chunk[4096];
    const ssize_t n = ::recv(conn, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    buf->append(chunk, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<Answer> answers_;
  std::vector<Request> requests_;
};

class SqlRemoteRetryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    token_ = "vgl_0123456789abcdef_" + std::string(64, 'c');
    token_file_ = dir_.Join("token");
    WriteFile(token_file_, token_ + "\n");
  }
  Out Run(FakeServer& server, const std::string& flags) {
    Out o = Vigil(dir_.path(), "sql --url " + server.url() + " --token-file " + token_file_ + " " + flags);
    EXPECT_THAT(o.all(), Not(HasSubstr(token_)));
    for (const auto& r : server.requests()) EXPECT_EQ(r.headers.at("authorization"), "Bearer " + token_);
    return o;
  }
  testing::TempDir dir_;
  std::string token_, token_file_;
};

TEST_F(SqlRemoteRetryTest, ALostConnectionIsRetriedUnderTheSameIdempotencyKey) {
  const std::string in_progress = FakeServer::Json(
      409, R"({"code":"IDEMPOTENCY_REQUEST_IN_PROGRESS","detail":"the original request is still running"})",
      "Retry-After: 1\r\n");
  FakeServer server(
      {std::nullopt, std::nullopt, in_progress, FakeServer::Result("one", 1), FakeServer::Result("two", 2)});
  Out o = Run(server, "--csv -c 'SELECT 1 AS one' -c 'SELECT 2 AS two'");
  EXPECT_EQ(o.exit_code, 0) << o.stderr_text;
  EXPECT_EQ(o.stdout_text, "one\n1\ntwo\n2\n");
  std::vector<FakeServer::Request> reqs = server.requests();
  ASSERT_EQ(reqs.size(), 5u);
  const std::string key = reqs[0].headers["idempotency-key"];
  EXPECT_FALSE(key.empty());
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(reqs[i].method, "POST");
    EXPECT_EQ(reqs[i].target, "/v1/sql");
    EXPECT_EQ(reqs[i].headers["idempotency-key"], key) << i;
    EXPECT_EQ(reqs[i].body, R"({"sql":"SELECT 1 AS one"})");
  }
  EXPECT_NE(reqs[4].headers["idempotency-key"], key);  // a new statement, a new key
  EXPECT_FALSE(reqs[4].headers["idempotency-key"].empty());
}

TEST_F(SqlRemoteRetryTest, AStatementThatGets503IsNotRetriedButAJobPollIs) {
  const std::string busy =
      FakeServer::Json(503, R"({"code":"BUSY","detail":"no SQL session is free"})", "Retry-After: 1\r\n");
  const std::string admitted = FakeServer::Json(
      200, R"({"results":[{"columns":[],"rows":[],"message":"CREATE INDEX: job 7 admitted","notices":[],)"
           R"("warnings":[],"admitted_jobs":[7]}]})");
  const std::string running = FakeServer::Json(200, R"({"job":{"State":"RUNNING","Progress":"build 1/2"}})");
  const std::string finished = FakeServer::Json(200, R"({"job":{"State":"FINISHED","Progress":null}})");
  FakeServer server({busy, admitted, busy, running, finished});
  Out o = Run(server, "--csv -c 'SELECT 1' -c 'CREATE INDEX i ON d.t (c) USING BITMAP'");
  EXPECT_EQ(o.exit_code, 1) << o.stderr_text;  // the first statement failed
  EXPECT_EQ(o.stdout_text, "JobId\n7\n");
  EXPECT_THAT(o.stderr_text, HasSubstr("error: BUSY: no SQL session is free\n"));
  EXPECT_THAT(o.stderr_text, HasSubstr("job 7: RUNNING build 1/2\njob 7: FINISHED\n"));
  std::vector<FakeServer::Request> reqs = server.requests();
  ASSERT_EQ(reqs.size(), 5u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[1].method, "POST");
  EXPECT_NE(reqs[0].headers["idempotency-key"], reqs[1].headers["idempotency-key"]);
  for (int i = 2; i < 5; ++i) {
    EXPECT_EQ(reqs[i].method, "GET");
    EXPECT_EQ(reqs[i].target, "/v1/jobs/7");
  }
}

TEST_F(SqlRemoteRetryTest, AServerThatNeverAnswersEndsTheScriptWithAnUnknownOutcome) {
  FakeServer server(std::vector<FakeServer::Answer>(20, std::nullopt));
  Out o = Run(server, "-c 'SELECT 1' -c 'SELECT 2'");
  EXPECT_NE(o.exit_code, 0);
  EXPECT_THAT(o.stderr_text, HasSubstr("error: IO_ERROR: "));
  EXPECT_THAT(o.stderr_text, HasSubstr("may or may not have run"));
  std::vector<FakeServer::Request> reqs = server.requests();
  ASSERT_FALSE(reqs.empty());
  for (const auto& r : reqs) {
    EXPECT_EQ(r.headers.at("idempotency-key"), reqs[0].headers.at("idempotency-key"));  // never the second
    EXPECT_EQ(r.body, R"({"sql":"SELECT 1"})");
  }
}

}  // namespace
}  // namespace vigil
