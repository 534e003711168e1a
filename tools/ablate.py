#!/usr/bin/env python3
# Ablations of issue #7: window width × stride, overlap averaging vs the nearest window, and validation MRE against
# training time. Trains one model per (width, stride) with the same whole-command time budget, seed and annealed
# schedule (`ets train --max-minutes M --anneal-to-budget`), so every cell ends at the learning-rate floor however
# far through its data it got. Each cell is scored on the val split (never test: the grid is a tuning choice) with
# both aggregations: overlap mean (the val MRE `ets train` reports for its returned weights) and nearest window.
# Usage: /usr/bin/python3 tools/ablate.py [--ets build/ets] [--data data] [--minutes 5] [--out ablations.json]
#        [--cells 12x4,6x2,...] [--cell lstm|gru] [--split val] [--threads 2]
# Cells of the GRU (--cell gru) are kept as w12_s4_gru, so both cells' results can share one --out file.
# Prints a markdown table for docs/results.md; each cell's JSON is kept in --out so a rerun skips finished cells, but
# only under the same settings (data, budget, split, --threads, the ets binary's SHA-256, ETS_TRAIN_ISA and the CPU's
# kernel instruction sets): a rerun under others is refused.
import argparse
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

from atomic_file import atomic_write  # tools/atomic_file.py, beside this script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the default geometry first, then the rest of {6, 12, 24} × {2, 4, 8} without stride > width (ops between two
# windows would be covered by none)
DEFAULT_CELLS = "12x4,6x2,6x4,12x2,12x8,24x2,24x4,24x8"


def run_json(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise RuntimeError(f"{' '.join(cmd)}: {e}") from e
    if p.returncode != 0:
        # the error (stderr's last line: warnings come before it) first, as the table shows the first line
        lines = p.stderr.strip().splitlines()
        raise RuntimeError(f"{lines[-1] if lines else 'no message'} (rc {p.returncode}: {' '.join(cmd)})\n"
                           + "\n".join(lines[-20:-1]))
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError) as e:
        raise RuntimeError(f"{' '.join(cmd)}: no JSON line on stdout ({e})\n{p.stdout[-500:]}") from e


