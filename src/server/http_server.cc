#include "vigil/server/http_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <deque>
#include <list>
#include <optional>
#include <thread>

#include "server/connection.h"
#include "vigil/common/env.h"
#include "vigil/common/failpoint.h"
#include "vigil/common/hex.h"
#include "vigil/common/logging.h"
#include "vigil/common/mutex.h"

namespace vigil::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {
// Connections past max_connections waiting for their 503; more are closed unanswered.
constexpr size_t kMaxPendingRejects = 64;
// A refused connection's TLS handshake and 503 must be done in this.
constexpr int64_t kRejectDeadlineMs = 2'000;
}  // namespace

Result<std::string> BodySource::ReadAll(size_t limit) {
  std::string out;
  char buf[64 * 1024];
  for (;;) {
    VIGIL_ASSIGN_OR_RETURN(size_t n, Read(buf, sizeof buf));
    if (n == 0) return out;
    if (out.size() + n > limit) {
      return Status::ResourceExhausted(std::string(kBodyTooLarge) + ": the request body is larger than " +
                                       std::to_string(limit) + " bytes");
    }
    out.append(buf, n);
  }
}

std::string_view HttpRequest::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return v;
  }
  return {};
}

std::optional<std::string> HttpRequest::Query(std::string_view name) const {
  for (const auto& [k, v] : query) {
    if (k == name) return v;
  }
  return std::nullopt;
}

Result<std::string> PercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '+' && plus_is_space) {
      out += ' ';
    } else if (c == '%') {
      if (i + 2 >= text.size()) {
        return Status::InvalidArgument("malformed percent escape in '" + std::string(text.substr(0, 200)) + "'");
      }
      const int hi = HexDigitValue(text[i + 1]), lo = HexDigitValue(text[i + 2]);
      if (hi < 0 || lo < 0) {
        return Status::InvalidArgument("malformed percent escape in '" + std::string(text.substr(0, 200)) + "'");
      }
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, HttpHandler handler)
      : options_(std::move(options)), handler_(std::move(handler)), acceptor_(ioc_) {}

  Status Start();
  uint16_t port() const { return port_; }
  HttpServerStats stats() const;
  void Shutdown(std::chrono::milliseconds grace);

 private:
  void AcceptLoop();
  void WatchdogLoop();
  // Answers connections past max_connections with 503 (after the TLS handshake when TLS is
  // on), one at a time, each within kRejectDeadlineMs, so the accept loop never waits on them.
  void RejectLoop();
  void RejectBusy(int fd, Connection& conn);
  // Marks `conn` closed under mu_, so the watchdog never shuts down its fd once it is closed
  // (and perhaps reused).
  void MarkClosing(Connection& conn);
  void Serve(int fd, std::string peer);

  const HttpServerOptions options_;
  const HttpHandler handler_;
  net::io_context ioc_;
  tcp::acceptor acceptor_;
  std::optional<net::ssl::context> tls_;
  uint16_t port_ = 0;
  std::thread accept_thread_;
  std::thread watchdog_thread_;
  std::thread reject_thread_;
  std::atomic<bool> stopping_{false};  // no new connections or requests
  std::atomic<bool> shut_down_{false};
  mutable Mutex mu_;
  std::condition_variable drained_;
  std::condition_variable watchdog_wake_;  // Shutdown: the watchdog's wait ends
  std::list<std::shared_ptr<Connection>> connections_ VIGIL_GUARDED_BY(mu_);
  std::condition_variable reject_ready_;
  std::deque<int> reject_queue_ VIGIL_GUARDED_BY(mu_);
  std::shared_ptr<Connection> rejecting_ VIGIL_GUARDED_BY(mu_);  // the one being answered
  ConnectionStats counters_;
};

