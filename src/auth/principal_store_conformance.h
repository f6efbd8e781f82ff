// The PrincipalStore conformance suite: every contract of principal_store.h,
// run on SQLite by principal_store_test.cc and on PostgreSQL by
// principal_store_itest.cc. Time comes from a FakeEnv, so timestamps and
// the last-used interval are checked without sleeping. Include from exactly one
// file per test binary.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "auth/schema.h"
#include "auth/token.h"
#include "testutil/fake_env.h"
#include "testutil/test_database.h"
#include "vigil/auth/principal_store.h"

namespace vigil::auth {

constexpr int64_t kT0 = 1'700'000'000'000;  // the test clock's start, Unix ms
constexpr int64_t kResolution = 60'000;     // last_used_resolution_ms of the test stores

class PrincipalStoreConformanceTest : public ::testing::TestWithParam<testing::DatabaseBackend> {
 protected:
  void SetUp() override {
    auto env = GetParam().make();
    ASSERT_TRUE(env.ok()) << env.status().ToString();
    env_ = std::move(env).value();
    auto secret = ServerSecret::Generate();
    ASSERT_TRUE(secret.ok());
    secret_ = *secret;
    store_ = OpenStore(secret_);
    ASSERT_NE(store_, nullptr);
  }
  void TearDown() override {
    store_.reset();
    env_.reset();
  }

  std::unique_ptr<PrincipalStore> OpenStore(const ServerSecret& secret) {
    PrincipalStoreOptions opts;
    opts.uri = env_->uri();
    opts.secret = secret;
    opts.env = &clock_;
    opts.last_used_resolution_ms = kResolution;
    auto store = PrincipalStore::Open(opts);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  IssuedToken MustCreate(const std::string& name, bool admin = false, const std::string& realm = "default") {
    auto issued = store_->CreateUser(realm, name, admin);
    EXPECT_TRUE(issued.ok()) << issued.status().ToString();
    return issued.ok() ? *issued : IssuedToken{};
  }

  Authenticated MustAuthenticate(const std::string& token) {
    auto who = store_->Authenticate(token);
    EXPECT_TRUE(who.ok()) << who.status().ToString();
    return who.ok() ? *who : Authenticated{};
  }

  // Authenticate fails exactly as every unusable token must.
  void ExpectRejected(const std::string& token, const std::string& why) {
    auto who = store_->Authenticate(token);
    ASSERT_FALSE(who.ok()) << why;
    EXPECT_EQ(who.status().code(), StatusCode::kPermissionDenied) << why;
    EXPECT_EQ(who.status().message(), std::string(kAuthenticationFailed)) << why;
  }

  // Every value of every column of every auth table, as text.
  std::vector<std::string> AllStoredValues() {
    std::vector<std::string> out;
    auto conn = store_->database().Acquire();
    EXPECT_TRUE(conn.ok());
    if (!conn.ok()) return out;
    for (std::string_view table : kAuthTables) {
      auto rows = (*conn)->Query("SELECT * FROM " + std::string(table));
      EXPECT_TRUE(rows.ok()) << rows.status().ToString();
      if (!rows.ok()) continue;
      for (const meta::Row& row : *rows) {
        for (size_t c = 0; c < row.size(); ++c) {
          const meta::Value& v = row.at(c);
          out.push_back(v.is_text() ? v.text_value() : v.DebugString());
        }
      }
    }
    return out;
  }

  std::unique_ptr<testing::TestDatabaseEnv> env_;
  testing::FakeEnv clock_{kT0 * 1000};
  ServerSecret secret_;
  std::unique_ptr<PrincipalStore> store_;
};

TEST_P(PrincipalStoreConformanceTest, CreateUserReturnsATokenThatAuthenticatesAsThatUser) {
  IssuedToken issued = MustCreate("Alice");
  EXPECT_EQ(issued.realm, "default");
  EXPECT_EQ(issued.user, "alice");
  auto parsed = internal::ParseToken(issued.token);
  ASSERT_TRUE(parsed.has_value()) << issued.token;
  EXPECT_EQ(parsed->token_id, issued.token_id);
  EXPECT_EQ(issued.token.substr(0, 4), "vgl_");

  Authenticated who = MustAuthenticate(issued.token);
  EXPECT_EQ(who.realm, "default");
  EXPECT_EQ(who.token_id, issued.token_id);
  EXPECT_EQ(who.principal.name, "alice");
  EXPECT_FALSE(who.principal.admin);
  EXPECT_TRUE(who.principal.grants.empty());
  EXPECT_FALSE(who.principal.Has(Privilege::kShow, "local", "db", "t"));

  auto user = store_->GetUser("default", "ALICE");
  ASSERT_TRUE(user.ok());
  ASSERT_TRUE(user->has_value());
  EXPECT_EQ(**user, (UserInfo{"default", "alice", false, false, kT0, kT0, who.incarnation}));
}

TEST_P(PrincipalStoreConformanceTest, NamesAreCaseInsensitiveIdentifiers) {
  MustCreate("bob");
  auto dup = store_->CreateUser("DEFAULT", "BOB", true);
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists) << dup.status().ToString();
  EXPECT_NE(dup.status().message().find("'bob'"), std::string::npos);

