#!/usr/bin/env python3
# Invariants of examples/cluster_sim on a Philly sample (skips, rc 77, without ../shared/data): a predictor equal to
# the oracle schedules identically; one that scales every job by the same factor leaves FIFO/SJF/SRTF unchanged
# (their orders are scale-free); FIFO and EDF-plain never read predictions; bad options are usage errors; with a
# model and the pilot dataset, `predictions` never leaves a partial CSV.
# Usage: cluster_sim_test.py CLUSTER_SIM PHILLY_CSV WORKDIR [MODEL PILOT_DATA]
import csv
import os
import random
import subprocess
import sys

from checks import failures, finish  # tests/cli/checks.py, beside this script

sim, philly, work = sys.argv[1:4]
if not os.path.exists(philly):
    print(f"skipped: {philly} is absent")
    sys.exit(77)
os.makedirs(work, exist_ok=True)
pred = os.path.join(work, "pred.csv")
out = os.path.join(work, "results.csv")
rng = random.Random(3)
with open(pred, "w") as f:
    f.write("job_config,oracle_us,ets_us,opsum_us,perop_mlp_us\n")
    for i in range(12):
        o = rng.uniform(500, 50000)
        f.write(f"c{i},{o!r},{o!r},{0.5 * o!r},{o * rng.uniform(0.5, 1.5)!r}\n")
p = subprocess.run([sim, "run", "--jobs", philly, "--predictions", pred, "--sample", "400", "--seeds", "2",
                    "--load", "2", "--out", out], capture_output=True, text=True)
if p.returncode != 0:
    print(p.stdout, p.stderr, file=sys.stderr)
    sys.exit(1)
rows = {(r["policy"], r["predictor"]): r for r in csv.DictReader(open(out))}
cols = ["avg_jct_h", "p99_jct_h", "makespan_h", "total_tardiness_h", "deadline_misses"]
for pol in ("FIFO", "SJF", "SRTF", "EDF"):
    for c in cols:
        if rows[(pol, "ets")][c] != rows[(pol, "oracle")][c]:
            failures.append(f"{pol} {c}: a perfect predictor differs from the oracle")
        if pol != "EDF" and rows[(pol, "opsum")][c] != rows[(pol, "oracle")][c]:
            failures.append(f"{pol} {c}: a uniformly scaled predictor changed a scale-free policy")
for pred_name in ("opsum", "perop_mlp", "ets+observe"):
    for pol in ("FIFO", "EDF-plain"):  # neither reads a prediction
        if rows[(pol, pred_name)]["total_tardiness_h"] != rows[(pol, "oracle")]["total_tardiness_h"]:
            failures.append(f"{pol} depends on predictions")
# p99 is the nearest-rank ⌈0.99 n⌉-th smallest JCT, never above the largest and not the largest of 400 jobs here
for pol in ("FIFO", "SJF", "SRTF", "EDF", "EDF-plain"):
    if float(rows[(pol, "oracle")]["p99_jct_h"]) > float(rows[(pol, "oracle")]["makespan_h"]):
        failures.append(f"{pol}: p99 JCT above the makespan")
# options the simulator does not know, and sizes that leave nothing to simulate, are usage errors (rc 2)
# as are numbers with trailing junk, negative counts and a cluster smaller than one GPU
for extra in (["--sample", "0"], ["--seeds", "0"], ["--seeds", "-3"], ["--load", "0"], ["--sampel", "400"],
              ["--sample", "12abc"], ["--offset", "-1"], ["--gpus", "-3"], ["--gpus", "0"], ["--load", "nan"]):
    q = subprocess.run([sim, "run", "--jobs", philly, "--predictions", pred, *extra], capture_output=True, text=True)
    if q.returncode != 2 or extra[0] not in q.stderr:
        failures.append(f"run {extra}: rc {q.returncode} (want 2, naming the option) {q.stderr[:200]}")
q = subprocess.run([sim, "run", "--jobs", philly], capture_output=True, text=True)
if q.returncode != 2:
    failures.append(f"run without --predictions: rc {q.returncode} (want 2)")
# a result file that cannot be written fails the run before it prints anything
q = subprocess.run([sim, "run", "--jobs", philly, "--predictions", pred, "--sample", "50", "--out",
                    os.path.join(work, "no", "such", "dir.csv")], capture_output=True, text=True)
if q.returncode != 1 or "ets.sim.1" not in q.stderr or q.stdout:
    failures.append(f"run --out into a missing folder: rc {q.returncode} (want 1, ets.sim.1, no output) {q.stderr[:200]}")
