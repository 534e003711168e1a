#!/usr/bin/env bash
# GPU validation in one invocation (issue #11): build with CUDA, cuda tests, cuDNN benchmark, CUPTI capture of a
# PyTorch loop, a small GPU dataset and its import check. Every step is time-boxed; a failed step never stops the run.
#
#   tools/gpu/validate.sh             # on the GPU machine (H200, CUDA 13, torch 2.x); ≤ 9 min
#   tools/gpu/validate.sh --dry-run   # CPU-only machine: the same steps at toy sizes, GPU parts skip (CI)
#
# Environment: WORK (where everything is written, the previous run's results removed first; default ./gpu-out), OUT (when set, e.g. by the device tool, which
# brings back at most 8 files: summary.json and validate.log are copied there at the end), BUILD (default
# ./build-gpu), JOBS (default: nproc), PYTHON (default
# python3 on the GPU machine, /usr/bin/python3 in a dry run), TOTAL_S (overall budget, default 540 s; 600 s dry),
# EXTRA_CMAKE_ARGS (extra configure arguments), DEPS_ARCHIVE (default .gpu-deps/deps.tar.xz: the C++ dependencies
# packed by tools/gpu/pack_deps.sh for the GPU machine, which has no package registry; when the file exists it is
# unpacked under $WORK/deps and put first on CMAKE_PREFIX_PATH),
# CUDNN_ROOT (default: the nvidia-cudnn wheel's folder when the toolkit has no cudnn.h).
# Results: $WORK/summary.json (one entry per step plus the figures, bench and nvtx_loop included), $WORK/validate.log
# (all output), $WORK/bench/bench.json, $WORK/bench_model/bench.json, $WORK/nvtx_loop.json, $WORK/inspect.jsonl,
# $WORK/data/ (collected traces); the full summary is also printed at the end.
# Exit status: 0 when every step passed (collect may be "partial") or was skipped for a stated reason, 1 otherwise.
# On the GPU machine (not --dry-run) a missing device, a skipped cuda test, a cuDNN case without timing or over
# 1e-4 from PyTorch / the CPU, and an NVTX capture that skipped are failures.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DRY=0
for a in "$@"; do
  case $a in
    --dry-run) DRY=1 ;;
    -h|--help) sed -n '2,/^set -u$/{/^#/p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "validate.sh: unknown argument '$a'" >&2; exit 2 ;;
  esac
done
RESULTS=${OUT:-}
WORK=$(mkdir -p "${WORK:-$PWD/gpu-out}" && cd "${WORK:-$PWD/gpu-out}" && pwd)
BUILD=${BUILD:-$PWD/build-gpu}
JOBS=${JOBS:-$(nproc)}
if [ $DRY = 1 ]; then PY=${PYTHON:-/usr/bin/python3}; TOTAL_S=${TOTAL_S:-600}; else PY=${PYTHON:-python3}; TOTAL_S=${TOTAL_S:-540}; fi
LOG=$WORK/validate.log
STEPS=$WORK/steps.jsonl
: >"$LOG"
: >"$STEPS"
# Results of an earlier run into the same WORK (a dry run's CPU labels, an old bench.json) must not pass for this
# run's: the collector skips what is already labelled, and the summary reads whatever files are there.
rm -rf "$WORK/data" "$WORK/bench" "$WORK/bench_model" "$WORK/nvtx_loop.json" "$WORK/inspect.jsonl" \
  "$WORK/summary.json" "$WORK/configs.txt"
DEADLINE=$(( $(date +%s) + TOTAL_S ))
FAILED=0

