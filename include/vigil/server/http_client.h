// A small blocking HTTP/1.1 client for Vigil's own API (Boost.Beast): what
// `vigil sql --url` and the server's tests use. One connection per client,
// kept alive between calls and reopened when the server closed it; HTTPS for an
// https:// URL (the certificate verified against the system's CAs, or
// SSL_CERT_FILE, and the URL's host). Streams are read whole, except through
// Stream, which hands each body piece to a callback.
// Thread safety: one thread at a time per client.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vigil/common/status.h"

namespace vigil::server {

struct ClientResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-case
  std::string body;

  // The first header `name` (lower-case), or "".
  std::string Header(std::string_view name) const;
};

class HttpClient {
 public:
  // "http://host[:port]" or "https://host[:port]" (a trailing path is ignored); InvalidArgument
  // for anything else; IOError when the server cannot be reached or its certificate is refused.
  static Result<std::unique_ptr<HttpClient>> Connect(std::string_view url,
                                                     std::chrono::milliseconds timeout = std::chrono::seconds(60));
  ~HttpClient();

  // One request; IOError when the server cannot be reached or the connection breaks.
  Result<ClientResponse> Call(std::string_view method, std::string_view target,
                              const std::vector<std::pair<std::string, std::string>>& headers = {},
                              std::string_view body = {});
  // Like Call, but the body is handed to `on_data` as it arrives (server-sent events);
  // stop by returning false. The returned response has an empty body.
  Result<ClientResponse> Stream(std::string_view target,
                                const std::vector<std::pair<std::string, std::string>>& headers,
                                const std::function<bool(std::string_view)>& on_data);

  class Impl;

 private:
  explicit HttpClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vigil::server
