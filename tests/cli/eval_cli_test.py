#!/usr/bin/env python3
# `ets eval` output contract on the committed pilot dataset: --json keys, --predictions CSV (one row per test trace,
# consistent with the JSON metrics), --aggregate nearest (the overlap ablation) changes predictions but not truths,
# the test-retest floor from a retest.json, the bias and the pass-disagreement buckets, and a bad --aggregate or
# --threads value, an unwritable --predictions path (or the model's), a damaged retest.json, a bare network or
# baselines fitted on the evaluated split (under any spelling of its folder) is refused. --val-scaled: each method's factor is its median val label / prediction, and its scaled metrics are
# its test predictions times that factor. --op-types: the per-op breakdown by family, op type and phase.
# Values are checked against each other, never hard-coded.
# Usage: eval_cli_test.py ETS MODEL DATA_DIR WORK_DIR
import csv
import glob
import gzip
import json
import math
import os
import re
import shutil
import subprocess
import sys

from checks import check, finish, read_etst, smallest_traces  # tests/cli/checks.py, beside this script

ets, model, data, work = sys.argv[1:5]
os.makedirs(work, exist_ok=True)


def run_eval(*extra, data_dir=data):
    p = subprocess.run([ets, "eval", "--model", model, "--data", data_dir, "--split", "test", "--json", "--threads",
                        "1", *extra], capture_output=True, text=True)
    check(p.returncode == 0, f"ets eval {' '.join(extra)}: rc {p.returncode}; stderr {p.stderr}")
    return json.loads(p.stdout) if p.returncode == 0 else {}


mean_csv, near_csv = os.path.join(work, "mean.csv"), os.path.join(work, "nearest.csv")
j_mean = run_eval("--predictions", mean_csv)
j_near = run_eval("--predictions", near_csv, "--aggregate", "nearest")
for j in (j_mean, j_near):
    for k in ("methods", "noise_floor_mre", "by_family", "by_ops", "ets_phase_split"):
        check(k in j, f"key {k} in eval --json")
rows_mean = list(csv.DictReader(open(mean_csv))) if os.path.exists(mean_csv) else []
rows_near = list(csv.DictReader(open(near_csv))) if os.path.exists(near_csv) else []
n = j_mean.get("traces", -1)
check(n > 0 and len(rows_mean) == n and len(rows_near) == n, f"{n} traces -> {len(rows_mean)}/{len(rows_near)} rows")
for rows, j in ((rows_mean, j_mean), (rows_near, j_near)):
    if not rows or not j:
        continue
    errs = [abs(float(r["ets_us"]) - float(r["measured_us"])) / float(r["measured_us"]) for r in rows]
    mre = sum(errs) / len(errs)
    got = j["methods"]["ets"]["mre"]
    check(math.isclose(mre, got, rel_tol=1e-4), f"MRE from the CSV {mre} vs eval --json {got}")
    check(all(int(r["ops"]) > 0 and float(r["measured_us"]) > 0 for r in rows), "ops and measured_us per row")
    check(len({r["trace"] for r in rows}) == len(rows), "one distinct trace name (the config id) per row")
# bias and the pass-disagreement buckets, recomputed from the CSV and the traces' label.disagreement
disagreement = {}
for path in glob.glob(os.path.join(data, "traces", "test", "*.etst.gz")):
    meta = read_etst(path)[1][0][0]
    x = meta.get("extra", {})
    if "label.disagreement" in x:
        disagreement[x["config_id"]] = float(x["label.disagreement"])


def bucket(d):
    return "<=10%" if d <= 0.10 else "10-25%" if d <= 0.25 else "25-50%" if d <= 0.50 else "50%+"


if rows_mean and j_mean:
    rel = [(float(r["ets_us"]) - float(r["measured_us"])) / float(r["measured_us"]) for r in rows_mean]
    check(math.isclose(sum(rel) / len(rel), j_mean["methods"]["ets"]["bias"], rel_tol=1e-4, abs_tol=1e-6),
          f"bias from the CSV {sum(rel) / len(rel)} vs eval --json {j_mean['methods']['ets'].get('bias')}")
    by_dis = j_mean.get("by_disagreement", {})
    want = {}
    for r, e in zip(rows_mean, rel):
        if r["trace"] in disagreement:
            want.setdefault(bucket(disagreement[r["trace"]]), []).append(e)
    check(len(want) >= 2 and set(by_dis) == set(want), f"disagreement buckets {sorted(by_dis)} vs {sorted(want)}")
    for k, es in want.items():
        got = by_dis.get(k, {}).get("ets", {})
        check(got.get("n") == len(es) and math.isclose(got.get("mre", -1), sum(map(abs, es)) / len(es), rel_tol=1e-4)
              and math.isclose(got.get("bias", -9), sum(es) / len(es), rel_tol=1e-4, abs_tol=1e-6),
              f"bucket {k}: eval --json {got} vs {len(es)} CSV rows")
