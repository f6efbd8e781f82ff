// The OpenAPI document `vigil serve` serves at GET /v1/openapi.json, held to
// the server itself: every route the router registers is documented (with its
// security and Idempotency-Key rules) and every documented operation answers
// on a real server; and the answers of a realistic session, successes and
// errors alike, are validated against the document's responses for their route
// and status: a status the route does not document, a missing required header,
// an undocumented API header or a body off its schema fails the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "cli/serve_fixture.h"
#include "testutil/json_schema.h"
#include "testutil/temp_dir.h"
#include "vigil/auth/root_auth.h"
#include "vigil/server/api_server.h"
#include "vigil/server/http_client.h"
#include "vigil/storage/root.h"

namespace vigil {
namespace {

using Json = nlohmann::json;
using Headers = std::vector<std::pair<std::string, std::string>>;

constexpr const char* kMethods[] = {"get", "put", "post", "delete", "patch", "head", "options", "trace"};
// Headers of the API's own contract: present in an answer, they must be documented for it.
constexpr const char* kApiHeaders[] = {"location", "vigil-job-id", "idempotency-replayed", "retry-after",
                                       "www-authenticate"};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// "text/plain" of "text/plain; version=0.0.4".
std::string MediaType(const std::string& content_type) {
  std::string t = content_type.substr(0, content_type.find(';'));
  while (!t.empty() && t.back() == ' ') t.pop_back();
  return Lower(t);
}

std::vector<std::string> Segments(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t slash = path.find('/', start);
    const std::string seg = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (!seg.empty()) out.push_back(seg);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return out;
}

bool IsParam(const std::string& seg) { return seg.size() > 2 && seg.front() == '{' && seg.back() == '}'; }

bool Matches(const std::string& tmpl, const std::string& path) {
  const auto want = Segments(tmpl), got = Segments(path);
  if (want.size() != got.size()) return false;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!IsParam(want[i]) && want[i] != got[i]) return false;
  }
  return true;
}

// The path parameters a template names: {"db", "table"} of "/v1/databases/{db}/tables/{table}".
std::set<std::string> TemplateParams(const std::string& tmpl) {
  std::set<std::string> out;
  for (const std::string& seg : Segments(tmpl)) {
    if (IsParam(seg)) out.insert(seg.substr(1, seg.size() - 2));
  }
  return out;
}

// The OpenAPI document, and what an answer must be to conform to it.
class ApiDocument {
 public:
  explicit ApiDocument(Json doc) : doc_(std::move(doc)), validator_(doc_) {}

  const Json& doc() const { return doc_; }
  const testing::JsonSchemaValidator& validator() const { return validator_; }

  // `node`, or what its "$ref" names.
  const Json& Deref(const Json& node) const {
    if (node.is_object() && node.contains("$ref")) {
      const Json* target = validator_.Resolve(node["$ref"].get<std::string>());
      if (target != nullptr) return Deref(*target);
    }
    return node;
  }

  // The documented template of `path` that has `method`, or "".
  std::string Template(const std::string& method, const std::string& path) const {
    for (const auto& [tmpl, item] : doc_["paths"].items()) {
      if (Matches(tmpl, path) && item.contains(Lower(method))) return tmpl;
    }
    return "";
  }

  // The operation's parameters, path-level and its own (its own win by name and place).
  std::vector<Json> Parameters(const std::string& tmpl, const std::string& method) const {
    std::map<std::pair<std::string, std::string>, Json> by_key;
    const Json& item = doc_["paths"][tmpl];
    for (const Json* list : {&item, &item[Lower(method)]}) {
      if (!list->contains("parameters")) continue;
      for (const Json& p : (*list)["parameters"]) {
        const Json& param = Deref(p);
        by_key[{param["name"].get<std::string>(), param["in"].get<std::string>()}] = param;
      }
    }
    std::vector<Json> out;
    for (auto& [key, p] : by_key) out.push_back(p);
    return out;
  }

  // The security requirements in force for an operation.
  Json Security(const std::string& tmpl, const std::string& method) const {
    const Json& op = doc_["paths"][tmpl][Lower(method)];
    if (op.contains("security")) return op["security"];
    return doc_.value("security", Json::array());
  }

