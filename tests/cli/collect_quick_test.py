#!/usr/bin/env python3
# tools/collect/collect.py end to end, as the next collection runs it but in its dry-run size (--quick: one warm-up,
# five profiled iterations, two passes): real torch workers, `ets label`, the manifest. The other collector tests
# stub the worker; this one checks that their parts still fit. Two real configurations: an MLP (Adam) and a 3-layer
# LSTM language model (SGD). Each gets a label file in its split's folder that `ets inspect` reads, with the
# collection's metadata (configuration id, split, environment, batch size, optimizer, two passes, the tail step),
# Σ(time + gap) equal to the measured time, forward, backward and update ops, and the LSTM's input size, hidden size
# and layers as built. Run again, the collector finds nothing left to do and leaves every file as it was.
# Usage: collect_quick_test.py ETS WORK_DIR   (exit 77 = skipped: no torch)
import json
import os
import shutil
import subprocess
import sys

from checks import check, finish, read_etst, torch_or_skip  # tests/cli/checks.py, beside this script

torch_or_skip("collect_quick")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECT = os.path.join(ROOT, "tools", "collect", "collect.py")
sys.path.insert(0, ROOT)
from tools.collect import configs as C  # noqa: E402

ets, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
CONFIGS = ["mlp-0001", "lstm_lm-0037"]
ids = os.path.join(work, "ids.txt")
with open(ids, "w") as fh:
    fh.write("\n".join(CONFIGS) + "\n")
out = os.path.join(work, "out")
cmd = [sys.executable, COLLECT, "--quick", "--out", out, "--configs", ids, "--heap-mb", "0", "--ets", ets]


def run():
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    check(r.returncode == 0, f"collect.py: rc {r.returncode}\n{r.stdout[-800:]}\n{r.stderr[-1500:]}")
    return r.stdout + r.stderr


def read_bytes(path):
    with open(path, "rb") as fh:
        return fh.read()


def read_label(path):
    """A label's header, its one iteration's trace record and op records (read_etst; {} and [] where it has none)."""
    header, iterations = read_etst(path)
    check(len(iterations) == 1, f"{path}: {len(iterations)} iterations, a label holds one")
    trace, ops = iterations[0] if iterations else ({}, [])
    return header, trace, ops


text = run()
check("labelled 2 now, label failures 0, configs with a failed pass 0" in text, f"first run's summary: {text[-600:]}")
with open(os.path.join(out, "manifest.json")) as fh:
    manifest = json.load(fh)
listed = {c["id"]: c for c in manifest.get("configs", [])}
check(all(cid in listed for cid in CONFIGS), "the written manifest lists both configurations")

labels = {}
for cid in CONFIGS:
    cfg = C.config(cid)
    knobs = cfg["knobs"]
    path = os.path.join(out, "traces", cfg["split"], cid + ".etst.gz")
    if not os.path.exists(path):
        check(False, f"{cid}: no label at {path}")
        continue
    labels[path] = os.stat(path).st_mtime_ns, read_bytes(path)
    header, trace, ops = read_label(path)
    check(header.get("format") == "ets-trace", f"{cid}: header {header}")
    extra = trace.get("extra", {})
    check(extra.get("config_id") == cid and extra.get("split") == cfg["split"], f"{cid}: extra {extra}")
    check(extra.get("label.passes") == "2" and extra.get("tail_steps") == "1",
          f"{cid}: two passes and the tail step: {extra.get('label.passes')}, {extra.get('tail_steps')}")
    check(trace.get("environment", "").endswith("-1t") and trace.get("family") == cfg["family"],
          f"{cid}: environment {trace.get('environment')!r}, family {trace.get('family')!r}")
    check(trace.get("batch_size") == knobs["batch_size"] and trace.get("optimizer") == knobs["optimizer"],
          f"{cid}: batch size {trace.get('batch_size')} / optimizer {trace.get('optimizer')!r}, built with {knobs}")
    measured = trace.get("measured_us") or 0
    total = sum(op["t"] + op["g"] for op in ops)
    check(measured > 0 and abs(total - measured) <= 1e-3 * measured,
          f"{cid}: Σ(time + gap) {total:.1f} µs against measured {measured} µs")
    check(len(ops) == trace.get("ops"), f"{cid}: {len(ops)} op lines, the trace record says {trace.get('ops')}")
    check({op["p"] for op in ops} == {0, 1, 2}, f"{cid}: phases {sorted({op['p'] for op in ops})}")
    if cfg["family"] == "lstm_lm":
        lstm = [op for op in ops if op["n"] == "lstm"]
        want = {"in_channels": knobs["emb"], "hidden": knobs["hidden"], "layers": knobs["layers"]}
        check(lstm and all({k: op.get("h", {}).get(k) for k in want} == want for op in lstm),
              f"{cid}: lstm ops' sizes {[op.get('h') for op in lstm]}, built with {want}")
    r = subprocess.run([ets, "inspect", "--json", path], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and json.loads(r.stdout or "{}").get("iterations"),
          f"{cid}: ets inspect rc {r.returncode}: {r.stdout[:300]} {r.stderr[:300]}")

# resumed: nothing left to run, and the labels stay as they were (bytes and modification times)
text = run()
check("0 config-passes to run" in text and "labelled 0 now" in text, f"second run: {text[-600:]}")
for path, (mtime, data) in labels.items():
    check(os.stat(path).st_mtime_ns == mtime and read_bytes(path) == data, f"{path} changed on the rerun")

finish("collect quick: two real configurations collected, labelled and read back; a rerun changes nothing")
