#!/usr/bin/env python3
# tools/collect/host_check.py: the verdict on synthetic figures (steady, noisy probes, a drift between the probe runs,
# passes that disagree, nothing timed twice), its argument errors, and, with torch, one short real check whose JSON
# agrees with the verdict recomputed from its own figures.
# Usage: host_check_test.py WORK_DIR
import json
import os
import subprocess
import sys

from checks import check, finish, torch_or_none  # tests/cli/checks.py, beside this script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
from tools.collect import host_check as H  # noqa: E402

work = os.path.abspath(sys.argv[1])
os.makedirs(work, exist_ok=True)
TOOL = os.path.join(ROOT, "tools", "collect", "host_check.py")

quiet = {"gemm_ms": [3.30, 3.32, 3.34, 3.35, 3.36, 3.31, 3.33, 3.38, 3.34, 3.35],
         "small_ops_ms": [3.50, 3.52, 3.54, 3.55, 3.56, 3.51, 3.53, 3.58, 3.54, 3.55]}
passes = [{"a": 100.0, "b": 200.0, "c": 50.0, "d": 80.0}, {"a": 101.0, "b": 198.0, "c": 50.5, "d": 80.4}]

v = H.verdict([quiet, quiet], passes)
check(v["steady"] and v["reasons"] == [], f"quiet figures are steady: {v['reasons']}")
check(v["passes"]["configs"] == 4 and abs(v["passes"]["max"] - 2 / 198) < 1e-12 and v["passes"]["worst"] == "b" and
      abs(v["passes"]["median"] - 0.01) < 1e-12,
      f"pass agreement {v['passes']}")
check(abs(v["probes"][0]["gemm_ms"]["median"] - 3.34) < 1e-9, f"probe median {v['probes'][0]['gemm_ms']}")

noisy = dict(quiet, gemm_ms=[3.3, 3.4, 5.0, 6.9, 3.3, 3.5, 7.2, 3.4, 4.1, 3.3])
v = H.verdict([noisy, quiet], passes)
check(not v["steady"] and len(v["reasons"]) == 1 and "probe run 1: gemm_ms spread" in v["reasons"][0],
      f"a noisy GEMM probe: {v['reasons']}")

slower = {k: [x * 1.08 for x in xs] for k, xs in quiet.items()}
v = H.verdict([quiet, slower], passes)
check(not v["steady"] and all("moved +8.0%" in r for r in v["reasons"]) and len(v["reasons"]) == 2,
      f"an 8% drift between the probe runs: {v['reasons']}")
check(H.verdict([quiet, slower], passes, {"max_drift": 0.10})["steady"], "a wider drift limit accepts it")

apart = [passes[0], {"a": 104.0, "b": 208.0, "c": 52.0, "d": 83.2, "e": 1.0}]
v = H.verdict([quiet, quiet], apart)
check(not v["steady"] and v["passes"]["configs"] == 4 and any("at the median" in r for r in v["reasons"]),
      f"passes 4% apart (a configuration timed once left out): {v['reasons']} {v['passes']}")
one_off = [passes[0], dict(passes[1], d=120.0)]
v = H.verdict([quiet, quiet], one_off)
check(not v["steady"] and [r for r in v["reasons"] if "p90" in r] and not [r for r in v["reasons"] if "median" in r],
      f"one configuration 50% off fails p90 only: {v['reasons']}")

v = H.verdict([quiet, quiet], [{"a": 1.0}, {"b": 1.0}])
check(not v["steady"] and v["passes"] is None and "no configuration was timed in both passes" in v["reasons"],
      f"nothing timed twice: {v['reasons']}")
v = H.verdict([{}, quiet], passes)
check(not v["steady"] and any("no gemm_ms figures" in r for r in v["reasons"]), f"empty probe run: {v['reasons']}")
check(H.quantile([5, 1, 3], 0.5) == 3 and H.quantile([5, 1, 3], 0.0) == 1 and H.quantile([5, 1, 3], 1.0) == 5,
      "quantiles of an odd count")
