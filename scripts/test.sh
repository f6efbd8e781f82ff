#!/usr/bin/env bash
# Installs the dependencies, builds Vigil and runs every test:
#   1. a Release build with every test (unit, integration with crash and fault
#      tests, PostgreSQL tests against a throwaway server, fuzz replays);
#   2. an ASan+UBSan build of the fast unit tier and the SQL execution goldens;
#   3. a ThreadSanitizer build of the concurrency tests;
#   4. a short libFuzzer run of every fuzz target (clang);
# before it, clang-format over every source; and, after the Release build, Clang's thread-safety
# analysis of the annotated locks.
# TSan on the whole unit tier and long fuzz runs: scripts/test-long.sh. Run as root on Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-2}"

# Runs ctest, keeping its output in $1; returns ctest's status.
run_ctest() {
  local log=$1
  shift
  ctest "$@" 2>&1 | tee "$log"
}
# Tests of a ctest log that were skipped (they report it themselves).
skipped_in() {
  grep -cE '^\s+[0-9]+ - .*\(Skipped\)$' "$1" || true
}
# Tests of a ctest log that ran and passed.
passed_in() {
  local line total failed
  line=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$1" | tail -n 1)
  total=${line##* }
  failed=$(echo "$line" | sed -E 's/.*tests passed, ([0-9]+) tests failed.*/\1/')
  echo $((total - failed - $(skipped_in "$1")))
}

# Stage timings, printed as each stage ends and again at the end.
timings=()
stage_name=""
stage_start=0
stage() {
  local now
  now=$(date +%s)
  if [[ -n "$stage_name" ]]; then
    timings+=("$(printf '%-44s %5ss' "$stage_name" $((now - stage_start)))")
    echo "-- $stage_name: $((now - stage_start)) s"
  fi
  stage_name=$1
  stage_start=$now
  [[ -n "$stage_name" ]] && echo "== $stage_name"
  return 0
}
total_start=$(date +%s)
print_timings() {
  local rc=$?
  [[ -n "$stage_name" ]] && stage ""
  echo "stage times:"
  printf '  %s\n' "${timings[@]}"
  echo "  total $(($(date +%s) - total_start)) s"
  return $rc
}
trap print_timings EXIT

stage "install dependencies"
bash scripts/install-deps.sh

stage "clang-format (every source and header)"
bash scripts/check-format.sh

stage "Release build"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DVIGIL_UNITY_BUILD=ON
cmake --build build/release -j"$JOBS"
stage "Clang thread-safety analysis (annotated locks)"
bash scripts/check-thread-safety.sh
stage "Release tests (every tier)"
# The console's browser test writes the screenshots the README shows here.
export VIGIL_CONSOLE_SCREENSHOTS="$PWD/build/release/console-screenshots"
run_ctest build/release/ctest.log --test-dir build/release -j"$JOBS" --output-on-failure --timeout 1200

stage "ASan+UBSan build, unit tier and the SQL execution goldens"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVIGIL_SANITIZE=address \
  -DVIGIL_BUILD_BENCH=OFF -DVIGIL_UNITY_BUILD=ON
cmake --build build/asan -j"$JOBS" --target vigil_unit_tests sql_itest
stage "ASan+UBSan tests, unit tier and the SQL execution goldens"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_ctest build/asan/ctest.log --test-dir build/asan -L unit -j"$JOBS" --output-on-failure --timeout 1200
run_ctest build/asan/ctest-goldens.log --test-dir build/asan -R 'ExecGoldenTest' -j"$JOBS" --output-on-failure \
  --timeout 1200
unset ASAN_OPTIONS UBSAN_OPTIONS

stage "ThreadSanitizer build, concurrency tests"
# The tests that race threads (publication under readers, builds during appends and
# deletes, racing appends, shared caches, full-text postings indexed beside FTS5);
# OpenMP single-threaded (libgomp is not instrumented). The whole unit tier under
# TSan runs in scripts/test-long.sh.
cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVIGIL_SANITIZE=thread \
  -DVIGIL_BUILD_BENCH=OFF -DVIGIL_UNITY_BUILD=ON
cmake --build build/tsan -j"$JOBS" --target storage_test generations_test jobs_test index_test
stage "ThreadSanitizer tests"
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  run_ctest build/tsan/ctest.log --test-dir build/tsan -R 'Concurren|Racing' -j"$JOBS" --output-on-failure \
  --timeout 1200

stage "libFuzzer build and short runs"
FUZZ_SECONDS="${FUZZ_SECONDS:-10}" bash scripts/fuzz.sh
stage ""

release=$(passed_in build/release/ctest.log)
asan=$(($(passed_in build/asan/ctest.log) + $(passed_in build/asan/ctest-goldens.log)))
tsan=$(passed_in build/tsan/ctest.log)
echo "release build: $release tests passed; ASan+UBSan unit tier and execution goldens: $asan; TSan concurrency tests: $tsan;" \
  "fuzz targets: no crash"
skipped=$(($(skipped_in build/release/ctest.log) + $(skipped_in build/asan/ctest.log) + \
  $(skipped_in build/asan/ctest-goldens.log) + \
  $(skipped_in build/tsan/ctest.log)))
echo "tests: $((release + asan + tsan)) passed, 0 failed, $skipped skipped"
