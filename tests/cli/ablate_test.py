#!/usr/bin/env python3
# tools/ablate.py end to end on the pilot dataset with a budget of seconds: a trained cell's figures reach the resume
# file and the table, a stride wider than the window is skipped, a finished cell is not trained again, a cell whose
# training fails or gives no validation MRE is recorded (not a crash, but rc 1) and retried on the next run, a rerun
# with another split, threads, ets binary or kernel cap is refused, and a bad --cells is refused. Figures are checked against each other, never hard-coded.
# Usage: ablate_test.py ETS DATA_DIR WORK_DIR (DATA_DIR: the pilot set; the test trains on its smallest traces)
import json
import math
import os
import stat
import subprocess
import sys

from checks import check, finish, smallest_traces  # tests/cli/checks.py, beside this script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ets, pilot, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)


# ablate.py's bookkeeping is under test, not the training: the whole pilot set made it 12x slower under ASan
data = smallest_traces(pilot, os.path.join(work, "data"), {"train": 8, "val": 3})


def ablate(out, *extra, ets_path=ets, env=None):  # a --threads in extra comes last: argparse keeps it
    return subprocess.run([sys.executable, os.path.join(ROOT, "tools", "ablate.py"), "--ets", ets_path, "--data", data,
                           "--minutes", "0.05", "--threads", "1", "--out", out, *extra],
                          capture_output=True, text=True, timeout=600, env=env)


def load(path):
    with open(path) as fh:
        return json.load(fh)


def table_row(stdout, w, s):
    rows = [r for r in stdout.splitlines() if r.startswith(f"| {w} | {s} |")]
    return rows[0] if len(rows) == 1 else None


def fake_ets(name, body):
    """An executable standing in for ets: what ablate.py must survive when training goes wrong."""
    path = os.path.join(work, name)
    with open(path, "w") as fh:
        fh.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


# ---- one real cell and one skipped: the figures of the resume file are those of the table
out = os.path.join(work, "grid.json")
if os.path.exists(out):
    os.remove(out)
p = ablate(out, "--cells", "6x4,4x8")
check(p.returncode == 0, f"grid run: rc {p.returncode}; {p.stderr[-2000:]}")
if p.returncode == 0:
    cell = load(out).get("w6_s4", {})
    mean, nearest = cell.get("mean", {}).get("mre"), cell.get("nearest", {}).get("mre")
    check(isinstance(mean, float) and isinstance(nearest, float) and math.isfinite(nearest) and mean > 0 < nearest,
          f"cell figures {cell}")
    if isinstance(mean, float):
        check(mean == cell["train"]["val_mre"], "the overlap-mean figure is the trainer's val MRE")
        row = table_row(p.stdout, 6, 4)
        check(row is not None and f"{100 * mean:.2f}%" in row and f"{100 * nearest:.2f}%" in row,
              f"table row {row!r} shows {mean} / {nearest}")
    row = table_row(p.stdout, 4, 8)
    check(row is not None and "stride > width" in row, f"skipped cell's row {row!r}")

    # ---- a rerun with the same resume file trains nothing and prints the same row
    again = ablate(out, "--cells", "6x4")
    check(again.returncode == 0 and "training" not in again.stderr, f"rerun: rc {again.returncode}; {again.stderr}")
    check(table_row(again.stdout, 6, 4) == table_row(p.stdout, 6, 4), "rerun's row is the first run's")

    # ---- ... but not under other threads, another ets binary or another kernel cap: each sets how far a cell gets
    # in its time budget (the resume key held only the data, budget and split before)
    wrapper = fake_ets("ets_wrapper", f'exec "{os.path.abspath(ets)}" "$@"')
    for what, extra, kw, env in (("--threads 2", ["--threads", "2"], {}, None),
                                 ("another ets binary", [], {"ets_path": wrapper}, None),
                                 ("ETS_TRAIN_ISA=generic", [], {}, dict(os.environ, ETS_TRAIN_ISA="generic"))):
        other = ablate(out, "--cells", "6x4", *extra, env=env, **kw)
        check(other.returncode == 2 and "scored with" in other.stderr and "training" not in other.stderr,
              f"rerun with {what}: rc {other.returncode}; {other.stderr[-500:]}")

# ---- training that fails, or that validates nothing: recorded per cell, the run goes on, the next run retries
bad = os.path.join(work, "bad.json")
for fake, why in ((fake_ets("ets_fails", "echo 'something broke' >&2; exit 3"), "something broke"),
                  (fake_ets("ets_no_val", 'echo \'{"val_mre": null, "train_windows": 1}\''), "no validation MRE")):
    if os.path.exists(bad):
        os.remove(bad)
    p = ablate(bad, "--cells", "6x4", ets_path=fake)
    # the run goes on and prints its table, but ends with rc 1: the grid is not complete
    check(p.returncode == 1, f"{why}: rc {p.returncode} (want 1); {p.stderr[-2000:]}")
    cell = load(bad).get("w6_s4", {})
    check(why in cell.get("failed", ""), f"{why}: cell {cell}")
    row = table_row(p.stdout, 6, 4)
    check(row is not None and f"failed: {why}" in row, f"{why}: row {row!r} shows the error, not the command")
retry = ablate(bad, "--cells", "6x4")
check(retry.returncode == 0 and "training w6_s4" in retry.stderr, f"retry: rc {retry.returncode}; {retry.stderr}")
if retry.returncode == 0:
    check("failed" not in load(bad)["w6_s4"], "the retried cell replaced the failure")

# ---- cells scored on one split are not shown as another's: a rerun with other settings is refused
p = ablate(bad, "--cells", "6x4", "--split", "test")
check(p.returncode == 2 and "scored with" in p.stderr and "training" not in p.stderr,
      f"rerun with another --split: rc {p.returncode}; {p.stderr[-500:]}")

# ---- a resume file's cell that is not an object is not a result: run again (it was a TypeError traceback)
odd = os.path.join(work, "odd.json")
with open(odd, "w") as fh:
    json.dump({"w6_s4": 5}, fh)
p = ablate(odd, "--cells", "6x4", ets_path=fake_ets("ets_fails_again", "echo 'broke' >&2; exit 3"))
check(p.returncode == 1 and "Traceback" not in p.stderr and "broke" in load(odd).get("w6_s4", {}).get("failed", ""),
      f"a non-object cell in the resume file: rc {p.returncode}; {p.stderr[-800:]}")

# ---- refused before any training: an --out that cannot be written (it failed after the first cell's training)
# (/proc/self: a folder that exists and that not even root can create a file in)
if os.path.isdir("/proc/self"):
    p = ablate("/proc/self/ablate.json", "--cells", "6x4")
    check(p.returncode == 2 and "--out" in p.stderr and "training" not in p.stderr,
          f"an unwritable --out: rc {p.returncode}; {p.stderr[-500:]}")
p = ablate(os.path.join(work, "never.json"), "--cells", "6y4")
check(p.returncode == 2 and "6y4" in p.stderr and not os.path.exists(os.path.join(work, "never.json")),
      f"bad --cells: rc {p.returncode}; {p.stderr}")

finish()