# --op-types: per family, op type and phase, the labels summed from the trace files themselves, and ETS's per-op
# predictions summing to its per-trace predictions
types_csv = os.path.join(work, "op-types.csv")
j_types = run_eval("--predictions", os.path.join(work, "mean-again.csv"), "--op-types", types_csv)
rows_types = list(csv.DictReader(open(types_csv))) if os.path.exists(types_csv) else []
check(len(rows_types) > 0, f"--op-types wrote {len(rows_types)} rows")
want_ops = {}  # (family, type, phase) -> [ops, time, gap]
family_of = {}
phases = {0: "forward", 1: "backward", 2: "update"}
for path in glob.glob(os.path.join(data, "traces", "test", "*.etst.gz")):
    meta, ops = read_etst(path)[1][0]
    fam = meta.get("family") or "unknown"
    family_of[meta.get("extra", {}).get("config_id")] = fam
    for o in ops:
        w = want_ops.setdefault((fam, o["n"], phases[o.get("p", 0)]), [0, 0.0, 0.0])
        w[0] += 1
        w[1] += o.get("t", 0.0)
        w[2] += o.get("g", 0.0)
got_ops = {(r["family"], r["type"], r["phase"]): r for r in rows_types}
check(set(got_ops) == set(want_ops), f"op-type rows {len(got_ops)} vs {len(want_ops)} (family, type, phase) in the traces")
for k, (n_ops, t_us, g_us) in want_ops.items():
    r = got_ops.get(k)
    if r:
        check(int(r["ops"]) == n_ops and math.isclose(float(r["measured_time_us"]), t_us, rel_tol=1e-5, abs_tol=1e-3)
              and math.isclose(float(r["measured_gap_us"]), g_us, rel_tol=1e-5, abs_tol=1e-3),
              f"op-type row {k}: {r} vs ops {n_ops} time {t_us} gap {g_us}")
pred_by_family, truth_by_family = {}, {}
for r in rows_mean:
    fam = family_of.get(r["trace"], "?")
    pred_by_family[fam] = pred_by_family.get(fam, 0.0) + float(r["ets_us"])
    truth_by_family[fam] = truth_by_family.get(fam, 0.0) + float(r["measured_us"])
for fam, pred in pred_by_family.items():
    rs = [r for r in rows_types if r["family"] == fam]
    summed = sum(float(r["predicted_time_us"]) + float(r["predicted_gap_us"]) for r in rs)
    check(math.isclose(summed, pred, rel_tol=1e-4), f"{fam}: per-op predictions sum to {summed}, per trace {pred}")
    check(all(math.isclose(float(r["family_measured_us"]), truth_by_family[fam], rel_tol=1e-5) for r in rs),
          f"{fam}: family_measured_us is the family's summed truth {truth_by_family[fam]}")
check(len(pred_by_family) >= 2, f"families in the test split: {sorted(pred_by_family)}")
# tools/op_types.py summarises that CSV: per family the Σ time / Σ gap errors and the op types furthest off
op_tool = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tools",
                       "op_types.py")
p = subprocess.run([sys.executable, op_tool, types_csv, "--json", "--top", "2"], capture_output=True, text=True)
check(p.returncode == 0, f"op_types.py: rc {p.returncode} {p.stderr}")
summary = json.loads(p.stdout) if p.returncode == 0 else {}
check(set(summary) == {r["family"] for r in rows_types}, f"op_types.py families {sorted(summary)}")
for fam, f in summary.items():
    rs = [r for r in rows_types if r["family"] == fam]
    tot = float(rs[0]["family_measured_us"])
    dt = sum(float(r["predicted_time_us"]) - float(r["measured_time_us"]) for r in rs) / tot
    dg = sum(float(r["predicted_gap_us"]) - float(r["measured_gap_us"]) for r in rs) / tot
    errs = sorted((abs(float(r["predicted_time_us"]) + float(r["predicted_gap_us"]) - float(r["measured_time_us"]) -
                       float(r["measured_gap_us"])) / tot for r in rs), reverse=True)
    got = [abs(x["predicted_share"] - x["measured_share"]) for x in f["rows"]]
    check(math.isclose(f["time_error"], dt, rel_tol=1e-9, abs_tol=1e-12) and
          math.isclose(f["gap_error"], dg, rel_tol=1e-9, abs_tol=1e-12) and len(got) == min(2, len(rs)) and
          all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) for a, b in zip(got, errs)),
          f"op_types.py {fam}: {f} vs time {dt} gap {dg} top errors {errs[:2]}")