  // What is wrong with `resp` as the answer to `method target`; `events` (server-sent
  // events text) is checked against the stream's documented events when given.
  std::vector<std::string> Check(const std::string& method, const std::string& target,
                                 const server::ClientResponse& resp, const std::string* events = nullptr) const {
    std::vector<std::string> errors;
    const std::string path = target.substr(0, target.find('?'));
    const std::string tmpl = Template(method, path);
    if (tmpl.empty()) return {"no documented operation " + method + " " + path};
    const std::string what = method + " " + tmpl + " " + std::to_string(resp.status);
    const Json& responses = doc_["paths"][tmpl][Lower(method)]["responses"];
    const std::string status = std::to_string(resp.status);
    if (!responses.contains(status)) {
      std::string documented;
      for (const auto& [k, v] : responses.items()) documented += " " + k;
      return {method + " " + tmpl + " answered " + status + ", which it does not document (documented:" + documented +
              "); body: " + resp.body.substr(0, 300)};
    }
    const Json& r = Deref(responses[status]);
    // Headers: the required ones are there, the API's own are documented, values fit.
    std::map<std::string, Json> documented;
    if (r.contains("headers")) {
      for (const auto& [name, h] : r["headers"].items()) documented[Lower(name)] = Deref(h);
    }
    for (const auto& [name, h] : documented) {
      const std::string value = resp.Header(name);
      if (value.empty()) {
        if (h.value("required", false)) errors.push_back(what + ": required header " + name + " is missing");
        continue;
      }
      if (h.contains("schema")) {
        for (const std::string& e : validator_.Validate(h["schema"], value)) {
          errors.push_back(what + ": header " + name + " " + e);
        }
      }
    }
    for (const char* name : kApiHeaders) {
      if (!resp.Header(name).empty() && !documented.count(name)) {
        errors.push_back(what + ": header " + name + ": " + resp.Header(name) + " is not documented");
      }
    }
    // The body: a documented media type, and a value its schema accepts.
    if (!r.contains("content")) {
      if (!resp.body.empty()) errors.push_back(what + ": a body where none is documented");
      return errors;
    }
    const std::string media = MediaType(resp.Header("content-type"));
    if (!r["content"].contains(media)) {
      errors.push_back(what + ": Content-Type " + resp.Header("content-type") + " is not documented");
      return errors;
    }
    const Json& content = r["content"][media];
    if (media == "text/event-stream") {
      if (events == nullptr) {
        errors.push_back(what + ": an event stream read as a whole body");
      } else {
        CheckEvents(what, content, *events, &errors);
      }
      return errors;
    }
    Json body;
    if (media.size() >= 4 && media.compare(media.size() - 4, 4, "json") == 0) {
      body = Json::parse(resp.body, nullptr, false);
      if (body.is_discarded()) {
        errors.push_back(what + ": the body is not JSON: " + resp.body.substr(0, 200));
        return errors;
      }
    } else {
      body = resp.body;
    }
    for (const std::string& e : validator_.Validate(content["schema"], body)) errors.push_back(what + ": " + e);
    return errors;
  }

 private:
  void CheckEvents(const std::string& what, const Json& content, const std::string& text,
                   std::vector<std::string>* errors) const {
    if (!content.contains("x-vigil-events")) {
      errors->push_back(what + ": the event stream documents no x-vigil-events");
      return;
    }
    const Json& kinds = content["x-vigil-events"];
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find("\n\n", start);
      if (end == std::string::npos) end = text.size();
      const std::string block = text.substr(start, end - start);
      start = end + 2;
      std::string event = "message", data;
      size_t line_start = 0;
      while (line_start < block.size()) {
        size_t nl = block.find('\n', line_start);
        if (nl == std::string::npos) nl = block.size();
        const std::string line = block.substr(line_start, nl - line_start);
        line_start = nl + 1;
        if (line.rfind("event: ", 0) == 0) event = line.substr(7);
        if (line.rfind("data: ", 0) == 0) data += line.substr(6);
      }
      if (data.empty()) continue;  // a comment (keep-alive)
      if (!kinds.contains(event)) {
        errors->push_back(what + ": event \"" + event + "\" is not documented");
        continue;
      }
      const Json parsed = Json::parse(data, nullptr, false);
      for (const std::string& e : validator_.Validate(kinds[event], parsed)) {
        errors->push_back(what + ": event " + event + " " + e);
      }
    }
  }

  Json doc_;
  testing::JsonSchemaValidator validator_;
};

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += "\n  " + l;
  return out;
}

// An .fvecs file of `rows` vectors of `dim` float32.
std::string Fvecs(int rows, int dim) {
  std::string out;
  for (int r = 0; r < rows; ++r) {
    const int32_t d = dim;
    out.append(reinterpret_cast<const char*>(&d), 4);
    for (int i = 0; i < dim; ++i) {
      const float x = static_cast<float>(r + i) / 10.0f;
      out.append(reinterpret_cast<const char*>(&x), 4);
    }
  }
  return out;
}

// A .npy file (format 1.0) of a `rows` x `dim` float32 array.
std::string Npy(int rows, int dim) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                       std::to_string(dim) + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  const uint16_t len = static_cast<uint16_t>(header.size());
  out.append(reinterpret_cast<const char*>(&len), 2);
  out += header;
  for (int i = 0; i < rows * dim; ++i) {
    const float x = static_cast<float>(i) / 7.0f;
    out.append(reinterpret_cast<const char*>(&x), 4);
  }
  return out;
}

// A quoted key of `n` characters inside its quotes.
std::string QuotedKey(size_t n) {
  std::string key(n + 2, 'b');
  key.front() = '"';
  key.back() = '"';
  return key;
}

class OpenApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.Join("root");
    ASSERT_EQ(RunVigil("init " + root_), 0);
    auto root = Root::Open(root_);
    ASSERT_TRUE(root.ok());
    auto store = auth::OpenRootPrincipalStore(*root);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    admin_ = (*store)->CreateUser("default", "root_admin", true)->token;
    alice_ = (*store)->CreateUser("default", "alice", false)->token;
    ASSERT_TRUE((*store)->Grant("default", "alice", auth::Privilege::kAlter, "local.d.*").ok());
    reader_ = (*store)->CreateUser("default", "rita", false)->token;
    ASSERT_TRUE((*store)->Grant("default", "rita", auth::Privilege::kShow, "local.d.*").ok());
    server_ = std::make_unique<ServeProcess>(root_);
    ASSERT_GT(server_->port(), 0) << "vigil serve did not report its port";
    auto c = server::HttpClient::Connect(server_->url());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
    auto doc = client_->Call("GET", "/v1/openapi.json");
    ASSERT_TRUE(doc.ok()) << doc.status().ToString();
    ASSERT_EQ(doc->status, 200);
    Json parsed = Json::parse(doc->body, nullptr, false);
    ASSERT_FALSE(parsed.is_discarded()) << "GET /v1/openapi.json is not JSON";
    api_ = std::make_unique<ApiDocument>(std::move(parsed));
  }

  // One request, its answer checked against the document.
  server::ClientResponse Send(const std::string& method, const std::string& target, const std::string& token,
                              const std::string& body = "", Headers extra = {}) {
    Headers h = std::move(extra);
    if (!token.empty()) h.emplace_back("Authorization", "Bearer " + token);
    if (!body.empty() && std::none_of(h.begin(), h.end(), [](auto& p) { return p.first == "Content-Type"; })) {
      h.emplace_back("Content-Type", "application/json");
    }
    auto r = client_->Call(method, target, h, body);
    EXPECT_TRUE(r.ok()) << method << " " << target << ": " << r.status().ToString();
    if (!r.ok()) return server::ClientResponse{};
    Expect(method, target, *r);
    return *r;
  }
  server::ClientResponse Post(const std::string& target, const std::string& token, const Json& body,
                              const std::string& key = "") {
    Headers h;
    if (!key.empty()) h.emplace_back("Idempotency-Key", key);
    return Send("POST", target, token, body.dump(), h);
  }
  void Expect(const std::string& method, const std::string& target, const server::ClientResponse& r,
              const std::string* events = nullptr) {
    const std::vector<std::string> errors = api_->Check(method, target, r, events);
    std::lock_guard<std::mutex> lock(mu_);
    ++checked_;
    statuses_.insert(r.status);
    EXPECT_TRUE(errors.empty()) << method << " " << target << " does not conform:" << Join(errors);
  }
  std::string Code(const server::ClientResponse& r) {
    const Json j = Json::parse(r.body, nullptr, false);
    return j.is_object() && j.contains("code") && j["code"].is_string() ? j["code"].get<std::string>() : "";
  }
  // Follows a job's events until it ends; checks the stream.
  void FollowEvents(const std::string& job_path, const std::string& token) {
    std::string events;
    auto sse = server::HttpClient::Connect(server_->url());
    ASSERT_TRUE(sse.ok());
    auto streamed =
        (*sse)->Stream(job_path + "/events", {{"Authorization", "Bearer " + token}}, [&](std::string_view data) {
          events.append(data);
          return events.find("event: end") == std::string::npos ||
                 events.find("\n\n", events.find("event: end")) == std::string::npos;
        });
    ASSERT_TRUE(streamed.ok()) << streamed.status().ToString();
    ASSERT_EQ(streamed->status, 200);
    EXPECT_NE(events.find("event: job"), std::string::npos) << events;
    EXPECT_NE(events.find("event: end"), std::string::npos) << events;
    Expect("GET", job_path + "/events", *streamed, &events);
  }

  testing::TempDir dir_;
  std::string root_;
  std::string admin_, alice_, reader_;
  std::unique_ptr<ServeProcess> server_;
  std::unique_ptr<server::HttpClient> client_;
  std::unique_ptr<ApiDocument> api_;
  std::mutex mu_;
  int checked_ = 0;         // guarded by mu_
  std::set<int> statuses_;  // guarded by mu_
};

