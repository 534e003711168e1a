# Import-throughput benchmark: ETS's Kineto reader (bench/import_throughput.cpp) vs Python's json.loads, same bytes.
# Usage: python3 tools/bench_import.py [--bench build/ets_bench_import] [--trace FILE] [--repeats 5]
"""Runs the C++ Kineto import on the largest shared trace (uncompressed JSON held in memory, one core) and
json.loads on the same bytes in the same run; prints MB/s of both and their ratio (one JSON line with --json).

Each pass runs ets_bench_import once (3 parses in one process) and json.loads once. Fields:
  ets_median_mb_per_s          median over passes of each pass's median parse (the first parse of a process pays
                               page faults; the median of 3 leaves it out)
  ets_best_mb_per_s            the fastest single ETS parse of the run (the C++ tool's best_mb_per_s, best over passes)
  python_json_median_mb_per_s  median over passes of json.loads (one parse a pass)
  python_json_best_mb_per_s    the fastest single json.loads of the run
  ratio_of_medians             ets_median_mb_per_s / python_json_median_mb_per_s
"""
import argparse
import gc
import glob
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def largest_trace(shared: str) -> str:
    best, best_size = None, -1
    for f in glob.glob(os.path.join(shared, "kineto-gpu", "**", "*.json.gz"), recursive=True):
        with open(f, "rb") as fh:  # gzip ISIZE trailer: uncompressed size mod 2^32
            fh.seek(-4, os.SEEK_END)
            size = int.from_bytes(fh.read(4), "little")
        with gzip.open(f, "rb") as fh:
            head = fh.read(1 << 16)
        if b'"traceEvents"' in head and size > best_size:
            best, best_size = f, size
    if best is None:
        sys.exit("no Kineto trace under " + shared)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default=None, help="ets_bench_import executable (default: newest build*/bench/ets_bench_import)")
    ap.add_argument("--trace", default=None)
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared", "data"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=None, help="pin both to this core (taskset)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.repeats < 1:
        ap.error("--repeats needs at least 1")
    bench = a.bench
    if bench is None:
        cands = sorted(glob.glob(os.path.join(ROOT, "build*", "bench", "ets_bench_import")) + glob.glob(os.path.join(ROOT, "build*", "ets_bench_import")), key=os.path.getmtime)
        if not cands:
            sys.exit("build the ets_bench_import target first (or pass --bench)")
        bench = cands[-1]
    if not os.access(bench, os.X_OK):
        sys.exit(f"bench_import: {bench} is not an executable")
    if a.trace and not os.path.isfile(a.trace):
        ap.error(f"--trace {a.trace}: no such file")
    trace = a.trace or largest_trace(a.shared)
    opener = gzip.open if trace.endswith(".gz") else open
    try:
        with opener(trace, "rb") as fh:
            data = fh.read()
        data.decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as e:
        ap.error(f"--trace {trace}: not a readable JSON trace ({e})")
    if a.cpu is not None and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, {a.cpu})
        except (OSError, ValueError, OverflowError) as e:
            ap.error(f"--cpu {a.cpu}: not a core this process may run on ({getattr(e, 'strerror', None) or e})")
    text = data.decode("utf-8")
    mb = len(data) / 1e6
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        tmp.write(data)
        plain = tmp.name
    # Interleaved passes (ETS, then json.loads, repeats times), so machine load hits both alike; the ratio is of the
    # medians. json.loads is timed as timeit does: collector off, the result freed after the timer stops.
    ets_mbs, ets_best, py_mbs, cpp = [], [], [], None
    try:
        for _ in range(a.repeats):
            cmd = [bench, plain, "3"]  # a warm median within the pass: the first parse of a process pays page faults
            if a.cpu is not None:
                cmd = ["taskset", "-c", str(a.cpu)] + cmd
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"bench_import: {' '.join(cmd)} failed with {r.returncode}:\n{r.stderr}")
            cpp = json.loads(r.stdout.strip().splitlines()[-1])
            ets_mbs.append(cpp["median_mb_per_s"])
            ets_best.append(cpp["best_mb_per_s"])  # its fastest parse: json.loads's best is a single parse too
            gc.disable()
            try:
                t0 = time.perf_counter()
                obj = json.loads(text)
                dt = time.perf_counter() - t0
            finally:
                gc.enable()
            del obj
            py_mbs.append(mb / dt)
    finally:
        os.unlink(plain)
    med = statistics.median
    res = {
        "trace": os.path.basename(trace),
        "mb": round(mb, 2),
        "passes": a.repeats,
        "ets_median_mb_per_s": round(med(ets_mbs), 1),
        "ets_best_mb_per_s": round(max(ets_best), 1),
        "python_json_median_mb_per_s": round(med(py_mbs), 1),
        "python_json_best_mb_per_s": round(max(py_mbs), 1),
        "ratio_of_medians": round(med(ets_mbs) / med(py_mbs), 2),
        "iterations": cpp["iterations"],
        "ops": cpp["ops"],
    }
    if a.json:
        print(json.dumps(res))
    else:
        print(f"{res['trace']}: {res['mb']} MB uncompressed, {res['iterations']} iterations, {res['ops']} ops, "
              f"{a.repeats} interleaved passes")
        print(f"  ETS Kineto import (parse + assembly): {res['ets_median_mb_per_s']} MB/s median, "
              f"{res['ets_best_mb_per_s']} best")
        print(f"  Python json.loads (parse only):       {res['python_json_median_mb_per_s']} MB/s median, "
              f"{res['python_json_best_mb_per_s']} best")
        print(f"  ratio of medians ETS / json.loads: {res['ratio_of_medians']}x")


if __name__ == "__main__":
    main()
