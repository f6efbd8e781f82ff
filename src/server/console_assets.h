// The web console's static files (src/server/console/), embedded in the binary at
// build time, so that `vigil serve` serves them without reading any file: a
// request names an asset, never a path. Thread safety: immutable data.
#pragma once

#include <optional>
#include <string_view>

namespace vigil::server {

struct ConsoleAsset {
  std::string_view content_type;
  std::string_view body;
};

// The asset called `name` ("index.html", "console.js", ...), or nullopt.
std::optional<ConsoleAsset> FindConsoleAsset(std::string_view name);

}  // namespace vigil::server