TEST_F(OpenApiTest, TheDocumentIsWellFormedAndEveryRefResolves) {
  const Json& doc = api_->doc();
  EXPECT_EQ(doc["openapi"], "3.1.0");
  EXPECT_TRUE(doc["info"].contains("title"));
  EXPECT_TRUE(doc["info"].contains("version"));
  EXPECT_EQ(doc["components"]["securitySchemes"]["bearer"]["type"], "http");
  EXPECT_EQ(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
  const auto unresolved = api_->validator().UnresolvedRefs();
  EXPECT_TRUE(unresolved.empty()) << "unresolved $ref:" << Join(unresolved);
  // Every schema of the document uses only what the validator checks (an unknown keyword
  // would be reported): validating anything against each shows no "unsupported" complaint.
  for (const auto& [name, schema] : doc["components"]["schemas"].items()) {
    for (const std::string& e : api_->validator().Validate(schema, Json::object())) {
      EXPECT_EQ(e.find("unsupported"), std::string::npos) << name << ": " << e;
    }
  }
  for (const auto& [tmpl, item] : doc["paths"].items()) {
    for (const char* m : kMethods) {
      if (!item.contains(m)) continue;
      const std::string method = Upper(m);
      const Json& op = item[m];
      EXPECT_TRUE(op.contains("operationId")) << method << " " << tmpl;
      ASSERT_TRUE(op.contains("responses")) << method << " " << tmpl;
      // Path parameters: exactly the template's, each required.
      std::set<std::string> declared;
      for (const Json& p : api_->Parameters(tmpl, method)) {
        if (p["in"] != "path") continue;
        declared.insert(p["name"].get<std::string>());
        EXPECT_EQ(p.value("required", false), true) << method << " " << tmpl << " " << p["name"];
      }
      EXPECT_EQ(declared, TemplateParams(tmpl)) << method << " " << tmpl;
      // Every response has a description; every schema under it is checkable.
      for (const auto& [status, resp] : op["responses"].items()) {
        const Json& r = api_->Deref(resp);
        EXPECT_TRUE(r.contains("description")) << method << " " << tmpl << " " << status;
        EXPECT_EQ(status.size(), 3u) << method << " " << tmpl << ": only explicit statuses, no \"default\"";
      }
    }
  }
}

TEST_F(OpenApiTest, EveryRouteOfTheRouterIsDocumentedAndEveryDocumentedOperationAnswers) {
  auto routes = server::ApiRoutes(root_);
  ASSERT_TRUE(routes.ok()) << routes.status().ToString();
  ASSERT_GT(routes->size(), 20u);
  const Json& paths = api_->doc()["paths"];
  std::set<std::pair<std::string, std::string>> registered;
  for (const server::ApiRoute& route : *routes) {
    registered.insert({route.method, route.pattern});
    const std::string what = route.method + " " + route.pattern;
    ASSERT_TRUE(paths.contains(route.pattern) && paths[route.pattern].contains(Lower(route.method)))
        << what << " is served but not documented";
    // Security: public routes need no token, every other one the bearer scheme.
    const Json security = api_->Security(route.pattern, route.method);
    if (route.public_route) {
      EXPECT_EQ(security, Json::array()) << what << " is public";
    } else {
      EXPECT_EQ(security, Json::parse(R"([{"bearer": []}])")) << what << " needs a bearer token";
      EXPECT_TRUE(paths[route.pattern][Lower(route.method)]["responses"].contains("401")) << what;
    }
    // Idempotency-Key: on mutations only, required exactly on resource mutations.
    const Json* key = nullptr;
    const auto params = api_->Parameters(route.pattern, route.method);
    for (const Json& p : params) {
      if (p["in"] == "header" && Lower(p["name"].get<std::string>()) == "idempotency-key") key = &p;
    }
    if (!route.mutating) {
      EXPECT_EQ(key, nullptr) << what << " does not take an Idempotency-Key";
      continue;
    }
    ASSERT_NE(key, nullptr) << what << " takes an Idempotency-Key";
    EXPECT_EQ(key->value("required", false), route.key_required) << what;
    const Json& responses = paths[route.pattern][Lower(route.method)]["responses"];
    for (const char* status : {"400", "409", "422"}) {
      EXPECT_TRUE(responses.contains(status)) << what << " must document the Idempotency-Key's " << status;
    }
    const std::string rules = key->value("description", "");
    for (const char* fact : {"1 to 255 printable ASCII", "double quotes", "Idempotency-Replayed: true", "409", "422",
                             "400", "idempotency_ttl_seconds", "86400", "GET /v1/config"}) {
      EXPECT_NE(rules.find(fact), std::string::npos) << what << ": the key's description lacks \"" << fact << "\"";
    }
  }
  // Every documented operation is a route of the router, and answers on the real server.
  int probed = 0;
  for (const auto& [tmpl, item] : paths.items()) {
    for (const char* m : kMethods) {
      if (!item.contains(m)) continue;
      const std::string method = Upper(m);
      EXPECT_TRUE(registered.count({method, tmpl})) << method << " " << tmpl << " is documented but not served";
      std::string target;
      for (const std::string& seg : Segments(tmpl)) {
        static const std::map<std::string, std::string> kValues = {
            {"{db}", "d"}, {"{table}", "t"}, {"{index}", "i"}, {"{id}", "1"}, {"{asset}", "console.js"}};
        target += "/" + (kValues.count(seg) ? kValues.at(seg) : seg);
      }
      // Without a token: public routes answer, the others refuse with 401 (a route that did not
      // exist would be 404, a method it does not have 405).
      auto r = client_->Call(method, target);
      ASSERT_TRUE(r.ok()) << method << " " << target << ": " << r.status().ToString();
      EXPECT_NE(r->status, 404) << method << " " << target << ": " << r->body;
      EXPECT_NE(r->status, 405) << method << " " << target << ": " << r->body;
      const bool open = api_->Security(tmpl, method).empty();
      if (!open) {
        EXPECT_EQ(r->status, 401) << method << " " << target;
      }
      Expect(method, target, *r);
      ++probed;
    }
  }
  EXPECT_EQ(probed, static_cast<int>(registered.size()));
  EXPECT_EQ(registered.size(), routes->size()) << "a method and pattern registered twice";
}

TEST_F(OpenApiTest, TheIdempotencyKeyRulesOfTheDocumentAreTheServersAndTheTtlIsTheEffectiveOne) {
  const Json& schema = api_->doc()["components"]["parameters"]["IdempotencyKey"]["schema"];
  const std::vector<std::string> valid = {
      "k-1", "\"quoted key\"", std::string(255, 'a'), QuotedKey(255), "a\"b", "x\\y", "!"};
  const std::vector<std::string> invalid = {
      "\"unbalanced", "unbalanced\"", std::string(256, 'a'), "\"a\"b\"", "\"back\\slash\"", "\"\"", "\""};
  int n = 0;
  for (const std::string& key : valid) {
    EXPECT_TRUE(api_->validator().Validate(schema, key).empty()) << key;
    auto r = Post("/v1/sql", admin_, {{"sql", "SELECT " + std::to_string(++n)}}, key);
    EXPECT_EQ(r.status, 200) << key << ": " << r.body;
  }
  for (const std::string& key : invalid) {
    EXPECT_FALSE(api_->validator().Validate(schema, key).empty()) << key;
    auto r = Post("/v1/sql", admin_, {{"sql", "SELECT 1"}}, key);
    EXPECT_EQ(r.status, 400) << key;
    EXPECT_EQ(Code(r), "IDEMPOTENCY_KEY_INVALID") << key;
  }
  // The default expiry the document states is what the server applies.
  auto config = Send("GET", "/v1/config", alice_);
  ASSERT_EQ(config.status, 200);
  const Json c = Json::parse(config.body);
  EXPECT_EQ(c["idempotency"]["ttl_seconds"], 86400);
  EXPECT_EQ(c["idempotency"]["required_on_resource_mutations"], true);
  EXPECT_EQ(c["idempotency"]["max_key_bytes"], 255);
}

TEST_F(OpenApiTest, TheAnswersOfARealisticSessionConformToTheDocument) {
  // Service routes.
  Send("GET", "/healthz", "");
  Send("GET", "/readyz", "");
  Send("GET", "/metrics", "");
  Send("GET", "/v1/openapi.json", "");
  Send("GET", "/v1/config", reader_);
  // 401: no token, a bad one.
  EXPECT_EQ(Send("GET", "/v1/databases", "").status, 401);
  EXPECT_EQ(Send("GET", "/v1/databases", "nonsense").status, 401);
  EXPECT_EQ(Post("/v1/sql", "", {{"sql", "SELECT 1"}}).status, 401);

  // Databases: 201 with Location, its replay, 403, 409, 400 without a key or with a bad one, 422.
  auto db = Post("/v1/databases", admin_, {{"name", "d"}}, "k-db");
  ASSERT_EQ(db.status, 201) << db.body;
  EXPECT_EQ(db.Header("location"), "/v1/databases/d");
  auto replay = Post("/v1/databases", admin_, {{"name", "d"}}, "k-db");
  EXPECT_EQ(replay.status, 201);
  EXPECT_EQ(replay.Header("idempotency-replayed"), "true");
  EXPECT_EQ(Post("/v1/databases", alice_, {{"name", "e"}}, "k-db-alice").status, 403);
  auto exists = Post("/v1/databases", admin_, {{"name", "d"}}, "k-db-2");
  EXPECT_EQ(exists.status, 409);
  EXPECT_EQ(Code(exists), "ALREADY_EXISTS");
  auto missing = Post("/v1/databases", admin_, {{"name", "x"}});
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(Code(missing), "IDEMPOTENCY_KEY_MISSING");
  EXPECT_EQ(Post("/v1/databases", admin_, {{"name", "x"}}, "\"bad").status, 400);
  auto reused = Post("/v1/databases", admin_, {{"name", "other"}}, "k-db");
  EXPECT_EQ(reused.status, 422);
  EXPECT_EQ(Code(reused), "IDEMPOTENCY_KEY_REUSED");
  EXPECT_EQ(Post("/v1/databases", admin_, {{"name", "_meta"}}, "k-db-meta").status, 400);
  EXPECT_EQ(Send("GET", "/v1/databases", reader_).status, 200);

  // Tables.
  auto docs = Post("/v1/databases/d/tables", alice_,
                   {{"name", "docs"},
                    {"columns", Json::array({{{"name", "id"}, {"type", "BIGINT"}, {"not_null", true}},
                                             {{"name", "category"}, {"type", "STRING"}, {"not_null", true}},
                                             {{"name", "body"}, {"type", "STRING"}, {"not_null", true}}})}},
                   "k-docs");
  ASSERT_EQ(docs.status, 201) << docs.body;
  auto vecs =
      Post("/v1/databases/d/tables", alice_,
           {{"name", "vecs"},
            {"columns",
             Json::array({{{"name", "id"}, {"type", "BIGINT"}}, {{"name", "emb"}, {"type", "VECTOR(FLOAT32, 4)"}}})}},
           "k-vecs");
  ASSERT_EQ(vecs.status, 201) << vecs.body;
  EXPECT_EQ(Post("/v1/databases/d/tables", alice_, {{"name", "bad"}, {"columns", Json::array()}}, "k-bad").status, 400);
  // A field of the wrong JSON type is 400 (it once escaped as a 500 that left the key reserved).
  const Json typo = {{"name", "typo"},
                     {"columns", Json::array({{{"name", "id"}, {"type", "BIGINT"}, {"not_null", "yes"}}})}};
  EXPECT_EQ(Post("/v1/databases/d/tables", alice_, typo, "k-typo").status, 400);
  EXPECT_EQ(Post("/v1/databases/d/tables", alice_, typo, "k-typo").Header("idempotency-replayed"), "true");
  EXPECT_EQ(Send("GET", "/v1/databases/d/tables", reader_).status, 200);
  EXPECT_EQ(Send("GET", "/v1/databases/nope/tables", reader_).status, 404);
  EXPECT_EQ(Send("GET", "/v1/databases/d/tables/bad-name", reader_).status, 400);
  EXPECT_EQ(Send("GET", "/v1/databases/d/tables/nope", reader_).status, 404);

  // Rows in every format, and the refusals.
  std::string csv = "id,category,body\n";
  for (int i = 0; i < 200; ++i) {
    csv += std::to_string(i) + ",cat_" + std::to_string(i % 4) + ",the quick brown fox " + std::to_string(i) + "\n";
  }
  EXPECT_EQ(Send("POST", "/v1/databases/d/tables/docs/rows", alice_, csv,
                 {{"Content-Type", "text/csv"}, {"Idempotency-Key", "k-csv"}})
                .status,
            200);
  EXPECT_EQ(Send("POST", "/v1/databases/d/tables/docs/rows", alice_,
                 "{\"id\": 1000, \"category\": \"ndjson\", \"body\": \"jumps\"}\n",
                 {{"Content-Type", "application/x-ndjson"}, {"Idempotency-Key", "k-ndjson"}})
                .status,
            200);
  EXPECT_EQ(
      Post("/v1/databases/d/tables/docs/rows", alice_,
           {{"rows", Json::array({{{"id", 1001}, {"category", "json"}, {"body", "over the lazy dog"}}})}}, "k-json")
          .status,
      200);
  auto fvecs = Send("POST", "/v1/databases/d/tables/vecs/rows", alice_, Fvecs(3, 4),
                    {{"Content-Type", "application/x-fvecs"}, {"Idempotency-Key", "k-fvecs"}});
  EXPECT_EQ(fvecs.status, 200) << fvecs.body;
  auto npy = Send("POST", "/v1/databases/d/tables/vecs/rows", alice_, Npy(2, 4),
                  {{"Content-Type", "application/x-npy"}, {"Idempotency-Key", "k-npy"}});
  EXPECT_EQ(npy.status, 200) << npy.body;
  EXPECT_EQ(Send("POST", "/v1/databases/d/tables/vecs/rows", alice_, Fvecs(1, 3),
                 {{"Content-Type", "application/x-fvecs"}, {"Idempotency-Key", "k-fvecs-dim"}})
                .status,
            400);
  EXPECT_EQ(Send("POST", "/v1/databases/d/tables/docs/rows", alice_, "x",
                 {{"Content-Type", "text/plain"}, {"Idempotency-Key", "k-text"}})
                .status,
            400);
  EXPECT_EQ(Post("/v1/databases/d/tables/docs/rows", reader_, {{"rows", Json::array({{{"id", 1}}})}}, "k-rita").status,
            403);
  EXPECT_EQ(Post("/v1/databases/d/tables/docs/rows", alice_, {{"rows", "not an array"}}, "k-notarray").status, 400);
  EXPECT_EQ(Send("GET", "/v1/databases/d/tables/docs", reader_).status, 200);

  // An index job: 202 with Location, its replay, its events, the job and the listing.
  auto idx = Post("/v1/databases/d/tables/docs/indexes", alice_,
                  {{"name", "cat_idx"}, {"columns", {"category"}}, {"using", "BITMAP"}}, "k-idx");
  ASSERT_EQ(idx.status, 202) << idx.body;
  const std::string job = idx.Header("location");
  ASSERT_EQ(job.rfind("/v1/jobs/", 0), 0u) << job;
  auto idx_replay = Post("/v1/databases/d/tables/docs/indexes", alice_,
                         {{"name", "cat_idx"}, {"columns", {"category"}}, {"using", "BITMAP"}}, "k-idx");
  EXPECT_EQ(idx_replay.status, 202);
  EXPECT_EQ(idx_replay.Header("location"), job);
  EXPECT_EQ(idx_replay.Header("idempotency-replayed"), "true");
  Send("POST", job + "/wait?timeout_s=0", alice_);  // 200 when already final, else 408
  FollowEvents(job, alice_);
  EXPECT_EQ(Send("POST", job + "/wait?timeout_s=30", alice_).status, 200);
  EXPECT_EQ(Send("GET", job, reader_).status, 200);
  EXPECT_EQ(Send("GET", "/v1/jobs", reader_).status, 200);
  auto page =
      Send("GET", "/v1/jobs?state=FINISHED&database=d&table=docs&index=cat_idx&outcome=COMMITTED&limit=1", reader_);
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(Json::parse(page.body)["jobs"].size(), 1u);
  EXPECT_EQ(Send("GET", "/v1/jobs?after=1&limit=1000", reader_).status, 200);
  EXPECT_EQ(Send("GET", "/v1/jobs?limit=0", reader_).status, 400);
  EXPECT_EQ(Send("GET", "/v1/jobs/abc", reader_).status, 400);
  EXPECT_EQ(Send("GET", "/v1/jobs/999999", reader_).status, 404);
  EXPECT_EQ(Send("GET", "/v1/jobs/999999/events", reader_).status, 404);
  EXPECT_EQ(Send("GET", "/v1/databases/d/tables/docs/indexes", reader_).status, 200);
  // Settled jobs: cancelling or resolving one is refused, a bad action is 400.
  Send("POST", job + "/cancel", alice_, "", {{"Idempotency-Key", "k-cancel"}});
  EXPECT_EQ(Post(job + "/resolve", alice_, {{"action", "NOTHING"}}, "k-resolve-bad").status, 400);
  EXPECT_EQ(Post(job + "/resolve", alice_, {{"action", 5}}, "k-resolve-type").status, 400);
  EXPECT_EQ(Post(job + "/resolve", alice_, {{"action", "ACKNOWLEDGED"}, {"comment", 5}}, "k-resolve-comment").status,
            400);
  Post(job + "/resolve", alice_, {{"action", "ACKNOWLEDGED"}, {"comment", "seen"}}, "k-resolve");
  EXPECT_EQ(Send("POST", "/v1/jobs/999999/cancel", alice_, "", {{"Idempotency-Key", "k-cancel-none"}}).status, 404);
  // BUILD and DROP INDEX are jobs too.
  auto build =
      Send("POST", "/v1/databases/d/tables/docs/indexes/cat_idx/build", alice_, "", {{"Idempotency-Key", "k-build"}});
  EXPECT_EQ(build.status, 202) << build.body;
  if (build.status == 202) FollowEvents(build.Header("location"), alice_);
  // BUILD INDEX under its key again: the original answer, the same job; another build under it: 422.
  auto build_again =
      Send("POST", "/v1/databases/d/tables/docs/indexes/cat_idx/build", alice_, "", {{"Idempotency-Key", "k-build"}});
  EXPECT_EQ(build_again.status, 202);
  EXPECT_EQ(build_again.Header("idempotency-replayed"), "true");
  EXPECT_EQ(build_again.Header("location"), build.Header("location"));
  EXPECT_EQ(build_again.body, build.body);
  auto build_other =
      Send("POST", "/v1/databases/d/tables/docs/indexes/vec_idx/build", alice_, "", {{"Idempotency-Key", "k-build"}});
  EXPECT_EQ(build_other.status, 422) << build_other.body;
  EXPECT_EQ(Code(build_other), "IDEMPOTENCY_KEY_REUSED");
  auto fts = Post("/v1/databases/d/tables/docs/indexes", alice_,
                  {{"name", "body_fts"}, {"columns", {"body"}}, {"using", "FTS"}}, "k-fts");
  EXPECT_EQ(fts.status, 202) << fts.body;
  if (fts.status == 202) FollowEvents(fts.Header("location"), alice_);
  auto again = Post("/v1/databases/d/tables/docs/indexes", alice_,
                    {{"name", "cat_idx"}, {"columns", {"category"}}, {"using", "BITMAP"}, {"if_not_exists", true}},
                    "k-idx-again");
  EXPECT_TRUE(again.status == 200 || again.status == 202) << again.body;
  EXPECT_EQ(Post("/v1/databases/d/tables/docs/indexes", alice_,
                 {{"name", "x"}, {"columns", {"category"}}, {"using", "HASH"}}, "k-idx-bad")
                .status,
            400);
  EXPECT_EQ(Post("/v1/databases/d/tables/docs/indexes", alice_,
                 {{"name", "x"}, {"columns", {"category"}}, {"using", "BTREE"}, {"replace", "yes"}}, "k-idx-type")
                .status,
            400);

  // Queries: a scan with a filter, a full-text and a vector search, and refusals.
  auto scan = Post("/v1/databases/d/tables/docs/query", reader_,
                   {{"filter", "category = 'cat_3'"}, {"select", {"id", "category"}}, {"limit", 1000}});
  ASSERT_EQ(scan.status, 200) << scan.body;
  EXPECT_EQ(Json::parse(scan.body)["rows"].size(), 50u);
  auto text = Post("/v1/databases/d/tables/docs/query", reader_, {{"text", "fox"}, {"column", "body"}, {"k", 3}});
  EXPECT_EQ(text.status, 200) << text.body;
  auto plain = Post("/v1/databases/d/tables/vecs/query", reader_,
                    {{"vector", {0.1, 0.2, 0.3, 0.4}}, {"column", "emb"}, {"k", 2}});
  EXPECT_EQ(plain.status, 200) << plain.body;
  EXPECT_FALSE(Json::parse(plain.body)["rows"][0].contains("emb")) << "vectors only when named";
  auto vector = Post("/v1/databases/d/tables/vecs/query", reader_,
                     {{"vector", {0.1, 0.2, 0.3, 0.4}}, {"column", "emb"}, {"k", 2}, {"select", {"emb", "_distance"}}});
  EXPECT_EQ(vector.status, 200) << vector.body;
  EXPECT_EQ(Json::parse(vector.body)["rows"][0]["emb"].size(), 4u) << "a vector is the array of its elements";
  auto vectors = Post("/v1/sql", reader_, {{"sql", "SELECT emb FROM d.vecs LIMIT 2"}});
  EXPECT_EQ(vectors.status, 200) << vectors.body;
  EXPECT_EQ(Json::parse(vectors.body)["results"][0]["rows"][0][0].size(), 4u) << vectors.body;
  EXPECT_EQ(Post("/v1/databases/d/tables/docs/query", reader_, {{"k", 0}}).status, 400);
  EXPECT_EQ(Post("/v1/databases/d/tables/docs/query", reader_, {{"vector", {1, 2}}}).status, 400);
  // Fields the schema does not define, or that do not apply to the kind of query, are refused.
  auto misspelt =
      Post("/v1/databases/d/tables/vecs/query", reader_, {{"vectr", {0.1, 0.2, 0.3, 0.4}}, {"column", "emb"}});
  EXPECT_EQ(misspelt.status, 400) << misspelt.body;
  EXPECT_EQ(Code(misspelt), "INVALID_ARGUMENT") << misspelt.body;
  EXPECT_NE(Json::parse(misspelt.body).value("detail", "").find("unknown field \"vectr\""), std::string::npos)
      << misspelt.body;
  auto scan_nprobes = Post("/v1/databases/d/tables/docs/query", reader_, {{"nprobes", 5}});
  EXPECT_EQ(scan_nprobes.status, 400) << scan_nprobes.body;
  EXPECT_NE(scan_nprobes.body.find("applies to a vector query only"), std::string::npos) << scan_nprobes.body;
  EXPECT_EQ(Post("/v1/databases/d/tables/nope/query", reader_, Json::object()).status, 404);

  // SQL scripts: results, a failure at the second statement (with statement_index and the
  // first result), a parse error, a privilege error, a replay.
  auto script = Post("/v1/sql", alice_, {{"sql", "SELECT COUNT(*) FROM d.docs; SHOW TABLES FROM d"}, {"script", true}});
  EXPECT_EQ(script.status, 200) << script.body;
  auto failed = Post("/v1/sql", alice_, {{"sql", "SELECT 1; SELECT * FROM d.nope"}, {"script", true}}, "k-sql-fail");
  EXPECT_EQ(failed.status, 404) << failed.body;
  const Json problem = Json::parse(failed.body, nullptr, false);
  EXPECT_EQ(problem.value("statement_index", -1), 1);
  EXPECT_EQ(problem.value("results", Json::array()).size(), 1u);
  EXPECT_EQ(Post("/v1/sql", alice_, {{"sql", "SELEKT 1"}}).status, 400);
  EXPECT_EQ(Post("/v1/sql", alice_, Json::object()).status, 400);
  EXPECT_EQ(Post("/v1/sql", reader_, {{"sql", "INSERT INTO d.docs (id) VALUES (5000)"}}).status, 403);
  auto sql_replay =
      Post("/v1/sql", alice_, {{"sql", "SELECT 1; SELECT * FROM d.nope"}, {"script", true}}, "k-sql-fail");
  EXPECT_EQ(sql_replay.status, 404);
  EXPECT_EQ(sql_replay.Header("idempotency-replayed"), "true");
  // A request body past the route's bound (a SQL script is at most 4 MiB): 413, not a retry.
  auto huge = Post("/v1/sql", alice_, {{"sql", "SELECT '" + std::string(5 << 20, 'x') + "'"}});
  EXPECT_EQ(huge.status, 413) << huge.body.substr(0, 300);
  EXPECT_EQ(huge.Header("retry-after"), "");

  // A duplicate of a keyed request still running: 409 with Retry-After, then the replay.
  const std::string slow =
      "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 8000000) SELECT "
      "COUNT(*) FROM n";
  const int64_t reserved = IdempotencyCount(server_->url(), "reserved");
  ASSERT_GE(reserved, 0);
  std::thread first([&] {
    auto c = server::HttpClient::Connect(server_->url());
    ASSERT_TRUE(c.ok());
    auto r = (*c)->Call(
        "POST", "/v1/sql",
        {{"Authorization", "Bearer " + admin_}, {"Idempotency-Key", "k-slow"}, {"Content-Type", "application/json"}},
        Json{{"sql", slow}}.dump());
    ASSERT_TRUE(r.ok());
    Expect("POST", "/v1/sql", *r);
  });
  EXPECT_TRUE(WaitForIdempotencyCount(server_->url(), "reserved", reserved + 1));
  auto dup = Post("/v1/sql", admin_, {{"sql", slow}}, "k-slow");
  first.join();
  EXPECT_EQ(dup.status, 409) << dup.body;
  EXPECT_EQ(Code(dup), "IDEMPOTENCY_REQUEST_IN_PROGRESS");

  // Vacuum, and dropping: an index (a job), a table, a database that is not empty (409), then
  // empty.
  // The history and the generations before and after the vacuum: it keeps only the newest version.
  auto versions = Send("GET", "/v1/databases/d/tables/docs/versions", reader_);
  ASSERT_EQ(versions.status, 200) << versions.body;
  const Json history = Json::parse(versions.body)["versions"];
  ASSERT_GT(history.size(), 2u);
  EXPECT_EQ(history[0]["Operation"], "CREATE_TABLE");
  EXPECT_EQ(Json::parse(Send("GET", "/v1/databases/d/tables/docs/versions?limit=2", reader_).body)["versions"].size(),
            2u);
  EXPECT_EQ(Send("GET", "/v1/databases/d/tables/docs/versions?limit=0", reader_).status, 400);
  EXPECT_EQ(Send("GET", "/v1/databases/d/tables/nope/versions", reader_).status, 404);
  auto generations = Send("GET", "/v1/databases/d/tables/docs/generations", reader_);
  ASSERT_EQ(generations.status, 200) << generations.body;
  const Json published = Json::parse(generations.body)["generations"].back();
  EXPECT_EQ(published["State"], "PUBLISHED");
  EXPECT_EQ(published["Version"], history.back()["Version"]);
  auto vacuum = Post("/v1/databases/d/tables/docs/vacuum", alice_, {{"retain_versions", 1}}, "k-vacuum");
  EXPECT_EQ(vacuum.status, 200) << vacuum.body;
  const Json kept = Json::parse(Send("GET", "/v1/databases/d/tables/docs/versions", reader_).body)["versions"];
  EXPECT_LT(kept.size(), history.size());
  EXPECT_EQ(kept.back()["Version"], history.back()["Version"]);
  // VACUUM under its key again: the original result, replayed; another VACUUM under it: 422.
  auto vacuum_again = Post("/v1/databases/d/tables/docs/vacuum", alice_, {{"retain_versions", 1}}, "k-vacuum");
  EXPECT_EQ(vacuum_again.status, 200);
  EXPECT_EQ(vacuum_again.Header("idempotency-replayed"), "true");
  EXPECT_EQ(vacuum_again.body, vacuum.body);
  auto vacuum_other = Post("/v1/databases/d/tables/docs/vacuum", alice_, {{"retain_versions", 2}}, "k-vacuum");
  EXPECT_EQ(vacuum_other.status, 422) << vacuum_other.body;
  EXPECT_EQ(Code(vacuum_other), "IDEMPOTENCY_KEY_REUSED");
  EXPECT_EQ(Post("/v1/databases/d/tables/docs/vacuum", alice_, {{"retain_versions", 0}}, "k-vacuum-bad").status, 400);
  auto drop_index =
      Send("DELETE", "/v1/databases/d/tables/docs/indexes/cat_idx", alice_, "", {{"Idempotency-Key", "k-drop-idx"}});
  EXPECT_EQ(drop_index.status, 202) << drop_index.body;
  if (drop_index.status == 202) FollowEvents(drop_index.Header("location"), alice_);
  auto not_empty = Send("DELETE", "/v1/databases/d", admin_, "", {{"Idempotency-Key", "k-drop-d"}});
  EXPECT_EQ(not_empty.status, 409) << not_empty.body;
  for (const char* t : {"docs", "vecs"}) {
    EXPECT_EQ(Send("DELETE", std::string("/v1/databases/d/tables/") + t, alice_, "",
                   {{"Idempotency-Key", std::string("k-drop-") + t}})
                  .status,
              200);
  }
  EXPECT_EQ(Send("DELETE", "/v1/databases/d/tables/docs", alice_, "", {{"Idempotency-Key", "k-drop-again"}}).status,
            404);
  EXPECT_EQ(Send("DELETE", "/v1/databases/d", admin_, "", {{"Idempotency-Key", "k-drop-d2"}}).status, 200);

  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_GT(checked_, 80);
  for (int status : {200, 201, 202, 400, 401, 403, 404, 409, 413, 422}) {
    EXPECT_TRUE(statuses_.count(status)) << "the session never saw a " << status;
  }
}

}  // namespace
}  // namespace vigil
