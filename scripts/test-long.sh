#!/usr/bin/env bash
# The long tier, outside CI's time budget: a ThreadSanitizer build running the
# unit tier (which holds the concurrency tests: racing appends, generation
# publication under readers, racing reservations, group commit), clang-tidy
# over every source, the written text of every FLOAT32, idempotency keys
# expiring through a real server, then longer libFuzzer runs. Run as root on
# Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-2}"
bash scripts/install-deps.sh

echo "== ThreadSanitizer build, unit tier"
cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVIGIL_SANITIZE=thread \
  -DVIGIL_BUILD_BENCH=OFF
cmake --build build/tsan -j"$JOBS" --target vigil_unit_tests
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  ctest --test-dir build/tsan -L unit -LE fuzz -j"$JOBS" --output-on-failure --timeout 3600

echo "== clang-tidy (.clang-tidy) over every source of the Release build"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DVIGIL_UNITY_BUILD=ON
bash scripts/check-tidy.sh

echo "== every FLOAT32, written as a vector element, reads back as itself"
cmake --build build/release -j"$JOBS" --target sql_test
VIGIL_FLOAT_SWEEP_STRIDE=1 build/release/src/sql/exec/sql_test \
  --gtest_filter=ResultFormatTest.VectorElementsReadBackExactlyThroughADouble

echo "== idempotency keys expire through a real vigil serve (the shortest TTL is a minute)"
cmake --build build/release -j"$JOBS" --target vigil cli_itest
build/release/src/cli/cli_itest --gtest_also_run_disabled_tests \
  --gtest_filter=ServeSettingsTest.DISABLED_KeysExpireAfterTheTtlAndThePurgeDeletesThem

echo "== libFuzzer, long runs"
FUZZ_SECONDS="${FUZZ_SECONDS:-300}" bash scripts/fuzz.sh
