#include "server/connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>

#include <algorithm>
#include <array>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <nlohmann/json.hpp>

#include "vigil/common/ascii.h"
#include "vigil/common/env.h"
#include "vigil/common/logging.h"

namespace vigil::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

std::string PeerName(const sockaddr_storage& addr) {
  char host[INET6_ADDRSTRLEN] = {0};
  uint16_t port = 0;
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

std::string ProblemJson(int status, std::string_view code, std::string_view detail) {
  nlohmann::json j = {{"type", "https://vigil.dev/problems/" + std::string(code)},
                      {"title", std::string(code)},
                      {"status", status},
                      {"code", std::string(code)},
                      {"detail", std::string(detail)}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool Connection::Overdue(int64_t now_ms) const {
  const int64_t deadline = deadline_ms_.load();
  return deadline != 0 && now_ms > deadline && !aborted_.load() && !closed_.load();
}

void Connection::Abort() {
  cancelled_.store(true);
  if (aborted_.exchange(true) || closed_.load()) return;
  ::shutdown(fd_, SHUT_RDWR);
}

void Connection::CancelIfPeerGone() {
  if (!handling_.load() || closed_.load() || cancelled_.load()) return;
  pollfd p{fd_, POLLRDHUP, 0};
  if (::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) cancelled_.store(true);
}

namespace {

constexpr size_t kReadBufferBytes = 16 * 1024;

// The body of the request being served, read through the parser as the handler asks.
template <typename Stream>
class ParserBody : public BodySource {
 public:
  ParserBody(Stream& stream, beast::flat_buffer& buffer, http::request_parser<http::buffer_body>& parser,
             Connection& conn, const ConnectionContext& ctx)
      : stream_(stream),
        buffer_(buffer),
        parser_(parser),
        conn_(conn),
        ctx_(ctx),
        started_ms_(ctx.options.env->MonotonicMs()) {}

  Result<size_t> Read(char* buf, size_t max) override {
    if (!parser_.is_done() && !continue_answered_) {
      continue_answered_ = true;
      VIGIL_RETURN_IF_ERROR(AnswerExpectContinue());
    }
    while (!parser_.is_done()) {
      parser_.get().body().data = buf;
      parser_.get().body().size = max;
      conn_.SetDeadline(BodyDeadline());
      beast::error_code ec;
      // read_some: each receive counts towards the deadline at once (a whole read would hold
      // its bytes until the handler's buffer filled, and cut off a steady slow sender).
      http::read_some(stream_, buffer_, parser_, ec);
      conn_.SetDeadline(0);
      if (ec == http::error::need_buffer) ec = {};
      if (ec == http::error::body_limit) {
        ++ctx_.stats.too_large;
        too_large_ = true;
        return Status::ResourceExhausted(std::string(kBodyTooLarge) +
                                         ": the request body is larger than the limit of " +
                                         std::to_string(ctx_.options.max_body_bytes) + " bytes");
      }
      // Broken framing (a bad chunk size, a truncated chunk) is the client's error; a socket's is I/O.
      if (ec && ec.category() == http::make_error_code(http::error::bad_chunk).category() &&
          ec != http::error::partial_message && ec != http::error::end_of_stream) {
        return Status::InvalidArgument("malformed request body: " + ec.message());
      }
      if (ec) return Status::IOError("reading the request body: " + ec.message());
      const size_t n = max - parser_.get().body().size;
      received_ += n;
      if (n > 0) return n;
    }
    return size_t{0};
  }

  bool done() const { return parser_.is_done(); }
  bool too_large() const { return too_large_; }

 private:
  // A client that sent "Expect: 100-continue" waits for this before it sends the body (curl
  // waits a second for bodies past 1 MiB): it is sent once the handler asks for the body, so a
  // request refused before that never has its body sent.
  Status AnswerExpectContinue() {
    const auto& msg = parser_.get();
    const beast::string_view expect = msg[http::field::expect];
    if (msg.version() < 11 || !AsciiEqualsIgnoreCase(std::string_view(expect.data(), expect.size()), "100-continue")) {
      return Status::OK();
    }
    conn_.SetDeadline(ctx_.options.env->MonotonicMs() + ctx_.options.write_timeout.count());
    beast::error_code ec;
    net::write(stream_, net::buffer(std::string_view("HTTP/1.1 100 Continue\r\n\r\n")), ec);
    conn_.SetDeadline(0);
    if (ec) return Status::IOError("the client is gone: " + ec.message());
    started_ms_ = ctx_.options.env->MonotonicMs();  // the body's time starts now
    return Status::OK();
  }

  // The body's deadline grows with what arrived: a slow sender is cut off, a steady one is not.
  int64_t BodyDeadline() const {
    const uint64_t rate = std::max<uint64_t>(ctx_.options.min_body_bytes_per_second, 1);
    return started_ms_ + ctx_.options.body_grace.count() + static_cast<int64_t>(received_ * 1000 / rate);
  }

  Stream& stream_;
  beast::flat_buffer& buffer_;
  http::request_parser<http::buffer_body>& parser_;
  Connection& conn_;
  const ConnectionContext& ctx_;
  int64_t started_ms_;
  uint64_t received_ = 0;
  bool continue_answered_ = false;
  bool too_large_ = false;
};

// Writes chunks of a streamed response, each within the write deadline.
template <typename Stream>
class StreamSink : public ChunkSink {
 public:
  StreamSink(Stream& stream, Connection& conn, const ConnectionContext& ctx)
      : stream_(stream), conn_(conn), ctx_(ctx) {}
  Status Write(std::string_view data) override {
    if (data.empty()) return Status::OK();
    conn_.SetDeadline(ctx_.options.env->MonotonicMs() + ctx_.options.write_timeout.count());
    beast::error_code ec;
    net::write(stream_, http::make_chunk(net::buffer(data.data(), data.size())), ec);
    conn_.SetDeadline(0);
    if (ec) return Status::IOError("the client is gone: " + ec.message());
    return Status::OK();
  }
  bool Stopping() const override { return ctx_.stopping.load(); }

 private:
  Stream& stream_;
  Connection& conn_;
  const ConnectionContext& ctx_;
};

HttpResponse Problem(int status, std::string_view code, std::string_view detail) {
  HttpResponse r;
  r.status = status;
  r.headers.emplace_back("Content-Type", "application/problem+json");
  r.body = ProblemJson(status, code, detail);
  return r;
}

// The request's parts the handler sees; InvalidArgument for an undecodable target.
Result<HttpRequest> ToRequest(const http::request_parser<http::buffer_body>& parser, const std::string& peer) {
  const auto& msg = parser.get();
  HttpRequest req;
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  req.peer = peer;
  const size_t q = req.target.find('?');
  VIGIL_ASSIGN_OR_RETURN(req.path, PercentDecode(std::string_view(req.target).substr(0, q), false));
  if (q != std::string::npos) {
    std::string_view rest = std::string_view(req.target).substr(q + 1);
    while (!rest.empty()) {
      const size_t amp = rest.find('&');
      std::string_view pair = rest.substr(0, amp);
      const size_t eq = pair.find('=');
      VIGIL_ASSIGN_OR_RETURN(std::string key, PercentDecode(pair.substr(0, eq), true));
      std::string value;
      if (eq != std::string_view::npos) {
        VIGIL_ASSIGN_OR_RETURN(value, PercentDecode(pair.substr(eq + 1), true));
      }
      if (!key.empty()) req.query.emplace_back(std::move(key), std::move(value));
      rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    }
  }
  for (const auto& field : msg) {
    std::string name(field.name_string());
    for (char& c : name) c = AsciiLower(c);
    req.headers.emplace_back(std::move(name), std::string(field.value()));
  }
  return req;
}

// `text` with CR and LF as spaces: a header line cannot be split into two.
void AppendHeaderText(std::string& out, std::string_view text) {
  const size_t from = out.size();
  out += text;
  for (size_t i = from; i < out.size(); ++i) {
    if (out[i] == '\r' || out[i] == '\n') out[i] = ' ';
  }
}

// The status line and header block of a whole response, as one text: the handler's headers
// (of a repeated name, the last), then the framing, which is the server's alone.
std::string ResponseHead(const HttpResponse& resp, bool keep_alive) {
  std::string head = "HTTP/1.1 ";
  head += std::to_string(resp.status);
  head += ' ';
  const beast::string_view reason = http::obsolete_reason(static_cast<http::status>(resp.status));
  head.append(reason.data(), reason.size());
  head += "\r\n";
  for (size_t i = 0; i < resp.headers.size(); ++i) {
    const std::string& name = resp.headers[i].first;
    const std::string& value = resp.headers[i].second;
    if (AsciiEqualsIgnoreCase(name, "Content-Length") || AsciiEqualsIgnoreCase(name, "Connection") ||
        AsciiEqualsIgnoreCase(name, "Transfer-Encoding")) {
      continue;
    }
    const bool repeated = std::any_of(resp.headers.begin() + static_cast<std::ptrdiff_t>(i) + 1, resp.headers.end(),
                                      [&](const auto& later) { return AsciiEqualsIgnoreCase(later.first, name); });
    if (repeated) continue;
    AppendHeaderText(head, name);
    head += ": ";
    AppendHeaderText(head, value);
    head += "\r\n";
  }
  if (!keep_alive) head += "Connection: close\r\n";
  head += "Content-Length: ";
  head += std::to_string(resp.body.size());
  head += "\r\n\r\n";
  return head;
}

template <typename Stream>
bool WriteResponse(Stream& stream, Connection& conn, const ConnectionContext& ctx, HttpResponse& resp,
                   bool keep_alive) {
  beast::error_code ec;
  conn.SetDeadline(ctx.options.env->MonotonicMs() + ctx.options.write_timeout.count());
  if (!resp.stream) {
    const std::string head = ResponseHead(resp, keep_alive);
    const std::array<net::const_buffer, 2> parts = {net::buffer(head), net::buffer(resp.body)};
    net::write(stream, parts, ec);
    conn.SetDeadline(0);
    return !ec;
  }
  http::response<http::empty_body> res;
  res.result(static_cast<unsigned>(resp.status));
  res.version(11);
  for (const auto& [k, v] : resp.headers) res.set(k, v);
  res.keep_alive(false);  // a stream ends the connection
  res.chunked(true);
  http::response_serializer<http::empty_body> sr{res};
  http::write_header(stream, sr, ec);
  conn.SetDeadline(0);
  if (ec) return false;
  StreamSink<Stream> sink(stream, conn, ctx);
  Status st = resp.stream(sink);
  if (!st.ok()) VIGIL_LOG_INFO("stream to {} ended: {}", ctx.peer, st.ToString());
  conn.SetDeadline(ctx.options.env->MonotonicMs() + ctx.options.write_timeout.count());
  net::write(stream, http::make_chunk_last(), ec);
  conn.SetDeadline(0);
  return false;
}

HttpResponse CallHandler(const ConnectionContext& ctx, HttpRequest& req) {
  try {
    return ctx.handler(req);
  } catch (const std::exception& e) {
    VIGIL_LOG_WARN("handler for {} {} threw: {}", req.method, req.path, e.what());
    return Problem(500, "INTERNAL", "the request failed inside the server");
  }
}

}  // namespace

template <typename Stream>
void ServeConnection(Stream& stream, Connection& conn, const ConnectionContext& ctx) {
  beast::flat_buffer buffer;
  // Each read asks for what the buffer can hold (at least 512 bytes): with room for a
  // whole typical request, its header and body arrive in one receive instead of one per 512 bytes.
  buffer.reserve(kReadBufferBytes);
  for (;;) {
    if (ctx.stopping.load()) return;
    conn.SetIdle(true);
    conn.SetDeadline(ctx.options.env->MonotonicMs() + ctx.options.header_timeout.count());
    http::request_parser<http::buffer_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(ctx.options.max_header_bytes));
    parser.body_limit(ctx.options.max_body_bytes);
    beast::error_code ec;
    http::read_header(stream, buffer, parser, ec);
    conn.SetIdle(false);
    conn.SetDeadline(0);
    if (ec == http::error::header_limit || ec == http::error::body_limit) {
      ++ctx.stats.too_large;
      const bool header = ec == http::error::header_limit;
      HttpResponse r =
          header
              ? Problem(431, "RESOURCE_EXHAUSTED",
                        "the request header is larger than " + std::to_string(ctx.options.max_header_bytes) + " bytes")
              : Problem(413, "RESOURCE_EXHAUSTED",
                        "the request body is larger than the limit of " + std::to_string(ctx.options.max_body_bytes) +
                            " bytes");
      WriteResponse(stream, conn, ctx, r, false);
      return;
    }
    if (ec) {
      if (ec != http::error::end_of_stream && ec != net::error::eof && ec != net::error::connection_reset) {
        HttpResponse r = Problem(400, "INVALID_ARGUMENT", "malformed HTTP request: " + ec.message());
        WriteResponse(stream, conn, ctx, r, false);
      }
      return;
    }
    Result<HttpRequest> req = ToRequest(parser, ctx.peer);
    if (!req.ok()) {
      HttpResponse r = Problem(400, "INVALID_ARGUMENT", req.status().message());
      WriteResponse(stream, conn, ctx, r, false);
      return;
    }
    ParserBody<Stream> body(stream, buffer, parser, conn, ctx);
    req->body = &body;
    req->cancelled = conn.cancelled();
    conn.SetHandling(true);
    HttpResponse resp = CallHandler(ctx, *req);
    if (body.too_large() && resp.status < 400) {
      resp = Problem(413, "RESOURCE_EXHAUSTED", "the request body is larger than the limit");
    }
    // A body the handler did not read to its end leaves the stream mid-request: close after.
    const bool keep_alive = parser.get().keep_alive() && body.done() && !ctx.stopping.load();
    const bool written = WriteResponse(stream, conn, ctx, resp, keep_alive);
    conn.SetHandling(false);
    if (!written || !keep_alive) return;
  }
}

template void ServeConnection<tcp::socket>(tcp::socket&, Connection&, const ConnectionContext&);
template void ServeConnection<net::ssl::stream<tcp::socket>>(net::ssl::stream<tcp::socket>&, Connection&,
                                                             const ConnectionContext&);

}  // namespace vigil::server
