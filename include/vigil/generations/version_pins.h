// Cross-process version pins in the metadata store (DESIGN.md section 7):
// every serving process pins, per table, the dataset versions its generations
// hold, heartbeats its pins, and removes them when the generation retires.
// VACUUM keeps every version with a live (unexpired) pin. A process that dies
// stops heartbeating and its pins expire. Table `vigil_version_pins`, component
// "generations" in vigil_schema_migrations.
//
// Thread safety: VersionPinStore is thread-safe (over a thread-safe Database).
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/meta/database.h"

namespace vigil::generations {

struct VersionPin {
  std::string table;  // the table's locator (dataset path)
  uint64_t version = 0;
  std::string owner;  // process owner id (ProcessOwnerId() plus a manager suffix)
  int64_t pid = 0;
  int64_t heartbeat_ms = 0;
  int64_t expires_at_ms = 0;
};

// Live pins of every table, and the distinct (table, version) pairs they hold.
struct PinCounts {
  int64_t pins = 0;
  int64_t versions = 0;
};

// "<hostname>:<pid>:<uuid>", fixed for the life of this process.
const std::string& ProcessOwnerId();

class VersionPinStore {
 public:
  // Applies the component's migrations; `db` must outlive the store.
  static Result<std::unique_ptr<VersionPinStore>> Open(meta::Database* db, int64_t now_ms);

  // Creates or renews the pin (table, version, owner) until now + ttl.
  Status Pin(const std::string& table, uint64_t version, const std::string& owner, int64_t now_ms, int64_t ttl_ms);
  // Removes the pin; OK when it was not there.
  Status Unpin(const std::string& table, uint64_t version, const std::string& owner);
  // Renews every pin of `owner`; returns how many.
  Result<int64_t> Heartbeat(const std::string& owner, int64_t now_ms, int64_t ttl_ms);
  // Versions of `table` with a pin that has not expired at `now_ms`.
  Result<std::set<uint64_t>> LiveVersions(const std::string& table, int64_t now_ms);
  // Every pin of `table`, expired ones included, by version then owner.
  Result<std::vector<VersionPin>> List(const std::string& table);
  // What the pins that have not expired at `now_ms` hold, over every table.
  Result<PinCounts> CountLive(int64_t now_ms);
  // Deletes pins that expired before `now_ms`; returns how many.
  Result<int64_t> PurgeExpired(int64_t now_ms);

 private:
  explicit VersionPinStore(meta::Database* db) : db_(db) {}
  meta::Database* db_;
};

}  // namespace vigil::generations