log() { echo "[validate $(date +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }

# What finished comes back even when the run is cut short (the device tool returns only what lies under $OUT when
# its limit kills the command): the log and the step statuses are copied there after every step, on exit and on
# SIGTERM / SIGINT.
publish() {
  [ -n "$RESULTS" ] || return 0
  [ "$(mkdir -p "$RESULTS" && cd "$RESULTS" && pwd)" != "$WORK" ] || return 0
  cp "$LOG" "$STEPS" "$RESULTS/" 2>/dev/null
  if [ -f "$WORK/summary.json" ]; then cp "$WORK/summary.json" "$RESULTS/" 2>/dev/null; fi
  return 0
}
trap publish EXIT
trap 'log "stopped by a signal"; publish; trap - EXIT; exit 143' TERM INT

# step NAME CAP_SECONDS CMD...: runs CMD under min(CAP, time left), logs it, records ok / failed / timeout.
# With RESUMABLE=1 a timeout is "partial" (what finished is kept and checked by a later step), not a failure.
step() {
  local name=$1 cap=$2; shift 2
  local left=$(( DEADLINE - $(date +%s) ))
  local limit=$(( cap < left ? cap : left ))
  if [ $limit -lt 10 ]; then
    log "$name: skipped (overall budget of ${TOTAL_S}s spent)"
    echo "{\"step\":\"$name\",\"status\":\"timeout\",\"seconds\":0,\"note\":\"overall budget spent before the step\"}" >>"$STEPS"
    FAILED=1
    return 1
  fi
  log "$name: start (limit ${limit}s): $*"
  local t0
  t0=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" >>"$LOG" 2>&1
  local rc=$? status=ok
  local dt=$(( $(date +%s) - t0 ))
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    if [ "${RESUMABLE:-0}" = 1 ]; then status=partial; else status=timeout; fi
  elif [ $rc != 0 ]; then status=failed; fi
  [ $status = ok ] || [ $status = partial ] || FAILED=1
  log "$name: $status (rc $rc, ${dt}s)"
  echo "{\"step\":\"$name\",\"status\":\"$status\",\"rc\":$rc,\"seconds\":$dt}" >>"$STEPS"
  publish
  [ $status = ok ] || [ $status = partial ]
}

skip() {  # skip NAME REASON
  log "$1: skipped ($2)"
  echo "{\"step\":\"$1\",\"status\":\"skipped\",\"seconds\":0,\"note\":\"$2\"}" >>"$STEPS"
}

log "root $ROOT, work $WORK, results ${RESULTS:-none}, build $BUILD, jobs $JOBS, python $PY, dry-run $DRY, budget ${TOTAL_S}s"
# On the GPU machine a missing or broken driver is a failure, not a reason to skip the GPU parts quietly.
if [ $DRY = 1 ]; then
  command -v nvidia-smi >/dev/null && nvidia-smi -L >>"$LOG" 2>&1
else
  step gpu 30 nvidia-smi -L
fi

# 1-2. Configure and build what the later steps run (the whole tree is not needed and costs minutes).
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
if [ -z "${CUDNN_ROOT:-}" ] && [ ! -f "${CUDA_HOME:-/usr/local/cuda}/include/cudnn.h" ]; then
  # a namespace package has no __file__: its folder is __path__[0]
  CUDNN_ROOT=$("$PY" -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null || true)
  if [ -n "$CUDNN_ROOT" ]; then
    # libcudnn.so.9 loads its engine libraries by name at run time: they must be on the loader's path
    export CUDNN_ROOT LD_LIBRARY_PATH="$CUDNN_ROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    log "CUDNN_ROOT=$CUDNN_ROOT (from the nvidia-cudnn wheel)"
  fi
fi
read -r -a EXTRA <<<"${EXTRA_CMAKE_ARGS:-}"
DEPS_ARCHIVE=${DEPS_ARCHIVE:-$ROOT/.gpu-deps/deps.tar.xz}
if [ -f "$DEPS_ARCHIVE" ]; then
  rm -rf "$WORK/deps" && mkdir -p "$WORK/deps" && tar xJf "$DEPS_ARCHIVE" -C "$WORK/deps" \
    && EXTRA=("-DCMAKE_PREFIX_PATH=$WORK/deps" "${EXTRA[@]}") && log "C++ dependencies from $DEPS_ARCHIVE"
fi
CUDA_TESTS=$(find "$ROOT/tests/unit/cuda" -maxdepth 1 -name '*_test.cpp' -printf '%f\n' | sed 's/\.cpp$//' | tr '\n' ' ')
BUILT=0
if step configure 120 cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DETS_WITH_CUDA=ON \
     -DETS_BUILD_TESTS=ON -DETS_BUILD_BENCH=ON -DETS_BUILD_CLI=ON "${EXTRA[@]}"; then
  # shellcheck disable=SC2086
  step build 300 cmake --build "$BUILD" -j "$JOBS" --target ets_cli cudnn_bench ets_cupti_capi $CUDA_TESTS && BUILT=1
else
  skip build "configure failed"
fi

# 3. cuda-labelled tests (parity cuDNN vs reference/CPU ≤ 1e-4, CUPTI tracer, backend selection); skip w/o GPU.
if [ $BUILT = 1 ]; then
  # ETS_REQUIRE_GPU=1 (not in a dry run): device_test fails instead of skipping when no device works
  REQUIRE=$([ $DRY = 1 ] && echo 0 || echo 1)
  step ctest_cuda 150 env ETS_REQUIRE_GPU=$REQUIRE ctest --test-dir "$BUILD" -L cuda --output-on-failure --timeout 120
else
  skip ctest_cuda "build failed"
fi

# 4. cuDNN vs ETS CPU vs PyTorch on the same weights and inputs.
if [ $BUILT = 1 ]; then
  # Two shapes: the small reference net, and the shipped model's (F = H = 102), which cuDNN's persistent kernels
  # may decline for the standard algorithm (the backend's description lists the algorithms it could use).
  if [ $DRY = 1 ]; then BENCH_ARGS=(--windows "1,8" --hidden 16 --features 8 --reps 3); MODEL_ARGS=("${BENCH_ARGS[@]}")
  else BENCH_ARGS=(--windows "1,64,256,1024" --hidden 64 --features 32 --reps 20)
    MODEL_ARGS=(--windows "1,64,256,1024" --hidden 102 --features 102 --reps 20); fi
  step bench 120 "$PY" "$ROOT/tools/gpu/bench_cudnn.py" --bench "$BUILD/bench/cudnn_bench" --out "$WORK/bench" \
    "${BENCH_ARGS[@]}"
  step bench_model 120 "$PY" "$ROOT/tools/gpu/bench_cudnn.py" --bench "$BUILD/bench/cudnn_bench" \
    --out "$WORK/bench_model" "${MODEL_ARGS[@]}"
  # Parity is the point of the benchmark: every case must have run on cuDNN and agree with PyTorch and the CPU.
  if [ $DRY = 0 ]; then
    step bench_parity 20 "$PY" -c '
import json, sys
for path in sys.argv[1:]:
    cases = json.load(open(path))["cases"]
    ok = lambda c, k: c.get(k) is not None and c[k] <= 1e-4
    bad = [c for c in cases if c.get("cudnn_ms") is None or not (ok(c, "max_err_cudnn_vs_torch") and ok(c, "max_err_cudnn_vs_cpu"))]
    print(f"{path}: {len(cases)} cases, {len(bad)} without cuDNN timing or over 1e-4: {bad}")
    if bad or not cases:
        sys.exit(1)' "$WORK/bench/bench.json" "$WORK/bench_model/bench.json"
  fi
else
  skip bench "build failed"
fi

# 5. CUPTI live capture of a PyTorch CUDA training loop annotated with NVTX (emit_nvtx + ProfilerStep# ranges).
CAPI=$BUILD/cuda/libets_cupti_capi.so
if [ $BUILT = 1 ] && [ -f "$CAPI" ]; then
  # NVTX_INJECTION64_PATH is left to the tracer, which points it at the libcupti actually loaded in the process
  # (import torch may load its wheel's copy; naming the toolkit's here would load a second, silent one).
  step nvtx_loop 90 "$PY" "$ROOT/tools/gpu/nvtx_loop.py" --lib "$CAPI" --steps 6 --out "$WORK/nvtx_loop.json"
  if [ $DRY = 0 ]; then  # nvtx_loop.py exits 0 with "skipped" without a device: on the GPU machine that fails
    step nvtx_captured 10 "$PY" -c 'import json, sys; sys.exit("skipped" in json.load(open(sys.argv[1])))' \
      "$WORK/nvtx_loop.json"
  fi
else
  skip nvtx_loop "libets_cupti_capi.so was not built"
fi

# 5b. `ets predict --backend cuda` on the bundled trace with the shipped model: the CLI's GPU path runs on cuDNN and
# agrees with --backend cpu (in a dry run, where no device works, --backend auto must fall back to the CPU).
if [ $BUILT = 1 ]; then
  GPU_BACKEND=$([ $DRY = 1 ] && echo auto || echo cuda)
  step predict_backend 60 "$PY" -c '
import json, subprocess, sys
ets, trace, model, backend = sys.argv[1:5]
def run(b):
    p = subprocess.run([ets, "predict", trace, "--model", model, "--json", "--backend", b], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"ets predict --backend {b}: rc {p.returncode}: {p.stderr}")
    return json.loads(p.stdout.splitlines()[0])
cpu, other = run("cpu"), run(backend)
want = "cpu-eigen" if backend == "auto" else "cuda-cudnn"
rel = abs(other["predicted_us"] - cpu["predicted_us"]) / cpu["predicted_us"]
ran, us, cpu_us = other["backend"], other["predicted_us"], cpu["predicted_us"]
print(f"--backend {backend}: {ran} {us:.3f} us, cpu {cpu_us:.3f} us, rel diff {rel:.2e}")
sys.exit(0 if ran == want and rel <= 1e-4 else 1)' "$BUILD/ets" "$ROOT/examples/traces/squeezenet-0048.etst.gz" \
    "$ROOT/models/default.etsm" "$GPU_BACKEND"
else
  skip predict_backend "build failed"
fi

# 6. Dataset collector with CUDA activities on the fixed configuration list (2 configs on the CPU in a dry run).
COLLECT=$ROOT/tools/collect/collect.py
if [ ! -f "$COLLECT" ]; then
  skip collect "tools/collect/collect.py is absent"
elif [ $BUILT = 0 ]; then
  skip collect "build failed (the collector labels with the ets tool)"
else
  if [ $DRY = 1 ]; then
    grep -v '^#' "$ROOT/tools/gpu/configs.txt" | head -2 >"$WORK/configs.txt"
    DEVICE=cpu
  else
    # the first 24 of the list fit the budget; the rest are for longer runs (TOTAL_S, or collect.py directly)
    grep -v '^#' "$ROOT/tools/gpu/configs.txt" | head -24 >"$WORK/configs.txt"
    DEVICE=cuda
  fi
  # Resumable: a timeout keeps whatever finished (status "partial"); the import step reports how much that was.
  # Collect leaves 60 s of the budget to the import step.
  COLLECT_CAP=$(( DEADLINE - $(date +%s) - 60 ))
  [ $COLLECT_CAP -gt 200 ] && COLLECT_CAP=200
  [ $COLLECT_CAP -lt 10 ] && COLLECT_CAP=10
  RESUMABLE=1 step collect $COLLECT_CAP "$PY" "$COLLECT" --configs "$WORK/configs.txt" --device $DEVICE --passes 1 \
    --quick --out "$WORK/data" --raw "$WORK/data/raw" --ets "$BUILD/ets"
fi

# 7. Import every collected trace and compare Σ(time+gap) with the ProfilerStep spans.
# shellcheck disable=SC2317  # run through "bash -c" under timeout
inspect_all() {
  : >"$WORK/inspect.jsonl"
  local n=0 bad=0
  # Exactly the passes (find -regex matches the whole path): not the worker's temp files
  # (passN.json.gz.tmpPID.json.gz, possibly cut short when the time cap kills the worker) nor passes moved aside
  # (passN.rejected-*.json.gz, passN.disturbed-*.json.gz).
  while IFS= read -r f; do
    n=$((n + 1))
    if ! "$BUILD/ets" inspect --json "$f" >>"$WORK/inspect.jsonl" 2>>"$LOG"; then
      bad=$((bad + 1))
      echo "{\"path\":\"$f\",\"error\":true}" >>"$WORK/inspect.jsonl"
    fi
  done < <(find "$WORK/data/raw" -type f -regex '.*/pass[0-9]+\.json\.gz' 2>/dev/null | sort)
  echo "inspected $n trace(s), $bad failed to import"  # stdout: step writes it into the log once
  [ $n -gt 0 ] && [ $bad = 0 ]
}
if [ $BUILT = 1 ] && [ -d "$WORK/data/raw" ]; then
  export -f inspect_all
  export WORK BUILD LOG
  step inspect 60 bash -c inspect_all
else
  skip inspect "no collected traces"
fi

# 8. Summary: step statuses plus the figures that matter.
"$PY" - "$WORK" "$DRY" <<'PY' 2>>"$LOG"
import json, os, statistics, sys
out, dry = sys.argv[1], sys.argv[2] == "1"
def load(p):
    try:
        with open(p) as fh:
            return json.load(fh)
    except Exception:
        return None
steps = [json.loads(l) for l in open(os.path.join(out, "steps.jsonl")) if l.strip()]
s = {"dry_run": dry, "steps": steps, "bench": load(os.path.join(out, "bench", "bench.json")),
     "bench_model": load(os.path.join(out, "bench_model", "bench.json")),
     "nvtx_loop": load(os.path.join(out, "nvtx_loop.json"))}
rel, files, iters, errors = [], 0, 0, 0
p = os.path.join(out, "inspect.jsonl")
if os.path.exists(p):
    for line in open(p):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        files += 1
        if r.get("error"):
            errors += 1
            continue
        for it in r.get("iterations", []):
            iters += 1
            m, t = it.get("measured_us"), it.get("sum_us")
            if m and t:
                rel.append(abs(t - m) / m)
s["import"] = {"files": files, "import_errors": errors, "iterations": iters,
               "sum_vs_step_rel_err": None if not rel else {
                   "median": statistics.median(rel), "max": max(rel),
                   "within_5pct": sum(r <= 0.05 for r in rel) / len(rel)}}
with open(os.path.join(out, "summary.json"), "w") as fh:
    json.dump(s, fh, indent=1)
print(json.dumps(s, indent=1))
PY
log "summary: $WORK/summary.json"
exit $FAILED  # (the EXIT trap publishes the summary)
