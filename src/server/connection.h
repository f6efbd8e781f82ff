// One HTTP connection of HttpServer: its deadline (read by the watchdog), the
// loop that reads requests with Beast's parser, runs the handler and writes
// responses, and small helpers shared with the accept loop.
// Thread safety: a Connection's deadline and state are atomics, read by the
// watchdog while the connection's own thread serves it.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "vigil/server/http_server.h"

namespace vigil::server {

// "address:port" of a socket address.
std::string PeerName(const sockaddr_storage& addr);
// An RFC 9457 problem document with Vigil's typed code.
std::string ProblemJson(int status, std::string_view code, std::string_view detail);

struct ConnectionStats {
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> rejected_busy{0};
  std::atomic<uint64_t> timed_out{0};
  std::atomic<uint64_t> too_large{0};
};

class Connection {
 public:
  explicit Connection(int fd) : fd_(fd) {}

  // The current phase must end by `deadline_ms` (the server Env's MonotonicMs); 0: no deadline (a handler runs).
  void SetDeadline(int64_t deadline_ms) { deadline_ms_.store(deadline_ms); }
  // Waiting for the next request (closed at once by a shutdown).
  void SetIdle(bool idle) { idle_.store(idle); }
  bool Idle() const { return idle_.load(); }
  bool Overdue(int64_t now_ms) const;
  // Shuts the socket down: the connection's blocking read or write fails at once.
  void Abort();
  void MarkClosed() { closed_.store(true); }
  // The handler runs: the watchdog then watches for the client going away.
  void SetHandling(bool on) { handling_.store(on); }
  // Cancels the request being handled when its client closed the connection (the watchdog's
  // check; only while the connection is not closed, so its descriptor is its own).
  void CancelIfPeerGone();
  // Cancels the request being handled (the server stops past its grace).
  void Cancel() { cancelled_.store(true); }
  // What the handler's long loops watch (HttpRequest::cancelled).
  const std::atomic<bool>* cancelled() const { return &cancelled_; }

 private:
  const int fd_;
  std::atomic<bool> handling_{false};
  std::atomic<bool> cancelled_{false};
  std::atomic<int64_t> deadline_ms_{0};
  std::atomic<bool> idle_{true};
  std::atomic<bool> aborted_{false};
  std::atomic<bool> closed_{false};
};

struct ConnectionContext {
  const HttpServerOptions& options;
  const HttpHandler& handler;
  const std::atomic<bool>& stopping;
  ConnectionStats& stats;
  const std::string& peer;
};

// Serves requests on `stream` (a TCP socket or a TLS stream over one) until the client
// closes, a deadline or limit ends the connection, or the server stops.
template <typename Stream>
void ServeConnection(Stream& stream, Connection& conn, const ConnectionContext& ctx);

}  // namespace vigil::server