# --out through a symlink replaces the file it names and keeps the link; a pipe is written in place (a temporary
# cannot be renamed over it), and its reader gets the same CSV as a file does
real = os.path.join(work, "real_results.csv")
link = os.path.join(work, "link_results.csv")
with open(real, "w") as f:
    f.write("keep me\n")
if os.path.lexists(link):
    os.remove(link)
os.symlink(os.path.basename(real), link)
args = [sim, "run", "--jobs", philly, "--predictions", pred, "--sample", "50", "--seeds", "1"]
q = subprocess.run([*args, "--out", link], capture_output=True, text=True)
via_link = open(real).read()
if q.returncode != 0 or not os.path.islink(link) or not via_link.startswith("policy,predictor,"):
    failures.append(f"run --out a symlink: rc {q.returncode}, link kept {os.path.islink(link)}, target "
                    f"{via_link[:40]!r} {q.stderr[:200]}")
# the temporary is the run's own: a symlink planted at a predictable name beside the output (`<out>.part`) is
# neither written through nor renamed over the output
victim = os.path.join(work, "victim.txt")
with open(victim, "w") as f:
    f.write("untouched\n")
planted = os.path.join(work, "planted_results.csv")
for pth in (planted, planted + ".part"):
    if os.path.lexists(pth):
        os.remove(pth)
os.symlink(victim, planted + ".part")
q = subprocess.run([*args, "--out", planted], capture_output=True, text=True)
if (q.returncode != 0 or open(victim).read() != "untouched\n" or os.path.islink(planted)
        or open(planted).read() != via_link):
    failures.append(f"run --out beside a planted <out>.part symlink: rc {q.returncode}, victim "
                    f"{open(victim).read()[:40]!r}, output a link {os.path.islink(planted)} {q.stderr[:200]}")
leftover = [n for n in os.listdir(work) if n.startswith("planted_results.csv.") and n != "planted_results.csv.part"]
if leftover:
    failures.append(f"run --out left temporaries behind: {leftover}")
