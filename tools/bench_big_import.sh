#!/usr/bin/env bash
# Bounded-memory benchmark (issue #10): synthesises a ~1 GB Kineto JSON in /tmp from a real trace's steps and
# imports it with Tracer::load (`ets inspect --json`), reporting wall time, throughput and peak RSS (/usr/bin/time).
# Usage: tools/bench_big_import.sh [ETS_BINARY=build/ets] [GB=1.0]
# Env: ETS_BIG_SOURCE (a Kineto trace with ProfilerStep#s; default: the shared ResNet-50 V100 trace, else the
# committed CPU fixture), ETS_BIG_FILE=PATH reuses (or keeps) that file instead of a temporary one.
# Not a test: it measures, never asserts.
set -euo pipefail
# Paths given on the command line or in the environment are the caller's, resolved before moving to the repository.
abs() { [[ -z "$1" || "$1" = /* ]] && printf '%s' "$1" || printf '%s/%s' "$PWD" "$1"; }
ets=$(abs "${1:-}")
gb=${2:-1.0}
src=$(abs "${ETS_BIG_SOURCE:-}")
keep=$(abs "${ETS_BIG_FILE:-}")
cd "$(dirname "$0")/.."
ets=${ets:-build/ets}
src=${src:-../shared/data/kineto-gpu/kineto-resnet50-v100/resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz}
[[ -f "$src" ]] || src=tests/data/cpu_small_mlp.json.gz
[[ -x "$ets" ]] || { echo "no ets binary at $ets (build target ets_cli)" >&2; exit 2; }
log=$(mktemp)
out=
cleanup() { rm -f "$log" "$log.out" "${out:+$out.part}"; [[ -n "$keep" ]] || rm -f "$out"; }
trap cleanup EXIT
if [[ -n "$keep" ]]; then
  out=$keep
  # written beside it and renamed when complete: an interrupted generation never leaves a cut file to reuse
  [[ -f "$out" ]] || { python3 tools/make_big_kineto.py "$src" "$out.part" --gb "$gb" && mv "$out.part" "$out"; }
else
  out=$(mktemp /tmp/ets_big_kineto.XXXXXX.json)
  python3 tools/make_big_kineto.py "$src" "$out" --gb "$gb"
fi
bytes=$(stat -c %s "$out")
cat "$out" > /dev/null  # page cache warm: time the import, not the disk
/usr/bin/time -v "$ets" inspect --json "$out" > "$log.out" 2> "$log"
rss_kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$log")
wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$log")
secs=$(echo "$wall" | awk -F: '{ s = 0; for (i = 1; i <= NF; ++i) s = s * 60 + $i; print s }')
python3 - "$log.out" "$bytes" "$rss_kb" "$secs" <<'PY'
import json, sys
out, nbytes, rss_kb, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
line = open(out).read().strip().splitlines()[-1]
info = json.loads(line)
its = info.get("iterations", [])
n_its = len(its) if isinstance(its, list) else its
ops = sum(i.get("ops", 0) for i in its) if isinstance(its, list) else info.get("ops", "?")
print(f"file        {nbytes / 1e9:.3f} GB ({nbytes} bytes)")
print(f"iterations  {n_its}, ops {ops}")
print(f"wall        {secs:.1f} s, {nbytes / 1e6 / secs:.0f} MB/s")
# GNU time reports KiB
print(f"peak RSS    {rss_kb * 1024 / 1e9:.2f} GB = {rss_kb * 1024 / nbytes:.2f} x file size")
PY
rm -f "$log" "$log.out"
