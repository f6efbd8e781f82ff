#include "vigil/generations/version_pins.h"

#include <unistd.h>

#include "vigil/common/uuid.h"
#include "vigil/meta/migrations.h"

namespace vigil::generations {

namespace {

constexpr std::string_view kComponent = "generations";

// BIGINT is a 64-bit integer on both backends.
constexpr std::string_view kCreatePins = R"sql(
CREATE TABLE vigil_version_pins (
  table_locator TEXT NOT NULL,
  version BIGINT NOT NULL CHECK (version > 0),
  owner TEXT NOT NULL,
  pid BIGINT NOT NULL,
  heartbeat_ms BIGINT NOT NULL,
  expires_at_ms BIGINT NOT NULL,
  PRIMARY KEY (table_locator, version, owner)
);
CREATE INDEX vigil_version_pins_by_owner ON vigil_version_pins (owner);
CREATE INDEX vigil_version_pins_by_expiry ON vigil_version_pins (expires_at_ms)
)sql";

const std::vector<meta::Migration>& Migrations() {
  static const std::vector<meta::Migration> m = {{1, "create vigil_version_pins", kCreatePins}};
  return m;
}

}  // namespace

const std::string& ProcessOwnerId() {
  static const std::string id = [] {
    char host[256] = {0};
    if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
    return std::string(host) + ":" + std::to_string(getpid()) + ":" + Uuid::Generate().ToString();
  }();
  return id;
}

Result<std::unique_ptr<VersionPinStore>> VersionPinStore::Open(meta::Database* db, int64_t now_ms) {
  VIGIL_RETURN_IF_ERROR(meta::ApplyMigrations(*db, kComponent, Migrations(), now_ms).status());
  return std::unique_ptr<VersionPinStore>(new VersionPinStore(db));
}

Status VersionPinStore::Pin(const std::string& table, uint64_t version, const std::string& owner, int64_t now_ms,
                            int64_t ttl_ms) {
  return db_->Write([&](meta::Connection& c) -> Status {
    return c
        .Execute(
            "INSERT INTO vigil_version_pins (table_locator, version, owner, pid, heartbeat_ms, expires_at_ms) "
            "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (table_locator, version, owner) DO UPDATE SET "
            "heartbeat_ms = excluded.heartbeat_ms, expires_at_ms = excluded.expires_at_ms",
            {table, static_cast<int64_t>(version), owner, static_cast<int64_t>(getpid()), now_ms, now_ms + ttl_ms})
        .status();
  });
}

Status VersionPinStore::Unpin(const std::string& table, uint64_t version, const std::string& owner) {
  return db_->Write([&](meta::Connection& c) -> Status {
    return c
        .Execute("DELETE FROM vigil_version_pins WHERE table_locator = $1 AND version = $2 AND owner = $3",
                 {table, static_cast<int64_t>(version), owner})
        .status();
  });
}

Result<int64_t> VersionPinStore::Heartbeat(const std::string& owner, int64_t now_ms, int64_t ttl_ms) {
  int64_t n = 0;
  VIGIL_RETURN_IF_ERROR(db_->Write([&](meta::Connection& c) -> Status {
    VIGIL_ASSIGN_OR_RETURN(n, c.Execute("UPDATE vigil_version_pins SET heartbeat_ms = $1, expires_at_ms = $2 "
                                        "WHERE owner = $3",
                                        {now_ms, now_ms + ttl_ms, owner}));
    return Status::OK();
  }));
  return n;
}

Result<std::set<uint64_t>> VersionPinStore::LiveVersions(const std::string& table, int64_t now_ms) {
  VIGIL_ASSIGN_OR_RETURN(auto conn, db_->Acquire());
  VIGIL_ASSIGN_OR_RETURN(auto rows, conn->Query("SELECT DISTINCT version FROM vigil_version_pins "
                                                "WHERE table_locator = $1 AND expires_at_ms > $2",
                                                {table, now_ms}));
  std::set<uint64_t> out;
  for (const auto& r : rows) {
    VIGIL_ASSIGN_OR_RETURN(int64_t v, r.Int(0));
    out.insert(static_cast<uint64_t>(v));
  }
  return out;
}

Result<std::vector<VersionPin>> VersionPinStore::List(const std::string& table) {
  VIGIL_ASSIGN_OR_RETURN(auto conn, db_->Acquire());
  VIGIL_ASSIGN_OR_RETURN(auto rows, conn->Query("SELECT table_locator, version, owner, pid, heartbeat_ms, "
                                                "expires_at_ms FROM vigil_version_pins WHERE table_locator = $1 "
                                                "ORDER BY version, owner",
                                                {table}));
  std::vector<VersionPin> out;
  for (const auto& r : rows) {
    VersionPin p;
    VIGIL_ASSIGN_OR_RETURN(p.table, r.Text(0));
    VIGIL_ASSIGN_OR_RETURN(int64_t v, r.Int(1));
    p.version = static_cast<uint64_t>(v);
    VIGIL_ASSIGN_OR_RETURN(p.owner, r.Text(2));
    VIGIL_ASSIGN_OR_RETURN(p.pid, r.Int(3));
    VIGIL_ASSIGN_OR_RETURN(p.heartbeat_ms, r.Int(4));
    VIGIL_ASSIGN_OR_RETURN(p.expires_at_ms, r.Int(5));
    out.push_back(std::move(p));
  }
  return out;
}

Result<PinCounts> VersionPinStore::CountLive(int64_t now_ms) {
  VIGIL_ASSIGN_OR_RETURN(auto conn, db_->Acquire());
  VIGIL_ASSIGN_OR_RETURN(auto rows, conn->Query("SELECT COUNT(*), COUNT(DISTINCT table_locator || ':' || version) FROM "
                                                "vigil_version_pins WHERE expires_at_ms > $1",
                                                {now_ms}));
  if (rows.size() != 1) return Status::Internal("pin count returned no row");
  PinCounts c;
  VIGIL_ASSIGN_OR_RETURN(c.pins, rows[0].Int(0));
  VIGIL_ASSIGN_OR_RETURN(c.versions, rows[0].Int(1));
  return c;
}

Result<int64_t> VersionPinStore::PurgeExpired(int64_t now_ms) {
  int64_t n = 0;
  VIGIL_RETURN_IF_ERROR(db_->Write([&](meta::Connection& c) -> Status {
    VIGIL_ASSIGN_OR_RETURN(n, c.Execute("DELETE FROM vigil_version_pins WHERE expires_at_ms <= $1", {now_ms}));
    return Status::OK();
  }));
  return n;
}

}  // namespace vigil::generations
