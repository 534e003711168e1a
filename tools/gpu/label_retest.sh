#!/usr/bin/env bash
# GPU label noise (docs/results.md, "GPU labels: a first retest"): collects the same configurations twice, run B
# straight after run A, and compares the two runs' labels (tools/gpu/label_retest.py). Run on the GPU machine from the
# repository root, with .gpu-deps/deps.tar.xz from tools/gpu/pack_deps.sh when that machine lacks the C++ packages.
#
#   tools/gpu/label_retest.sh     # ≈ 5 min on an H200 at the defaults
#
# Environment: WORK (default: a new folder /tmp/label-retest.XXXXXX; an existing WORK keeps its build, but its runs
# A and B are collected anew), EVERY (every EVERY-th line of tools/gpu/configs.txt; default 5),
# RUN_S (time cap per run, default 200), COLLECT_ARGS (default "--passes 2 --quick --block 5"), OUT (when set, the
# runs' logs and labels are copied there).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
W=${WORK:-$(mktemp -d /tmp/label-retest.XXXXXX)}
mkdir -p "$W"
rm -rf "$W/A" "$W/B"  # a previous retest's labels would be skipped as done and compared again as this one's
EXTRA=()
if [ -f "$ROOT/.gpu-deps/deps.tar.xz" ]; then
  mkdir -p "$W/deps" && tar xJf "$ROOT/.gpu-deps/deps.tar.xz" -C "$W/deps" && EXTRA=("-DCMAKE_PREFIX_PATH=$W/deps")
fi
GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)
# Labelling needs only the CPU library: the GPU importer is part of it.
cmake -S "$ROOT" -B "$W/build" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DETS_WITH_CUDA=OFF -DETS_BUILD_CLI=ON \
  -DETS_BUILD_TESTS=OFF "${EXTRA[@]}" >"$W/configure.log" 2>&1 || { tail -30 "$W/configure.log"; exit 1; }
cmake --build "$W/build" -j "$(nproc)" --target ets_cli >"$W/build.log" 2>&1 || { tail -30 "$W/build.log"; exit 1; }
grep -v '^#' "$ROOT/tools/gpu/configs.txt" | awk -v n="${EVERY:-5}" '(NR - 1) % n == 0' >"$W/ids.txt"
echo "$(wc -l <"$W/ids.txt") configurations"
read -r -a ARGS <<<"${COLLECT_ARGS:---passes 2 --quick --block 5}"
for r in A B; do
  # timeout signals its whole process group, the collector's workers included (a worker left behind would share the
  # GPU with run B); --kill-after ends one that ignores the TERM. No pkill: it would hit other checkouts' workers.
  timeout --kill-after=10 "${RUN_S:-200}" python3 "$ROOT/tools/collect/collect.py" --configs "$W/ids.txt" \
    --device cuda "${ARGS[@]}" --out "$W/$r" --ets "$W/build/ets" >"$W/$r.log" 2>&1
  rc=$?
  echo "run $r: rc $rc, $(date +%T)"
  tail -c 300 "$W/$r.log"
  echo
done
python3 "$ROOT/tools/gpu/label_retest.py" "$W/A" "$W/B"
rc=$?
if [ -n "${OUT:-}" ]; then
  cp "$W/A.log" "$W/B.log" "$OUT/" 2>/dev/null
  tar czf "$OUT/labels.tgz" -C "$W" A/traces B/traces 2>/dev/null
fi
exit $rc