# a null cell (what `ets eval` writes for a non-finite value) must not come out as NaN, which is not JSON
if rows_types:
    nulled = os.path.join(work, "types_null.csv")
    with open(types_csv) as fh, open(nulled, "w") as out:
        lines = fh.read().splitlines()
        head = lines[0].split(",")
        cells = lines[1].split(",")
        cells[head.index("predicted_time_us")] = "null"
        out.write("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n")
    p = subprocess.run([sys.executable, op_tool, nulled, "--json"], capture_output=True, text=True)

    def no_constants(name):
        raise ValueError(f"{name} in JSON")
    try:
        null_summary = json.loads(p.stdout, parse_constant=no_constants)
    except ValueError as e:
        null_summary = None
        check(False, f"op_types.py --json with a null cell: {e}; rc {p.returncode} {p.stderr}")
    if null_summary is not None:
        fam = cells[head.index("family")]
        check(null_summary[fam]["time_error"] is None, f"a null prediction gives a null time error: {null_summary[fam]}")
p = subprocess.run([sys.executable, op_tool, mean_csv], capture_output=True, text=True)
check(p.returncode == 2 and "not `ets eval --op-types` output" in p.stderr, f"op_types.py on --predictions: {p.stderr}")
p = subprocess.run([ets, "eval", "--model", model, "--data", os.path.join(work, "no-such-data"), "--split", "test",
                    "--op-types", os.path.join(work, "no-such-dir", "t.csv")], capture_output=True, text=True)
check(p.returncode == 1 and "ets.cli.1" in p.stderr and "--op-types" in p.stderr,
      f"unwritable --op-types (refused before any work): rc {p.returncode} {p.stderr}")
same = os.path.join(work, "same.csv")
p = subprocess.run([ets, "eval", "--model", model, "--data", data, "--predictions", same, "--op-types", same],
                   capture_output=True, text=True)
check(p.returncode == 2 and "same file" in p.stderr and not os.path.exists(same),
      f"--predictions and --op-types into one file refused: rc {p.returncode} {p.stderr}")
p = subprocess.run([ets, "eval", "--model", model, "--data", data, "--predictions", same, "--op-types",
                    os.path.join(work, ".", "same.csv")], capture_output=True, text=True, cwd=work)
check(p.returncode == 2 and "same file" in p.stderr and not os.path.exists(same),
      f"--predictions X and --op-types ./X refused as one file: rc {p.returncode} {p.stderr}")

if rows_mean and rows_near:
    check([r["measured_us"] for r in rows_mean] == [r["measured_us"] for r in rows_near], "same truths, same order")
    diff = sum(r1["ets_us"] != r2["ets_us"] for r1, r2 in zip(rows_mean, rows_near))
    check(diff > 0, "nearest-window aggregation changes some prediction")
# The test-retest floor: the same traces beside a retest.json that re-collected every test label 10% higher.
check(j_mean.get("noise_floor_retest_mre", 0) is None and j_mean.get("noise_floor_retest_n") == 0
      and j_mean.get("noise_floor_retest_bound", 0) is None, "no retest.json: retest figures null, n 0")
rt_data = os.path.join(work, "retest-data")
os.makedirs(rt_data, exist_ok=True)
if not os.path.lexists(os.path.join(rt_data, "traces")):
    os.symlink(os.path.abspath(os.path.join(data, "traces")), os.path.join(rt_data, "traces"))
again = {}
for path in sorted(glob.glob(os.path.join(data, "traces", "test", "*.etst.gz"))):
    meta = read_etst(path)[1][0][0]
    cid = meta.get("extra", {}).get("config_id")
    if cid:
        again[cid] = {"measured_us": 1.1 * meta["measured_us"]}
