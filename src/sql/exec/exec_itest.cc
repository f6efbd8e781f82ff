// Statement execution: the golden files of testdata/exec (every statement and
// its errors against a fresh root, with the in-process executor playing the
// leader), plus focused tests of literal coercion, predicate pushdown, the
// atomicity of DELETE and UPDATE, and the tokens of CREATE USER / ROTATE TOKEN.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "sql/exec/exec_internal.h"
#include "testutil/golden_runner.h"
#include "testutil/temp_dir.h"
#include "vigil/auth/root_auth.h"
#include "vigil/catalog/table_catalog.h"
#include "vigil/common/failpoint.h"
#include "vigil/jobs/executor.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/jobs/runner.h"
#include "vigil/query/snapshot.h"
#include "vigil/sql/parser.h"
#include "vigil/sql/session.h"
#include "vigil/storage/dataset.h"
#include "vigil/storage/root.h"

namespace vigil::sql {
namespace {

using ::testing::HasSubstr;

std::string Cell(const Value& v) {
  if (std::holds_alternative<std::monostate>(v)) return "NULL";
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.10g", *d);
    return buf;
  }
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  std::string hex = "x'";
  for (unsigned char c : std::get<Blob>(v).bytes) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", c);
    hex += b;
  }
  return hex + "'";
}

std::string Join(const std::vector<std::string>& parts) {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? " | " : "") + parts[i];
  return s;
}

std::string FormatResult(const Result<ResultSet>& r) {
  if (!r.ok()) return "error: " + std::string(StatusCodeName(r.status().code())) + ": " + r.status().message();
  std::vector<std::string> lines;
  if (!r->columns.empty()) {
    lines.push_back(Join(r->columns));
    for (const auto& row : r->rows) {
      std::vector<std::string> cells;
      for (const Value& v : row) cells.push_back(Cell(v));
      lines.push_back(Join(cells));
    }
  }
  if (!r->message.empty()) lines.push_back("ok: " + r->message);
  for (const auto& w : r->warnings) lines.push_back("warning: " + w);
  for (const auto& n : r->notices) lines.push_back("notice: " + n);
  if (lines.empty()) lines.push_back("ok");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" : "") + lines[i];
  return out;
}

// A fresh root with a session, a job runner on the same store and a logical
// clock (one second per reading) so that waits with timeouts end deterministically.
class ExecEnv {
 public:
  ExecEnv() : root_path_(dir_.Join("root")) {
    auto root = Root::Init(root_path_);
    EXPECT_TRUE(root.ok()) << root.status().ToString();
    Reopen();
  }
  ~ExecEnv() { failpoint::DisarmAll(); }

