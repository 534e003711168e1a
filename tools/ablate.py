#!/usr/bin/env python3
# Ablations of issue #7: window width × stride, overlap averaging vs the nearest window, training time to
# convergence. Trains one model per (width, stride) with the same budget and seed, evaluates each on the val split
# (never test: the grid is a tuning choice) and, for the default geometry, both aggregation modes on test too.
# Usage: /usr/bin/python3 tools/ablate.py [--ets build/ets] [--data data] [--minutes 5] [--out ablations.json]
#        [--widths 6,12,24] [--strides 2,4,8] [--split val]
# Prints a markdown table for docs/results.md; each cell's JSON is kept in --out so a rerun skips finished cells.
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_json(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: rc {p.returncode}\n{p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ets", default=os.path.join(ROOT, "build", "ets"))
    ap.add_argument("--data", default=os.path.join(ROOT, "data"))
    ap.add_argument("--minutes", type=float, default=5.0, help="training budget per cell")
    ap.add_argument("--widths", default="6,12,24")
    ap.add_argument("--strides", default="2,4,8")
    ap.add_argument("--split", default="val", help="split the grid is scored on")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--out", default="ablations.json")
    a = ap.parse_args()
    done = json.load(open(a.out)) if os.path.exists(a.out) else {}
    models = tempfile.mkdtemp(prefix="ets-ablate-")
    widths = [int(x) for x in a.widths.split(",")]
    strides = [int(x) for x in a.strides.split(",")]
    for w in widths:
        for s in strides:
            key = f"w{w}_s{s}"
            if key in done:
                continue
            if s > w:  # ops between windows would be covered by none
                done[key] = {"width": w, "stride": s, "skipped": "stride > width leaves ops uncovered"}
                continue
            model = os.path.join(models, key + ".etsm")
            print(f"ablate: training {key} ({a.minutes} min) ...", file=sys.stderr, flush=True)
            tr = run_json([a.ets, "train", "--data", a.data, "--out", model, "--width", str(w), "--stride", str(s),
                           "--max-minutes", str(a.minutes), "--threads", str(a.threads), "--quiet", "--json"])
            cell = {"width": w, "stride": s, "train": tr}
            for agg in ("mean", "nearest"):
                ev = run_json([a.ets, "eval", "--model", model, "--data", a.data, "--split", a.split, "--json",
                               "--aggregate", agg, "--threads", str(a.threads)])
                cell[agg] = ev["methods"]["ets"]
            done[key] = cell
            json.dump(done, open(a.out, "w"), indent=1)
    print(f"| width | stride | {a.split} MRE (overlap mean) | {a.split} MRE (nearest window) | epochs (best) | "
          "training s | ≈ s to best epoch |")
    print("|---:|---:|---:|---:|---|---:|---:|")
    for w in widths:
        for s in strides:
            c = done.get(f"w{w}_s{s}")
            if not c or "skipped" in c:
                print(f"| {w} | {s} | – | – | – | – | – |")
                continue
            t = c["train"]
            to_best = t["seconds"] * (t["best_epoch"] + 1) / max(1, t["epochs"])
            print(f"| {w} | {s} | {100 * c['mean']['mre']:.2f}% | {100 * c['nearest']['mre']:.2f}% | "
                  f"{t['epochs']} ({t['best_epoch'] + 1}) | {t['seconds']:.0f} | {to_best:.0f} |")


if __name__ == "__main__":
    main()
