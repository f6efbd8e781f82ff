// PrincipalStore on SQLite (the embedded default): the conformance suite, plus
// the token format, the server secret file and the released migrations.
#include "vigil/auth/principal_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "auth/principal_store_conformance.h"
#include "auth/schema.h"
#include "auth/token.h"
#include "testutil/temp_dir.h"
#include "testutil/test_database.h"
#include "vigil/auth/root_auth.h"
#include "vigil/auth/server_secret.h"

namespace vigil::auth {

INSTANTIATE_TEST_SUITE_P(Sqlite, PrincipalStoreConformanceTest, ::testing::Values(testing::SqliteBackend()),
                         testing::BackendName);

namespace {

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool SameSecret(const ServerSecret& a, const ServerSecret& b) {
  return std::equal(a.data(), a.data() + a.size(), b.data());
}

TEST(TokenTest, FormatAndParseRoundTrip) {
  auto id = internal::RandomHex(internal::kTokenIdBytes);
  auto secret = internal::RandomHex(internal::kTokenSecretBytes);
  ASSERT_TRUE(id.ok() && secret.ok());
  EXPECT_EQ(id->size(), 16u);
  EXPECT_EQ(secret->size(), 64u);
  std::string token = internal::FormatToken(*id, *secret);
  EXPECT_EQ(token.size(), internal::kTokenLength);
  auto parsed = internal::ParseToken(token);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->token_id, *id);
  EXPECT_EQ(parsed->secret_hex, *secret);
  EXPECT_NE(*internal::RandomHex(32), *internal::RandomHex(32));
}

TEST(TokenTest, TheHmacBindsTheTokenIdAndTheServerSecret) {
  auto s1 = ServerSecret::Generate();
  auto s2 = ServerSecret::Generate();
  ASSERT_TRUE(s1.ok() && s2.ok());
  const std::string secret(64, 'a');
  const std::string mac = internal::TokenSecretHmac(*s1, "0123456789abcdef", secret);
  EXPECT_EQ(mac.size(), 64u);
  EXPECT_EQ(mac, internal::TokenSecretHmac(*s1, "0123456789abcdef", secret));
  EXPECT_NE(mac, internal::TokenSecretHmac(*s1, "0123456789abcdee", secret));
  EXPECT_NE(mac, internal::TokenSecretHmac(*s2, "0123456789abcdef", secret));
  EXPECT_EQ(mac.find(secret.substr(0, 8)), std::string::npos);
  EXPECT_EQ(internal::ServerKeyId(*s1).size(), 16u);
  EXPECT_NE(internal::ServerKeyId(*s1), internal::ServerKeyId(*s2));
}

TEST(TokenTest, ConstantTimeEqualsComparesWholeStrings) {
  const uint64_t before = internal::ConstantTimeCompareCount();
  EXPECT_TRUE(internal::ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(internal::ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(internal::ConstantTimeEquals("abc", "ab"));
  EXPECT_TRUE(internal::ConstantTimeEquals("", ""));
  EXPECT_EQ(internal::ConstantTimeCompareCount() - before, 4u);
}

TEST(ServerSecretTest, CreatedOnceWithMode0600AndReused) {
  testing::TempDir root;
  auto first = LoadOrCreateServerSecret(root.path());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->is_set());
  const std::string path = ServerSecretPath(root.path());
  EXPECT_EQ(path, root.Join("_meta/server.secret"));
  EXPECT_EQ(ModeOf(path), 0600u);
  EXPECT_EQ(ModeOf(root.Join("_meta")), 0700u);
  const std::string bytes = ReadFile(path);
  EXPECT_EQ(bytes.size(), ServerSecret::kSize);
  EXPECT_TRUE(SameSecret(*first, *ServerSecret::FromBytes(bytes)));
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);

  auto second = LoadOrCreateServerSecret(root.path());
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(SameSecret(*first, *second));
  struct stat after {};
  ASSERT_EQ(::stat(path.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);
  EXPECT_EQ(ReadFile(path), bytes);
  // No temporary file is left behind.
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(root.Join("_meta"))) {
    ++entries;
    EXPECT_EQ(e.path().filename(), "server.secret");
  }
  EXPECT_EQ(entries, 1);
}

TEST(ServerSecretTest, ConcurrentCreatorsAllGetTheOneSecret) {
  for (int round = 0; round < 5; ++round) {
    testing::TempDir root;
    constexpr int kThreads = 8;
    std::vector<Result<ServerSecret>> results(kThreads, Status::Internal("not run"));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] { results[t] = LoadOrCreateServerSecret(root.path()); });
    }
    for (auto& th : threads) th.join();
    for (const auto& r : results) {
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_TRUE(SameSecret(*r, *results[0]));
    }
    EXPECT_EQ(
        std::distance(std::filesystem::directory_iterator(root.Join("_meta")), std::filesystem::directory_iterator()),
        1);
  }
}

