// HttpServer against real clients on loopback: keep-alive requests, streamed
// bodies and responses, size limits that hold for chunked bodies, deadlines
// that cut off slow clients without stalling others, the connection bound,
// graceful shutdown and TLS.
#include "vigil/server/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include "testutil/tcp_client.h"
#include "testutil/temp_dir.h"

namespace vigil::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

using Client = vigil::testing::TcpClient;

HttpResponse Text(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.headers.emplace_back("Content-Type", "text/plain");
  r.body = std::move(body);
  return r;
}

// Echo: "<method> <path> q=<q> x=<x-test header> len=<body length>".
HttpResponse Echo(HttpRequest& req) {
  auto body = req.body->ReadAll(64 << 20);
  if (!body.ok()) return Text(body.status().Is(StatusCode::kResourceExhausted) ? 413 : 400, body.status().message());
  return Text(200, req.method + " " + req.path + " q=" + req.Query("q").value_or("") +
                       " x=" + std::string(req.Header("x-test")) + " len=" + std::to_string(body->size()));
}

std::unique_ptr<HttpServer> StartServer(HttpServerOptions o, HttpHandler h = Echo) {
  o.port = 0;
  auto s = HttpServer::Start(std::move(o), std::move(h));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

TEST(HttpServerTest, TheResponseHeadIsTheHandlersHeadersAndTheServersFraming) {
  auto server = StartServer({}, [](HttpRequest&) {
    HttpResponse r = Text(201, "made");
    r.headers.emplace_back("X-Twice", "first");
    r.headers.emplace_back("x-twice", "second");
    r.headers.emplace_back("Content-Length", "999");
    r.headers.emplace_back("Connection", "close");
    r.headers.emplace_back("X-Split", "a\r\nSet-Cookie: b=c\nd");
    return r;
  });
  Client c(server->port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send("GET /h HTTP/1.1\r\nHost: t\r\n\r\n"));
  const std::string first = c.ReadResponse();
  EXPECT_THAT(first, StartsWith("HTTP/1.1 201 Created\r\n"));
  EXPECT_THAT(first, HasSubstr("\r\nx-twice: second\r\n"));
  EXPECT_THAT(first, Not(HasSubstr("first")));
  EXPECT_THAT(first, HasSubstr("\r\nContent-Length: 4\r\n\r\nmade"));
  EXPECT_THAT(first, Not(HasSubstr("999")));
  EXPECT_THAT(first, HasSubstr("\r\nX-Split: a  Set-Cookie: b=c d\r\n"));
  EXPECT_THAT(first, Not(HasSubstr("Connection: close")));  // keep-alive is the server's to decide
  ASSERT_TRUE(c.Send("GET /h HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
  const std::string last = c.ReadUntilClosed();
  EXPECT_THAT(last, StartsWith("HTTP/1.1 201 Created\r\n"));
  EXPECT_THAT(last, HasSubstr("\r\nConnection: close\r\n"));
  EXPECT_EQ(server->stats().accepted, 1u);
}

TEST(HttpServerTest, KeepAliveRequestsDecodedPathsQueriesAndHeaders) {
  auto server = StartServer({});
  Client c(server->port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send("GET /v1/a%20b?q=x+y%26z HTTP/1.1\r\nHost: t\r\nX-Test: hi\r\n\r\n"));
  std::string first = c.ReadResponse();
  EXPECT_THAT(first, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(first, HasSubstr("GET /v1/a b q=x y&z x=hi len=0"));
  ASSERT_TRUE(c.Send("POST /p HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello"));
  EXPECT_THAT(c.ReadResponse(), HasSubstr("POST /p q= x= len=5"));  // the same connection
  EXPECT_EQ(server->stats().accepted, 1u);
}

TEST(HttpServerTest, ChunkedBodiesAreStreamedAndBoundedLikeOthers) {
  HttpServerOptions o;
  o.max_body_bytes = 1 << 20;
  auto server = StartServer(o);
  auto chunked = [](size_t total) {
    std::string s = "POST /u HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    const std::string piece(4096, 'a');
    for (size_t sent = 0; sent < total; sent += piece.size()) {
      char size[16];
      std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
      s += size + piece + "\r\n";
    }
    return s + "0\r\n\r\n";
  };
  {
    Client c(server->port());
    ASSERT_TRUE(c.Send(chunked(512 * 1024)));
    EXPECT_THAT(c.ReadUntilClosed(), HasSubstr("len=524288"));
  }
  {
    Client c(server->port());
    c.Send(chunked(2 << 20));  // twice the limit, without a Content-Length to check up front
    std::string r = c.ReadUntilClosed();
    EXPECT_THAT(r, StartsWith("HTTP/1.1 413"));
  }
  {
    Client c(server->port());
    ASSERT_TRUE(c.Send("POST /u HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999\r\n\r\n"));
    std::string r = c.ReadUntilClosed();
    EXPECT_THAT(r, StartsWith("HTTP/1.1 413"));  // refused from the header, before any body byte
    EXPECT_THAT(r, HasSubstr("application/problem+json"));
  }
  EXPECT_GE(server->stats().too_large, 2u);
}

// The TCP port of `fd`'s local end (`peer`: its remote end); 0 when it is not an IPv4 socket.
uint16_t PortOf(int fd, bool peer) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  const int rc = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)
                      : ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return rc == 0 && a.sin_family == AF_INET ? ntohs(a.sin_port) : 0;
}

// Small responses go out at once: the server sets TCP_NODELAY on each connection it accepts
// (read here from the server's own descriptor, found in this process by its two ports).
TEST(HttpServerTest, AcceptedConnectionsSendWithoutDelay) {
  auto server = StartServer({});
  Client c(server->port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send("GET /a HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_THAT(c.ReadResponse(), StartsWith("HTTP/1.1 200 OK\r\n"));
  int found = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::atoi(entry.path().filename().c_str());
    if (PortOf(fd, false) != server->port() || PortOf(fd, true) != c.local_port()) continue;
    int nodelay = 0;
    socklen_t len = sizeof nodelay;
    ASSERT_EQ(::getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len), 0);
    EXPECT_NE(nodelay, 0) << "the accepted connection waits to coalesce small writes";
    ++found;
  }
  EXPECT_EQ(found, 1);
}

TEST(HttpServerTest, OversizedHeaderIs431) {
  HttpServerOptions o;
  o.max_header_bytes = 1024;
  auto server = StartServer(o);
  Client c(server->port());
  c.Send("GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(4096, 'x') + "\r\n\r\n");
  EXPECT_THAT(c.ReadUntilClosed(), StartsWith("HTTP/1.1 431"));
}

// Four clients that send one header line per second never complete a header: each is cut off
// at the header deadline, and meanwhile other clients are served.
TEST(HttpServerTest, SlowHeaderClientsAreCutOffAndDoNotStallOthers) {
  HttpServerOptions o;
  o.header_timeout = std::chrono::milliseconds(1500);
  auto server = StartServer(o);
  std::vector<std::unique_ptr<Client>> slow;
  std::atomic<bool> stop{false};
  for (int i = 0; i < 4; ++i) {
    slow.push_back(std::make_unique<Client>(server->port()));
    slow.back()->Send("GET / HTTP/1.1\r\n");
  }
  std::thread drip([&] {
    for (int s = 0; s < 10 && !stop; ++s) {
      for (auto& c : slow) c->Send("X-Drip: " + std::to_string(s) + "\r\n");
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  });
  for (int i = 0; i < 5; ++i) {
    Client normal(server->port());
    ASSERT_TRUE(normal.Send("GET /fast HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
    EXPECT_THAT(normal.ReadUntilClosed(), HasSubstr("GET /fast"));
  }
  for (auto& c : slow) EXPECT_TRUE(c->ClosedByServer(20'000));
  stop = true;
  drip.join();
  EXPECT_GE(server->stats().timed_out, 4u);
}

// "Expect: 100-continue" is answered once the handler reads the body (clients such as curl wait
// for it before sending a large body); a request refused without reading its body gets its
// answer and no 100, and the connection closes, since the body was never read.
TEST(HttpServerTest, ExpectContinueIsAnsweredWhenTheHandlerReadsTheBody) {
  auto server = StartServer({}, [](HttpRequest& req) {
    if (req.path == "/refuse") return Text(403, "no");
    return Echo(req);
  });
  Client c(server->port());
  ASSERT_TRUE(c.Send("POST /up HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"));
  EXPECT_EQ(c.ReadUntil("\r\n\r\n", 5'000), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(c.Send("hello"));
  const std::string answer = c.ReadResponse();
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(answer, HasSubstr("POST /up q= x= len=5"));
  // Kept alive: the next request on the connection, without Expect, gets no 100.
  ASSERT_TRUE(c.Send("POST /up HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi"));
  EXPECT_THAT(c.ReadResponse(), AllOf(StartsWith("HTTP/1.1 200"), HasSubstr("len=2")));

  Client refused(server->port());
  ASSERT_TRUE(
      refused.Send("POST /refuse HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 100000\r\n\r\n"));
  const std::string all = refused.ReadUntilClosed(5'000);
  EXPECT_THAT(all, StartsWith("HTTP/1.1 403"));
  EXPECT_THAT(all, Not(HasSubstr("100 Continue")));
}

TEST(HttpServerTest, SlowBodyIsCutOffBelowTheMinimumRate) {
  HttpServerOptions o;
  o.body_grace = std::chrono::milliseconds(500);
  o.min_body_bytes_per_second = 1000;
  auto server = StartServer(o);
  Client c(server->port());
  ASSERT_TRUE(c.Send("POST /u HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n"));
  for (int i = 0; i < 5; ++i) {  // 10 bytes a second: far below the rate
    if (!c.Send("0123456789")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  }
  EXPECT_TRUE(c.ClosedByServer(20'000));
  EXPECT_GE(server->stats().timed_out, 1u);
}

TEST(HttpServerTest, ConnectionsPastTheBoundGet503) {
  HttpServerOptions o;
  o.max_connections = 2;
  auto server = StartServer(o);
  Client a(server->port()), b(server->port());
  ASSERT_TRUE(a.Send("GET /a HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(b.Send("GET /b HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_THAT(a.ReadResponse(), HasSubstr("GET /a"));  // both are being served (kept alive)
  EXPECT_THAT(b.ReadResponse(), HasSubstr("GET /b"));
  Client c(server->port());
  std::string r = c.ReadUntilClosed();
  EXPECT_THAT(r, StartsWith("HTTP/1.1 503"));
  EXPECT_THAT(r, HasSubstr("connection limit of 2"));
  EXPECT_EQ(server->stats().rejected_busy, 1u);
}

TEST(HttpServerTest, StreamedResponsesArriveAsChunks) {
  auto server = StartServer({}, [](HttpRequest&) {
    HttpResponse r;
    r.headers.emplace_back("Content-Type", "text/event-stream");
    r.stream = [](ChunkSink& sink) -> Status {
      for (int i = 0; i < 3; ++i) VIGIL_RETURN_IF_ERROR(sink.Write("data: " + std::to_string(i) + "\n\n"));
      return Status::OK();
    };
    return r;
  });
  Client c(server->port());
  ASSERT_TRUE(c.Send("GET /events HTTP/1.1\r\nHost: t\r\n\r\n"));
  std::string r = c.ReadUntilClosed();
  EXPECT_THAT(r, HasSubstr("Transfer-Encoding: chunked"));
  EXPECT_THAT(r, HasSubstr("data: 0\n\n"));
  EXPECT_THAT(r, HasSubstr("data: 2\n\n"));
}

TEST(HttpServerTest, ShutdownFinishesRequestsInFlightAndClosesIdleOnes) {
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto server = StartServer({}, [&](HttpRequest& req) {
    if (req.path == "/slow") {
      entered.set_value();
      released.wait();
    }
    return Text(200, "done " + req.path);
  });
  Client idle(server->port());
  ASSERT_TRUE(idle.Send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_THAT(idle.ReadResponse(), HasSubstr("done /x"));  // now waiting for its next request
  Client busy(server->port());
  ASSERT_TRUE(busy.Send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n"));
  entered.get_future().wait();
  std::thread stopper([&] { server->Shutdown(std::chrono::seconds(30)); });
  EXPECT_TRUE(idle.ClosedByServer(20'000));
  release.set_value();
  EXPECT_THAT(busy.ReadUntilClosed(), HasSubstr("done /slow"));  // finished, then closed
  stopper.join();
  Client late(server->port());
  EXPECT_FALSE(late.connected() && late.Send("GET / HTTP/1.1\r\n\r\n") && !late.ReadUntilClosed(2000).empty());
}

TEST(HttpServerTest, HandlerExceptionsAre500Problems) {
  auto server = StartServer({}, [](HttpRequest&) -> HttpResponse { throw std::runtime_error("boom"); });
  Client c(server->port());
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
  std::string r = c.ReadUntilClosed();
  EXPECT_THAT(r, StartsWith("HTTP/1.1 500"));
  EXPECT_THAT(r, ::testing::Not(HasSubstr("boom")));  // internals never reach the client
}

TEST(HttpServerTest, TlsWhenACertificateIsConfigured) {
  testing::TempDir dir;
  const std::string cert = dir.Join("cert.pem"), key = dir.Join("key.pem");
  const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -keyout " + key +
                          " -out " + cert + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "the openssl command is not available";
  HttpServerOptions o;
  o.tls_cert_file = cert;
  o.tls_key_file = key;
  auto server = StartServer(o);
  namespace net = boost::asio;
  net::io_context ioc;
  net::ssl::context ctx(net::ssl::context::tls_client);
  ctx.set_verify_mode(net::ssl::verify_none);
  net::ssl::stream<net::ip::tcp::socket> s(ioc, ctx);
  s.lowest_layer().connect({net::ip::make_address("127.0.0.1"), server->port()});
  s.handshake(net::ssl::stream_base::client);
  const std::string req = "GET /secure HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
  net::write(s, net::buffer(req));
  std::string out;
  boost::system::error_code ec;
  char buf[4096];
  for (;;) {
    size_t n = s.read_some(net::buffer(buf), ec);
    out.append(buf, n);
    if (ec) break;
  }
  EXPECT_THAT(out, HasSubstr("GET /secure"));
  HttpServerOptions bad = o;
  bad.tls_key_file = dir.Join("missing.pem");
  EXPECT_EQ(HttpServer::Start(bad, Echo).status().code(), StatusCode::kInvalidArgument);
}

// Past max_connections a TLS client gets its 503 too (after the handshake, off the accept
// thread), and a client that never starts its handshake is dropped at the deadline without
// holding up the next refusal for long.
TEST(HttpServerTest, TlsConnectionsPastTheBoundGet503) {
  testing::TempDir dir;
  const std::string cert = dir.Join("cert.pem"), key = dir.Join("key.pem");
  const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -keyout " + key +
                          " -out " + cert + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "the openssl command (package openssl) is missing";
  HttpServerOptions o;
  o.tls_cert_file = cert;
  o.tls_key_file = key;
  o.max_connections = 1;
  auto server = StartServer(o);
  namespace net = boost::asio;
  net::io_context ioc;
  net::ssl::context ctx(net::ssl::context::tls_client);
  ctx.set_verify_mode(net::ssl::verify_none);
  const auto connect = [&](net::ssl::stream<net::ip::tcp::socket>& s) {
    s.lowest_layer().connect({net::ip::make_address("127.0.0.1"), server->port()});
    s.handshake(net::ssl::stream_base::client);
  };
  const auto read_all = [](net::ssl::stream<net::ip::tcp::socket>& s) {
    std::string out;
    boost::system::error_code ec;
    char buf[4096];
    while (!ec) out.append(buf, s.read_some(net::buffer(buf), ec));
    return out;
  };
  net::ssl::stream<net::ip::tcp::socket> held(ioc, ctx);  // the one connection served
  connect(held);
  const std::string req = "GET /held HTTP/1.1\r\nHost: t\r\n\r\n";
  net::write(held, net::buffer(req));
  Client silent(server->port());  // past the bound, never says a word
  // The silent client is accepted (and queued for its refusal) before the next connects.
  for (int i = 0; i < 2000 && server->stats().accepted < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(server->stats().accepted, 2u);
  net::ssl::stream<net::ip::tcp::socket> refused(ioc, ctx);
  connect(refused);
  const std::string answer = read_all(refused);
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 503"));
  EXPECT_THAT(answer, HasSubstr("connection limit of 1"));
  EXPECT_THAT(answer, HasSubstr("Retry-After: 1"));
  EXPECT_TRUE(silent.ClosedByServer(10'000));
  EXPECT_EQ(server->stats().rejected_busy, 2u);
}

TEST(PercentDecodeTest, DecodesAndRejectsMalformedEscapes) {
  EXPECT_EQ(*PercentDecode("a%2Fb+c", true), "a/b c");
  EXPECT_EQ(*PercentDecode("a+b", false), "a+b");
  EXPECT_FALSE(PercentDecode("a%2", false).ok());
  EXPECT_FALSE(PercentDecode("a%zz", false).ok());
}

}  // namespace
}  // namespace vigil::server
