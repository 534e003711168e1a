#!/usr/bin/env python3
# Dataset tooling bookkeeping, without torch: `collect.py --invalidate` moves exactly the passes that overlap a
# disturbed window (and their labels) aside, never deleting; `card.py --retest` keeps the re-collected labels in
# DATA/retest.json so a later card run without the re-collection still reports the same test-retest floor.
# Usage: collect_tools_test.py WORK_DIR
import gzip
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECT = os.path.join(ROOT, "tools", "collect", "collect.py")
CARD = os.path.join(ROOT, "tools", "collect", "card.py")
work = os.path.abspath(sys.argv[1])
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def write_label(path, cid, split, measured_us, ops_us):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    meta = {"framework_version": "1.13", "device": "test", "environment": "cpu-test", "model": "mlp",
            "family": "mlp", "optimizer": "sgd", "batch_size": 8, "measured_us": measured_us,
            "extra": {"config_id": cid, "split": split, "label.single_pass_deviation": "0.05",
                      "label.sum_discrepancy": "0"}}
    with gzip.open(path, "wt") as fh:
        fh.write(json.dumps({"format": "ets-trace", "version": [1, 0]}) + "\n")
        fh.write(json.dumps({"trace": meta}) + "\n")
        for t in ops_us:
            fh.write(json.dumps({"n": "linear", "p": 0, "t": t, "g": 0.0}) + "\n")


# ---- --invalidate: pass k of config A ran in [1000 + 100k, 1000 + 100k + 10); B's passes ran long before
out = os.path.join(work, "data")
ids = ["mlp-0001", "mlp-0002"]
with open(os.path.join(work, "ids.txt"), "w") as fh:
    fh.write("\n".join(ids) + "\n")
sys.path.insert(0, ROOT)
from tools.collect import configs as C  # noqa: E402

for cid, base in (("mlp-0001", 1000.0), ("mlp-0002", 0.0)):
    d = os.path.join(out, "raw", cid)
    os.makedirs(d)
    for p in (1, 2, 3):
        end = base + 100 * p + 10
        with open(os.path.join(d, f"pass{p}.status.json"), "w") as fh:
            json.dump({"ok": True, "pass": p, "finished_unix": end, "wall_s": 10.0}, fh)
        with open(os.path.join(d, f"pass{p}.json.gz"), "wb") as fh:
            fh.write(b"raw")
    write_label(os.path.join(out, "traces", C.config(cid)["split"], cid + ".etst.gz"), cid, C.config(cid)["split"],
                100.0, [100.0])
# window [1195, 1205] overlaps only A's pass 2 (it ran 1200..1210)
r = subprocess.run([sys.executable, COLLECT, "--out", out, "--configs", os.path.join(work, "ids.txt"),
                    "--invalidate", "1195,1205"], capture_output=True, text=True)
check(r.returncode == 0, f"--invalidate rc {r.returncode}: {r.stderr}")
a_dir, b_dir = os.path.join(out, "raw", "mlp-0001"), os.path.join(out, "raw", "mlp-0002")
a_files = sorted(os.listdir(a_dir))
check(not os.path.exists(os.path.join(a_dir, "pass2.status.json")), "A's pass 2 moved aside")
check(any(f.startswith("pass2.disturbed-") and f.endswith(".json.gz") for f in a_files), f"A's pass 2 kept: {a_files}")
check(os.path.exists(os.path.join(a_dir, "pass1.status.json")) and os.path.exists(os.path.join(a_dir, "pass3.json.gz")),
      "A's passes 1 and 3 untouched")
check(any(f.startswith("label.disturbed-") for f in a_files), f"A's label kept beside its passes: {a_files}")
a_label = os.path.join(out, "traces", C.config("mlp-0001")["split"], "mlp-0001.etst.gz")
check(not os.path.exists(a_label), "A's label no longer in traces/")
check(sorted(os.listdir(b_dir)) == sorted(f"pass{p}{e}" for p in (1, 2, 3) for e in (".status.json", ".json.gz")),
      "B untouched")
check(os.path.exists(os.path.join(out, "traces", C.config("mlp-0002")["split"], "mlp-0002.etst.gz")), "B's label kept")
with open(os.path.join(out, "collect", "run.jsonl")) as fh:
    evs = [json.loads(line) for line in fh]
check([e["config"] for e in evs if e.get("ev") == "invalidate"] == ["mlp-0001"], "one invalidate event, for A")
r = subprocess.run([sys.executable, COLLECT, "--out", out, "--invalidate", "1205,1195"], capture_output=True, text=True)
check(r.returncode == 2 and "START before END" in r.stderr, f"reversed window refused: rc {r.returncode} {r.stderr}")

# ---- card.py --retest: labels 100 and 200 re-collected as 110 and 150 -> MRE (0.10 + 0.25) / 2
data, again = os.path.join(work, "card-data"), os.path.join(work, "card-retest")
for root, values in ((data, (100.0, 200.0)), (again, (110.0, 150.0))):
    for cid, v in zip(("mlp-0001", "mlp-0002"), values):
        write_label(os.path.join(root, "traces", "train", cid + ".etst.gz"), cid, "train", v, [v / 2, v / 2])
r = subprocess.run([sys.executable, CARD, "--data", data, "--retest", again, "--no-doc"], capture_output=True, text=True)
check(r.returncode == 0, f"card --retest rc {r.returncode}: {r.stderr}")
card1 = json.load(open(os.path.join(data, "card.json"))) if r.returncode == 0 else {}
rt = card1.get("retest", {})
check(rt.get("n") == 2 and abs(rt.get("mre", 0) - 0.175) < 1e-9, f"retest figure {rt}")
# half of mean(10 / 110, 50 / 200): the bound no predictor can average below
check(abs(rt.get("predictor_bound", 0) - 0.5 * (10 / 110 + 50 / 200) / 2) < 1e-9, f"predictor bound {rt}")
check(os.path.exists(os.path.join(data, "retest.json")), "retest.json written")
shutil.rmtree(again)
r = subprocess.run([sys.executable, CARD, "--data", data, "--no-doc"], capture_output=True, text=True)
card2 = json.load(open(os.path.join(data, "card.json"))) if r.returncode == 0 else {}
check(card2.get("retest", {}).get("mre") == rt.get("mre") and card2["retest"].get("predictor_bound") == rt.get(
    "predictor_bound"), "the figures survive a card run without the re-collection")
check(card2.get("labelled") == 2 and card2.get("max_abs_sum_discrepancy") == 0.0, f"card basics {card2.get('labelled')}")

if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)
print("collect tools: invalidate and retest bookkeeping hold")
