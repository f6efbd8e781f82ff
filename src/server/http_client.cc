#include "vigil/server/http_client.h"
#include "vigil/common/ascii.h"

#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <optional>

namespace vigil::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

std::string ClientResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return v;
  }
  return "";
}

class HttpClient::Impl {
 public:
  Impl(std::string host, std::string port, bool tls, std::chrono::milliseconds timeout)
      : host_(std::move(host)), port_(std::move(port)), tls_(tls), timeout_(timeout), tcp_(ioc_) {}

  Status EnsureOpen() {
    if (tcp_.socket().is_open()) return Status::OK();
    beast::error_code ec;
    asio::ip::tcp::resolver resolver(ioc_);
    auto results = resolver.resolve(host_, port_, ec);
    if (ec) return Status::IOError("cannot resolve " + host_ + ": " + ec.message());
    tcp_.expires_after(timeout_);
    tcp_.connect(results, ec);
    if (ec) return Status::IOError("cannot connect to " + host_ + ":" + port_ + ": " + ec.message());
    tcp_.socket().set_option(asio::ip::tcp::no_delay(true), ec);
    return tls_ ? Handshake() : Status::OK();
  }

  template <typename OnBody>
  Result<ClientResponse> Send(std::string_view method, std::string_view target,
                              const std::vector<std::pair<std::string, std::string>>& headers, std::string_view body,
                              OnBody on_body, bool retry) {
    VIGIL_RETURN_IF_ERROR(EnsureOpen());
    http::request<http::string_body> req{http::string_to_verb(std::string(method)), std::string(target), 11};
    req.set(http::field::host, host_);
    req.set(http::field::user_agent, "vigil");
    for (const auto& [k, v] : headers) req.set(k, v);
    req.body() = std::string(body);
    req.prepare_payload();
    beast::error_code ec;
    tcp_.expires_after(timeout_);
    WithStream([&](auto& stream) { http::write(stream, req, ec); });
    ClientResponse out;
    if (!ec) ec = on_body(out);
    if (ec) {
      Close();
      // A kept-alive connection the server closed meanwhile: one fresh try.
      if (retry && (ec == http::error::end_of_stream || ec == asio::error::connection_reset ||
                    ec == asio::error::broken_pipe || ec == asio::ssl::error::stream_truncated)) {
        return Send(method, target, headers, body, on_body, false);
      }
      return Status::IOError("HTTP " + std::string(method) + " " + std::string(target) + ": " + ec.message());
    }
    return out;
  }

  Result<ClientResponse> Call(std::string_view method, std::string_view target,
                              const std::vector<std::pair<std::string, std::string>>& headers, std::string_view body) {
    return Send(
        method, target, headers, body,
        [this](ClientResponse& out) {
          http::response_parser<http::string_body> parser;
          parser.body_limit(uint64_t{1} << 32);
          beast::error_code ec;
          WithStream([&](auto& stream) { http::read(stream, buffer_, parser, ec); });
          if (ec) return ec;
          Fill(parser.get(), &out);
          out.body = std::move(parser.get().body());
          if (!parser.get().keep_alive()) Close();
          return ec;
        },
        true);
  }

  Result<ClientResponse> Stream(std::string_view target,
                                const std::vector<std::pair<std::string, std::string>>& headers,
                                const std::function<bool(std::string_view)>& on_data) {
    return Send(
        "GET", target, headers, {},
        [&](ClientResponse& out) {
          http::response_parser<http::buffer_body> parser;
          parser.body_limit(boost::none);
          beast::error_code ec;
          tcp_.expires_never();
          WithStream([&](auto& stream) { http::read_header(stream, buffer_, parser, ec); });
          if (ec) return ec;
          Fill(parser.get(), &out);
          char buf[8192];
          while (!parser.is_done()) {
            parser.get().body().data = buf;
            parser.get().body().size = sizeof(buf);
            // Returns as soon as some body arrived.
            WithStream([&](auto& stream) { http::read_some(stream, buffer_, parser, ec); });
            if (ec == http::error::need_buffer) ec = {};
            if (ec) return ec;
            if (!on_data(std::string_view(buf, sizeof(buf) - parser.get().body().size))) {
              Close();
              return beast::error_code{};
            }
          }
          return ec;
        },
        true);
  }

