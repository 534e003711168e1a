#!/usr/bin/env python3
# tools/bench_train.py end to end on the pilot dataset's smallest traces, one short round: every method is timed,
# the kernels each ETS run reports are those ETS_TRAIN_ISA asked for (or fewer, on a CPU without them), the network
# shape is read from an ETS model, and every ratio is its method's median over PyTorch's. A run of fewer steps than
# --min-steps is flagged (warning, exit 1; one step used to be reported as the method's speed), torch's thread
# settings are recorded, and ETS trains for about --seconds (its budget covers loading too). Figures are checked
# against each other, never against a speed.
# Usage: bench_train_test.py ETS DATA_DIR   (exit 77 = skipped: no torch for /usr/bin/python3)
import json
import os
import subprocess
import sys
import tempfile

from checks import failures, finish, smallest_traces  # tests/cli/checks.py, beside this script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ets, data = sys.argv[1:3]
py = "/usr/bin/python3"
if not os.path.exists(py) or subprocess.run([py, "-c", "import torch"], capture_output=True).returncode != 0:
    print("bench_train: no torch for /usr/bin/python3; skipped")
    sys.exit(77)

# the tool's bookkeeping is under test, not the speed: the 16 smallest train traces (the whole pilot set took 130 s
# under ASan)
tmp = tempfile.TemporaryDirectory(prefix="ets-bench-train-")
data = smallest_traces(data, os.path.join(tmp.name, "data"), {"train": 16})
p = subprocess.run([py, os.path.join(ROOT, "tools", "bench_train.py"), "--ets", ets, "--data", data, "--rounds", "1",
                    "--seconds", "2", "--threads", "1", "--isa", "avx2,generic", "--min-steps", "1", "--json"],
                   capture_output=True, text=True, timeout=600)
if p.returncode != 0:
    failures.append(f"rc {p.returncode}: {p.stderr[-2000:]}")
else:
    r = json.loads(p.stdout)
    med = r["median_windows_per_s"]
    if set(med) != {"torch", "ets-avx2", "ets-generic"}:
        failures.append(f"methods {sorted(med)}")
    if not all(v > 0 for v in med.values()):
        failures.append(f"a method trained nothing: {med}")
    if r["kernels"].get("ets-generic") != "generic" or r["kernels"].get("ets-avx2") not in ("avx2-fma", "generic"):
        failures.append(f"kernels {r['kernels']}")
    for k, v in r["ratio_to_torch"].items():
        if abs(v - med[k] / med["torch"]) > 1e-3 * max(1.0, v):
            failures.append(f"{k}: ratio {v} is not {med[k]} / {med['torch']}")
    if r["features"] < 1 or r["hidden"] != r["features"] or r["layers"] != 4:
        failures.append(f"network shape {r['features']} / {r['hidden']} / {r['layers']}")
    env = r.get("torch_settings", {}).get("env", {})
    if env.get("OPENBLAS_NUM_THREADS") != "1" or env.get("OMP_WAIT_POLICY") != "PASSIVE" or "OPENBLAS_CORETYPE" not in env:
        failures.append(f"torch's thread settings {r.get('torch_settings')}")
    for k, runs in r.get("runs", {}).items():
        if len(runs) != 1 or not runs[0].get("steps", 0) >= 1:
            failures.append(f"{k}: runs {runs}")
        # the budget covers loading and saving: ETS's training itself must get most of --seconds (it trained for
        # 0.2 s of an 8 s budget on the full dataset before)
        elif k.startswith("ets-") and not runs[0]["train_seconds"] >= 1.0:
            failures.append(f"{k} trained {runs[0]['train_seconds']} s of --seconds 2")
    if r.get("warnings"):
        failures.append(f"warnings at --min-steps 1: {r['warnings']}")
# fewer steps than --min-steps: flagged, not reported as a speed in silence
p = subprocess.run([py, os.path.join(ROOT, "tools", "bench_train.py"), "--ets", ets, "--data", data, "--rounds", "1",
                    "--seconds", "0.5", "--threads", "1", "--isa", "generic", "--min-steps", "100000", "--json"],
                   capture_output=True, text=True, timeout=600)
try:
    r = json.loads(p.stdout)
except ValueError:
    r = {}
if p.returncode != 1 or "fewer than --min-steps 100000" not in p.stderr or len(r.get("warnings", [])) != 2:
    failures.append(f"--min-steps 100000: rc {p.returncode}, warnings {r.get('warnings')}, {p.stderr[-1000:]}")

# a failing ets run ends the benchmark with ets's own message (a CalledProcessError traceback hid it), and a missing
# --ets or --data is a usage error before anything runs
empty = os.path.join(tmp.name, "empty")
os.makedirs(os.path.join(empty, "traces", "train"))
tool = os.path.join(ROOT, "tools", "bench_train.py")
q = subprocess.run([py, tool, "--ets", ets, "--data", empty, "--rounds", "1", "--seconds", "1"], capture_output=True,
                   text=True, timeout=300)
if not (q.returncode == 1 and "ets.train.18" in q.stderr and "Traceback" not in q.stderr):
    failures.append(f"a failing ets run: rc {q.returncode} {q.stderr[-500:]}")
for argv, what in ((["--ets", os.path.join(tmp.name, "no-ets"), "--data", data], "--ets"),
                   (["--ets", ets, "--data", os.path.join(tmp.name, "no-data")], "--data")):
    q = subprocess.run([py, tool, *argv, "--rounds", "1", "--seconds", "1"], capture_output=True, text=True, timeout=60)
    if not (q.returncode == 2 and what in q.stderr and "Traceback" not in q.stderr):
        failures.append(f"a missing {what}: rc {q.returncode} {q.stderr[-300:]}")

finish()