def parse_cells(text):
    """[(width, stride), ...] from "12x4,6x2"; ValueError naming the bad item otherwise."""
    cells = []
    for item in text.split(","):
        parts = item.strip().lower().split("x")
        try:
            if len(parts) != 2:
                raise ValueError
            w, s = int(parts[0]), int(parts[1])
        except ValueError:
            raise ValueError(f"{item.strip()!r} is not WIDTHxSTRIDE (like 12x4)") from None
        if not (1 <= w <= 4096 and s >= 1):
            raise ValueError(f"{item.strip()!r}: width must be 1..4096 and stride ≥ 1")
        cells.append((w, s))
    return cells


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ets", default=os.path.join(ROOT, "build", "ets"))
    ap.add_argument("--data", default=os.path.join(ROOT, "data"))
    ap.add_argument("--minutes", type=float, default=5.0, help="whole-command budget of each cell's `ets train`")
    ap.add_argument("--cells", default=DEFAULT_CELLS, help="WIDTHxSTRIDE,... in the order they are run")
    ap.add_argument("--split", default="val", help="split the grid is scored on")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--cell", choices=("lstm", "gru"), default="lstm", help="recurrent cell of every trained model")
    ap.add_argument("--out", default="ablations.json")
    a = ap.parse_args()
    try:
        cells = parse_cells(a.cells)
    except ValueError as e:
        ap.error(f"--cells: {e}")
    if not shutil.which(a.ets):
        ap.error(f"--ets {a.ets}: not an executable (build the ets_cli target or pass --ets)")
    if not os.path.isdir(a.data):
        ap.error(f"--data {a.data}: no such folder")
    if not (math.isfinite(a.minutes) and a.minutes > 0) or a.threads < 0:
        ap.error("--minutes must be a finite number > 0 and --threads ≥ 0")
    out_dir = os.path.dirname(os.path.abspath(a.out))
    if not os.path.isdir(out_dir):
        ap.error(f"--out {a.out}: folder {out_dir} does not exist")
    done = {}
    if os.path.exists(a.out):
        try:
            with open(a.out) as fh:
                done = json.load(fh)
        except (OSError, ValueError) as e:
            ap.error(f"--out {a.out} is not a readable resume file ({e}); move it aside or pass another --out")
        if not isinstance(done, dict):
            ap.error(f"--out {a.out} is not a resume file of ablate.py (not a JSON object)")
        # a cell that is not an object (an edited or foreign file) is not a result: it is run again
        done = {k: v for k, v in done.items() if isinstance(v, dict)}
    # A finished cell is reused only under the settings it was scored with: a rerun with another --split, budget or
    # dataset would otherwise print the old figures under the new heading. Every cell trains for a time budget, so
    # what sets how far it gets counts too: the threads, the ets binary and the kernels it picks (from the CPU's
    # instruction sets, capped by ETS_TRAIN_ISA).
    settings = run_settings(a)
    recorded = done.get(SETTINGS)
    finished = [k for k, v in done.items() if k != SETTINGS and isinstance(v, dict)
                and "failed" not in v and "skipped" not in v]
    if recorded is None and finished:
        print(f"ablate: {a.out} records no settings (an older ablate.py); its cells are taken as scored with "
              f"{settings}", file=sys.stderr)
    elif recorded is not None and recorded != settings and finished:
        differ = sorted(k for k in set(recorded) | set(settings) if recorded.get(k) != settings.get(k))
        ap.error(f"--out {a.out} holds cells scored with {recorded}, not {settings} (they differ in "
                 f"{', '.join(differ)}): pass another --out")
    # (failed cells are retried and skipped ones need no settings: a file of only those takes the new settings)
    done[SETTINGS] = settings
    try:  # written now, not after the first cell's whole --minutes of training
        save(a.out, done)
    except OSError as e:
        ap.error(f"--out {a.out}: cannot write it ({e.strerror or e})")
    # the trained models are only scored here, never kept: the folder goes when the run ends, however it ends
    with tempfile.TemporaryDirectory(prefix="ets-ablate-") as models:
        run_cells(a, cells, done, models)
    print_table(a, cells, done)
    # a cell that failed (or never ran) has no figure in the table: a script must not take the grid as complete
    unfinished = [c for c in cells if "failed" in done.get(cell_key(a, *c), {"failed": ""})]
    return 1 if unfinished else 0


SETTINGS = "_settings"  # the resume file's record of the data, budget, split, threads, binary and kernels of its cells
# CPU features that decide which training kernels ets picks (docs/benchmarks.md, "Trainer")
KERNEL_FLAGS = ("avx512f", "avx512dq", "avx512vl", "avx512bw", "avx2", "fma")


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cpu_kernel_flags():
    """The instruction sets among KERNEL_FLAGS this CPU has (from /proc/cpuinfo; None where it cannot be read)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    have = set(line.split(":", 1)[1].split())
                    return [f for f in KERNEL_FLAGS if f in have]
    except OSError:
        pass
    return None


def run_settings(a):
    """What a cell's figures depend on besides its width and stride."""
    return {"data": os.path.abspath(a.data), "minutes": a.minutes, "split": a.split, "threads": a.threads,
            "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "ets_sha256": file_sha256(shutil.which(a.ets)), "ets_train_isa": os.environ.get("ETS_TRAIN_ISA"),
            "cpu_kernel_flags": cpu_kernel_flags()}


def cell_key(a, w, s):
    return f"w{w}_s{s}" + ("_gru" if a.cell == "gru" else "")


