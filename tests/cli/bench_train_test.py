#!/usr/bin/env python3
# tools/bench_train.py end to end on the pilot dataset's smallest traces, one short round: every method is timed,
# the kernels each ETS run reports are those ETS_TRAIN_ISA asked for (or fewer, on a CPU without them), the network
# shape is read from an ETS model, and every ratio is its method's median over PyTorch's. Figures are checked
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
                    "--seconds", "2", "--threads", "1", "--isa", "avx2,generic", "--json"],
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
finish()
