#!/usr/bin/python3
# Is this machine steady enough to take labels on? A few minutes' check before a collection of hours (docs/dataset.md,
# "Check the host first"): the sessions of 2026-12-02 spent 20 minutes to 2 hours each finding that out by collecting.
"""Check that this machine times steadily enough for a dataset collection.

    /usr/bin/python3 tools/collect/host_check.py [--json OUT] [--ref GEMM_MS,SMALL_OPS_MS]

Each part runs in a fresh process with the collector's environment (one thread, denormals flushed, the OpenBLAS core):

1. speed probes: --probes runs of the worker's probe (a 192³ GEMM loop, 2,000 small tensor ops), --probe-gap s apart;
2. two passes over --configs (default tools/collect/pilot_configs.txt, one or two configurations per domain), each
   in its own process over its own shuffled order: build, one warm-up, then the median of --iters unprofiled
   training iterations;
3. the probes again.

The host is "steady" (exit 0) when, in both probe runs, each probe's spread (p90 / p10 - 1) is at most --max-spread,
the two runs' medians agree within --max-drift, and the two passes agree per configuration (max / min - 1) within
--max-disagree at the median and --max-disagree-p90 at p90; otherwise "unsteady" (exit 1), with the reasons.
Exit 2: the check could not run (no torch, no configuration timed twice). --ref prints the probe medians as ratios
to a reference host's (the quiet Xeon of 2026-12-01: 3.34,3.54). It also reports the hypervisor's steal share
over the check (from /proc/stat; a figure, not a limit): a host can be unsteady with little steal.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tools.collect import env as E  # noqa: E402  (no torch import at module level)

LIMITS = {"max_spread": 0.10, "max_drift": 0.05, "max_disagree": 0.03, "max_disagree_p90": 0.08}


def quantile(xs, q: float) -> float:
    """Quantile q in [0, 1] of a non-empty list, interpolated between the order statistics at q·(n−1) (as card.py's
    quantiles and numpy's default): 0.5 is the median the limits and the collector's speed gate speak of, the mean of
    the two middle values for an even count. (A nearest rank rounded half to even took the lower middle for 14
    configurations and the upper for 12.)"""
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def spread(xs) -> float:
    """p90 / p10 - 1: how far a probe's fast and slow runs lie apart, ignoring one outlier in ten."""
    lo = quantile(xs, 0.10)
    return quantile(xs, 0.90) / lo - 1.0 if lo > 0 else float("inf")


def verdict(probes: list, passes: list, limits: dict | None = None) -> dict:
    """The check's figures and verdict. probes: two {probe: [ms, ...]} runs; passes: two {config: ms} passes (a
    configuration missing from either is left out). Pure: no torch, no clock."""
    lim = dict(LIMITS, **(limits or {}))
    reasons = []
    runs = []
    for i, run in enumerate(probes):
        r = {}
        for k in E.SPEED_PROBES:
            xs = [x for x in run.get(k, []) if x > 0]
            if not xs:
                reasons.append(f"probe run {i + 1}: no {k} figures")
                continue
            r[k] = {"median": quantile(xs, 0.5), "p10": quantile(xs, 0.1), "p90": quantile(xs, 0.9),
                    "max": max(xs), "n": len(xs), "spread": spread(xs)}
            if r[k]["spread"] > lim["max_spread"]:
                reasons.append(f"probe run {i + 1}: {k} spread {r[k]['spread']:.1%} > {lim['max_spread']:.0%}")
        runs.append(r)
    drift = {}
    if len(runs) == 2:
        for k in E.SPEED_PROBES:
            if k in runs[0] and k in runs[1]:
                drift[k] = runs[1][k]["median"] / runs[0][k]["median"] - 1.0
                if abs(drift[k]) > lim["max_drift"]:
                    reasons.append(f"{k} median moved {drift[k]:+.1%} between the probe runs (> {lim['max_drift']:.0%})")
    common = sorted(set(passes[0]) & set(passes[1])) if len(passes) == 2 else []
    dis = {c: max(passes[0][c], passes[1][c]) / min(passes[0][c], passes[1][c]) - 1.0 for c in common
           if passes[0][c] > 0 and passes[1][c] > 0}
    agree = None
    if dis:
        agree = {"configs": len(dis), "median": quantile(list(dis.values()), 0.5),
                 "p90": quantile(list(dis.values()), 0.9), "max": max(dis.values()),
                 "worst": max(dis, key=dis.get)}
        if agree["median"] > lim["max_disagree"]:
            reasons.append(f"passes disagree by {agree['median']:.1%} at the median (> {lim['max_disagree']:.0%})")
        if agree["p90"] > lim["max_disagree_p90"]:
            reasons.append(f"passes disagree by {agree['p90']:.1%} at p90 (> {lim['max_disagree_p90']:.0%})")
    else:
        reasons.append("no configuration was timed in both passes")
    return {"steady": not reasons, "reasons": reasons, "limits": lim, "probes": runs, "probe_drift": drift,
            "passes": agree, "per_config": {c: [passes[0][c], passes[1][c]] for c in common}}


def cpu_counters(text: str) -> list:
    """The aggregate "cpu" line of /proc/stat as a list of tick counts (user nice system idle iowait irq softirq
    steal ...); [] when the text has none."""
    for ln in text.splitlines():
        f = ln.split()
        if f and f[0] == "cpu":
            try:
                return [int(x) for x in f[1:]]
            except ValueError:
                return []
    return []


def steal_share(before: list, after: list):
    """The share of all CPU ticks between two cpu_counters() readings that the hypervisor stole (the VM's vCPUs were
    runnable but the host ran something else); None when either reading lacks a steal column or no tick passed.
    It tells the two kinds of unsteadiness apart: time taken away (steal) and the CPU running slower while it runs
    (neighbours' cache and memory traffic, clock changes), which steal does not show (docs/results.md)."""
    if len(before) < 8 or len(after) < 8:
        return None
    d = [a - b for a, b in zip(after[:8], before[:8])]
    total = sum(d)
    return d[7] / total if total > 0 else None


def _read_cpu_counters() -> list:
    try:
        with open("/proc/stat") as fh:
            return cpu_counters(fh.read())
    except OSError:
        return []


# ---- child processes (torch imported only here, after the environment is fixed) ----

def _child_probes(n: int, gap: float) -> dict:
    E.prepare_process("cpu")
    import torch
    E.configure_torch("cpu")
    from tools.collect.worker import speed_probe
    out = {k: [] for k in E.SPEED_PROBES}
    for i in range(n):
        if i:
            time.sleep(gap)
        r = speed_probe(torch)
        for k in E.SPEED_PROBES:
            out[k].append(r[k])
    return out


def _child_pass(ids: list, seed: int, iters: int, max_iter_s: float) -> dict:
    E.prepare_process("cpu")
    import torch
    E.configure_torch("cpu")
    from tools.collect.configs import config
    from tools.collect.zoo import FAMILIES, make_optimizer
    order = list(ids)
    random.Random(seed).shuffle(order)
    out = {}
    for cid in order:
        try:
            cfg = config(cid)
            torch.manual_seed(cfg["seed"])
            w = FAMILIES[cfg["family"]].build(torch, cfg["knobs"])
            model = w.model.train()
            opt = make_optimizer(torch, model.parameters(), cfg["knobs"])

            def step():
                opt.zero_grad(set_to_none=True)
                w.loss(model(*w.inputs), w.target).backward()
                opt.step()

            t = time.perf_counter()
            step()  # warm-up: first-call allocations and one-time dispatch
            if time.perf_counter() - t > max_iter_s:
                continue
            times = []
            for _ in range(iters):
                t = time.perf_counter()
                step()
                times.append(time.perf_counter() - t)
            out[cid] = 1e3 * sorted(times)[len(times) // 2]
        except Exception as e:  # a broken configuration is left out, not fatal
            print(f"host_check: {cid}: {type(e).__name__}: {e}", file=sys.stderr)
    return out


def _run_child(args: list) -> dict:
    r = subprocess.run([sys.executable, os.path.abspath(__file__), *args], capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0:
        raise RuntimeError(f"child {' '.join(args[:2])} failed (rc {r.returncode}): {r.stderr.strip()[-500:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _read_ids(path: str) -> list:
    with open(path) as fh:
        return [ln.split("#")[0].strip() for ln in fh if ln.split("#")[0].strip()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", default=os.path.join(HERE, "pilot_configs.txt"),
                    help="file with one configuration id per line (default: the pilot list)")
    ap.add_argument("--probes", type=int, default=30, help="probe runs per probe process (default 30)")
    ap.add_argument("--probe-gap", type=float, default=1.0, help="seconds between probe runs (default 1)")
    ap.add_argument("--iters", type=int, default=3, help="timed iterations per configuration and pass (default 3)")
    ap.add_argument("--max-iter-s", type=float, default=2.0, help="leave out configurations slower than this")
    ap.add_argument("--max-spread", type=float, default=LIMITS["max_spread"])
    ap.add_argument("--max-drift", type=float, default=LIMITS["max_drift"])
    ap.add_argument("--max-disagree", type=float, default=LIMITS["max_disagree"])
    ap.add_argument("--max-disagree-p90", type=float, default=LIMITS["max_disagree_p90"])
    ap.add_argument("--ref", default="", metavar="GEMM_MS,SMALL_OPS_MS", help="a reference host's probe medians")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default="", help="also write the figures and verdict to this file")
    ap.add_argument("--child", choices=["probes", "pass"], help=argparse.SUPPRESS)
    ap.add_argument("--ids", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child == "probes":
        print(json.dumps(_child_probes(args.probes, args.probe_gap)))
        return 0
    if args.child == "pass":
        print(json.dumps(_child_pass(args.ids.split(","), args.seed, args.iters, args.max_iter_s)))
        return 0

    if args.probes < 3 or args.iters < 1 or args.probe_gap < 0:
        ap.error("--probes must be >= 3, --iters >= 1, --probe-gap >= 0")
    ref = None
    if args.ref:
        try:
            ref = [float(x) for x in args.ref.split(",")]
        except ValueError:
            ref = []
        if len(ref) != len(E.SPEED_PROBES) or not all(x > 0 for x in ref):
            ap.error("--ref takes GEMM_MS,SMALL_OPS_MS, two positive numbers")
    try:
        ids = _read_ids(args.configs)
    except OSError as e:
        ap.error(f"--configs: {e}")
    if not ids:
        ap.error(f"--configs {args.configs}: no configuration ids")
    try:
        import importlib.util
        if importlib.util.find_spec("torch") is None:
            print("host_check: torch is not installed (run it with Debian's /usr/bin/python3)", file=sys.stderr)
            return 2
        t0 = time.time()
        counters0 = _read_cpu_counters()
        probe_args = ["--child", "probes", "--probes", str(args.probes), "--probe-gap", str(args.probe_gap)]
        pass_args = ["--child", "pass", "--ids", ",".join(ids), "--iters", str(args.iters),
                     "--max-iter-s", str(args.max_iter_s)]
        def say(what):  # the check is silent for a minute and more otherwise
            print(f"host_check: {what} ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)

        say(f"speed probes, {args.probes} runs")
        probes = [_run_child(probe_args)]
        passes = []
        for i in range(2):
            say(f"pass {i + 1} over {len(ids)} configurations")
            passes.append(_run_child(pass_args + ["--seed", str(args.seed * 2 + i)]))
        say("speed probes again")
        probes.append(_run_child(probe_args))
        counters1 = _read_cpu_counters()
    except (RuntimeError, ValueError, OSError) as e:
        print(f"host_check: {e}", file=sys.stderr)
        return 2
    v = verdict(probes, passes, {k: getattr(args, k) for k in LIMITS})
    v["environment"] = _environment()
    v["seconds"] = round(time.time() - t0, 1)
    v["steal"] = steal_share(counters0, counters1)
    if ref:
        v["ref"] = dict(zip(E.SPEED_PROBES, ref))
        v["ref_ratio"] = {k: run[k]["median"] / r for k, r in zip(E.SPEED_PROBES, ref) for run in v["probes"][:1]
                          if k in run}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(v, fh, indent=1, sort_keys=True)
    _print(v)
    if not v["passes"]:
        return 2
    return 0 if v["steady"] else 1


def _environment() -> str:
    try:
        return f"cpu-{E.cpu_slug()}-1t"  # the collector's id (env.environment_record) at one thread
    except Exception:
        return ""


def _print(v: dict) -> None:
    for i, run in enumerate(v["probes"]):
        parts = [f"{k} median {r['median']:.2f} ms, p10–p90 {r['p10']:.2f}–{r['p90']:.2f} (spread {r['spread']:.1%}),"
                 f" max {r['max']:.2f}" for k, r in run.items()]
        print(f"probes {i + 1}: " + "; ".join(parts))
    if v["probe_drift"]:
        print("probe medians moved " + ", ".join(f"{k} {d:+.1%}" for k, d in v["probe_drift"].items()))
    if v.get("ref_ratio"):
        print("against the reference host: " + ", ".join(f"{k} {x:.2f}x" for k, x in v["ref_ratio"].items()))
    a = v["passes"]
    if a:
        print(f"two passes over {a['configs']} configurations disagree by {a['median']:.1%} at the median, "
              f"{a['p90']:.1%} at p90, {a['max']:.1%} at most ({a['worst']})")
    if v.get("steal") is not None:
        print(f"hypervisor steal: {v['steal']:.1%} of all CPU time during the check")
    print(f"{v.get('environment') or 'this host'}: {'STEADY' if v['steady'] else 'UNSTEADY'} "
          f"({v.get('seconds', 0):.0f} s)" + ("" if v["steady"] else ": " + "; ".join(v["reasons"])))


if __name__ == "__main__":
    sys.exit(main())