TEST(ServerSecretTest, UnsafeOrDamagedFilesAreRefused) {
  testing::TempDir root;
  ASSERT_TRUE(LoadOrCreateServerSecret(root.path()).ok());
  const std::string path = ServerSecretPath(root.path());

  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  auto loose = LoadOrCreateServerSecret(root.path());
  EXPECT_EQ(loose.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(loose.status().message().find("0640"), std::string::npos) << loose.status().ToString();
  EXPECT_EQ(ModeOf(path), 0640u);  // never silently "fixed": the secret may have leaked

  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  { std::ofstream(path, std::ios::binary | std::ios::app) << "x"; }
  auto long_file = LoadOrCreateServerSecret(root.path());
  EXPECT_EQ(long_file.status().code(), StatusCode::kCorruption);
  EXPECT_NE(long_file.status().message().find("33 bytes"), std::string::npos);

  ASSERT_EQ(::unlink(path.c_str()), 0);
  testing::TempDir elsewhere;
  ASSERT_TRUE(LoadOrCreateServerSecret(elsewhere.path()).ok());
  ASSERT_EQ(::symlink(ServerSecretPath(elsewhere.path()).c_str(), path.c_str()), 0);
  auto link = LoadOrCreateServerSecret(root.path());
  EXPECT_EQ(link.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(link.status().message().find("symbolic link"), std::string::npos);

  ASSERT_EQ(::unlink(path.c_str()), 0);
  ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
  EXPECT_FALSE(LoadOrCreateServerSecret(root.path()).ok());

  EXPECT_EQ(ServerSecret::FromBytes("short").status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(ServerSecret().is_set());
}

TEST(ServerSecretTest, TheRootStoreUsesTheRootsSecret) {
  testing::TempDir dir;
  auto root = Root::Init(dir.Join("root"));
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  std::string token;
  {
    auto store = OpenRootPrincipalStore(*root);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto boot = (*store)->Bootstrap("default");
    ASSERT_TRUE(boot.ok());
    token = boot->token;
  }
  EXPECT_EQ(ModeOf(dir.Join("root/_meta/vigil.db")), 0600u);
  EXPECT_EQ(ModeOf(dir.Join("root/_meta/server.secret")), 0600u);
  auto store = OpenRootPrincipalStore(*root);
  ASSERT_TRUE(store.ok());
  auto who = (*store)->Authenticate(token);
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  EXPECT_TRUE(who->principal.admin);
  EXPECT_EQ((*store)->Bootstrap("default").status().code(), StatusCode::kAlreadyExists);
}

TEST(SchemaTest, EachBackendHasNumberedMigrationsWithTheKeysTheStoreNeeds) {
  for (meta::Dialect d : {meta::Dialect::kSqlite, meta::Dialect::kPostgres}) {
    const auto& migrations = SchemaMigrations(d);
    ASSERT_FALSE(migrations.empty());
    std::string all;
    for (size_t i = 0; i < migrations.size(); ++i) {
      EXPECT_EQ(migrations[i].version, int(i + 1));
      all += migrations[i].sql;
    }
    for (std::string_view table : kAuthTables) EXPECT_NE(all.find(table), std::string::npos) << table;
    EXPECT_NE(all.find("PRIMARY KEY (realm, user_name)"), std::string::npos);
    EXPECT_NE(all.find("PRIMARY KEY (realm, user_name, privilege, object)"), std::string::npos);
    EXPECT_NE(all.find("CHECK (privilege IN ('SHOW', 'ALTER', 'ADMIN'))"), std::string::npos);
    EXPECT_EQ(all.find("token TEXT"), std::string::npos);  // no column for a token in clear
  }
}

// Released migrations are never edited: these checksums are of the SQL as released. A change
// here means a released migration was edited; add a new migration instead.
TEST(SchemaTest, ReleasedMigrationsAreUnchanged) {
  EXPECT_EQ(meta::MigrationChecksum(SchemaMigrations(meta::Dialect::kSqlite)[0].sql), "5519b242795240fd");
  EXPECT_EQ(meta::MigrationChecksum(SchemaMigrations(meta::Dialect::kPostgres)[0].sql), "dcc6e14380626b39");
  for (meta::Dialect d : {meta::Dialect::kSqlite, meta::Dialect::kPostgres}) {
    EXPECT_EQ(meta::MigrationChecksum(SchemaMigrations(d)[1].sql), "2da1c4b3612aabe4");
  }
}

// A database made by schema version 1 opens at version 2: its users keep working and have the
// empty incarnation (the server's idempotency realms of those users are unchanged).
TEST(StoreOpenTest, UsersOfSchemaVersionOneKeepAnEmptyIncarnation) {
  testing::SqliteTestEnv env;
  PrincipalStoreOptions opts;
  opts.uri = env.uri();
  opts.secret = *ServerSecret::Generate();
  {
    auto db = meta::Database::Open(env.uri());
    ASSERT_TRUE(db.ok());
    const std::vector<meta::Migration> v1 = {SchemaMigrations(meta::Dialect::kSqlite)[0]};
    ASSERT_TRUE(meta::ApplyMigrations(**db, kSchemaComponent, v1, 1).ok());
    ASSERT_TRUE((*db)
                    ->Write([](meta::Connection& c) -> Status {
                      VIGIL_RETURN_IF_ERROR(
                          c.Execute("INSERT INTO auth_realms (realm, created_at) VALUES ('default', 1)").status());
                      return c
                          .Execute(
                              "INSERT INTO auth_users (realm, user_name, is_admin, disabled, created_at, updated_at)"
                              " VALUES ('default', 'old', 0, 0, 1, 1)")
                          .status();
                    })
                    .ok());
  }
  auto store = PrincipalStore::Open(opts);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto old = (*store)->GetUser("default", "old");
  ASSERT_TRUE(old.ok() && old->has_value()) << old.status().ToString();
  EXPECT_EQ((*old)->incarnation, "");
  auto token = (*store)->RotateToken("default", "old");
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  auto who = (*store)->Authenticate(token->token);
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  EXPECT_EQ(who->principal.name, "old");
  EXPECT_EQ(who->incarnation, "");
  auto applied = meta::ListAppliedMigrations((*store)->database(), kSchemaComponent);
  ASSERT_TRUE(applied.ok());
  EXPECT_EQ(applied->size(), 2u);
}

TEST(StoreOpenTest, EditedReleasedMigrationIsDetectedAtOpen) {
  testing::SqliteTestEnv env;
  PrincipalStoreOptions opts;
  opts.uri = env.uri();
  opts.secret = *ServerSecret::Generate();
  ASSERT_TRUE(PrincipalStore::Open(opts).ok());
  auto db = meta::Database::Open(env.uri());
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)
                  ->Write([](meta::Connection& c) {
                    return c
                        .Execute(
                            "UPDATE vigil_schema_migrations SET checksum = $1"
                            " WHERE component = $2 AND version = 1",
                            {"0000000000000000", std::string(kSchemaComponent)})
                        .status();
                  })
                  .ok());
  auto reopened = PrincipalStore::Open(opts);
  EXPECT_EQ(reopened.status().code(), StatusCode::kCorruption) << reopened.status().ToString();
}

}  // namespace
}  // namespace vigil::auth
