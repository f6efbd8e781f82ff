// The HTTP/1.1 server under `vigil serve` (DESIGN.md section 11; issue "a
// server that holds under abuse"): Boost.Beast on blocking sockets, one thread
// per connection up to a bound (past it a 503 is written and the connection
// closed), TCP_NODELAY, limits on header and body size that hold for chunked
// bodies too, and deadlines enforced by a watchdog that shuts a socket down
// when its phase overruns: the whole request header within header_timeout, the
// body at a minimum rate, each write within write_timeout. Handlers run on the
// connection's thread and read their body as a stream; a response is either a
// whole body or a stream of chunks (server-sent events, large results). TLS
// when a certificate and key are configured. Shutdown stops accepting, lets
// requests in flight finish within a grace period and closes the rest.
//
// Thread safety: HttpServer is thread-safe; a handler is called concurrently
// from many connection threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vigil/common/config.h"
#include "vigil/common/env.h"
#include "vigil/common/status.h"

namespace vigil::server {

// The typed sub-code leading the message of a body read past a limit ("BODY_TOO_LARGE: the
// request body is larger than ..."): ProblemResponse answers it 413, not 503.
inline constexpr std::string_view kBodyTooLarge = "BODY_TOO_LARGE";

// A request body, read as it arrives. Reading past `limit` bytes is ResourceExhausted.
class BodySource {
 public:
  virtual ~BodySource() = default;
  // Up to `max` bytes into `buf`; 0 at the end of the body.
  virtual Result<size_t> Read(char* buf, size_t max) = 0;
  // The whole body; ResourceExhausted with sub-code kBodyTooLarge (-> 413) when it is longer
  // than `limit`.
  Result<std::string> ReadAll(size_t limit);
};

struct HttpRequest {
  std::string method;                                        // "GET", "POST", ...
  std::string target;                                        // as sent: path and query
  std::string path;                                          // percent-decoded path without the query
  std::vector<std::pair<std::string, std::string>> query;    // decoded, in order
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-case, in order
  std::string peer;                                          // "address:port"
  BodySource* body = nullptr;                                // never null inside a handler
  // Set once the client closed the connection or the server stops past its grace: the
  // handler's long work ends (ScopedCancellation). Never null inside a handler.
  const std::atomic<bool>* cancelled = nullptr;

  // The first header `name` (lower-case), or "" when absent.
  std::string_view Header(std::string_view name) const;
  // The first query parameter `name`, or nullopt.
  std::optional<std::string> Query(std::string_view name) const;
};

// Where a streamed response writes its chunks.
class ChunkSink {
 public:
  virtual ~ChunkSink() = default;
  // Sends one chunk now; an error means the client is gone (stop producing).
  virtual Status Write(std::string_view data) = 0;
  // True once the server is shutting down: a long stream should end.
  virtual bool Stopping() const = 0;
};

struct HttpResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // When set, the body is produced by this call as chunks (Transfer-Encoding: chunked).
  std::function<Status(ChunkSink&)> stream;
  // The body holds a bearer token (sql::ResultSet::holds_secret): kept for a replay only sealed.
  bool holds_secret = false;
  // Part of the request was committed although the status reports a failure (a script whose
  // second statement failed): an Idempotency-Key keeps this answer for replay whatever its status.
  bool committed = false;
};

using HttpHandler = std::function<HttpResponse(HttpRequest&)>;

// The defaults of the limits and deadlines are those of [server] in vigil.toml (ServerConfig).
struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 7431;  // 0: any free port (see HttpServer::port)
  size_t max_connections = ServerConfig().max_connections;
  size_t max_header_bytes = 64 * 1024;
  uint64_t max_body_bytes = ServerConfig().max_body_bytes;
  // The whole request header (and, between requests, the wait for it) must arrive in this.
  std::chrono::milliseconds header_timeout = std::chrono::milliseconds(ServerConfig().header_timeout_ms);
  // A body may take body_grace plus one second per min_body_bytes_per_second received.
  std::chrono::milliseconds body_grace = std::chrono::milliseconds(ServerConfig().body_grace_ms);
  uint64_t min_body_bytes_per_second = ServerConfig().min_body_bytes_per_second;
  // Each write of the response (a whole body or one chunk) must complete in this.
  std::chrono::milliseconds write_timeout = std::chrono::milliseconds(ServerConfig().write_timeout_ms);
  std::string tls_cert_file;  // both set: HTTPS only
  std::string tls_key_file;
  // The clock of the deadlines above and of the watchdog that enforces them (ApiServer gives
  // its own). Must outlive the server.
  Env* env = Env::Default();
};

// Counters since the server started (for /metrics).
struct HttpServerStats {
  uint64_t accepted = 0;
  uint64_t rejected_busy = 0;  // 503 past max_connections
  uint64_t timed_out = 0;      // connections shut down by a deadline
  uint64_t too_large = 0;      // 413 / 431
  uint64_t open_connections = 0;
};

class HttpServer {
 public:
  // Binds, listens and starts accepting; InvalidArgument for a bad address or TLS files,
  // IOError when the port cannot be bound.
  static Result<std::unique_ptr<HttpServer>> Start(HttpServerOptions options, HttpHandler handler);
  ~HttpServer();  // Shutdown with no grace

  // The port listened on (the chosen one when options.port was 0).
  uint16_t port() const;
  HttpServerStats stats() const;
  // Stops accepting and closes idle connections, lets requests in flight finish for up to
  // `grace`, then closes every connection and joins its thread. Idempotent.
  void Shutdown(std::chrono::milliseconds grace);

  class Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// "a%20b" -> "a b"; InvalidArgument for a malformed escape.
Result<std::string> PercentDecode(std::string_view text, bool plus_is_space);

}  // namespace vigil::server