with open(os.path.join(rt_data, "retest.json"), "w") as fh:
    json.dump({"collected": "test", "labels": again}, fh)
j_rt = run_eval(data_dir=rt_data)
check(len(again) > 0 and j_rt.get("noise_floor_retest_n") == len(again),
      f"retest n {j_rt.get('noise_floor_retest_n')} vs {len(again)} re-collected test configs")
check(math.isclose(j_rt.get("noise_floor_retest_mre") or 0, 0.1, rel_tol=1e-6),
      f"retest floor {j_rt.get('noise_floor_retest_mre')} for labels re-collected 10% higher")
# |L - R| / max(L, R) = 0.1 / 1.1 for every trace; the bound is half of it.
check(math.isclose(j_rt.get("noise_floor_retest_bound") or 0, 0.05 / 1.1, rel_tol=1e-6),
      f"predictor bound {j_rt.get('noise_floor_retest_bound')} for labels re-collected 10% higher")
with open(os.path.join(rt_data, "retest.json"), "w") as fh:
    fh.write('{"labels": [')
p = subprocess.run([ets, "eval", "--model", model, "--data", rt_data, "--split", "test"], capture_output=True, text=True)
check(p.returncode != 0 and "ets.eval.3" in p.stderr, f"damaged retest.json refused: rc {p.returncode} {p.stderr}")
# a retest re-collected with a tail step, beside labels taken without one, is refused before the baselines are fitted
with open(os.path.join(rt_data, "retest.json"), "w") as fh:
    json.dump({"collected": "test", "tail_steps": 1, "labels": again}, fh)
p = subprocess.run([ets, "eval", "--model", model, "--data", rt_data, "--split", "test", "--baselines"],
                   capture_output=True, text=True)
check(p.returncode == 1 and "ets.eval.8" in p.stderr and "training baseline" not in p.stderr,
      f"retest of other tail steps refused first: rc {p.returncode} {p.stderr[-300:]}")

# (with a data folder that does not exist: had the data been read first, the error would be its ets.eval.1)
p = subprocess.run([ets, "eval", "--model", model, "--data", os.path.join(work, "no-such-data"), "--split", "test",
                    "--predictions", os.path.join(work, "no-such-dir", "p.csv")], capture_output=True, text=True)
check(p.returncode == 1 and "ets.cli.1" in p.stderr and not p.stdout,
      f"unwritable --predictions (refused before any work): rc {p.returncode} {p.stderr}")

# --predictions into a device or through a symlink: written in place / at the link's target, neither replaced
import stat
p = subprocess.run([ets, "eval", "--model", model, "--data", data, "--split", "test", "--predictions", "/dev/null"],
                   capture_output=True, text=True)
check(p.returncode == 0 and stat.S_ISCHR(os.stat("/dev/null").st_mode), f"--predictions /dev/null: rc {p.returncode} {p.stderr}")
real, link = os.path.join(work, "real.csv"), os.path.join(work, "link.csv")
for f in (real, link):
    if os.path.lexists(f):
        os.remove(f)
open(real, "w").close()
os.symlink(real, link)
p = subprocess.run([ets, "eval", "--model", model, "--data", data, "--split", "test", "--predictions", link],
                   capture_output=True, text=True)
check(p.returncode == 0 and os.path.islink(link) and os.path.getsize(real) > 0,
      f"--predictions through a symlink: rc {p.returncode} link kept {os.path.islink(link)} {p.stderr}")

# a symlink loop is refused before any work, and a dangling link is written through to its (new) target
loop = os.path.join(work, "loop.csv")
if not os.path.lexists(loop):
    os.symlink("loop.csv", loop)
p = subprocess.run([ets, "eval", "--model", model, "--data", os.path.join(work, "no-such-data"), "--predictions", loop],
                   capture_output=True, text=True)
check(p.returncode == 1 and "ets.cli.1" in p.stderr and "loop" in p.stderr, f"--predictions loop: {p.stderr}")
dangling, fresh = os.path.join(work, "dangling.csv"), os.path.join(work, "fresh-target.csv")
for f in (dangling, fresh):
    if os.path.lexists(f):
        os.remove(f)
os.symlink("fresh-target.csv", dangling)
p = subprocess.run([ets, "eval", "--model", model, "--data", data, "--split", "test", "--predictions", dangling],
                   capture_output=True, text=True)