  for (const std::string& bad : {std::string(""), std::string("1abc"), std::string("a-b"), std::string(65, 'x'),
                                 std::string("a b"), std::string("caf\xc3\xa9")}) {
    auto r = store_->CreateUser("default", bad, false);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("user name"), std::string::npos) << r.status().ToString();
  }
  auto bad_realm = store_->CreateUser("no such", "carol", false);
  EXPECT_EQ(bad_realm.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_realm.status().message().find("realm name"), std::string::npos);
}

TEST_P(PrincipalStoreConformanceTest, RealmsAreNamespaces) {
  auto realms = store_->ListRealms();
  ASSERT_TRUE(realms.ok());
  EXPECT_EQ(*realms, std::vector<std::string>{"default"});

  auto missing = store_->CreateUser("tenant_a", "alice", false);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "realm 'tenant_a' does not exist");
  EXPECT_EQ(store_->ListUsers("tenant_a").status().code(), StatusCode::kNotFound);

  ASSERT_TRUE(store_->CreateRealm("Tenant_A").ok());
  EXPECT_EQ(store_->CreateRealm("tenant_a").code(), StatusCode::kAlreadyExists);
  IssuedToken a = MustCreate("alice", false, "tenant_a");
  IssuedToken d = MustCreate("alice", true, "default");
  EXPECT_EQ(MustAuthenticate(a.token).realm, "tenant_a");
  EXPECT_FALSE(MustAuthenticate(a.token).principal.admin);
  EXPECT_EQ(MustAuthenticate(d.token).realm, "default");
  EXPECT_TRUE(MustAuthenticate(d.token).principal.admin);
  ASSERT_TRUE(store_->DropUser("tenant_a", "alice").ok());
  ExpectRejected(a.token, "dropped in tenant_a");
  MustAuthenticate(d.token);

  realms = store_->ListRealms();
  ASSERT_TRUE(realms.ok());
  EXPECT_EQ(*realms, (std::vector<std::string>{"default", "tenant_a"}));
}

TEST_P(PrincipalStoreConformanceTest, UnknownIdWrongSecretAndMalformedTokensFailAlike) {
  IssuedToken issued = MustCreate("alice");
  auto parsed = internal::ParseToken(issued.token);
  ASSERT_TRUE(parsed.has_value());
  std::string wrong_secret = issued.token;
  wrong_secret.back() = wrong_secret.back() == '0' ? '1' : '0';
  std::string unknown_id = issued.token;
  unknown_id[4] = unknown_id[4] == '0' ? '1' : '0';

  ExpectRejected(wrong_secret, "wrong secret");
  ExpectRejected(unknown_id, "unknown token id");
  std::string upper = issued.token;
  for (size_t i = 4; i < upper.size(); ++i) upper[i] = static_cast<char>(std::toupper(upper[i]));
  std::string no_separator = issued.token;
  no_separator[4 + 16] = 'x';
  for (const std::string& bad :
       {std::string(), std::string("vgl_"), std::string("Bearer ") + issued.token, issued.token + "0",
        issued.token.substr(0, issued.token.size() - 1), std::string("vgx_") + issued.token.substr(4), upper,
        no_separator, issued.token_id, parsed->secret_hex, std::string(kMaxTokenLength + 1, 'a'),
        std::string(1 << 20, 'v'), issued.token + std::string(1, '\0')}) {
    ExpectRejected(bad, "malformed: " + bad.substr(0, 40));
  }
  // The real one still works.
  MustAuthenticate(issued.token);
}