  void Reopen() {
    session_.reset();
    SessionOptions o;
    o.clock = [this] { return now_ += 1000; };
    o.resolve_wait_ms = 2000;
    o.principal = principal_;
    o.file_access = FileAccess::kClient;  // the golden files COPY the test's own files
    auto s = Session::Open(root_path_, o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    session_ = std::move(*s);
  }

  Result<ResultSet> Exec(std::string_view sql) { return session_->Execute(sql); }
  std::string Run(std::string_view sql) {
    Result<ResultSet> r = Exec(Substitute(std::string(sql)));
    RememberTokens(r);
    return FormatResult(r);
  }

  // Keeps the tokens a result shows (CREATE USER, ALTER USER ... ROTATE TOKEN) for `do login`.
  void RememberTokens(const Result<ResultSet>& r) {
    if (!r.ok() || r->columns != std::vector<std::string>{"User", "Token"}) return;
    for (const auto& row : r->rows) tokens_[Cell(row[0])].push_back(Cell(row[1]));
  }

  // `login USER [N]`: authenticates the Nth token (1-based; default: the latest) this file
  // was shown for USER and, when it authenticates, runs the session as its principal.
  std::string Login(const std::string& user, const std::string& nth) {
    const std::vector<std::string>& issued = tokens_[user];
    size_t i = nth.empty() ? issued.size() : std::stoul(nth);
    if (i == 0 || i > issued.size()) return "no token " + nth + " was shown for " + user;
    auto root = Root::Open(root_path_);
    if (!root.ok()) return "error: " + root.status().ToString();
    auto store = auth::OpenRootPrincipalStore(*root);
    if (!store.ok()) return "error: " + store.status().ToString();
    auto who = (*store)->Authenticate(issued[i - 1]);
    if (!who.ok()) return "error: " + who.status().ToString();
    principal_ = who->principal;
    Reopen();
    std::string out = "session as " + principal_.name + " (admin " + (principal_.admin ? "yes" : "no") + ")";
    for (const auto& [object, held] : principal_.grants) {
      out += "; " + object + ":";
      for (auth::Privilege p : held) out += " " + std::string(auth::PrivilegeName(p));
    }
    return out;
  }
  std::string Logout() {
    principal_ = auth::Principal::LocalAdmin();
    Reopen();
    return "session as the local administrator";
  }

  // Dispatches every pending job and runs every due refresh.
  std::string RunJobs() {
    if (!runner_) {
      auto root = Root::Open(root_path_);
      auto store = jobs::OpenRootJobStore(*root);
      if (!store.ok()) return "error: " + store.status().ToString();
      store_ = std::move(*store);
      jobs::RunnerOptions options;
      options.lease_ttl_ms = int64_t{1} << 40;  // the logical clock runs fast
      runner_ = std::make_unique<jobs::JobRunner>(store_.get(), &executor_, options);
      Status st = runner_->Start(now_ += 1000);
      if (!st.ok()) return "error: " + st.ToString();
    }
    int jobs = 0;
    while (true) {
      auto id = runner_->RunOnePending(now_ += 1000);
      if (!id.ok()) return "error: " + id.status().ToString();
      if (!*id) break;
      ++jobs;
    }
    auto refreshes = runner_->RunRefreshes(now_ += 1000);
    if (!refreshes.ok()) return "error: " + refreshes.status().ToString();
    return "ran " + std::to_string(jobs) + " jobs, " + std::to_string(*refreshes) + " refreshes";
  }

  // The newest version of a table, found through the root's catalog.
  Result<std::shared_ptr<Dataset>> OpenTable(const vigil::TableName& name) {
    VIGIL_ASSIGN_OR_RETURN(Root root, Root::Open(root_path_));
    VIGIL_ASSIGN_OR_RETURN(auto store, jobs::OpenRootJobStore(root));
    catalog::TableCatalog catalog(&root, &store->catalog(), [this] { return now_; });
    return catalog.Open(name);
  }

  // Every live row of a table in scan order.
  std::string Rows(const std::string& table) {
    auto name = ParseTableName(table);
    if (!name.ok()) return name.status().ToString();
    auto ds = OpenTable(*name);
    if (!ds.ok()) return "error: " + ds.status().ToString();
    auto reader = (*ds)->Scan();
    std::vector<std::string> lines;
    for (auto batch = (*reader)->Next(); batch.ok() && *batch; batch = (*reader)->Next()) {
      for (size_t r = 0; r < (*batch)->num_rows; ++r) {
        std::vector<std::string> cells;
        for (const auto& c : (*batch)->columns) {
          cells.push_back(c.IsValid(r) ? ValueToString(c.ValueAt(r), c.type()) : "NULL");
        }
        lines.push_back(Join(cells));
      }
    }
    std::string out = std::to_string(lines.size()) + " rows";
    for (const auto& l : lines) out += "\n" + l;
    return out;
  }

  std::string Do(const std::string& command) {
    std::istringstream in(command);
    std::string verb, a, b;
    in >> verb >> a >> b;
    if (verb == "run" && a == "jobs") return RunJobs();
    if (verb == "failpoint" && b == "error") {
      failpoint::Arm(a, failpoint::Action::kError);
      return "armed " + a;
    }
    if (verb == "failpoint" && a == "off") {
      failpoint::DisarmAll();
      return "disarmed";
    }
    if (verb == "ls") return List(a);
    if (verb == "login") return Login(a, b);
    if (verb == "logout") return Logout();
    if (verb == "gencsv") return GenCsv(a, std::stoi(b));
    return "unknown command: " + command;
  }

  // Entries of a root directory (a relative path; "." is the root).
  std::string List(const std::string& rel) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(root_path_ + "/" + rel, ec)) {
      names.push_back(e.path().filename().string());
    }
    if (ec) return "error: " + ec.message();
    std::sort(names.begin(), names.end());
    return Mask(Join(names));
  }

  // A CSV of `rows` documents (id, category, ts, body, emb VECTOR(FLOAT32, 4)) under the test directory.
  std::string GenCsv(const std::string& name, int rows) {
    static const char* kWords[] = {"fence", "lifecycle", "vector", "index", "search", "match", "repair"};
    std::ofstream out(dir_.Join(name));
    out << "id,category,ts,body,emb\n";
    for (int i = 0; i < rows; ++i) {
      out << i << ",c" << i % 3 << ",2024-01-" << 10 + i % 20 << "T10:00:00," << kWords[i % 7] << " "
          << kWords[(i / 7) % 7] << ",\"[" << i % 5 << ", " << (i * 7) % 11 << ", " << (i * 3) % 13 << ", " << i % 2
          << "]\"\n";
    }
    return "wrote " + name;
  }

  void WriteFile(const std::string& name, const std::string& content) {
    std::ofstream(dir_.Join(name)) << content << "\n";
  }
  void WriteConfig(const std::string& toml) {
    std::ofstream(root_path_ + "/vigil.toml") << toml << "\n";
    Reopen();
  }

  std::string Substitute(std::string s) const {
    for (size_t p; (p = s.find("$DIR")) != std::string::npos;) s.replace(p, 4, dir_.path());
    return s;
  }
  // Replaces the test directory, UUIDs, bearer tokens and (for job statements, whose times
  // come from the logical clock, and user listings, whose times are the store's wall clock)
  // times, so that outputs do not depend on the run.
  std::string Mask(std::string s, bool times = false) const {
    for (size_t p; (p = s.find(dir_.path())) != std::string::npos;) s.replace(p, dir_.path().size(), "$DIR");
    static const std::regex kUuid("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
    static const std::regex kTime("[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{3})?");
    static const std::regex kMillis("\"(deadline_at|[a-z_]*_ms)\":\"[0-9]+\"");
    static const std::regex kToken("vgl_[0-9a-f]{16}_[0-9a-f]{64}");
    s = std::regex_replace(s, kUuid, "<uuid>");
    s = std::regex_replace(s, kToken, "<token>");
    if (!times) return s;
    s = std::regex_replace(s, kMillis, "\"$1\":\"<ms>\"");
    return std::regex_replace(s, kTime, "<time>");
  }
  static bool ShowsTimes(const std::string& sql) {
    std::string upper = sql;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return upper.find("INDEX JOB") != std::string::npos || upper.find("SHOW USERS") != std::string::npos ||
           upper.find("SHOW GRANTS") != std::string::npos;
  }

  std::string RunRecord(const testing::GoldenRecord& r) {
    if (r.directive == "statement" || r.directive == "query") return Mask(Run(r.input), ShowsTimes(r.input));
    if (r.directive == "do") {
      std::istringstream lines(r.input);
      std::string out;
      for (std::string line; std::getline(lines, line);) out += (out.empty() ? "" : "\n") + Do(line);
      return out;
    }
    if (r.directive == "rows") return Rows(r.input);
    if (r.directive == "file" && !r.args.empty()) {
      WriteFile(r.args[0], r.input);
      return "";
    }
    if (r.directive == "config") {
      WriteConfig(r.input);
      return "";
    }
    return "unknown directive " + r.directive;
  }

  auth::Principal principal_ = auth::Principal::LocalAdmin();
  std::map<std::string, std::vector<std::string>> tokens_;  // shown by CREATE USER / ROTATE TOKEN
  testing::TempDir dir_;
  std::string root_path_;
  int64_t now_ = 1'700'000'000'000;
  std::unique_ptr<Session> session_;
  std::unique_ptr<jobs::JobStore> store_;
  jobs::InProcessExecutor executor_;
  std::unique_ptr<jobs::JobRunner> runner_;
};