check(p.returncode == 0 and os.path.islink(dangling) and os.path.getsize(fresh) > 0,
      f"--predictions through a dangling link: rc {p.returncode} {p.stderr}")

# traces measured on other hardware than the model's are scored with a warning
hw_data = os.path.join(work, "other-hw-data")
os.makedirs(os.path.join(hw_data, "traces", "test"), exist_ok=True)
for path in sorted(glob.glob(os.path.join(data, "traces", "test", "*.etst.gz")))[:2]:
    with gzip.open(path, "rt") as fh:
        text = re.sub(r'"environment":"[^"]*"', '"environment":"gpu-v100"', fh.read())
    with gzip.open(os.path.join(hw_data, "traces", "test", os.path.basename(path)), "wt") as fh:
        fh.write(text)
p = subprocess.run([ets, "eval", "--model", model, "--data", hw_data, "--split", "test"], capture_output=True, text=True)
check(p.returncode == 0 and "2 of 2 traces were measured on other hardware" in p.stderr,
      f"eval of traces from other hardware: rc {p.returncode} {p.stderr}")
for bad in ("two", "100000"):  # a typo must not start 100,000 threads
    p = subprocess.run([ets, "eval", "--model", model, "--data", data, "--threads", bad], capture_output=True, text=True)
    check(p.returncode == 2 and "--threads" in p.stderr, f"--threads {bad}: rc {p.returncode} {p.stderr}")
# --predictions naming the model (another spelling of it) would replace the model by a CSV
model_copy = os.path.join(work, "model-copy.etsm")
shutil.copyfile(model, model_copy)
p = subprocess.run([ets, "eval", "--model", model_copy, "--data", data, "--predictions",
                    os.path.join(work, ".", "model-copy.etsm")], capture_output=True, text=True)
check(p.returncode == 2 and "--model" in p.stderr and open(model_copy, "rb").read() == open(model, "rb").read(),
      f"--predictions onto the model: rc {p.returncode} {p.stderr}")
# nor may an output replace part of the dataset it scores: its manifest, or a trace of a split (by another spelling).
# On a copy: were the refusal ever lost, the copy is what would be overwritten, not the tree's dataset.
scratch = smallest_traces(data, os.path.join(work, "scratch-data"), {"test": 2})
for target in (os.path.join(scratch, "manifest.json"),
               os.path.join(scratch, "traces", "..", "traces", "test",
                            sorted(os.listdir(os.path.join(scratch, "traces", "test")))[0])):
    before = open(target, "rb").read() if os.path.exists(target) else None
    for opt in ("--predictions", "--op-types"):
        p = subprocess.run([ets, "eval", "--model", model, "--data", scratch, opt, target], capture_output=True,
                           text=True)
        after = open(target, "rb").read() if os.path.exists(target) else None
        check(p.returncode == 2 and "lies in the dataset" in p.stderr and after == before,
              f"{opt} onto {target}: rc {p.returncode} {p.stderr}")
# --max-bytes bounds each file of the split as `ets predict` bounds a trace: one byte short of the largest test
# trace (decompressed) is refused naming it (ets.io.6, with the option's hint); exactly its size scores as without it
sizes = {}
for path in glob.glob(os.path.join(scratch, "traces", "test", "*.etst.gz")):
    with gzip.open(path, "rb") as fh:
        sizes[path] = len(fh.read())
largest = max(sizes, key=sizes.get)
p = subprocess.run([ets, "eval", "--model", model, "--data", scratch, "--json", "--max-bytes",
                    str(sizes[largest] - 1)], capture_output=True, text=True)
check(p.returncode == 1 and "[ets.io.6]" in p.stderr and os.path.basename(largest) in p.stderr
      and "--max-bytes" in p.stderr and not p.stdout, f"eval --max-bytes one short: rc {p.returncode} {p.stderr}")
runs = [subprocess.run([ets, "eval", "--model", model, "--data", scratch, "--json", "--threads", "1", *extra],
                       capture_output=True, text=True) for extra in ([], ["--max-bytes", str(sizes[largest])])]
check(all(r.returncode == 0 for r in runs) and runs[0].stdout == runs[1].stdout and runs[0].stdout,
      f"eval --max-bytes of exactly the largest trace scores as without it: {[r.stderr for r in runs]}")