TEST_P(PrincipalStoreConformanceTest, EverySecretCheckIsOneConstantTimeComparison) {
  IssuedToken issued = MustCreate("alice");
  std::string wrong_secret = issued.token;
  wrong_secret.back() = wrong_secret.back() == '0' ? '1' : '0';
  std::string unknown_id = issued.token;
  unknown_id[4] = unknown_id[4] == '0' ? '1' : '0';
  for (const std::string& token : {issued.token, wrong_secret, unknown_id}) {
    const uint64_t before = internal::ConstantTimeCompareCount();
    (void)store_->Authenticate(token);
    EXPECT_EQ(internal::ConstantTimeCompareCount() - before, 1u) << token.substr(0, 20);
  }
}

TEST_P(PrincipalStoreConformanceTest, TheTokenIsNeverStoredInClear) {
  IssuedToken issued = MustCreate("alice", true);
  ASSERT_TRUE(store_->Grant("default", "alice", Privilege::kShow, "local.db.*").ok());
  MustAuthenticate(issued.token);  // records last_used_at
  IssuedToken rotated = *store_->RotateToken("default", "alice");
  MustAuthenticate(rotated.token);
  for (const IssuedToken& t : {issued, rotated}) {
    auto parsed = internal::ParseToken(t.token);
    ASSERT_TRUE(parsed.has_value());
    const std::string& secret = parsed->secret_hex;
    // Any 16-digit piece of the secret would do for a search; look for each.
    std::vector<std::string> needles = {t.token, secret};
    for (size_t i = 0; i + 16 <= secret.size(); i += 16) needles.push_back(secret.substr(i, 16));
    std::vector<std::string> values = AllStoredValues();
    ASSERT_FALSE(values.empty());
    for (const std::string& v : values) {
      for (const std::string& needle : needles) {
        EXPECT_EQ(v.find(needle), std::string::npos) << "a stored value holds the token secret";
      }
    }
  }
  // What is stored is the HMAC under the server secret.
  auto conn = store_->database().Acquire();
  ASSERT_TRUE(conn.ok());
  auto row = (*conn)->QueryOptional("SELECT secret_hmac FROM auth_tokens WHERE token_id = $1", {rotated.token_id});
  ASSERT_TRUE(row.ok() && row->has_value());
  auto parsed = internal::ParseToken(rotated.token);
  EXPECT_EQ(*(*row)->Text(0), internal::TokenSecretHmac(secret_, rotated.token_id, parsed->secret_hex));
}

TEST_P(PrincipalStoreConformanceTest, RotateIssuesANewTokenAndRevokesTheOldOnes) {
  IssuedToken first = MustCreate("alice");
  clock_.AdvanceMs(1000);
  auto second = store_->RotateToken("default", "Alice");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_NE(second->token_id, first.token_id);
  ExpectRejected(first.token, "rotated away");
  EXPECT_EQ(MustAuthenticate(second->token).principal.name, "alice");

  auto tokens = store_->ListTokens("default", "alice");
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 2u);
  EXPECT_EQ((*tokens)[0].token_id, second->token_id);  // newest first
  EXPECT_FALSE((*tokens)[0].revoked_at_ms.has_value());
  EXPECT_EQ((*tokens)[0].key_id, store_->key_id());
  EXPECT_EQ((*tokens)[1].token_id, first.token_id);
  EXPECT_EQ((*tokens)[1].revoked_at_ms, kT0 + 1000);

  // Old revoked tokens are pruned to kMaxRevokedTokensPerUser.
  for (int i = 0; i < kMaxRevokedTokensPerUser + 3; ++i) {
    clock_.AdvanceMs(1);
    ASSERT_TRUE(store_->RotateToken("default", "alice").ok());
  }
  tokens = store_->ListTokens("default", "alice");
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(tokens->size(), static_cast<size_t>(kMaxRevokedTokensPerUser + 1));
  EXPECT_FALSE(tokens->front().revoked_at_ms.has_value());

  EXPECT_EQ(store_->RotateToken("default", "nobody").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->RotateToken("nowhere", "alice").status().code(), StatusCode::kNotFound);
}