class ExecGoldenTest : public ::testing::TestWithParam<std::filesystem::path> {};

TEST_P(ExecGoldenTest, Matches) {
  ExecEnv env;
  size_t records = testing::RunGoldenFile(
      GetParam(), [&](const testing::GoldenRecord& r) { return std::optional<std::string>(env.RunRecord(r)); });
  EXPECT_GT(records, 5u);
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ExecGoldenTest);
INSTANTIATE_TEST_SUITE_P(Exec, ExecGoldenTest,
                         ::testing::ValuesIn(testing::GoldenFiles(std::filesystem::path(VIGIL_SQL_TESTDATA_DIR) /
                                                                  "exec")),
                         testing::GoldenFileName);

// ---- Literal coercion ----

Literal Num(const char* text) {
  std::string t(text);
  bool is_float = t.find_first_of("eE") != std::string::npos;
  bool is_dec = !is_float && t.find('.') != std::string::npos;
  return Literal::Number(is_float ? Literal::Kind::kFloat
                         : is_dec ? Literal::Kind::kDecimal
                                  : Literal::Kind::kInteger,
                         t);
}

TEST(CoerceLiteralTest, NumbersByColumnType) {
  EXPECT_EQ(std::get<int64_t>(*CoerceLiteral(Num("-12"), DataType::Of(TypeId::kInt64))), -12);
  EXPECT_EQ(std::get<double>(*CoerceLiteral(Num("3"), DataType::Of(TypeId::kFloat64))), 3.0);
  EXPECT_EQ(std::get<double>(*CoerceLiteral(Num("1e-3"), DataType::Of(TypeId::kFloat32))), 1e-3);
  EXPECT_EQ(std::get<int64_t>(*CoerceLiteral(Num("12.50"), DataType::Decimal(6, 2))), 1250);
  EXPECT_THAT(CoerceLiteral(Num("300"), DataType::Of(TypeId::kInt8)).status().message(), HasSubstr("out of range"));
  EXPECT_THAT(CoerceLiteral(Num("1.5"), DataType::Of(TypeId::kInt32)).status().message(), HasSubstr("not an integer"));
  EXPECT_THAT(CoerceLiteral(Num("7"), DataType::Of(TypeId::kString)).status().message(),
              HasSubstr("number 7 is not a value of type STRING"));
  EXPECT_FALSE(CoerceLiteral(Literal::Bool(true), DataType::Of(TypeId::kInt64)).ok());
  EXPECT_TRUE(std::get<bool>(*CoerceLiteral(Literal::Bool(true), DataType::Of(TypeId::kBool))));
  EXPECT_TRUE(IsNull(*CoerceLiteral(Literal::Null(), DataType::Of(TypeId::kInt64))));
}