retest_json = os.path.join(scratch, "retest.json")  # DIR/retest.json too: valid JSON, one byte past the limit
with open(retest_json, "w") as fh:
    fh.write('{"labels": {}}'.ljust(sizes[largest] + 1))
p = subprocess.run([ets, "eval", "--model", model, "--data", scratch, "--json", "--max-bytes", str(sizes[largest])],
                   capture_output=True, text=True)
check(p.returncode == 1 and "[ets.io.6]" in p.stderr and "retest.json" in p.stderr,
      f"eval --max-bytes and a larger retest.json: rc {p.returncode} {p.stderr}")
os.remove(retest_json)
# "-" is not standard output (which carries the report); it used to create a file named "-"
if os.path.exists(os.path.join(work, "-")):
    os.remove(os.path.join(work, "-"))  # the "./-" check below leaves it: a rerun must not see it here
p = subprocess.run([ets, "eval", "--model", os.path.abspath(model), "--data", os.path.abspath(data), "--predictions",
                    "-"], capture_output=True, text=True, cwd=work)
check(p.returncode == 2 and "--predictions" in p.stderr and not os.path.exists(os.path.join(work, "-")),
      f"--predictions -: rc {p.returncode} {p.stderr}")
p = subprocess.run([ets, "eval", "--model", os.path.abspath(model), "--data", os.path.abspath(data), "--predictions",
                    "./-"], capture_output=True, text=True, cwd=work)  # "./-" is a file named "-", as the help says
check(p.returncode == 0 and os.path.isfile(os.path.join(work, "-")) and os.path.getsize(os.path.join(work, "-")) > 0,
      f"--predictions ./-: rc {p.returncode} {p.stderr}")
# a bare network (no encoder state) is named as such before the split is read, as `ets predict` names it
bare = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "lstm_f16_h16.etsm")
p = subprocess.run([ets, "eval", "--model", bare, "--data", data], capture_output=True, text=True)
check(p.returncode == 1 and "ets.predict.6" in p.stderr and "encoder state" in p.stderr,
      f"eval of a bare network: rc {p.returncode} {p.stderr}")

# baselines tuned or trained on the evaluated split would be scored on their own fitting data
# under any spelling of the split's folder
for extra in (["--split", "val"], ["--split", "test", "--val-split", "test"], ["--train-split", "test"],
              ["--train-split", "test/"], ["--val-split", "traces/test"], ["--val-split", "./traces/../traces/test"]):
    p = subprocess.run([ets, "eval", "--model", model, "--data", data, "--baselines", *extra], capture_output=True,
                       text=True)
    check(p.returncode == 2 and "must differ" in p.stderr, f"eval --baselines {extra}: rc {p.returncode} {p.stderr}")

# --val-scaled: one factor per method from the val split, applied to its test predictions
check("val_scaled" not in j_mean, "no val_scaled without --val-scaled")
scaled_csv, val_csv = os.path.join(work, "scaled.csv"), os.path.join(work, "val.csv")
# the baselines fitted on the 16 smallest train traces (on all 51 the run took minutes under ASan); val and test whole
few_train = smallest_traces(data, os.path.join(work, "few-train-data"), {"train": 16, "val": None, "test": None})
j_sc = run_eval("--baselines", "--val-scaled", "--predictions", scaled_csv, data_dir=few_train)
vs = j_sc.get("val_scaled", {})
check(vs.get("split") == "val" and set(vs) == {"split", "ets", "opsum", "perop_mlp", "whole_trace"},
      f"val_scaled keys: {sorted(vs)}")
rows_sc = list(csv.DictReader(open(scaled_csv))) if os.path.exists(scaled_csv) else []
for m in ("ets", "opsum", "perop_mlp", "whole_trace"):
    e = vs.get(m, {})
    scale = e.get("scale") or 0
    check(scale > 0 and math.isfinite(scale), f"val_scaled {m} scale {scale}")
    if rows_sc and scale > 0:
        errs = [abs(scale * float(r[m + "_us"]) - float(r["measured_us"])) / float(r["measured_us"]) for r in rows_sc]
        got = sum(errs) / len(errs)
        check(e.get("n") == len(rows_sc) and math.isclose(got, e.get("mre", -1), rel_tol=1e-3),
              f"val_scaled {m}: MRE {e.get('mre')} vs {got} from the CSV times {scale}")
        check(math.isclose(j_sc["methods"][m]["mre"], sum(abs(float(r[m + "_us"]) - float(r["measured_us"])) /
              float(r["measured_us"]) for r in rows_sc) / len(rows_sc), rel_tol=1e-4), f"unscaled {m} unchanged")