TEST_P(PrincipalStoreConformanceTest, RevokeTokensLeavesTheUserWithoutAWayIn) {
  IssuedToken issued = MustCreate("alice");
  auto revoked = store_->RevokeTokens("default", "alice");
  ASSERT_TRUE(revoked.ok());
  EXPECT_EQ(*revoked, 1);
  ExpectRejected(issued.token, "revoked");
  EXPECT_EQ(*store_->RevokeTokens("default", "alice"), 0);
  auto user = store_->GetUser("default", "alice");
  ASSERT_TRUE(user.ok() && user->has_value());  // the user stays
  auto again = store_->RotateToken("default", "alice");
  ASSERT_TRUE(again.ok());
  MustAuthenticate(again->token);
  EXPECT_EQ(store_->RevokeTokens("default", "nobody").status().code(), StatusCode::kNotFound);
}

TEST_P(PrincipalStoreConformanceTest, DropUserTakesItsTokensAndGrants) {
  IssuedToken issued = MustCreate("alice");
  ASSERT_TRUE(store_->Grant("default", "alice", Privilege::kAlter, "local.db.docs").ok());
  ASSERT_TRUE(store_->Grant("default", "alice", Privilege::kShow, "*").ok());
  MustCreate("bob");
  ASSERT_TRUE(store_->Grant("default", "bob", Privilege::kShow, "local.db.docs").ok());

  ASSERT_TRUE(store_->DropUser("default", "ALICE").ok());
  ExpectRejected(issued.token, "dropped");
  EXPECT_FALSE(store_->GetUser("default", "alice")->has_value());
  EXPECT_EQ(store_->ListGrants("default", std::string("alice")).status().code(), StatusCode::kNotFound);
  auto conn = store_->database().Acquire();
  ASSERT_TRUE(conn.ok());
  for (std::string_view table : {"auth_tokens", "auth_grants"}) {
    auto rows = (*conn)->Query("SELECT user_name FROM " + std::string(table) + " WHERE user_name = 'alice'");
    ASSERT_TRUE(rows.ok());
    EXPECT_TRUE(rows->empty()) << table;
  }
  // Someone else's grants stay; a new alice starts with nothing.
  EXPECT_EQ(store_->ListGrants("default")->size(), 1u);
  IssuedToken fresh = MustCreate("alice");
  EXPECT_TRUE(MustAuthenticate(fresh.token).principal.grants.empty());

  auto again = store_->DropUser("default", "nobody");
  EXPECT_EQ(again.code(), StatusCode::kNotFound);
  EXPECT_EQ(again.message(), "user 'nobody' does not exist in realm 'default'");
}

// Each user created is a new incarnation, told apart from any user the name had before.
TEST_P(PrincipalStoreConformanceTest, EachCreatedUserIsANewIncarnation) {
  IssuedToken first = MustCreate("alice");
  const std::string incarnation = MustAuthenticate(first.token).incarnation;
  EXPECT_EQ(incarnation.size(), 16u);
  EXPECT_EQ(incarnation.find_first_not_of("0123456789abcdef"), std::string::npos) << incarnation;
  EXPECT_EQ(store_->GetUser("default", "alice")->value().incarnation, incarnation);
  // Rotating the token, granting and disabling keep the incarnation.
  auto rotated = store_->RotateToken("default", "alice");
  ASSERT_TRUE(rotated.ok()) << rotated.status().ToString();
  ASSERT_TRUE(store_->Grant("default", "alice", Privilege::kShow, "*").ok());
  EXPECT_EQ(MustAuthenticate(rotated->token).incarnation, incarnation);

  ASSERT_TRUE(store_->DropUser("default", "alice").ok());
  IssuedToken second = MustCreate("alice");
  const std::string next = MustAuthenticate(second.token).incarnation;
  EXPECT_EQ(next.size(), 16u);
  EXPECT_NE(next, incarnation);
  EXPECT_NE(MustAuthenticate(MustCreate("bob").token).incarnation, next);
  auto admin = store_->Bootstrap("default");
  ASSERT_TRUE(admin.ok()) << admin.status().ToString();
  EXPECT_EQ(MustAuthenticate(admin->token).incarnation.size(), 16u);
}

