#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang) and runs each for SECONDS, printing execs/s and corpus size per target.
# Usage: tools/fuzz.sh [SECONDS=60] [target...]   (targets: kineto_json pytorch_et nsight_sqlite ets_csv ets_trace model_file)
# Env: ETS_FUZZ_BUILD_DIR (default build-fuzz), ETS_FUZZ_JOBS (build parallelism, default nproc),
#      ETS_FUZZ_ARGS (extra libFuzzer flags), ETS_SHARED_DATA (default ../shared/data),
#      ETS_FUZZ_PARALLEL (targets fuzzed at once, default nproc: each target still gets SECONDS of its own core).
#      Exit 1 if any target fails.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
# a target named first (tools/fuzz.sh model_file), or 0, reached libFuzzer as -max_total_time=0: no limit at all
[[ $secs =~ ^[1-9][0-9]*$ ]] || { echo "usage: tools/fuzz.sh [SECONDS>0] [target...] (got '$secs' for SECONDS)" >&2; exit 2; }
[[ $# -gt 0 ]] && shift
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(kineto_json pytorch_et nsight_sqlite ets_csv ets_trace model_file)
build=${ETS_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${ETS_FUZZ_JOBS:-$(nproc)}
shared=${ETS_SHARED_DATA:-$(pwd)/../shared/data}
cxx=${ETS_FUZZ_CXX:-$(command -v clang++ || command -v clang++-14)}
cc=${ETS_FUZZ_CC:-$(command -v clang || command -v clang-14)}

# The compiler is chosen only when the folder is new: passing it again to a configured folder wipes its cache.
compilers=()
[[ -f "$build/CMakeCache.txt" ]] || compilers=(-DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx")
# -O1 -g1, as the sanitizer builds: about half the compile time of -O2 -g, and line tables are enough for a report
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
  "${compilers[@]}" -DETS_BUILD_FUZZERS=ON -DETS_BUILD_TESTS=OFF -DETS_BUILD_CLI=OFF \
  -DETS_BUILD_BENCH=OFF -DETS_BUILD_EXAMPLES=OFF -DETS_INSTALL=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target $(printf 'fuzz_%s ' "${targets[@]}")

# Seeds are regenerated every run (fixtures may change), per invocation so parallel runs do not collide; the
# corpus each target grows persists in the build folder.
seeds="$build/fuzz-seeds.$$"
trap 'rm -rf "$seeds"' EXIT
python3 tools/fuzz_seeds.py . "$shared" "$seeds"

parallel=${ETS_FUZZ_PARALLEL:-$(nproc)}
results="$seeds/results"
mkdir -p "$results"

# One target: fuzz it, then write its one-line summary to $results/<target> (printed in target order at the end).
fuzz_one() {
  local t=$1 exe="$build/fuzz/fuzz_$1" corpus="$build/fuzz-corpus/fuzz_$1" art="$build/fuzz-artifacts/fuzz_$1/"
  local log="$build/fuzz-fuzz_$1.log" rc=0
  mkdir -p "$corpus" "$art" "$seeds/fuzz_$t"
  echo "=== fuzz_$t for ${secs}s (log: $log)"
  # shellcheck disable=SC2086
  "$exe" -max_total_time="$secs" -timeout=25 -rss_limit_mb=2560 -print_final_stats=1 -artifact_prefix="$art" \
    ${ETS_FUZZ_ARGS:-} "$corpus" "$seeds/fuzz_$t" >"$log" 2>&1 || rc=$?
  local execs rate corp files line
  # A run that dies at start-up has none of these lines: the summary says "?" instead of the script stopping.
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  corp=$(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" | tail -1 | sed 's/corp: //' || true)
  files=$(find "$corpus" -type f | wc -l)
  line="fuzz_$t: rc=$rc execs=${execs:-?} execs/s=${rate:-?} corpus=${corp:-?} (${files} files in $corpus)"
  if [[ $rc -ne 0 ]]; then
    line+=" FAILED: $(grep -m1 -E 'ERROR: |runtime error|deadly signal|out-of-memory|timeout' "$log" || echo 'see log')"
    line+=" artifacts: $(ls "$art" 2>/dev/null | tr '\n' ' ')"
  fi
  echo "$line" | tee "$results/$t"
}

running=0
for t in "${targets[@]}"; do
  if (( running >= parallel )); then wait -n || true; running=$((running - 1)); fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait || true

fail=0
summary=()
for t in "${targets[@]}"; do
  line=$(cat "$results/$t" 2>/dev/null || echo "fuzz_$t: no result (the runner died)")
  [[ $line == *"rc=0 "* ]] || fail=1
  summary+=("$line")
done
echo
echo "=== fuzz summary (${secs}s each, ${parallel} at once)"
printf '%s\n' "${summary[@]}"
exit $fail
