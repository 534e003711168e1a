#!/usr/bin/python3
# How the machine's own speed moved while a collection ran, from the speed probe every pass records (worker.py's
# speed_probe: a fixed GEMM loop and 2,000 tiny tensor ops, timed before the config's iterations). Labels taken while
# the host ran slow are slow labels; the median over passes does not repair a spell that lasts longer than a block.
"""Speed-probe drift of a collection.

    /usr/bin/python3 tools/collect/drift.py --data OUT                      # probe medians per 10 minutes
    /usr/bin/python3 tools/collect/drift.py --data OUT --retest OUT-retest  # and the retest's speed against them

Reads OUT/raw/<config>/pass<N>.status.json (local-only, written by collect.py). Each time bin's median probe is
compared with the median of the whole collection; bins beyond --threshold are printed as `collect.py --invalidate`
windows, so their passes can be set aside and collected again once the machine is back to its usual speed. With
--retest, the same probes (and the unprofiled warm-up iterations) of each re-collected configuration are compared
with its first collection: a test–retest MRE taken while the machine ran at another speed measures the machine.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
from tools.collect.card import pass_statuses, unprofiled_ms  # noqa: E402
from tools.collect.env import SPEED_PROBES as PROBES, pass_probe  # noqa: E402


def passes(data: str) -> list:
    """Every successful pass with a speed probe: {config, pass, t (finish, unix s), gemm_ms, small_ops_ms, warmup_ms
    (its unprofiled iteration, card.unprofiled_ms)}."""
    out = []
    for path, st in pass_statuses(data):
        probe = pass_probe(st)
        if probe is None:
            continue
        out.append({"config": st.get("config") or os.path.basename(os.path.dirname(path)), "pass": st.get("pass"),
                    "t": float(st.get("finished_unix", 0.0)), **probe,
                    "warmup_ms": unprofiled_ms(st)})
    out.sort(key=lambda p: p["t"])
    return out


def bins(rows: list, minutes: float, threshold: float) -> dict:
    """Probe medians per time bin, relative to the whole collection's medians (rows: passes(), not empty); bins
    beyond threshold are drifted."""
    ref = {k: statistics.median(r[k] for r in rows) for k in PROBES}
    width = 60.0 * minutes
    t0 = rows[0]["t"]
    grouped: dict = {}
    for r in rows:
        grouped.setdefault(int((r["t"] - t0) // width), []).append(r)
    out = []
    for k in sorted(grouped):
        g = grouped[k]
        b = {"start": t0 + k * width, "end": t0 + (k + 1) * width, "passes": len(g)}
        for p in PROBES:
            b[p] = statistics.median(r[p] for r in g)
            b[p + "_rel"] = b[p] / ref[p] - 1.0
        b["drifted"] = any(abs(b[p + "_rel"]) > threshold for p in PROBES)
        out.append(b)
    # adjacent drifted bins make one window: that is what --invalidate takes
    windows = []
    for b in out:
        if not b["drifted"]:
            continue
        if windows and windows[-1][1] == b["start"]:  # the next bin: both are t0 + (k + 1) * width
            windows[-1][1] = b["end"]
        else:
            windows.append([b["start"], b["end"]])
    return {"reference": ref, "bins": out, "drifted": windows}


def retest_ratios(first: list, again: list) -> dict:
    """Median over re-collected configurations of (retest / first) for each probe and the unprofiled iteration."""
    def per_config(rows):
        by: dict = {}
        for r in rows:
            by.setdefault(r["config"], []).append(r)
        return by
    a, b = per_config(first), per_config(again)
    common = sorted(set(a) & set(b))
    out = {"n": len(common)}
    for k in (*PROBES, "warmup_ms"):
        ratios = []
        for c in common:
            x = [r[k] for r in a[c] if r[k]]
            y = [r[k] for r in b[c] if r[k]]
            if x and y:
                ratios.append(statistics.median(y) / statistics.median(x))
        out[k] = statistics.median(ratios) if ratios else None
    return out


def _hm(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M", time.localtime(t))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="collection folder (collect.py --out) with raw/")
    ap.add_argument("--retest", default="", help="a re-collection of some of its configs (same layout)")
    ap.add_argument("--minutes", type=float, default=10.0, help="time bin width (default 10)")
    ap.add_argument("--threshold", type=float, default=0.05,
                    help="a bin whose median probe lies further than this from the collection's is drifted (default 0.05)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args(argv)
    if a.minutes <= 0 or a.threshold <= 0:
        ap.error("--minutes and --threshold must be > 0")
    rows = passes(a.data)
    if not rows:
        print(f"drift.py: --data {a.data}: no pass with a speed probe under raw/*/pass*.status.json", file=sys.stderr)
        return 2
    rep = bins(rows, a.minutes, a.threshold)
    if a.retest:
        again = passes(a.retest)
        if not again:
            print(f"drift.py: --retest {a.retest}: no pass with a speed probe", file=sys.stderr)
            return 2
        rep["retest"] = retest_ratios(rows, again)
    if a.json:
        print(json.dumps(rep, indent=1, sort_keys=True))
        return 0
    ref = rep["reference"]
    print(f"{len(rows)} passes; collection medians: GEMM probe {ref['gemm_ms']:.3f} ms, "
          f"small-ops probe {ref['small_ops_ms']:.3f} ms")
    print(f"{'from':<17} {'passes':>6} {'gemm ms':>8} {'vs all':>7} {'small ms':>8} {'vs all':>7}")
    for b in rep["bins"]:
        print(f"{_hm(b['start']):<17} {b['passes']:>6} {b['gemm_ms']:>8.3f} {100 * b['gemm_ms_rel']:>+6.1f}% "
              f"{b['small_ops_ms']:>8.3f} {100 * b['small_ops_ms_rel']:>+6.1f}%{'  drifted' if b['drifted'] else ''}")
    for w in rep["drifted"]:
        print(f"drifted window: collect.py --out {a.data} --invalidate {_hm(w[0])},{_hm(w[1] + 60)}")
    # the same medians as the collector's speed gate takes them: more of this collection at its own speed
    print(f"speed reference: collect.py --speed-ref {ref['gemm_ms']:.5g},{ref['small_ops_ms']:.5g}")
    if "retest" in rep:
        r = rep["retest"]
        fmt = lambda v: "n/a" if v is None else f"{100 * (v - 1):+.1f}%"  # noqa: E731
        print(f"retest vs first collection over {r['n']} configs (median of retest / first): GEMM probe "
              f"{fmt(r['gemm_ms'])}, small-ops probe {fmt(r['small_ops_ms'])}, unprofiled iteration "
              f"{fmt(r['warmup_ms'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
