// SHOW VERSIONS: a table's committed history (who made each version, its live
// rows, fragments and the bytes of the files it references). SHOW GENERATIONS:
// the newest version, which every refresh publishes, and each older version
// that a reader of some process still holds through its version pin (DESIGN.md
// section 7), with the readers holding it and the bytes only it keeps on disk
// (what VACUUM frees once its readers are gone). Both need table SHOW.
#include <map>
#include <set>

#include "sql/exec/exec_internal.h"
#include "sql/select/job_listing.h"
#include "vigil/generations/version_pins.h"

namespace vigil::sql {

namespace {

// Live pins of one version: the readers (one per pin owner) and their processes.
struct Holders {
  std::set<std::string> owners;
  std::set<int64_t> pids;
  int64_t expires_at_ms = 0;
};

Result<std::map<uint64_t, Holders>> LiveHolders(ExecContext& ctx, const std::string& locator) {
  VIGIL_ASSIGN_OR_RETURN(auto pins, generations::VersionPinStore::Open(&ctx.store->database(), ctx.Now()));
  VIGIL_ASSIGN_OR_RETURN(std::vector<generations::VersionPin> all, pins->List(locator));
  const int64_t now = ctx.Now();
  std::map<uint64_t, Holders> held;
  for (const generations::VersionPin& p : all) {
    if (p.expires_at_ms <= now) continue;
    Holders& h = held[p.version];
    h.owners.insert(p.owner);
    h.pids.insert(p.pid);
    h.expires_at_ms = std::max(h.expires_at_ms, p.expires_at_ms);
  }
  return held;
}

// "YYYY-MM-DD HH:MM:SS.mmm" (UTC): versions are often committed within one second.
std::string CommitTime(const TransactionProperties& txn) { return FormatJobTimeMs(txn.timestamp_micros / 1000); }

}  // namespace

Result<std::vector<VersionInfo>> ExecTableHistory(ExecContext& ctx, const TableRef& table,
                                                  std::vector<uint64_t>* corrupt) {
  VIGIL_ASSIGN_OR_RETURN(vigil::TableName name, ResolveTable(ctx, table));
  VIGIL_RETURN_IF_ERROR(Authorize(ctx, name, auth::Privilege::kShow));
  VIGIL_ASSIGN_OR_RETURN(auto ds, OpenTable(ctx, name));
  return Dataset::ListVersions(ds->path(), ds->options(), corrupt);
}

Result<ResultSet> ExecShowVersions(ExecContext& ctx, const ShowVersionsStatement& s) {
  VIGIL_ASSIGN_OR_RETURN(vigil::TableName name, ResolveTable(ctx, s.table));
  std::vector<uint64_t> corrupt;
  VIGIL_ASSIGN_OR_RETURN(std::vector<VersionInfo> versions, ExecTableHistory(ctx, s.table, &corrupt));
  size_t first = 0;
  if (s.limit && versions.size() > static_cast<size_t>(*s.limit)) {
    first = versions.size() - static_cast<size_t>(*s.limit);
  }
  ResultSet r;
  r.columns = {"Version", "ParentVersion", "CommitTime", "Operation", "JobId", "Rows", "Fragments", "Bytes"};
  for (size_t i = first; i < versions.size(); ++i) {
    const VersionInfo& v = versions[i];
    r.rows.push_back({Value(static_cast<int64_t>(v.version)),
                      v.parent_version == 0 ? Value() : Value(static_cast<int64_t>(v.parent_version)),
                      Value(CommitTime(v.txn)), Value(v.txn.operation), v.txn.job_id ? Value(*v.txn.job_id) : Value(),
                      Value(static_cast<int64_t>(v.live_rows)), Value(static_cast<int64_t>(v.num_fragments)),
                      Value(static_cast<int64_t>(v.bytes))});
  }
  for (uint64_t v : corrupt) {
    r.warnings.push_back("version " + std::to_string(v) + " of " + name.ToString() +
                         " is not listed: its manifest does not verify (Corruption)");
  }
  return r;
}

Result<ResultSet> ExecShowGenerations(ExecContext& ctx, const ShowGenerationsStatement& s) {
  VIGIL_ASSIGN_OR_RETURN(vigil::TableName name, ResolveTable(ctx, s.table));
  VIGIL_RETURN_IF_ERROR(Authorize(ctx, name, auth::Privilege::kShow));
  VIGIL_ASSIGN_OR_RETURN(auto newest, OpenTable(ctx, name));
  VIGIL_ASSIGN_OR_RETURN(auto held, LiveHolders(ctx, newest->path()));
  held[newest->version()];  // the published generation is listed even when nobody reads it now
  ResultSet r;
  r.columns = {"Version", "State", "Readers", "Processes", "CommitTime", "Rows", "Bytes", "HeldBytes", "PinExpiresAt"};
  for (const auto& [version, h] : held) {
    if (version > newest->version()) continue;  // committed after this statement opened the table
    std::shared_ptr<Dataset> ds = newest;
    if (version != newest->version()) {
      VIGIL_ASSIGN_OR_RETURN(ds, Dataset::Open(newest->path(), version, newest->options()));
    }
    const Manifest& m = ds->manifest();
    const bool published = version == newest->version();
    r.rows.push_back({Value(static_cast<int64_t>(version)), Value(std::string(published ? "PUBLISHED" : "RETIRED")),
                      Value(static_cast<int64_t>(h.owners.size())), Value(static_cast<int64_t>(h.pids.size())),
                      Value(CommitTime(m.txn)), Value(static_cast<int64_t>(m.CountLiveRows())),
                      Value(static_cast<int64_t>(m.ReferencedBytes())),
                      Value(static_cast<int64_t>(published ? 0 : m.BytesNotIn(newest->manifest()))),
                      h.expires_at_ms > 0 ? Value(FormatTimeMs(h.expires_at_ms)) : Value()});
  }
  return r;
}

}  // namespace vigil::sql