Status HttpServer::Impl::Start() {
  boost::system::error_code ec;
  const net::ip::address address = net::ip::make_address(options_.host, ec);
  if (ec) return Status::InvalidArgument("listen address '" + options_.host + "': " + ec.message());
  if (!options_.tls_cert_file.empty() || !options_.tls_key_file.empty()) {
    if (options_.tls_cert_file.empty() || options_.tls_key_file.empty()) {
      return Status::InvalidArgument("TLS needs both a certificate file and a key file");
    }
    tls_.emplace(net::ssl::context::tls_server);
    tls_->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                      net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1);
    tls_->use_certificate_chain_file(options_.tls_cert_file, ec);
    if (ec) return Status::InvalidArgument("TLS certificate " + options_.tls_cert_file + ": " + ec.message());
    tls_->use_private_key_file(options_.tls_key_file, net::ssl::context::pem, ec);
    if (ec) return Status::InvalidArgument("TLS key " + options_.tls_key_file + ": " + ec.message());
  }
  const tcp::endpoint endpoint(address, options_.port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::IOError("cannot listen on " + options_.host + ":" + std::to_string(options_.port) + ": " +
                           ec.message());
  }
  port_ = acceptor_.local_endpoint().port();
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  watchdog_thread_ = std::thread([this] { WatchdogLoop(); });
  reject_thread_ = std::thread([this] { RejectLoop(); });
  return Status::OK();
}

HttpServerStats HttpServer::Impl::stats() const {
  HttpServerStats s;
  s.accepted = counters_.accepted.load();
  s.rejected_busy = counters_.rejected_busy.load();
  s.timed_out = counters_.timed_out.load();
  s.too_large = counters_.too_large.load();
  MutexLock lock(&mu_);
  s.open_connections = connections_.size();
  return s;
}