# the ETS factor recomputed from its own predictions on val
p = subprocess.run([ets, "eval", "--model", model, "--data", data, "--split", "val", "--threads", "1", "--predictions",
                    val_csv], capture_output=True, text=True)
check(p.returncode == 0, f"eval --split val: rc {p.returncode} {p.stderr}")
if p.returncode == 0 and vs.get("ets"):
    ratios = sorted(float(r["measured_us"]) / float(r["ets_us"]) for r in csv.DictReader(open(val_csv)))
    h = len(ratios) // 2
    med = ratios[h] if len(ratios) % 2 else 0.5 * (ratios[h - 1] + ratios[h])
    check(math.isclose(med, vs["ets"]["scale"], rel_tol=1e-4), f"ets val scale {vs['ets']['scale']} vs median {med}")
# a labelled test iteration without ops is in no table, the val-scaled one included (it counted there as a 100% error)
no_ops = smallest_traces(data, os.path.join(work, "no-ops-data"), {"val": None, "test": 3})
first = sorted(os.listdir(os.path.join(no_ops, "traces", "test")))[0]
with gzip.open(os.path.join(no_ops, "traces", "test", first), "rt") as fh:
    lines = [json.loads(l) for l in fh if l.strip()]
meta = lines[1]["trace"]
meta["ops"] = 0
meta.setdefault("extra", {})["config_id"] = "no-ops-0"
with gzip.open(os.path.join(no_ops, "traces", "test", "no-ops-0.etst.gz"), "wt") as fh:
    for o in (lines[0], {"trace": meta}, {"end": {"traces": 1}}):
        fh.write(json.dumps(o, separators=(",", ":")) + "\n")
j_no = run_eval("--val-scaled", data_dir=no_ops)
ets_all, ets_sc = j_no.get("methods", {}).get("ets", {}), j_no.get("val_scaled", {}).get("ets", {})
check(ets_all.get("n") == 3 and ets_sc.get("n") == 3 and ets_sc.get("mre", 1) < 0.9,
      f"a test iteration without ops: methods {ets_all}, val_scaled {ets_sc}")
for extra in (["--split", "val"], ["--val-split", "test/"], ["--val-split", "traces/test"]):
    p = subprocess.run([ets, "eval", "--model", model, "--data", data, "--val-scaled", *extra], capture_output=True,
                       text=True)
    check(p.returncode == 2 and "must differ" in p.stderr, f"--val-scaled {extra}: rc {p.returncode} {p.stderr}")
# an empty split name would read DIR/traces itself and report "no trace": a usage error instead
for opt in ("--split", "--train-split", "--val-split"):
    p = subprocess.run([ets, "eval", "--model", model, "--data", data, opt, ""], capture_output=True, text=True)
    check(p.returncode == 2 and opt in p.stderr, f"eval {opt} '': rc {p.returncode} {p.stderr}")
# a val split with nothing to fit the factor on is an error, not a silent factor of 1
empty_val = os.path.join(work, "empty-val-data")
os.makedirs(os.path.join(empty_val, "traces", "val"), exist_ok=True)
os.makedirs(os.path.join(empty_val, "traces", "test"), exist_ok=True)
for path in sorted(glob.glob(os.path.join(data, "traces", "test", "*.etst.gz")))[:1]:
    shutil.copy(path, os.path.join(empty_val, "traces", "test"))
p = subprocess.run([ets, "eval", "--model", model, "--data", empty_val, "--val-scaled"], capture_output=True, text=True)
check(p.returncode == 1 and "ets.eval.4" in p.stderr and "--val-scaled" in p.stderr,
      f"--val-scaled without a scorable val trace: rc {p.returncode} {p.stderr}")

p = subprocess.run([ets, "eval", "--model", model, "--data", data, "--aggregate", "median"], capture_output=True, text=True)
check(p.returncode != 0 and "--aggregate" in p.stderr, f"bad --aggregate refused: rc {p.returncode} {p.stderr}")

finish(f"eval CLI: {n} traces, ets MRE mean {j_mean['methods']['ets']['mre']:.4f} / nearest "
       f"{j_near['methods']['ets']['mre']:.4f}")
