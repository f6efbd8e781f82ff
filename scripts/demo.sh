#!/usr/bin/env bash
# Installs the dependencies, builds Vigil (Release) and runs `vigil demo` on a
# fresh embedded root. Run as root on Debian 12. ROOT=DIR picks the root.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-2}"
bash scripts/install-deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j"$JOBS" --target vigil vigil-worker
ROOT="${ROOT:-$(mktemp -d /tmp/vigil-demo-XXXXXX)}"
echo "== vigil demo on the embedded root $ROOT"
exec build/release/src/cli/vigil --root "$ROOT" demo