TEST_P(PrincipalStoreConformanceTest, DisabledUsersDoNotAuthenticate) {
  IssuedToken issued = MustCreate("alice");
  clock_.AdvanceMs(5);
  ASSERT_TRUE(store_->SetDisabled("default", "alice", true).ok());
  ExpectRejected(issued.token, "disabled");
  auto user = store_->GetUser("default", "alice");
  ASSERT_TRUE(user.ok() && user->has_value());
  EXPECT_TRUE((*user)->disabled);
  EXPECT_EQ((*user)->updated_at_ms, kT0 + 5);
  ASSERT_TRUE(store_->SetDisabled("default", "alice", false).ok());
  MustAuthenticate(issued.token);
  EXPECT_EQ(store_->SetDisabled("default", "nobody", true).code(), StatusCode::kNotFound);
}

TEST_P(PrincipalStoreConformanceTest, TheAdministratorFlagIsGlobalAdmin) {
  IssuedToken issued = MustCreate("alice");
  ASSERT_TRUE(store_->SetAdmin("default", "alice", true).ok());
  Principal p = MustAuthenticate(issued.token).principal;
  EXPECT_TRUE(p.admin);
  EXPECT_TRUE(p.IsAdmin());
  EXPECT_TRUE(p.Has(Privilege::kAdmin, "local", "any", "table"));
  ASSERT_TRUE(store_->SetAdmin("default", "alice", false).ok());
  EXPECT_FALSE(MustAuthenticate(issued.token).principal.admin);
}

TEST_P(PrincipalStoreConformanceTest, GrantsAtEachScopeReachPrincipalHas) {
  IssuedToken t = MustCreate("tabler");
  IssuedToken d = MustCreate("dber");
  IssuedToken g = MustCreate("globaler");
  IssuedToken ta = MustCreate("tadmin");
  IssuedToken ga = MustCreate("gadmin");
  ASSERT_TRUE(*store_->Grant("default", "tabler", Privilege::kShow, "local.db.docs"));
  ASSERT_TRUE(*store_->Grant("default", "dber", Privilege::kAlter, "local.db.*"));
  ASSERT_TRUE(*store_->Grant("default", "globaler", Privilege::kShow, "*"));
  ASSERT_TRUE(*store_->Grant("default", "tadmin", Privilege::kAdmin, "local.db.docs"));
  ASSERT_TRUE(*store_->Grant("default", "gadmin", Privilege::kAdmin, "*"));

  Principal tabler = MustAuthenticate(t.token).principal;
  EXPECT_TRUE(tabler.Has(Privilege::kShow, "local", "db", "docs"));
  EXPECT_FALSE(tabler.Has(Privilege::kAlter, "local", "db", "docs"));
  EXPECT_FALSE(tabler.Has(Privilege::kShow, "local", "db", "other"));
  EXPECT_FALSE(tabler.Has(Privilege::kShow, "local", "db", "*"));
  EXPECT_FALSE(tabler.admin);

  Principal dber = MustAuthenticate(d.token).principal;
  EXPECT_TRUE(dber.Has(Privilege::kAlter, "local", "db", "docs"));
  EXPECT_TRUE(dber.Has(Privilege::kShow, "local", "db", "anything"));
  EXPECT_FALSE(dber.Has(Privilege::kAdmin, "local", "db", "docs"));
  EXPECT_FALSE(dber.Has(Privilege::kShow, "local", "other", "docs"));
  // Implied privileges are in the set too, for callers that read it directly.
  EXPECT_EQ(dber.grants.at("local.db.*"), (std::set<Privilege>{Privilege::kShow, Privilege::kAlter}));

  Principal globaler = MustAuthenticate(g.token).principal;
  EXPECT_TRUE(globaler.Has(Privilege::kShow, "local", "x", "y"));
  EXPECT_TRUE(globaler.HasGlobal(Privilege::kShow));
  EXPECT_FALSE(globaler.Has(Privilege::kAlter, "local", "x", "y"));
  EXPECT_FALSE(globaler.admin);

  Principal tadmin = MustAuthenticate(ta.token).principal;
  EXPECT_TRUE(tadmin.Has(Privilege::kAdmin, "local", "db", "docs"));
  EXPECT_TRUE(tadmin.Has(Privilege::kAlter, "local", "db", "docs"));
  EXPECT_TRUE(tadmin.Has(Privilege::kShow, "local", "db", "docs"));
  EXPECT_FALSE(tadmin.Has(Privilege::kShow, "local", "db", "other"));
  EXPECT_FALSE(tadmin.admin);
  EXPECT_FALSE(tadmin.IsAdmin());
  EXPECT_EQ(tadmin.grants.at("local.db.docs"),
            (std::set<Privilege>{Privilege::kShow, Privilege::kAlter, Privilege::kAdmin}));

  Principal gadmin = MustAuthenticate(ga.token).principal;
  EXPECT_TRUE(gadmin.admin);  // ADMIN on "*" is the global ADMIN every `admin` check means
  EXPECT_TRUE(gadmin.Has(Privilege::kAdmin, "local", "any", "thing"));

  // Grants change what the next Authenticate sees.
  ASSERT_TRUE(*store_->Revoke("default", "tabler", Privilege::kShow, "local.db.docs"));
  EXPECT_FALSE(MustAuthenticate(t.token).principal.Has(Privilege::kShow, "local", "db", "docs"));
}