  void Close() {
    beast::error_code ec;
    tcp_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    tcp_.close();
    tls_stream_.reset();
    buffer_.clear();
  }

 private:
  // Calls fn with the TLS stream when the URL was https://, else with the TCP stream.
  template <typename Fn>
  void WithStream(Fn&& fn) {
    if (tls_stream_) {
      fn(*tls_stream_);
    } else {
      fn(tcp_);
    }
  }

  // TLS over the connected socket: the server's certificate must chain to a trusted CA (the
  // system's, or SSL_CERT_FILE / SSL_CERT_DIR) and name the URL's host.
  Status Handshake() {
    if (!tls_context_) {
      tls_context_.emplace(asio::ssl::context::tls_client);
      tls_context_->set_default_verify_paths();
      tls_context_->set_verify_mode(asio::ssl::verify_peer);
      tls_context_->set_verify_callback(asio::ssl::host_name_verification(host_));
    }
    tls_stream_.emplace(tcp_, *tls_context_);
    beast::error_code ec;
    asio::ip::make_address(host_, ec);
    if (ec) ::SSL_set_tlsext_host_name(tls_stream_->native_handle(), host_.c_str());  // SNI: names only
    ec = {};
    tls_stream_->handshake(asio::ssl::stream_base::client, ec);
    if (ec) {
      const std::string why = ec.message();
      Close();
      return Status::IOError("TLS with " + host_ + ":" + port_ + " failed: " + why +
                             " (the server's certificate must be trusted: the system's CAs, or SSL_CERT_FILE)");
    }
    return Status::OK();
  }

  template <typename Message>
  static void Fill(const Message& m, ClientResponse* out) {
    out->status = static_cast<int>(m.result_int());
    for (const auto& f : m) {
      out->headers.emplace_back(AsciiLowered(std::string_view(f.name_string().data(), f.name_string().size())),
                                std::string(f.value()));
    }
  }

  std::string host_;
  std::string port_;
  const bool tls_;
  std::chrono::milliseconds timeout_;
  asio::io_context ioc_;
  beast::tcp_stream tcp_;
  std::optional<asio::ssl::context> tls_context_;
  std::optional<asio::ssl::stream<beast::tcp_stream&>> tls_stream_;  // set while a TLS connection is open
  beast::flat_buffer buffer_;
};

HttpClient::HttpClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpClient::~HttpClient() = default;

Result<std::unique_ptr<HttpClient>> HttpClient::Connect(std::string_view url, std::chrono::milliseconds timeout) {
  const bool tls = url.substr(0, 8) == "https://";
  if (!tls && url.substr(0, 7) != "http://") {
    return Status::InvalidArgument("server URL must start with http:// or https:// (got \"" +
                                   std::string(url.substr(0, 64)) + "\")");
  }
  std::string_view rest = url.substr(tls ? 8 : 7);
  rest = rest.substr(0, rest.find('/'));
  const size_t bracket = rest.rfind(']');
  const size_t colon = rest.rfind(':');
  const bool has_port = colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket);
  std::string host = std::string(has_port ? rest.substr(0, colon) : rest);
  std::string port = has_port ? std::string(rest.substr(colon + 1)) : (tls ? "443" : "80");
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty() || port.empty()) return Status::InvalidArgument("server URL has no host");
  auto impl = std::make_unique<Impl>(std::move(host), std::move(port), tls, timeout);
  VIGIL_RETURN_IF_ERROR(impl->EnsureOpen());
  return std::unique_ptr<HttpClient>(new HttpClient(std::move(impl)));
}

Result<ClientResponse> HttpClient::Call(std::string_view method, std::string_view target,
                                        const std::vector<std::pair<std::string, std::string>>& headers,
                                        std::string_view body) {
  return impl_->Call(method, target, headers, body);
}

Result<ClientResponse> HttpClient::Stream(std::string_view target,
                                          const std::vector<std::pair<std::string, std::string>>& headers,
                                          const std::function<bool(std::string_view)>& on_data) {
  return impl_->Stream(target, headers, on_data);
}

}  // namespace vigil::server
