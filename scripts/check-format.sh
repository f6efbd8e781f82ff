#!/usr/bin/env bash
# Fails when a C++ source or header of the repository differs from what clang-format makes of it
# (.clang-format: Google style at the 120 columns the code uses). To fix: run this script with
# --fix, which rewrites the files in place.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "--fix" ]]; then
  git ls-files -z '*.cc' '*.h' | xargs -0 clang-format -i
  exit 0
fi
git ls-files -z '*.cc' '*.h' | xargs -0 clang-format --dry-run --Werror
echo "clang-format: $(git ls-files '*.cc' '*.h' | wc -l) files formatted"
