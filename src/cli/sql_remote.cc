#include "cli/sql_remote.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <regex>
#include <utility>
#include <variant>
#include <vector>

#include "vigil/common/ascii.h"
#include "vigil/common/env.h"
#include "vigil/common/uuid.h"
#include "vigil/jobs/job_state.h"
#include "vigil/server/http_client.h"
#include "vigil/sql/parser.h"

namespace vigil::cli {

namespace {

using Json = nlohmann::json;
using Headers = std::vector<std::pair<std::string, std::string>>;

// Tries of one request when its connection breaks or the server is busy (503).
constexpr int kMaxTries = 6;
// How long one request may take before its connection counts as lost (it is then asked
// for again under the same key, and the server answers once it is done).
constexpr std::chrono::minutes kRequestTimeout{10};
// How long a retried request waits for the original still running on the server.
constexpr std::chrono::hours kInProgressWait{1};
constexpr size_t kMaxTokenFileBytes = 4096;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// The pause before try number `attempt` (1-based) of a request: doubling from 200 ms, at
// least what the answer's Retry-After asks (seconds), at most 30 s.
std::chrono::milliseconds Backoff(int attempt, const server::ClientResponse* answer) {
  int64_t ms = int64_t{200} << std::clamp(attempt - 1, 0, 5);
  if (answer != nullptr) {
    const std::string after = answer->Header("retry-after");
    if (!after.empty() && after.size() <= 4 &&
        std::all_of(after.begin(), after.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      ms = std::max<int64_t>(ms, std::stoll(after) * 1000);
    }
  }
  return std::chrono::milliseconds(std::min<int64_t>(ms, 30'000));
}

// An RFC 9457 problem document's fields; `code` is empty when the answer is not one.
struct Problem {
  std::string code;
  std::string detail;
  std::optional<size_t> statement_index;
};

Problem ProblemOf(const server::ClientResponse& r) {
  Problem p;
  Json j = Json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("code") || !j["code"].is_string()) return p;
  p.code = j["code"].get<std::string>();
  if (j.contains("detail") && j["detail"].is_string()) p.detail = j["detail"].get<std::string>();
  if (j.contains("statement_index") && j["statement_index"].is_number_unsigned()) {
    p.statement_index = j["statement_index"].get<size_t>();
  }
  return p;
}

// An answer that is not the API's, for a message: its status and the start of its body,
// printable ASCII only.
std::string Unexpected(const server::ClientResponse& r) {
  std::string text;
  for (char c : r.body.substr(0, 200)) text += (c >= 0x20 && c < 0x7f) ? c : ' ';
  return "HTTP " + std::to_string(r.status) + (text.empty() ? "" : ": " + text);
}

// `message` with its "line L, column C: " (the server's position in the text it was sent:
// `prelude_lines` lines of settings, then the statement) moved to the statement's position
// `pos` in the script, as the local shell reports it.
std::string ScriptPosition(const std::string& message, size_t prelude_lines, const sql::SourcePos& pos) {
  static const std::regex kPosition("line ([0-9]{1,9}), column ([0-9]{1,9}): ");
  std::smatch m;
  if (!std::regex_search(message, m, kPosition)) return message;
  int64_t line = std::stoll(m[1].str()) - static_cast<int64_t>(prelude_lines);
  int64_t column = std::stoll(m[2].str());
  if (line < 1) return message;  // in the settings sent before the statement
  if (line == 1) column += pos.column - 1;
  line += pos.line - 1;
  return m.prefix().str() + "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " +
         m.suffix().str();
}

class RemoteBackend : public ShellBackend {
 public:
  RemoteBackend(RemoteOptions options, std::unique_ptr<server::HttpClient> client)
      : options_(std::move(options)), client_(std::move(client)) {}

  Result<sql::ResultSet> Execute(const sql::Statement& stmt, std::string_view text) override {
    // The settings made so far on a line of their own, then the statement.
    std::string prelude;
    for (const auto& [name, set] : settings_) prelude += set + "; ";
    const size_t prelude_lines = prelude.empty() ? 0 : 1 + std::count(prelude.begin(), prelude.end(), '\n');
    const size_t index = settings_.size();
    std::string payload;
    try {
      // One statement, or (settings first) a script the server runs only when told so.
      Json body{{"sql", prelude.empty() ? std::string(text) : prelude + "\n" + std::string(text)}};
      if (!prelude.empty()) body["script"] = true;
      payload = body.dump();
    } catch (const Json::exception&) {
      return Status::InvalidArgument("the statement is not valid UTF-8, which the server's JSON API cannot carry");
    }
    VIGIL_ASSIGN_OR_RETURN(server::ClientResponse r, PostSql(payload));
    if (r.status != 200) {
      const Problem p = ProblemOf(r);
      std::function<std::string(const std::string&)> position;
      if (!p.statement_index || *p.statement_index == index) {
        position = [&](const std::string& d) { return ScriptPosition(d, prelude_lines, stmt.pos); };
      }
      return Failure(r, true, position);
    }
    Json j = Json::parse(r.body, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("results") || !j["results"].is_array() ||
        j["results"].size() != index + 1) {
      broken_ = true;
      return Status::Internal("unexpected answer from " + options_.url + ": " + Unexpected(r));
    }
    Result<sql::ResultSet> result = ResultFromJson(j["results"][index]);
    if (!result.ok()) {
      broken_ = true;
      return result.status();
    }
    Remember(stmt.node);
    return result;
  }

  // The server keeps no state between requests: the settings (SET) and prepared statements
  // (PREPARE) that succeeded are replayed before every later statement.
  void Remember(const sql::StatementNode& node) {
    auto forget = [this](const std::string& key) {
      auto it = std::find_if(settings_.begin(), settings_.end(), [&](const auto& s) { return s.first == key; });
      if (it != settings_.end()) settings_.erase(it);
    };
    if (const auto* set = std::get_if<sql::SetStatement>(&node)) {
      const std::string key = "set " + AsciiLowered(set->name);
      forget(key);
      settings_.emplace_back(key, sql::ToSql(node));
    } else if (const auto* prepare = std::get_if<sql::PrepareStatement>(&node)) {
      settings_.emplace_back("prepare " + prepare->name, sql::ToSql(node));
    } else if (const auto* deallocate = std::get_if<sql::DeallocateStatement>(&node)) {
      if (deallocate->name) return forget("prepare " + *deallocate->name);
      settings_.erase(std::remove_if(settings_.begin(), settings_.end(),
                                     [](const auto& s) { return s.first.rfind("prepare ", 0) == 0; }),
                      settings_.end());
    }
  }

  Result<JobView> Job(int64_t id) override {
    VIGIL_ASSIGN_OR_RETURN(server::ClientResponse r, Get("/v1/jobs/" + std::to_string(id)));
    if (r.status != 200) return Failure(r, false, nullptr);
    Json j = Json::parse(r.body, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("job") || !j["job"].is_object() ||
        !j["job"].contains("State") || !j["job"]["State"].is_string()) {
      return Status::Internal("unexpected answer from " + options_.url + ": " + Unexpected(r));
    }
    const Json& job = j["job"];
    JobView v;
    v.state = job["State"].get<std::string>();
    // The server sends the job-state vocabulary with the job (jobs/job_state.h); a server that
    // does not is read by this build's own.
    v.final = j.contains("final") && j["final"].is_boolean() ? j["final"].get<bool>() : jobs::IsFinalStateName(v.state);
    if (job.contains("Progress") && job["Progress"].is_string()) v.progress = job["Progress"].get<std::string>();
    if (job.contains("Message") && job["Message"].is_string()) v.error = job["Message"].get<std::string>();
    return v;
  }

  bool broken() const override { return broken_; }

 private:
  Headers Auth() const { return {{"Authorization", "Bearer " + options_.token}}; }

  // POST /v1/sql under a fresh Idempotency-Key. A lost connection is retried under the same
  // key (the server runs the request once and replays its answer), as is the 409 of a retry
  // that finds the original still running, and a 503 of a request the server refused before
  // reading it; any other answer is final.
  Result<server::ClientResponse> PostSql(const std::string& payload) {
    Headers h = Auth();
    h.emplace_back("Content-Type", "application/json");
    h.emplace_back("Idempotency-Key", "vigil-sql-" + Uuid::Generate().ToString());
    const int64_t start = Env::Default()->MonotonicMicros();
    int lost = 0, refused = 0;
    for (;;) {
      Result<server::ClientResponse> r = client_->Call("POST", "/v1/sql", h, payload);
      if (!r.ok()) {
        if (++lost >= kMaxTries) {
          broken_ = true;
          return Status::IOError(r.status().message() + " (no answer from " + options_.url + " after " +
                                 std::to_string(kMaxTries) +
                                 " tries; the statement may or may not have run on the server)");
        }
        Env::Default()->SleepForMs(Backoff(lost, nullptr).count());
        continue;
      }
      const Problem p = r->status == 409 || r->status == 503 ? ProblemOf(*r) : Problem{};
      if (p.code == "IDEMPOTENCY_REQUEST_IN_PROGRESS" && p.detail.find("stopped") == std::string::npos &&
          Env::Default()->MonotonicMicros() - start <
              std::chrono::duration_cast<std::chrono::microseconds>(kInProgressWait).count()) {
        Env::Default()->SleepForMs(Backoff(1, &*r).count());
        continue;
      }
      if (p.code == "SERVICE_UNAVAILABLE" && ++refused < kMaxTries) {
        Env::Default()->SleepForMs(Backoff(refused, &*r).count());
        continue;
      }
      return r;
    }
  }

  // A read: retried when the connection breaks or the server answers 503.
  Result<server::ClientResponse> Get(const std::string& target) {
    for (int attempt = 1;; ++attempt) {
      Result<server::ClientResponse> r = client_->Call("GET", target, Auth());
      if (r.ok() && (r->status != 503 || attempt >= kMaxTries)) return r;
      if (!r.ok() && attempt >= kMaxTries) {
        broken_ = true;
        return Status::IOError(r.status().message() + " (no answer from " + options_.url + " after " +
                               std::to_string(kMaxTries) + " tries)");
      }
      Env::Default()->SleepForMs(Backoff(attempt, r.ok() ? &*r : nullptr).count());
    }
  }

  // An error answer as the shell reports it: a Status for Vigil's own codes ("error: CODE:
  // detail" by the shell), other problems printed here the same way (Cancelled without a
  // message then). `statement_route`: the answer of POST /v1/sql, where a problem without a
  // statement means the URL is not a Vigil server's. `position` maps the detail's position.
  Status Failure(const server::ClientResponse& r, bool statement_route,
                 const std::function<std::string(const std::string&)>& position) {
    const Problem p = ProblemOf(r);
    if (p.code.empty()) {
      broken_ = true;
      return Status::IOError("unexpected answer from " + options_.url + ": " + Unexpected(r));
    }
    if (r.status == 401) {
      broken_ = true;
      std::fprintf(stderr, "error: UNAUTHENTICATED: %s (the server refused the token: check the token file %s)\n",
                   p.detail.c_str(), options_.token_file.c_str());
      return Status::Cancelled("");
    }
    if (p.code.rfind("IDEMPOTENCY_", 0) == 0 ||
        (statement_route && !p.statement_index && (r.status == 404 || r.status == 405))) {
      broken_ = true;  // the outcome is unknown, or this is not the API
      std::fprintf(stderr, "error: %s: %s\n", p.code.c_str(), p.detail.c_str());
      return Status::Cancelled("");
    }
    const std::string detail = position ? position(p.detail) : p.detail;
    if (std::optional<StatusCode> code = StatusCodeFromName(p.code); code && *code != StatusCode::kOk) {
      return Status(*code, detail);
    }
    std::fprintf(stderr, "error: %s: %s\n", p.code.c_str(), detail.c_str());
    return Status::Cancelled("");
  }

  const RemoteOptions options_;
  std::unique_ptr<server::HttpClient> client_;
  bool broken_ = false;
  // The settings (SET) and prepared statements (PREPARE) made so far, in the order made:
  // key ("set <lower-case name>", "prepare <name>") and statement.
  std::vector<std::pair<std::string, std::string>> settings_;
};

}  // namespace

Result<std::string> ReadTokenFile(const std::string& path) {
  FileFacts facts;
  auto file = Env::Default()->fs()->NewInputFile(path, InputLinks::kFollow, &facts);
  if (!file.ok()) {
    return Status(file.status().code(), "cannot use the token file: " + file.status().message());
  }
  if ((facts.mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(facts.mode));
    return Status::InvalidArgument("the token file " + path + " is accessible by group or others (mode " + mode +
                                   "): a bearer token must be private to its owner; run chmod 600 " + path);
  }
  if (facts.size > kMaxTokenFileBytes) {
    return Status::InvalidArgument("the token file " + path + " is larger than a token (" +
                                   std::to_string(kMaxTokenFileBytes) + " bytes at most)");
  }
  std::string text;
  VIGIL_RETURN_IF_ERROR((*file)->Read(0, static_cast<size_t>(facts.size), &text));
  size_t begin = 0, end = text.size();
  while (begin < end && IsSpace(text[begin])) ++begin;
  while (end > begin && IsSpace(text[end - 1])) --end;
  std::string token = text.substr(begin, end - begin);
  std::fill(text.begin(), text.end(), '\0');
  if (token.empty()) return Status::InvalidArgument("the token file " + path + " is empty");
  if (token.size() > kMaxTokenFileBytes ||
      !std::all_of(token.begin(), token.end(), [](char c) { return c > 0x20 && c < 0x7f; })) {
    return Status::InvalidArgument("the token file " + path +
                                   " must hold exactly one bearer token (printable ASCII, no spaces)");
  }
  return token;
}

// A vector cell: an array of numbers, null for an element that is not finite (shown as NaN).
Result<sql::FloatVector> VectorFromJson(const Json& a) {
  sql::FloatVector v;
  v.values.reserve(a.size());
  for (const Json& x : a) {
    if (x.is_number()) {
      v.values.push_back(static_cast<float>(x.get<double>()));
    } else if (x.is_null()) {
      v.values.push_back(std::numeric_limits<float>::quiet_NaN());
    } else {
      return Status::Internal("unexpected result from the server: a vector element is not a number");
    }
  }
  return v;
}

Result<sql::ResultSet> ResultFromJson(const Json& j) {
  auto bad = [](const std::string& what) { return Status::Internal("unexpected result from the server: " + what); };
  if (!j.is_object()) return bad("not an object");
  sql::ResultSet r;
  if (j.contains("columns")) {
    if (!j["columns"].is_array()) return bad("columns is not an array");
    for (const Json& c : j["columns"]) {
      if (!c.is_string()) return bad("a column name is not text");
      r.columns.push_back(c.get<std::string>());
    }
  }
  if (j.contains("rows")) {
    if (!j["rows"].is_array()) return bad("rows is not an array");
    for (const Json& row : j["rows"]) {
      if (!row.is_array() || row.size() != r.columns.size()) return bad("a row does not match the columns");
      std::vector<sql::Value> values;
      values.reserve(row.size());
      for (const Json& v : row) {
        if (v.is_null()) {
          values.emplace_back(std::monostate{});
        } else if (v.is_number_integer() && v.is_number_unsigned()) {
          const uint64_t u = v.get<uint64_t>();
          if (u > static_cast<uint64_t>(INT64_MAX)) return bad("an integer out of range");
          values.emplace_back(static_cast<int64_t>(u));
        } else if (v.is_number_integer()) {
          values.emplace_back(v.get<int64_t>());
        } else if (v.is_number_float()) {
          values.emplace_back(v.get<double>());
        } else if (v.is_string()) {
          values.emplace_back(v.get<std::string>());
        } else if (v.is_boolean()) {
          values.emplace_back(int64_t{v.get<bool>() ? 1 : 0});
        } else if (v.is_array()) {
          VIGIL_ASSIGN_OR_RETURN(sql::FloatVector vec, VectorFromJson(v));
          values.emplace_back(std::move(vec));
        } else {
          return bad("a cell is neither null, a number, text nor a vector");
        }
      }
      r.rows.push_back(std::move(values));
    }
  }
  auto strings = [&](const char* key, std::vector<std::string>* out) -> Status {
    if (!j.contains(key) || j[key].is_null()) return Status::OK();
    if (!j[key].is_array()) return bad(std::string(key) + " is not an array");
    for (const Json& s : j[key]) {
      if (!s.is_string()) return bad(std::string(key) + " holds a value that is not text");
      out->push_back(s.get<std::string>());
    }
    return Status::OK();
  };
  VIGIL_RETURN_IF_ERROR(strings("notices", &r.notices));
  VIGIL_RETURN_IF_ERROR(strings("warnings", &r.warnings));
  if (j.contains("message") && j["message"].is_string()) r.message = j["message"].get<std::string>();
  if (j.contains("admitted_jobs")) {
    if (!j["admitted_jobs"].is_array()) return bad("admitted_jobs is not an array");
    for (const Json& id : j["admitted_jobs"]) {
      if (!id.is_number_integer()) return bad("a job id is not an integer");
      r.admitted_jobs.push_back(id.get<int64_t>());
    }
  }
  const Json& secret = j.contains("holds_secret") ? j["holds_secret"] : Json(false);
  if (!secret.is_boolean()) return bad("holds_secret is not a boolean");
  r.holds_secret = secret.get<bool>();
  return r;
}

Result<std::unique_ptr<ShellBackend>> OpenRemoteBackend(const RemoteOptions& options) {
  Result<std::unique_ptr<server::HttpClient>> client = server::HttpClient::Connect(options.url, kRequestTimeout);
  if (!client.ok()) return client.status().WithContext("--url " + options.url);
  return std::unique_ptr<ShellBackend>(new RemoteBackend(options, std::move(*client)));
}

}  // namespace vigil::cli
