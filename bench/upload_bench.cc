// `vigil bench upload`: a large CSV upload through `vigil serve`'s rows route
// against the same file appended in process, with the server's memory during
// each (the route streams the body to a spool file; it is never whole in
// memory).
//
// Setup: a temporary root with db.api and db.http (id BIGINT, note TEXT), an
// administrator `bench`, and a CSV file of `mb` MiB (`note` is `note_bytes`
// letters). The server (server::ApiServer) runs in this process from the start,
// so both phases carry it.
//  - baseline: sql::Session::CopyUpload of the file into db.api (what the route
//    runs once the body is spooled);
//  - HTTP: curl, a separate process streaming the file from disk
//    (`--upload-file`), POSTs it to /v1/databases/db/tables/http/rows with an
//    Idempotency-Key.
// Memory: before each phase the process's peak RSS is reset (/proc/self/clear_refs)
// and its growth over the resident size at the start of the phase is reported,
// also as a fraction of the file's size. Both tables are checked to hold every row.
//
// Options: mb (256), note_bytes (200).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "bench/bench.h"
#include "vigil/auth/root_auth.h"
#include "vigil/common/env.h"
#include "vigil/common/file_system.h"
#include "vigil/server/api_server.h"
#include "vigil/server/http_client.h"
#include "vigil/sql/session.h"
#include "vigil/storage/root.h"

namespace vigil::bench::upload_bench {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// A field of /proc/self/status in bytes ("VmRSS", "VmHWM").
Result<int64_t> StatusBytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  }
  return Status::NotFound("/proc/self/status has no " + field);
}

// Starts a new peak (VmHWM) at the current resident size.
Status ResetPeakRss() {
  const int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError("cannot open /proc/self/clear_refs to reset the peak RSS");
  const bool ok = ::write(fd, "5", 1) == 1;
  ::close(fd);
  return ok ? Status::OK() : Status::IOError("cannot reset the peak RSS through /proc/self/clear_refs");
}

struct Phase {
  double seconds = 0;
  int64_t rss_growth_bytes = 0;  // peak during the phase over the resident size at its start
};

// Runs `fn` and measures it.
Result<Phase> Measure(const std::function<Status()>& fn) {
  VIGIL_RETURN_IF_ERROR(ResetPeakRss());
  VIGIL_ASSIGN_OR_RETURN(int64_t start_rss, StatusBytes("VmRSS"));
  const auto t0 = Clock::now();
  VIGIL_RETURN_IF_ERROR(fn());
  Phase p;
  p.seconds = Since(t0);
  VIGIL_ASSIGN_OR_RETURN(int64_t peak, StatusBytes("VmHWM"));
  p.rss_growth_bytes = std::max<int64_t>(0, peak - start_rss);
  return p;
}

// Writes the CSV: a header and rows "<id>,<note>" until `bytes` are written; returns the rows.
Result<int64_t> WriteCsv(const std::string& path, int64_t bytes, int note_bytes) {
  std::FILE* f = std::fopen(path.c_str(), "we");
  if (f == nullptr) return Status::IOError("cannot create " + path);
  std::string note(static_cast<size_t>(note_bytes), 'a');
  int64_t written = std::fprintf(f, "id,note\n"), rows = 0;
  while (written < bytes) {
    for (size_t i = 0; i < note.size(); ++i) note[i] = static_cast<char>('a' + (rows + i) % 26);
    written += std::fprintf(f, "%lld,%s\n", static_cast<long long>(rows), note.c_str());
    ++rows;
  }
  if (std::fclose(f) != 0) return Status::IOError("cannot write " + path);
  return rows;
}

Result<int64_t> CountRows(sql::Session& session, const std::string& table) {
  VIGIL_ASSIGN_OR_RETURN(sql::ResultSet r, session.Select("SELECT COUNT(*) FROM " + table, {}));
  if (r.rows.size() != 1) return Status::Internal("COUNT(*) of " + table + " returned no row");
  return std::get<int64_t>(r.rows[0][0]);
}

nlohmann::json PhaseJson(const Phase& p, int64_t bytes) {
  return {{"seconds", p.seconds},
          {"mib_per_second", p.seconds > 0 ? static_cast<double>(bytes) / kMiB / p.seconds : 0},
          {"rss_growth_mib", static_cast<double>(p.rss_growth_bytes) / kMiB},
          {"rss_growth_over_file_size", static_cast<double>(p.rss_growth_bytes) / static_cast<double>(bytes)}};
}

