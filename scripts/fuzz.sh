#!/usr/bin/env bash
# Builds every fuzz target with clang + libFuzzer + ASan and runs each for
# FUZZ_SECONDS (default 10), starting from the seeds the target defines.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-2}"
SECONDS_EACH="${FUZZ_SECONDS:-10}"

cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DVIGIL_SANITIZE=address -DVIGIL_LIBFUZZER=ON -DVIGIL_BUILD_TESTS=OFF -DVIGIL_BUILD_BENCH=OFF \
  -DVIGIL_UNITY_BUILD=ON >/dev/null
mapfile -t sources < <(find src -name '*_fuzz.cc' | sort)
targets=()
for s in "${sources[@]}"; do targets+=("$(basename "$s" .cc)"); done
cmake --build build/fuzz -j"$JOBS" --target "${targets[@]}"
# Seeds come from the replay build of the same targets (build/release), when present.
for s in "${sources[@]}"; do
  t=$(basename "$s" .cc)
  layer_dir=$(dirname "$s")
  corpus="build/fuzz/corpus/$t"
  mkdir -p "$corpus"
  if [[ -x "build/release/$layer_dir/$t" ]]; then "build/release/$layer_dir/$t" --write-corpus="$corpus"; fi
  echo "-- $t: ${SECONDS_EACH}s from $(ls "$corpus" | wc -l) seeds"
  log="build/fuzz/$t.log"
  if ! "build/fuzz/$layer_dir/$t" -max_total_time="$SECONDS_EACH" -print_final_stats=1 -rss_limit_mb=2048 \
      "$corpus" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: $t failed; reproducer and log above"
    exit 1
  fi
  grep -E "stat::number_of_executed_units" "$log" || true
done
echo "fuzz: ${#targets[@]} targets ran without a crash"