r, w = os.pipe()
q = subprocess.Popen([*args, "--out", f"/dev/fd/{w}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                     pass_fds=(w,))
os.close(w)
with os.fdopen(r) as fh:
    piped = fh.read()
q_out, q_err = q.communicate(timeout=120)
if q.returncode != 0 or piped != via_link:
    failures.append(f"run --out a pipe: rc {q.returncode}, {len(piped)} bytes against {len(via_link)} {q_err[:200]}")
# a load that asks for more GPUs than the simulator takes (long jobs submitted within seconds) is a usage error
# naming --gpus, not an int overflow that silently simulated 8 GPUs
huge = os.path.join(work, "huge_jobs.csv")
with open(huge, "w") as f:
    f.write("timestamp,duration,num_gpus\n2017-10-09 07:01:55,1e12,8\n2017-10-09 07:02:55,100,2\n")
q = subprocess.run([sim, "run", "--jobs", huge, "--predictions", pred, "--offset", "0", "--seeds", "1", "--load", "1"],
                   capture_output=True, text=True)
if q.returncode != 2 or "--gpus" not in q.stderr or q.stdout:
    failures.append(f"run with a load past 1e6 GPUs: rc {q.returncode} (want 2, naming --gpus) {q.stderr[:200]}")
q = subprocess.run([sim, "run", "--jobs", huge, "--predictions", pred, "--offset", "0", "--seeds", "1", "--gpus", "16"],
                   capture_output=True, text=True)
if q.returncode != 0 or "16 GPUs" not in q.stdout:
    failures.append(f"the same jobs with --gpus 16: rc {q.returncode} {q.stdout[:200]} {q.stderr[:200]}")
# malformed rows name the file and row: a number with junk in the predictions, a non-finite duration, a short row
bad_pred = os.path.join(work, "bad_pred.csv")
with open(bad_pred, "w") as f:
    f.write("job_config,oracle_us,ets_us\na,100,90x\n")
for jobs_text, preds, want in (("timestamp,duration,num_gpus\n2017-10-09 07:01:55,100,1\n", bad_pred, "ets.sim.2"),
                               ("timestamp,duration,num_gpus\n2017-10-09 07:01:55,inf,1\n", pred, "ets.sim.3"),
                               ("timestamp,duration,num_gpus\n2017-10-09 07:01:55,100,-1e20\n", pred, "ets.sim.3"),
                               ("timestamp,duration,num_gpus\n2017-10-09 07:01:55\n", pred, "ets.sim.3")):
    jobs = os.path.join(work, "bad_jobs.csv")
    with open(jobs, "w") as f:
        f.write(jobs_text)
    q = subprocess.run([sim, "run", "--jobs", jobs, "--predictions", preds], capture_output=True, text=True)
    if q.returncode != 1 or want not in q.stderr or ":2:" not in q.stderr:
        failures.append(f"malformed row ({jobs_text!r}, {preds}): rc {q.returncode} (want 1, {want}, file:row) {q.stderr[:200]}")
# `predictions` writes its CSV whole at the end: a trace that fails to load leaves the previous file as it was and
# no partial one (a later `run --predictions` would read it as complete)
if len(sys.argv) > 5:
    from checks import smallest_traces  # noqa: E402
    model, pilot = sys.argv[4], sys.argv[5]
    data = smallest_traces(pilot, os.path.join(work, "data"), {"train": 3, "val": 2, "test": 3})
    with open(os.path.join(data, "traces", "test", "zz-broken.etst.gz"), "wb") as f:
        f.write(b"\x1f\x8b\x08\x00garbage")
    kept = os.path.join(work, "kept_pred.csv")
    with open(kept, "w") as f:
        f.write("job_config,oracle_us,ets_us\nprevious,1,1\n")
    q = subprocess.run([sim, "predictions", "--data", data, "--model", model, "--out", kept], capture_output=True,
                       text=True)
    leftovers = [f for f in os.listdir(work) if f.startswith("kept_pred.csv.")]
    previous_kept = open(kept).read() == "job_config,oracle_us,ets_us\nprevious,1,1\n"
    if q.returncode != 1 or not previous_kept or leftovers:
        failures.append(f"predictions with a broken test trace: rc {q.returncode} (want 1), previous file kept "
                        f"{previous_kept}, leftovers {leftovers} {q.stderr[-200:]}")
    os.remove(os.path.join(data, "traces", "test", "zz-broken.etst.gz"))
    q = subprocess.run([sim, "predictions", "--data", data, "--model", model, "--out", kept], capture_output=True,
                       text=True)
    got = list(csv.DictReader(open(kept))) if q.returncode == 0 else []
    if len(got) != 3 or any(float(r["ets_us"]) <= 0 for r in got):
        failures.append(f"predictions of 3 test traces: rc {q.returncode}, rows {got} {q.stderr[-200:]}")
    # a trace name with a comma and a quote is quoted as RFC 4180 says, and `run` reads the file back; one with a
    # line break, which a CSV row cannot carry, is refused before anything is written (ets.sim.5)
    test_dir = os.path.join(data, "traces", "test")
    first = sorted(os.listdir(test_dir))[0]
    os.rename(os.path.join(test_dir, first), os.path.join(test_dir, 'odd,"name"-' + first))
    q = subprocess.run([sim, "predictions", "--data", data, "--model", model, "--out", kept], capture_output=True,
                       text=True)
    got = list(csv.DictReader(open(kept))) if q.returncode == 0 else []
    names = [r["job_config"] for r in got]
    if not any(n.startswith('odd,"name"-') for n in names):
        failures.append(f"predictions of a trace named with a comma and a quote: rc {q.returncode}, names {names}")
    q = subprocess.run([sim, "run", "--jobs", philly, "--predictions", kept, "--sample", "50", "--seeds", "1"],
                       capture_output=True, text=True)
    if q.returncode != 0:
        failures.append(f"run reads back a quoted name: rc {q.returncode} {q.stderr[:200]}")
    odd = [n for n in os.listdir(test_dir) if n.startswith("odd,")][0]
    os.rename(os.path.join(test_dir, odd), os.path.join(test_dir, "line\nbreak-" + first))
    before = open(kept).read()
    q = subprocess.run([sim, "predictions", "--data", data, "--model", model, "--out", kept], capture_output=True,
                       text=True)
    if q.returncode != 1 or "ets.sim.5" not in q.stderr or open(kept).read() != before:
        failures.append(f"predictions of a trace named with a line break: rc {q.returncode} (want 1, ets.sim.5, "
                        f"file kept) {q.stderr[-200:]}")
if float(rows[("SRTF", "oracle")]["avg_jct_h"]) >= float(rows[("FIFO", "oracle")]["avg_jct_h"]):
    failures.append("SRTF with the oracle should beat FIFO on average JCT under load")
finish("cluster_sim invariants hold")
