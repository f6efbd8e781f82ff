#!/usr/bin/env bash
# Installs every Debian 12 package that Vigil's build, tests and benchmarks
# need. Run as root; safe to run again.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git ccache
  clang libclang-rt-14-dev llvm clang-format clang-tidy
  libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev
  libfaiss-dev libopenblas-dev libomp-dev
  libroaring-dev
  libsqlite3-dev sqlite3
  libpq-dev postgresql postgresql-contrib
  libzstd-dev libxxhash-dev
  libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  # configuration (vigil.toml), the HTTP server (Boost.Beast, OpenSSL) and the interactive shell
  libtomlplusplus-dev libboost-dev libssl-dev libreadline-dev curl openssl
  # the query route's request body
  libsimdjson-dev
  procps util-linux
  # `vigil bench server` drives the HTTP API with wrk; `vigil bench index-fts` compares with Xapian
  wrk libxapian-dev
  # the Python package (Debian's /usr/bin/python3) and its tests
  python3-dev pybind11-dev python3-numpy python3-pytest
  # the web console's tests drive a real headless browser
  chromium-headless-shell python3-websocket
  # Lance datasets: the Lance runner is a Node program over LanceDB (npm packages below)
  nodejs
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "install-deps: all ${#PACKAGES[@]} packages present"

# The Lance runner's npm packages, pinned to exact versions in src/lance/runner/package.json
# (@lancedb/lancedb 0.31.0, apache-arrow 18.1.0) and their lock file; installed beside it.
runner="$(dirname "$0")/../src/lance/runner"
if ! command -v npm >/dev/null; then  # Debian's nodejs ships npm apart; another build of node bundles it
  apt-get install -y -qq --no-install-recommends npm
fi
if ! cmp -s "$runner/package-lock.json" "$runner/node_modules/.installed-lock.json"; then
  npm ci --prefix "$runner" --no-audit --no-fund --loglevel=error
  cp "$runner/package-lock.json" "$runner/node_modules/.installed-lock.json"
fi
echo "install-deps: Lance runner packages present ($(node --version))"