TEST_P(PrincipalStoreConformanceTest, GrantAndRevokeAreExactAndRepeatable) {
  MustCreate("alice");
  clock_.AdvanceMs(7);
  EXPECT_TRUE(*store_->Grant("default", "alice", Privilege::kAlter, "local.db.docs"));
  EXPECT_FALSE(*store_->Grant("default", "alice", Privilege::kAlter, "local.db.docs"));
  EXPECT_TRUE(*store_->Grant("default", "alice", Privilege::kShow, "local.db.docs"));
  // Revoking SHOW leaves ALTER (which still implies SHOW).
  EXPECT_TRUE(*store_->Revoke("default", "alice", Privilege::kShow, "local.db.docs"));
  EXPECT_FALSE(*store_->Revoke("default", "alice", Privilege::kShow, "local.db.docs"));
  auto grants = store_->ListGrants("default", std::string("alice"));
  ASSERT_TRUE(grants.ok());
  ASSERT_EQ(grants->size(), 1u);
  EXPECT_EQ((*grants)[0], (GrantInfo{"default", "alice", Privilege::kAlter, "local.db.docs", kT0 + 7}));
  // Objects are exact: a grant on Docs is not one on docs.
  EXPECT_FALSE(*store_->Revoke("default", "alice", Privilege::kAlter, "local.db.Docs"));

  EXPECT_EQ(store_->Grant("default", "nobody", Privilege::kShow, "*").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->Revoke("default", "nobody", Privilege::kShow, "*").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->Grant("nowhere", "alice", Privilege::kShow, "*").status().code(), StatusCode::kNotFound);
}