# an even count's median is the mean of the middle two, as the limits and the speed gate (statistics.median) mean it:
# a nearest rank rounded half to even took the lower middle of 14 and the upper of 12
for n in (2, 4, 12, 14, 30):
    xs = list(range(n))
    check(H.quantile(xs, 0.5) == (n - 1) / 2, f"median of {n} values: {H.quantile(xs, 0.5)}")
half = [{f"c{i}": 100.0 for i in range(14)}, {f"c{i}": 101.0 if i < 7 else 106.0 for i in range(14)}]
v = H.verdict([quiet, quiet], half)
check(not v["steady"] and abs(v["passes"]["median"] - 0.035) < 1e-12 and any("at the median" in r for r in v["reasons"]),
      f"14 configurations, half 1% and half 6% apart: median 3.5%, unsteady: {v['passes']} {v['reasons']}")

stat0 = "cpu  100 0 50 800 10 0 5 0 0 0\ncpu0 50 0 25 400 5 0 2 0 0 0\nintr 1\n"
stat1 = "cpu  160 0 60 900 10 0 5 40 0 0\ncpu0 80 0 30 450 5 0 2 20 0 0\n"
c0, c1 = H.cpu_counters(stat0), H.cpu_counters(stat1)
check(c0[:8] == [100, 0, 50, 800, 10, 0, 5, 0] and c1[7] == 40, f"aggregate cpu line parsed: {c0} {c1}")
check(abs(H.steal_share(c0, c1) - 40 / (60 + 10 + 100 + 40)) < 1e-12,
      f"steal share of the ticks between: {H.steal_share(c0, c1)}")
check(H.steal_share(c0, c0) is None and H.steal_share([], c1) is None and H.steal_share(c0[:7], c1) is None and
      H.cpu_counters("intr 1\n") == [] and H.cpu_counters("cpu  1 x\n") == [],
      "no ticks, no reading, no steal column or a garbled line: no figure")

for bad in (["--probes", "2"], ["--ref", "3.3"], ["--ref", "0,1"], ["--configs", os.path.join(work, "missing.txt")]):
    r = subprocess.run([sys.executable, TOOL, *bad], capture_output=True, text=True)
    check(r.returncode == 2 and "error" in r.stderr, f"{bad}: rc {r.returncode} {r.stderr[-200:]}")

torch = torch_or_none()
if torch is not None:
    ids = os.path.join(work, "ids.txt")
    with open(ids, "w") as fh:
        fh.write("# two quick configurations\nmlp-0007\nrandwire_er-0159\n")
    out = os.path.join(work, "check.json")
    r = subprocess.run([sys.executable, TOOL, "--configs", ids, "--probes", "4", "--probe-gap", "0", "--iters", "2",
                        "--ref", "3.34,3.54", "--json", out], capture_output=True, text=True, timeout=600)
    check(r.returncode in (0, 1), f"real check: rc {r.returncode} {r.stdout[-300:]} {r.stderr[-500:]}")
    if r.returncode in (0, 1):
        with open(out) as fh:
            got = json.load(fh)
        runs = got["probes"]
        check(len(runs) == 2 and all(run[k]["n"] == 4 and run[k]["median"] > 0 for run in runs for k in run) and
              all(len(run) == 2 for run in runs), f"two probe runs of 4: {runs}")
        check(sorted(got["per_config"]) == ["mlp-0007", "randwire_er-0159"] and
              all(x > 0 for pair in got["per_config"].values() for x in pair), f"per config {got['per_config']}")
        again = H.verdict([{k: [run[k]["median"]] * 3 for k in run} for run in runs],
                          [{c: p[0] for c, p in got["per_config"].items()},
                           {c: p[1] for c, p in got["per_config"].items()}])
        check(again["passes"] == got["passes"], f"agreement recomputed {again['passes']} vs {got['passes']}")
        check(got["steady"] == (r.returncode == 0) and ("STEADY" in r.stdout) and
              got["environment"].startswith("cpu-") and set(got["ref_ratio"]) == {"gemm_ms", "small_ops_ms"} and
              (got["steal"] is None or (0.0 <= got["steal"] <= 1.0 and "hypervisor steal:" in r.stdout)),
              f"verdict, exit code and report agree: {r.stdout[-400:]}")
finish("host_check: verdicts on synthetic figures" + ("" if torch is None else ", and one real check"))
