#!/usr/bin/env python3
# tools/bench_import.py's bookkeeping, with a stand-in for ets_bench_import that reports fixed figures: ETS's "best"
# is the fastest single parse (the C++ tool's best_mb_per_s), as json.loads's best is a single parse; it used to be
# the best of the per-pass medians while best_mb_per_s was read and dropped. The median and ratio fields keep their
# meanings. Speed is never checked.
# Usage: bench_import_test.py WORK_DIR
import json
import os
import stat
import subprocess
import sys

from checks import check, finish  # tests/cli/checks.py, beside this script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
work = sys.argv[1]
os.makedirs(work, exist_ok=True)
trace = os.path.join(work, "tiny.json")
with open(trace, "w") as fh:
    json.dump({"traceEvents": [{"ph": "X", "name": "op", "ts": i, "dur": 1} for i in range(1000)]}, fh)
fake = os.path.join(work, "fake_bench_import")
with open(fake, "w") as fh:  # medians 500 MB/s, fastest parse 900 MB/s, in every pass
    fh.write("#!/bin/sh\necho '{\"best_mb_per_s\": 900.0, \"median_mb_per_s\": 500.0, \"iterations\": 1, \"ops\": 7}'\n")
os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "bench_import.py"), "--bench", fake, "--trace", trace,
                    "--repeats", "3", "--json"], capture_output=True, text=True, timeout=120)
try:
    r = json.loads(p.stdout)
except ValueError:
    r = {}
check(p.returncode == 0 and r.get("ets_best_mb_per_s") == 900.0 and r.get("ets_median_mb_per_s") == 500.0
      and r.get("passes") == 3 and r.get("ops") == 7, f"rc {p.returncode} {r} {p.stderr[-500:]}")
if r:
    check(r["python_json_best_mb_per_s"] >= r["python_json_median_mb_per_s"] > 0, f"json.loads figures {r}")
    check(abs(r["ratio_of_medians"] - 500.0 / r["python_json_median_mb_per_s"]) <= 0.01 * r["ratio_of_medians"],
          f"ratio of medians {r}")
finish("bench_import: all checks passed")
