#!/usr/bin/env bash
# Builds every fuzz target with clang + libFuzzer + ASan and runs each for
# FUZZ_SECONDS (default 10), starting from the seeds the target defines.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-2}"
SECONDS_EACH="${FUZZ_SECONDS:-10}"

cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DVIGIL_SANITIZE=address -DVIGIL_LIBFUZZER=ON -DVIGIL_BUILD_TESTS=OFF -DVIGIL_BUILD_BENCH=OFF >/dev/null
mapfile -t targets < <(find src -name '*_fuzz.cc' -printf '%f\n' | sed 's/\.cc$//' | sort)
cmake --build build/fuzz -j"$JOBS" --target "${targets[@]}"
# Seeds come from the replay build of the same targets, when present.
for t in "${targets[@]}"; do
  corpus="build/fuzz/corpus/$t"
  mkdir -p "$corpus"
  if [[ -x "build/release/$t" ]]; then "build/release/$t" --write-corpus="$corpus"; fi
  echo "-- $t: ${SECONDS_EACH}s"
  "build/fuzz/$t" -max_total_time="$SECONDS_EACH" -print_final_stats=0 -rss_limit_mb=2048 \
    "$corpus" 2>&1 | tail -n 3
done
echo "fuzz: ${#targets[@]} targets ran without a crash"
