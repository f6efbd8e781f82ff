// The [server] settings of vigil.toml (`vigil serve`: listen address, connection
// and request limits, sessions, idempotency, TLS) and the listen address parser.
#include "common/config_settings.h"

#include <cctype>

namespace vigil {

namespace config_detail {

std::vector<Setting> ServerSettings() {
  return {
      {"server", "listen", Kind::kAddress, 0, 0, "Where `vigil serve` listens, \"host:port\"; `--listen` overrides it.",
       VIGIL_STR_(server, listen)},

      {"server", "max_connections", Kind::kCount, 1, 65'536,
       "Connections served at once (one thread each); one more is answered 503\n"
       "and closed.",
       VIGIL_NUM_(server, max_connections)},

      {"server", "max_body_bytes", Kind::kSize, 1024, kTiB,
       "The longest request body, chunked or not (413 past it); uploads are streamed\n"
       "to a spool file, never held in memory.",
       VIGIL_NUM_(server, max_body_bytes)},

      {"server", "header_timeout", Kind::kDurationMs, 100, kHour * 1000,
       "A request's whole header must arrive in this (and, between requests on one\n"
       "connection, the next one's); past it the connection is closed, so clients\n"
       "sending a line now and then cannot hold connections. \"<n>ms|s|m|h\".",
       VIGIL_NUM_(server, header_timeout_ms)},

      {"server", "body_grace", Kind::kDurationMs, 0, kHour * 1000,
       "A request body may take this long plus one second per\n"
       "min_body_bytes_per_second received; a slower sender is cut off.",
       VIGIL_NUM_(server, body_grace_ms)},

      {"server", "min_body_bytes_per_second", Kind::kSize, 1, kGiB,
       "The slowest steady upload rate kept (after body_grace); e.g. \"64KiB\".",
       VIGIL_NUM_(server, min_body_bytes_per_second)},

      {"server", "write_timeout", Kind::kDurationMs, 100, kHour * 1000,
       "Each write of an answer (a whole body, or one chunk of a stream) must be\n"
       "taken by the client in this; a client that stops reading is cut off.",
       VIGIL_NUM_(server, write_timeout_ms)},

      {"server", "sessions", Kind::kCount, 1, 256,
       "SQL sessions serving requests at once; each holds its own select engine.\n"
       "A request waiting longer than 30 s for one is answered 503.",
       VIGIL_NUM_(server, sessions)},

      {"server", "idempotency_ttl_seconds", Kind::kDuration, 60, 365 * kDay,
       "How long a finished request's Idempotency-Key is remembered and replayed.",
       VIGIL_NUM_(server, idempotency_ttl_seconds)},

      {"server", "require_idempotency_key", Kind::kBool, 0, 1,
       "Resource mutations (POST, PUT, DELETE under /v1 except /v1/sql) without an\n"
       "Idempotency-Key header are refused with 400.",
       VIGIL_BOOL_(server, require_idempotency_key)},

      {"server", "sse_max_subscribers", Kind::kCount, 1, 100'000,
       "Job event streams (GET /v1/jobs/{id}/events) open at once; one more is 503.",
       VIGIL_NUM_(server, sse_max_subscribers)},

      {"server", "requests_per_second_per_user", Kind::kCount, 0, 1'000'000,
       "Requests each user may make per second, after a burst of as many at once;\n"
       "past it a request is answered 429 with Retry-After, before it does anything.\n"
       "Other users are not slowed. 0: no limit.",
       VIGIL_NUM_(server, requests_per_second_per_user)},

      {"server", "tls_cert_file", Kind::kPath, 0, 0,
       "PEM certificate chain; with tls_key_file the server speaks HTTPS only.", VIGIL_STR_(server, tls_cert_file)},

      {"server", "tls_key_file", Kind::kPath, 0, 0, "PEM private key of tls_cert_file.",
       VIGIL_STR_(server, tls_key_file)},
  };
}

}  // namespace config_detail

Result<ListenAddress> ParseListenAddress(std::string_view text) {
  const auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("listen address \"" + std::string(text.substr(0, 64)) + "\" " + why +
                                   " (want \"host:port\", e.g. \"127.0.0.1:7431\")");
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return bad("has no host");
  std::string_view host = text.substr(0, colon);
  const std::string_view port = text.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.size() > 253) return bad("has a host name longer than 253 bytes");
  for (char ch : host) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-' && ch != ':') {
      return bad("has a character that is not allowed in a host name or address");
    }
  }
  if (port.empty() || port.size() > 5) return bad("has no port number");
  uint32_t value = 0;
  for (char ch : port) {
    if (ch < '0' || ch > '9') return bad("has a port that is not a number");
    value = value * 10 + static_cast<uint32_t>(ch - '0');
  }
  if (value > 65535) return bad("has a port above 65535");
  return ListenAddress{std::string(host), static_cast<uint16_t>(value)};
}

}  // namespace vigil
