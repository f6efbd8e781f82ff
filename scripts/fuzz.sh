#!/usr/bin/env bash
# Builds every fuzz target with clang + libFuzzer + ASan and runs each for
# FUZZ_SECONDS (default 10), starting from the seeds the target defines; $JOBS targets at a time.
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
# Runs one target for SECONDS_EACH from its seeds, which come from the replay build of the same
# target (build/release) when present; its log is build/fuzz/<target>.log.
run_target() {
  local s=$1 t layer_dir corpus log seeds
  t=$(basename "$s" .cc)
  layer_dir=$(dirname "$s")
  corpus="build/fuzz/corpus/$t"
  log="build/fuzz/$t.log"
  mkdir -p "$corpus"
  if [[ -x "build/release/$layer_dir/$t" ]]; then "build/release/$layer_dir/$t" --write-corpus="$corpus" >/dev/null; fi
  seeds=$(ls "$corpus" | wc -l)
  if ! "build/fuzz/$layer_dir/$t" -max_total_time="$SECONDS_EACH" -print_final_stats=1 -rss_limit_mb=2048 \
      "$corpus" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: $t failed; reproducer and log above"
    return 1
  fi
  echo "-- $t: ${SECONDS_EACH}s from $seeds seeds, $(grep -oE 'number_of_executed_units: [0-9]+' "$log" || true)"
}
# Each run is one process on one core: $JOBS run side by side.
failed=0
running=0
for s in "${sources[@]}"; do
  if ((running >= JOBS)); then
    wait -n || failed=1
    running=$((running - 1))
  fi
  run_target "$s" &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || failed=1
  running=$((running - 1))
done
if ((failed)); then
  echo "fuzz: a target failed (above)"
  exit 1
fi
echo "fuzz: ${#targets[@]} targets ran without a crash"