Result<nlohmann::json> Run(const BenchArgs& args) {
  const int64_t mb = args.Int("mb", 256);
  const int64_t note_bytes = args.Int("note_bytes", 200);
  if (mb < 1 || mb > 64 * 1024) return Status::InvalidArgument("mb must be in 1..65536");
  if (note_bytes < 1 || note_bytes > 65'536) return Status::InvalidArgument("note_bytes must be in 1..65536");
  const std::string root_dir = args.work_dir + "/upload_bench_root";
  const std::string csv = args.work_dir + "/upload_bench.csv";
  VIGIL_ASSIGN_OR_RETURN(Root root, Root::Init(root_dir));
  VIGIL_ASSIGN_OR_RETURN(auto principals, auth::OpenRootPrincipalStore(root));
  VIGIL_ASSIGN_OR_RETURN(auth::IssuedToken issued, principals->CreateUser("default", "bench", true));
  VIGIL_ASSIGN_OR_RETURN(auth::Authenticated who, principals->Authenticate(issued.token));
  sql::SessionOptions so;
  so.principal = who.principal;
  so.file_access = sql::FileAccess::kServer;
  VIGIL_ASSIGN_OR_RETURN(auto session, sql::Session::Open(root_dir, so));
  for (const char* statement : {"CREATE DATABASE db", "CREATE TABLE db.api (id BIGINT, note TEXT)",
                                "CREATE TABLE db.http (id BIGINT, note TEXT)"}) {
    VIGIL_RETURN_IF_ERROR(session->Execute(statement).status());
  }
  std::fprintf(stderr, "upload bench: writing a %lld MiB CSV...\n", static_cast<long long>(mb));
  VIGIL_ASSIGN_OR_RETURN(int64_t rows, WriteCsv(csv, mb * kMiB, static_cast<int>(note_bytes)));
  VIGIL_ASSIGN_OR_RETURN(uint64_t bytes, Env::Default()->fs()->FileSize(csv));

  server::ApiServerOptions api;
  api.root_dir = root_dir;
  api.http.host = "127.0.0.1";
  api.http.port = 0;
  api.http.max_body_bytes = bytes + kMiB;
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<server::ApiServer> srv, server::ApiServer::Start(api));
  const std::string url = "http://127.0.0.1:" + std::to_string(srv->port()) + "/v1/databases/db/tables/http/rows";

  std::fprintf(stderr, "upload bench: in process (Session::CopyUpload)...\n");
  VIGIL_ASSIGN_OR_RETURN(Phase in_process, Measure([&]() -> Status {
                           return session
                               ->CopyUpload(sql::TableRef{"", "db", "api"}, csv, sql::CopyFormat::kCsv,
                                            jobs::RequestClaim{"bench:upload/api"})
                               .status();
                         }));
  std::fprintf(stderr, "upload bench: over HTTP (curl --upload-file)...\n");
  std::string status;
  VIGIL_ASSIGN_OR_RETURN(Phase http, Measure([&]() -> Status {
                           const std::string cmd = "curl -sS -X POST -o /dev/null -w '%{http_code}' --upload-file " +
                                                   csv + " -H 'Authorization: Bearer " + issued.token +
                                                   "' -H 'Content-Type: text/csv' -H 'Idempotency-Key: upload-1' " +
                                                   url + " 2>&1";
                           std::FILE* p = ::popen(cmd.c_str(), "r");
                           if (p == nullptr) return Status::IOError("cannot run curl");
                           status = ReadToEnd(::dup(fileno(p)));
                           const int rc = ::pclose(p);
                           if (rc != 0 || status != "200") {
                             return Status::Internal("curl's upload answered " + status);
                           }
                           return Status::OK();
                         }));
  for (const char* table : {"db.api", "db.http"}) {
    VIGIL_ASSIGN_OR_RETURN(int64_t n, CountRows(*session, table));
    if (n != rows) {
      return Status::Internal(std::string(table) + " holds " + std::to_string(n) + " rows, not " +
                              std::to_string(rows));
    }
  }
  nlohmann::json out;
  out["config"] = {{"mb", mb}, {"note_bytes", note_bytes}, {"file_bytes", bytes}, {"rows", rows}};
  out["in_process"] = PhaseJson(in_process, static_cast<int64_t>(bytes));
  out["http"] = PhaseJson(http, static_cast<int64_t>(bytes));
  out["ratio_http_over_in_process_throughput"] = http.seconds > 0 ? in_process.seconds / http.seconds : 0;
  char line[512];
  std::snprintf(line, sizeof line,
                "upload: %lld MiB CSV (%lld rows): in process %.1f s, HTTP %.1f s (%.2fx); RSS growth in process "
                "%.1f MiB, HTTP %.1f MiB",
                static_cast<long long>(mb), static_cast<long long>(rows), in_process.seconds, http.seconds,
                out["ratio_http_over_in_process_throughput"].get<double>(),
                static_cast<double>(in_process.rss_growth_bytes) / kMiB,
                static_cast<double>(http.rss_growth_bytes) / kMiB);
  out["summary"] = line;
  std::fprintf(stderr, "%s\n", line);
  return out;
}

}  // namespace

VIGIL_REGISTER_BENCH({.name = "upload",
                      .description = "a large CSV upload over HTTP vs in process: throughput and the server's memory",
                      .fn = Run,
                      .int_options = {"mb", "note_bytes"},
                      .text_options = {}});

}  // namespace vigil::bench::upload_bench