TEST(CoerceLiteralTest, TypedLiteralsStringsAndVectors) {
  Literal date{Literal::Kind::kDate, "1970-01-03", false};
  Literal ts{Literal::Kind::kTimestamp, "1970-01-01 00:00:01", false};
  EXPECT_EQ(std::get<int64_t>(*CoerceLiteral(date, DataType::Of(TypeId::kDate))), 2);
  EXPECT_EQ(std::get<int64_t>(*CoerceLiteral(date, DataType::Of(TypeId::kTimestamp))), 2LL * 86'400'000'000);
  EXPECT_EQ(std::get<int64_t>(*CoerceLiteral(ts, DataType::Of(TypeId::kTimestamp))), 1'000'000);
  EXPECT_THAT(CoerceLiteral(ts, DataType::Of(TypeId::kDate)).status().message(),
              HasSubstr("is not a value of type DATE"));
  EXPECT_FALSE(CoerceLiteral(date, DataType::Of(TypeId::kString)).ok());
  EXPECT_EQ(std::get<int64_t>(*CoerceLiteral(Literal::String("1970-01-02"), DataType::Of(TypeId::kDate))), 1);
  EXPECT_EQ(std::get<std::string>(*CoerceLiteral(Literal::String("it's"), DataType::Of(TypeId::kString))), "it's");
  DataType vec = DataType::Vector(VectorElement::kFloat32, 3);
  auto v = CoerceLiteral(Literal::String("[0.5, 2, -3e-2]"), vec);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(std::get<std::vector<float>>(*v), (std::vector<float>{0.5f, 2.0f, -3e-2f}));
  EXPECT_FALSE(CoerceLiteral(Literal::String("[1, 2]"), vec).ok());
  EXPECT_FALSE(CoerceLiteral(Num("1"), vec).ok());
}

// ---- Text bytes: COPY of CSV and JSON Lines and INSERT follow one rule ----

// STRING values are UTF-8: the same bad byte is refused by COPY from CSV and from JSON
// Lines with one message at its file:line:column, and by INSERT (the lexer refuses it
// in a literal); NUL is a character in all three (a raw byte in CSV and SQL text,
// "\u0000" in JSON). A refused COPY writes nothing.
TEST(TextBytesTest, CopyAndInsertAgreeOnUtf8AndNul) {
  ExecEnv env;
  ASSERT_TRUE(env.Exec("CREATE TABLE db.t (id BIGINT NOT NULL, s STRING)").ok());
  env.WriteFile("bad.csv",
                "id,s\n1,ok\n2,a\xff"
                "b");
  env.WriteFile("bad.jsonl",
                "{\"id\":1,\"s\":\"ok\"}\n{\"id\":2,\"s\":\"a\xff"
                "b\"}");
  Result<ResultSet> csv = env.Exec(env.Substitute("COPY db.t FROM '$DIR/bad.csv'"));
  Result<ResultSet> jsonl = env.Exec(env.Substitute("COPY db.t FROM '$DIR/bad.jsonl'"));
  EXPECT_EQ(csv.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(jsonl.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(env.Mask(csv.status().message()), "$DIR/bad.csv:3:4: invalid UTF-8 (byte 0xff)");
  EXPECT_EQ(env.Mask(jsonl.status().message()), "$DIR/bad.jsonl:2:15: invalid UTF-8 (byte 0xff)");
  Result<ResultSet> literal = env.Exec(
      "INSERT INTO db.t VALUES (3, 'a\xff"
      "b')");
  EXPECT_EQ(literal.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(literal.status().message(), HasSubstr("invalid UTF-8"));
  EXPECT_EQ(env.Run("SELECT count(*) AS n FROM db.t"), "n\n0");

  env.WriteFile("nul.csv", std::string("id,s\n1,a\0b", 10));
  env.WriteFile("nul.jsonl", "{\"id\":2,\"s\":\"a\\u0000b\"}");
  EXPECT_EQ(env.Run("COPY db.t FROM '$DIR/nul.csv'"), "ok: 1 row copied into local.db.t");
  EXPECT_EQ(env.Run("COPY db.t FROM '$DIR/nul.jsonl'"), "ok: 1 row copied into local.db.t");
  Result<ResultSet> inserted = env.Exec(std::string("INSERT INTO db.t VALUES (3, 'a\0b')", 34));
  ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();
  EXPECT_EQ(env.Run("SELECT id, hex(s) AS h FROM db.t ORDER BY id"), "id | h\n1 | 610062\n2 | 610062\n3 | 610062");
}

// ---- DELETE / UPDATE ----

class DmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Ok("CREATE TABLE db.t (id BIGINT NOT NULL, cat STRING NOT NULL, x DOUBLE, d DATE)");
    std::string values;
    for (int i = 0; i < 40; ++i) {
      values += std::string(i ? ", " : "") + "(" + std::to_string(i) + ", '" + "c" + std::to_string(i % 4) + "', " +
                (i % 5 == 0 ? "NULL" : std::to_string(i) + ".5") + ", DATE '2024-01-" + std::to_string(10 + i % 20) +
                "')";
    }
    Ok("INSERT INTO db.t VALUES " + values);
  }
  void TearDown() override { failpoint::DisarmAll(); }
  ResultSet Ok(const std::string& sql) {
    auto r = env_.Exec(sql);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
    return r.ok() ? *r : ResultSet{};
  }
  std::shared_ptr<Dataset> Table() { return *env_.OpenTable(*ParseTableName("db.t")); }
  std::vector<RowAddress> Match(const std::string& where) {
    auto stmt = ParseStatement("DELETE FROM db.t WHERE " + where);
    EXPECT_TRUE(stmt.ok()) << stmt.status().ToString();
    auto snap = query::TableSnapshot::Open(Table());
    auto rows = MatchRows(**snap, std::get<DeleteStatement>(stmt->node).where);
    EXPECT_TRUE(rows.ok()) << where << ": " << rows.status().ToString();
    return rows.ok() ? *rows : std::vector<RowAddress>{};
  }

  ExecEnv env_;
};

TEST_F(DmlTest, PushdownAgreesWithRowByRowEvaluation) {
  const std::vector<std::string> wheres = {"id = 3",
                                           "id < 10 AND cat = 'c1'",
                                           "x >= 20.5",
                                           "x IS NULL",
                                           "cat IN ('c0', 'c3') AND id > 30",
                                           "id BETWEEN 5 AND 9",
                                           "d = '2024-01-12'",
                                           "d < DATE '2024-01-15' AND x > 1",
                                           "7 < id AND id <= 12",
                                           "d >= TIMESTAMP '2024-01-20 00:00:00'",
                                           "id = 2.5",
                                           "x = 21.5"};
  for (bool indexed : {false, true}) {
    if (indexed) {
      Ok("CREATE INDEX id_idx ON db.t (id) USING BTREE");
      Ok("CREATE INDEX cat_idx ON db.t (cat) USING BITMAP");
      EXPECT_EQ(env_.RunJobs(), "ran 2 jobs, 2 refreshes");
    }
    for (const std::string& w : wheres) {
      // NOT NOT (...) is never pushed down: the whole condition is evaluated row by row.
      std::vector<RowAddress> pushed = Match(w);
      std::vector<RowAddress> scanned = Match("NOT NOT (" + w + ")");
      std::sort(pushed.begin(), pushed.end());
      EXPECT_EQ(pushed, scanned) << w << (indexed ? " (indexed)" : "");
    }
  }
  EXPECT_EQ(Match("id = 3").size(), 1u);
  EXPECT_EQ(Match("x IS NULL").size(), 8u);
  EXPECT_EQ(Match("cat = 'c1' OR x IS NULL").size(), 16u);
  EXPECT_EQ(Match("NOT (x > 0)").size(), 0u);  // NULL stays unknown under NOT
}

TEST_F(DmlTest, UpdateIsOneCommitOfDeleteAndAppend) {
  const uint64_t before = Table()->version();
  EXPECT_EQ(Ok("UPDATE db.t SET x = x * 2, cat = 'big' WHERE id >= 36").message, "4 rows updated");
  auto ds = Table();
  EXPECT_EQ(ds->version(), before + 1);
  EXPECT_EQ(ds->manifest().txn.operation, "UPDATE");
  EXPECT_EQ(ds->CountRows(), 40u);
  EXPECT_EQ(Match("cat = 'big'").size(), 4u);
  EXPECT_EQ(Match("x = 73").size(), 1u);  // 36.5 * 2
  EXPECT_EQ(Ok("UPDATE db.t SET x = 0 WHERE id > 1000").message, "0 rows updated");
  EXPECT_EQ(Table()->version(), before + 1);
}

TEST_F(DmlTest, FailedUpdateChangesNothing) {
  const uint64_t before = Table()->version();
  // NOT NULL violated on a later row.
  auto r = env_.Exec("UPDATE db.t SET cat = NULL WHERE id >= 10");
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("column 'cat'"));
  // An evaluation error on one row only (x is NULL for id 10, 15, ...: NULL arithmetic is fine;
  // division by zero is not).
  r = env_.Exec("UPDATE db.t SET x = 1 / (id - 12) WHERE id > 5");
  EXPECT_THAT(r.status().message(), HasSubstr("division by zero"));
  EXPECT_THAT(r.status().message(), HasSubstr("row 7, column 'x'"));
  // A failure while the new fragments are written.
  failpoint::Arm("commit.after_fragments", failpoint::Action::kError);
  r = env_.Exec("UPDATE db.t SET x = 1 WHERE id < 20");
  EXPECT_FALSE(r.ok());
  failpoint::Arm("commit.after_manifest_temp", failpoint::Action::kError);
  failpoint::Disarm("commit.after_fragments");
  EXPECT_FALSE(env_.Exec("UPDATE db.t SET x = 1 WHERE id < 20").ok());
  EXPECT_FALSE(env_.Exec("DELETE FROM db.t WHERE id < 20").ok());
  failpoint::DisarmAll();
  auto ds = Table();
  EXPECT_EQ(ds->version(), before);
  EXPECT_EQ(ds->CountRows(), 40u);
  EXPECT_EQ(Match("x = 1").size(), 0u);
  EXPECT_EQ(Ok("DELETE FROM db.t WHERE id < 20").message, "20 rows deleted");
  EXPECT_EQ(Table()->CountRows(), 20u);
}

TEST_F(DmlTest, PrincipalsNeedGrants) {
  Ok("CREATE TABLE db.u (id BIGINT)");
  env_.principal_ = auth::Principal{"analyst", false, {{"local.db.t", {auth::Privilege::kShow}}}};
  env_.Reopen();
  EXPECT_EQ(env_.Exec("DELETE FROM db.t WHERE id = 1").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(env_.Exec("CREATE DATABASE other").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(env_.Exec("SHOW INDEX FROM db.t").status().code(), StatusCode::kOk);
  EXPECT_EQ(env_.Exec("SHOW INDEX FROM db.u").status().code(), StatusCode::kNotFound);
  // db is the analyst's to see (db.t): creating a table in it is refused as such, whether the
  // name is free or taken by a table the analyst may not see.
  for (const char* table : {"db.fresh", "db.u"}) {
    Status st = env_.Exec(std::string("CREATE TABLE ") + table + " (id BIGINT)").status();
    EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st.ToString();
    EXPECT_NE(st.message().find("ALTER on local." + std::string(table)), std::string::npos) << st.ToString();
  }
  env_.principal_ = auth::Principal{"nobody", false, {}};
  env_.Reopen();
  EXPECT_EQ(env_.Exec("INSERT INTO db.t (id, cat) VALUES (1, 'a')").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(env_.Exec("CREATE TABLE db.fresh (id BIGINT)").status().code(), StatusCode::kNotFound);
  auto tables = env_.Exec("SHOW TABLES");
  ASSERT_TRUE(tables.ok());
  EXPECT_TRUE(tables->rows.empty());
}

// ---- Users and tokens ----

// The token CREATE USER shows is a bearer token of the root's principal store; ROTATE TOKEN
// shows a new one and revokes the old; no other statement shows a token.
TEST(UserStatementsTest, TokensAuthenticateAndRotationRevokes) {
  ExecEnv env;
  auto created = env.Exec("CREATE USER bob");
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ASSERT_EQ(created->columns, (std::vector<std::string>{"User", "Token"}));
  ASSERT_EQ(created->rows.size(), 1u);
  EXPECT_TRUE(created->holds_secret);
  const std::string first = Cell(created->rows[0][1]);
  ASSERT_TRUE(env.Exec("GRANT ALTER ON db.docs TO bob").ok());

  auto root = Root::Open(env.root_path_);
  ASSERT_TRUE(root.ok());
  auto store = auth::OpenRootPrincipalStore(*root);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto who = (*store)->Authenticate(first);
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  EXPECT_EQ(who->principal.name, "bob");
  EXPECT_FALSE(who->principal.IsAdmin());
  EXPECT_TRUE(who->principal.Has(auth::Privilege::kAlter, "local", "db", "docs"));

  auto rotated = env.Exec("ALTER USER bob ROTATE TOKEN");
  ASSERT_TRUE(rotated.ok()) << rotated.status().ToString();
  const std::string second = Cell(rotated->rows.at(0).at(1));
  EXPECT_NE(second, first);
  auto old = (*store)->Authenticate(first);
  EXPECT_EQ(old.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(old.status().message(), auth::kAuthenticationFailed);
  EXPECT_TRUE((*store)->Authenticate(second).ok());

  for (const char* sql : {"SHOW USERS", "SHOW GRANTS", "SHOW GRANTS FOR bob", "ALTER USER bob DISABLE"}) {
    std::string out = env.Run(sql);
    EXPECT_EQ(out.find("vgl_"), std::string::npos) << sql << ": " << out;
  }
  EXPECT_EQ((*store)->Authenticate(second).status().code(), StatusCode::kPermissionDenied);  // disabled
  ASSERT_TRUE(env.Exec("DROP USER bob").ok());
  EXPECT_EQ((*store)->Authenticate(second).status().code(), StatusCode::kPermissionDenied);
}

// Global ADMIN is the flag or an ADMIN grant on "*"; anyone else is refused before the store
// is read, naming ADMIN, except for SHOW GRANTS FOR themselves.
TEST(UserStatementsTest, OnlyAdministratorsManageUsers) {
  ExecEnv env;
  ASSERT_TRUE(env.Exec("CREATE USER bob").ok());
  env.principal_ = auth::Principal{"bob", false, {{"local.db.*", {auth::Privilege::kAdmin}}}};
  env.Reopen();
  for (const char* sql : {"CREATE USER eve", "DROP USER bob", "DROP USER IF EXISTS nobody", "ALTER USER bob ENABLE",
                          "ALTER USER bob ROTATE TOKEN", "ALTER USER bob SET ADMIN", "GRANT SHOW ON db.* TO bob",
                          "REVOKE SHOW ON db.* FROM bob", "SHOW USERS", "SHOW GRANTS", "SHOW GRANTS FOR nobody",
                          "SHOW NODES", "DRAIN NODE 'local'", "RESUME NODE 'local'"}) {
    auto r = env.Exec(sql);
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << sql;
    EXPECT_THAT(r.status().message(), HasSubstr("requires ADMIN")) << sql;
  }
  EXPECT_TRUE(env.Exec("SHOW GRANTS FOR bob").ok());
  EXPECT_TRUE(env.Exec("SHOW GRANTS FOR BOB").ok());

  env.principal_ = auth::Principal{"ops", false, {{"*", {auth::Privilege::kAdmin}}}};
  env.Reopen();
  auto r = env.Exec("CREATE USER eve");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
}

// DRAIN NODE marks a registered node (SHOW NODES says Draining YES) until RESUME NODE; an
// unknown node is NotFound and changes nothing.
TEST(NodeStatementsTest, DrainAndResumeMarkARegisteredNode) {
  ExecEnv env;
  ASSERT_EQ(env.RunJobs(), "ran 0 jobs, 0 refreshes");  // registers node "local"
  auto draining = [&env]() -> std::string {
    auto r = env.Exec("SHOW NODES");
    if (!r.ok()) return r.status().ToString();
    const auto at = std::find(r->columns.begin(), r->columns.end(), "Draining") - r->columns.begin();
    if (r->rows.size() != 1 || at == static_cast<long>(r->columns.size())) return "unexpected SHOW NODES";
    return Cell(r->rows[0][static_cast<size_t>(at)]);
  };
  EXPECT_EQ(draining(), "NO");
  auto missing = env.Exec("DRAIN NODE 'elsewhere'");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("elsewhere"));
  EXPECT_EQ(draining(), "NO");
  auto drained = env.Exec("DRAIN NODE 'local'");
  ASSERT_TRUE(drained.ok()) << drained.status().ToString();
  EXPECT_THAT(drained->message, HasSubstr("node local is draining"));
  EXPECT_EQ(draining(), "YES");
  ASSERT_TRUE(env.Exec("RESUME NODE 'local'").ok());
  EXPECT_EQ(draining(), "NO");
}

}  // namespace
}  // namespace vigil::sql