void HttpServer::Impl::AcceptLoop() {
  const int listen_fd = acceptor_.native_handle();
  while (!stopping_.load()) {
    pollfd p{listen_fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ++counters_.accepted;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    {
      MutexLock lock(&mu_);
      if (connections_.size() >= options_.max_connections) {
        ++counters_.rejected_busy;
        if (reject_queue_.size() < kMaxPendingRejects) {
          reject_queue_.push_back(fd);
          reject_ready_.notify_all();
        } else {
          ::close(fd);
        }
        continue;
      }
    }
    std::thread([this, fd, peer = PeerName(addr)] { Serve(fd, peer); }).detach();
  }
}

void HttpServer::Impl::RejectLoop() {
  for (;;) {
    int fd = -1;
    std::shared_ptr<Connection> conn;
    {
      MutexLock lock(&mu_);
      lock.Wait(reject_ready_, [this]() VIGIL_REQUIRES(mu_) { return !reject_queue_.empty() || stopping_.load(); });
      if (reject_queue_.empty()) return;
      fd = reject_queue_.front();
      reject_queue_.pop_front();
      if (stopping_.load()) {
        ::close(fd);
        continue;
      }
      rejecting_ = std::make_shared<Connection>(fd);
      rejecting_->SetDeadline(options_.env->MonotonicMs() + kRejectDeadlineMs);
      conn = rejecting_;
    }
    RejectBusy(fd, *conn);
    MutexLock lock(&mu_);
    rejecting_.reset();
  }
}

void HttpServer::Impl::RejectBusy(int fd, Connection& conn) {
  const std::string body = ProblemJson(
      503, "SERVICE_UNAVAILABLE",
      "the server is at its connection limit of " + std::to_string(options_.max_connections) + "; retry shortly");
  const std::string answer =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\n"
      "Retry-After: 1\r\nConnection: close\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
  tcp::socket socket(ioc_);
  boost::system::error_code ec;
  socket.assign(local.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd, ec);
  if (ec) {
    MarkClosing(conn);
    ::close(fd);
    return;
  }
  if (tls_) {
    net::ssl::stream<tcp::socket> stream(std::move(socket), *tls_);
    stream.handshake(net::ssl::stream_base::server, ec);
    if (!ec) net::write(stream, net::buffer(answer), ec);
    MarkClosing(conn);
    stream.lowest_layer().close(ec);
  } else {
    net::write(socket, net::buffer(answer), ec);
    socket.shutdown(tcp::socket::shutdown_send, ec);
    MarkClosing(conn);
    socket.close(ec);
  }
}

void HttpServer::Impl::MarkClosing(Connection& conn) {
  MutexLock lock(&mu_);
  conn.MarkClosed();
}

void HttpServer::Impl::WatchdogLoop() {
  for (;;) {
    MutexLock lock(&mu_);
    // A look every 50 ms of the server's clock; Shutdown ends the wait at once.
    if (options_.env->WaitForMs(lock, watchdog_wake_, 50, [this] { return shut_down_.load(); })) return;
    const int64_t now = options_.env->MonotonicMs();
    for (const auto& c : connections_) {
      if (c->Overdue(now)) {
        ++counters_.timed_out;
        c->Abort();
      }
      c->CancelIfPeerGone();
    }
    if (rejecting_ && rejecting_->Overdue(now)) rejecting_->Abort();
  }
}

void HttpServer::Impl::Serve(int fd, std::string peer) {
  auto conn = std::make_shared<Connection>(fd);
  {
    MutexLock lock(&mu_);
    connections_.push_back(conn);
  }
  ConnectionContext ctx{options_, handler_, stopping_, counters_, peer};
  try {
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
    tcp::socket socket(ioc_);
    socket.assign(local.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd);
    if (tls_) {
      net::ssl::stream<tcp::socket> stream(std::move(socket), *tls_);
      conn->SetDeadline(options_.env->MonotonicMs() + options_.header_timeout.count());
      boost::system::error_code ec;
      stream.handshake(net::ssl::stream_base::server, ec);
      if (!ec) ServeConnection(stream, *conn, ctx);
      MarkClosing(*conn);
      stream.lowest_layer().close(ec);
    } else {
      ServeConnection(socket, *conn, ctx);
      boost::system::error_code ec;
      socket.shutdown(tcp::socket::shutdown_send, ec);
      MarkClosing(*conn);
      socket.close(ec);
    }
  } catch (const std::exception& e) {
    VIGIL_LOG_WARN("http connection from {}: {}", peer, e.what());
  }
  conn->MarkClosed();
  MutexLock lock(&mu_);
  connections_.remove(conn);
  drained_.notify_all();
}

void HttpServer::Impl::Shutdown(std::chrono::milliseconds grace) {
  if (shut_down_.load()) return;
  stopping_.store(true);
  if (accept_thread_.joinable()) accept_thread_.join();
  {
    MutexLock lock(&mu_);
    reject_ready_.notify_all();
    if (rejecting_) rejecting_->Abort();
  }
  if (reject_thread_.joinable()) reject_thread_.join();
  boost::system::error_code ec;
  acceptor_.close(ec);
  (void)failpoint::Hit("http.draining");  // tests: the listener is closed, requests in flight are waited for
  {
    MutexLock lock(&mu_);
    for (const auto& c : connections_) {
      if (c->Idle()) c->Abort();  // waiting for a request: nothing is lost
    }
    options_.env->WaitForMs(lock, drained_, grace.count(),
                            [this]() VIGIL_REQUIRES(mu_) { return connections_.empty(); });
    for (const auto& c : connections_) c->Abort();
    lock.Wait(drained_, [this]() VIGIL_REQUIRES(mu_) { return connections_.empty(); });
  }
  {
    MutexLock lock(&mu_);
    shut_down_.store(true);
  }
  watchdog_wake_.notify_all();
  if (watchdog_thread_.joinable()) watchdog_thread_.join();
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { impl_->Shutdown(std::chrono::milliseconds(0)); }

Result<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options, HttpHandler handler) {
  auto impl = std::make_unique<Impl>(std::move(options), std::move(handler));
  VIGIL_RETURN_IF_ERROR(impl->Start());
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

uint16_t HttpServer::port() const { return impl_->port(); }
HttpServerStats HttpServer::stats() const { return impl_->stats(); }
void HttpServer::Shutdown(std::chrono::milliseconds grace) { impl_->Shutdown(grace); }

}  // namespace vigil::server