TEST_P(PrincipalStoreConformanceTest, GrantObjectsAreValidated) {
  MustCreate("alice");
  for (const char* ok : {"*", "local.db.*", "local.db.docs", "Other_Cat.db2.T_1"}) {
    EXPECT_TRUE(store_->Grant("default", "alice", Privilege::kShow, ok).ok()) << ok;
  }
  for (const std::string& bad :
       {std::string(""), std::string("**"), std::string("local"), std::string("local.db"), std::string("db.docs"),
        std::string("local.*"), std::string("local.*.*"), std::string("*.db.docs"), std::string("local.db.docs.x"),
        std::string("local._meta.*"), std::string("local.db.do cs"), std::string("local..docs"),
        std::string("local.db.*x"), std::string("local.db." + std::string(65, 't')), std::string(300, 'a')}) {
    auto r = store_->Grant("default", "alice", Privilege::kShow, bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("grant object"), std::string::npos) << r.status().ToString();
    EXPECT_EQ(store_->Revoke("default", "alice", Privilege::kShow, bad).status().code(), StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(store_->ListGrants("default", std::string("alice"))->size(), 4u);
}

TEST_P(PrincipalStoreConformanceTest, ListingsAreOrderedAndPaged) {
  for (const char* name : {"carol", "alice", "bob", "dave", "_svc"}) MustCreate(name);
  auto all = store_->ListUsers("default");
  ASSERT_TRUE(all.ok());
  std::vector<std::string> names;
  for (const UserInfo& u : *all) names.push_back(u.name);
  EXPECT_EQ(names, (std::vector<std::string>{"_svc", "alice", "bob", "carol", "dave"}));
  auto page = store_->ListUsers("default", UserPage{"bob", 2});
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 2u);
  EXPECT_EQ((*page)[0].name, "carol");
  EXPECT_EQ((*page)[1].name, "dave");
  EXPECT_EQ(store_->ListUsers("default", UserPage{"", 0}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->ListUsers("default", UserPage{"", kMaxListLimit + 1}).status().code(),
            StatusCode::kInvalidArgument);

  ASSERT_TRUE(store_->Grant("default", "bob", Privilege::kShow, "local.db.b").ok());
  ASSERT_TRUE(store_->Grant("default", "bob", Privilege::kAlter, "local.db.a").ok());
  ASSERT_TRUE(store_->Grant("default", "bob", Privilege::kShow, "local.db.a").ok());
  ASSERT_TRUE(store_->Grant("default", "alice", Privilege::kAdmin, "*").ok());
  ASSERT_TRUE(store_->Grant("default", "carol", Privilege::kShow, "local.db.*").ok());
  auto key = [](const GrantInfo& g) { return g.user + " " + g.object + " " + std::string(PrivilegeName(g.privilege)); };
  std::vector<std::string> want = {"alice * ADMIN", "bob local.db.a ALTER", "bob local.db.a SHOW",
                                   "bob local.db.b SHOW", "carol local.db.* SHOW"};
  std::vector<std::string> got;
  GrantPage gp;
  gp.limit = 2;
  for (int pages = 0; pages < 10; ++pages) {
    auto grants = store_->ListGrants("default", std::nullopt, gp);
    ASSERT_TRUE(grants.ok()) << grants.status().ToString();
    if (grants->empty()) break;
    for (const GrantInfo& g : *grants) got.push_back(key(g));
    gp.after = GrantKey{grants->back().user, grants->back().object, grants->back().privilege};
  }
  EXPECT_EQ(got, want);

  got.clear();
  GrantPage bob_page;
  bob_page.limit = 1;
  for (int pages = 0; pages < 10; ++pages) {
    auto grants = store_->ListGrants("default", std::string("bob"), bob_page);
    ASSERT_TRUE(grants.ok()) << grants.status().ToString();
    if (grants->empty()) break;
    for (const GrantInfo& g : *grants) got.push_back(key(g));
    bob_page.after = GrantKey{grants->back().user, grants->back().object, grants->back().privilege};
  }
  EXPECT_EQ(got, (std::vector<std::string>{"bob local.db.a ALTER", "bob local.db.a SHOW", "bob local.db.b SHOW"}));
  EXPECT_EQ(store_->ListGrants("nowhere").status().code(), StatusCode::kNotFound);
}

TEST_P(PrincipalStoreConformanceTest, LastUsedIsRecordedAtMostOncePerInterval) {
  IssuedToken issued = MustCreate("alice");
  auto last_used = [&]() -> std::optional<int64_t> {
    auto tokens = store_->ListTokens("default", "alice");
    EXPECT_TRUE(tokens.ok());
    return tokens.ok() && !tokens->empty() ? tokens->front().last_used_at_ms : std::nullopt;
  };
  EXPECT_FALSE(last_used().has_value());
  clock_.AdvanceMs(10);
  MustAuthenticate(issued.token);
  EXPECT_EQ(last_used(), kT0 + 10);
  clock_.AdvanceMs(kResolution - 1);
  MustAuthenticate(issued.token);
  EXPECT_EQ(last_used(), kT0 + 10);
  clock_.AdvanceMs(2);
  MustAuthenticate(issued.token);
  EXPECT_EQ(last_used(), kT0 + 11 + kResolution);
}

TEST_P(PrincipalStoreConformanceTest, BootstrapCreatesTheAdministratorOnce) {
  auto first = store_->Bootstrap("default");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->user, "admin");
  Authenticated who = MustAuthenticate(first->token);
  EXPECT_TRUE(who.principal.admin);
  EXPECT_EQ(who.principal.name, "admin");

  auto second = store_->Bootstrap("default");
  EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists) << second.status().ToString();
  MustAuthenticate(first->token);  // untouched

  auto rotated = store_->RotateToken("default", "admin");
  ASSERT_TRUE(rotated.ok());
  ExpectRejected(first->token, "rotated bootstrap token");
  EXPECT_TRUE(MustAuthenticate(rotated->token).principal.admin);

  // Any enabled administrator counts, by flag or by ADMIN on "*".
  ASSERT_TRUE(store_->CreateRealm("other").ok());
  MustCreate("root", false, "other");
  ASSERT_TRUE(store_->Grant("other", "root", Privilege::kAdmin, "*").ok());
  EXPECT_EQ(store_->Bootstrap("other").status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(store_->Bootstrap("nowhere").status().code(), StatusCode::kNotFound);
}

TEST_P(PrincipalStoreConformanceTest, BootstrapRestoresARealmThatLostItsAdministrator) {
  auto first = store_->Bootstrap("default");
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(store_->SetDisabled("default", "admin", true).ok());
  ASSERT_TRUE(store_->SetAdmin("default", "admin", false).ok());
  auto again = store_->Bootstrap("default");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ExpectRejected(first->token, "replaced by the second bootstrap");
  Authenticated who = MustAuthenticate(again->token);
  EXPECT_TRUE(who.principal.admin);
  auto user = store_->GetUser("default", "admin");
  ASSERT_TRUE(user.ok() && user->has_value());
  EXPECT_TRUE((*user)->admin);
  EXPECT_FALSE((*user)->disabled);
}

TEST_P(PrincipalStoreConformanceTest, RacingBootstrapsAndCreatesHaveOneWinner) {
  constexpr int kThreads = 8;
  std::atomic<int> bootstrapped{0}, created{0}, other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      auto b = store_->Bootstrap("default");
      if (b.ok()) {
        ++bootstrapped;
      } else if (!b.status().Is(StatusCode::kAlreadyExists)) {
        ++other;
        ADD_FAILURE() << b.status().ToString();
      }
      auto c = store_->CreateUser("default", "racer", false);
      if (c.ok()) {
        ++created;
      } else if (!c.status().Is(StatusCode::kAlreadyExists)) {
        ++other;
        ADD_FAILURE() << c.status().ToString();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bootstrapped.load(), 1);
  EXPECT_EQ(created.load(), 1);
  EXPECT_EQ(other.load(), 0);
}

TEST_P(PrincipalStoreConformanceTest, AnotherServerSecretCannotAuthenticateOldTokens) {
  IssuedToken issued = MustCreate("alice");
  auto other_secret = ServerSecret::Generate();
  ASSERT_TRUE(other_secret.ok());
  std::unique_ptr<PrincipalStore> other = OpenStore(*other_secret);
  ASSERT_NE(other, nullptr);
  EXPECT_NE(other->key_id(), store_->key_id());
  auto who = other->Authenticate(issued.token);
  EXPECT_EQ(who.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(who.status().message(), std::string(kAuthenticationFailed));
  // The same secret, reopened, still does.
  std::unique_ptr<PrincipalStore> same = OpenStore(secret_);
  ASSERT_NE(same, nullptr);
  EXPECT_EQ(same->key_id(), store_->key_id());
  auto again = same->Authenticate(issued.token);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->principal.name, "alice");
}

TEST_P(PrincipalStoreConformanceTest, OpenRefusesAnUnsetSecretAndIsIdempotent) {
  PrincipalStoreOptions opts;
  opts.uri = env_->uri();
  auto refused = PrincipalStore::Open(opts);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  auto applied = meta::ListAppliedMigrations(store_->database(), kSchemaComponent);
  ASSERT_TRUE(applied.ok());
  EXPECT_EQ(applied->size(), SchemaMigrations(store_->database().profile().dialect).size());
  EXPECT_NE(OpenStore(secret_), nullptr);
  EXPECT_EQ(store_->ListRealms()->size(), 1u);
}

}  // namespace vigil::auth