def run_cells(a, cells, done, models):
    for w, s in cells:
        key = cell_key(a, w, s)
        if key in done and "failed" not in done[key]:  # a failed cell is tried again on the next run
            continue
        if s > w:
            done[key] = {"width": w, "stride": s, "skipped": "stride > width leaves ops uncovered"}
            continue
        model = os.path.join(models, key + ".etsm")
        print(f"ablate: training {key} ({a.minutes} min) ...", file=sys.stderr, flush=True)
        t0 = time.time()
        try:
            tr = run_json([a.ets, "train", "--data", a.data, "--out", model, "--width", str(w), "--stride", str(s),
                           "--max-minutes", str(a.minutes), "--anneal-to-budget", "--threads", str(a.threads),
                           "--cell", a.cell, "--quiet", "--json"])
        except RuntimeError as e:  # e.g. killed for memory: keep the reason, go on with the other cells
            print(f"ablate: {key} failed: {str(e)[:300]}", file=sys.stderr, flush=True)
            done[key] = {"width": w, "stride": s, "failed": str(e)[:500], "train_wall_s": time.time() - t0}
            save(a.out, done)
            continue
        cell = {"width": w, "stride": s, "train": tr, "train_wall_s": time.time() - t0}
        if a.split == "val" and not (isinstance(tr.get("val_mre"), (int, float)) and tr["val_mre"] >= 0):
            # null: validation diverged; -1: nothing was validated. Either way no figure for the table.
            done[key] = {"width": w, "stride": s, "train": tr, "train_wall_s": cell["train_wall_s"],
                         "failed": f"no validation MRE (val_mre {tr.get('val_mre')})"}
            save(a.out, done)
            continue
        try:
            if a.split == "val":
                cell["mean"] = {"mre": tr["val_mre"]}
            else:
                cell["mean"] = run_json([a.ets, "eval", "--model", model, "--data", a.data, "--split", a.split,
                                         "--json", "--aggregate", "mean",
                                         "--threads", str(a.threads)])["methods"]["ets"]
            t0 = time.time()
            cell["nearest"] = run_json([a.ets, "eval", "--model", model, "--data", a.data, "--split", a.split,
                                        "--json", "--aggregate", "nearest",
                                        "--threads", str(a.threads)])["methods"]["ets"]
        except (RuntimeError, KeyError, TypeError) as e:
            print(f"ablate: {key} eval failed: {str(e)[:300]}", file=sys.stderr, flush=True)
            done[key] = {**cell, "failed": f"eval: {str(e)[:500]}"}
            save(a.out, done)
            continue
        cell["eval_wall_s"] = time.time() - t0
        cell["cell"] = a.cell
        done[key] = cell
        save(a.out, done)
        print(f"ablate: {key} {a.split} MRE mean {100 * cell['mean']['mre']:.2f}% nearest "
              f"{100 * cell['nearest']['mre']:.2f}%", file=sys.stderr, flush=True)


def save(path, done):
    """The resume file after every cell: a cut write leaves the previous one whole."""
    atomic_write(path, json.dumps(done, indent=1))


def print_table(a, cells, done):
    print(f"| width | stride | train windows | epochs trained | {a.split} MRE, overlap mean | "
          f"{a.split} MRE, nearest window | train wall s |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for w, s in cells:
        c = done.get(cell_key(a, w, s))
        if not c or "skipped" in c or "failed" in c:
            # the error comes first in the message, the command after " (rc ": show the error
            first = c["failed"].strip().splitlines()[0].split(" (rc ")[0] if c and "failed" in c else ""
            why = "not run" if not c else c.get("skipped") or "failed: " + first[:80]
            print(f"| {w} | {s} | – | – | – ({why}) | – | – |")
            continue
        t = c["train"]
        epochs = t.get("steps", 0) * t.get("batch", 0) / max(1, t["train_windows"])
        print(f"| {w} | {s} | {t['train_windows']:,} | {epochs:.2f} | "
              f"{100 * c['mean']['mre']:.2f}% | {100 * c['nearest']['mre']:.2f}% | {t.get('wall_seconds', 0):.0f} |")


if __name__ == "__main__":
    sys.exit(main())
