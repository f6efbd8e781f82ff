// The OpenAPI 3.1 document of the HTTP API (src/server/openapi.json, embedded
// at build time) served at GET /v1/openapi.json.
#pragma once

#include <string_view>

namespace vigil::server {

extern const std::string_view kOpenApiDocument;

}  // namespace vigil::server
