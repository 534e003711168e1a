#!/usr/bin/env python3
# Dataset tooling bookkeeping, without torch: `collect.py --invalidate` moves exactly the passes that overlap a
# disturbed window (and their labels) aside, never deleting; `card.py --retest` keeps the re-collected labels in
# DATA/retest.json so a later card run without the re-collection still reports the same test-retest floor.
# Also: card.py refuses a --data / --retest without labels and writes nothing, keeps the previous card's
# raw/- and collect/-derived figures when those folders are absent (a fresh clone), takes the median of an even
# count as the mean of the middle two, and replaces its files atomically; collect.py refuses a bad selection
# (unknown family or id, unreadable --configs, --block 0) before creating anything, and a clean pass leaves no
# ids-pass*.txt behind (a stub worker in a copied tree); --isolate runs each config's pass in a process of its own
# and does not count shared-worker passes as done, nor passes with another --heap-mb (workers pre-fault 8 GiB by
# default; env.py's pre-fault touches its pages); a config whose passes ran in two environments is not
# labelled, and env.py gives masked CPU names ("AMD EPYC") the CPUID family / model. drift.py bins the passes'
# speed probes in time, turns a slow spell into an --invalidate window and compares a retest's speed with the first run.
# The tools' atomic writer follows a symlink to its target and writes a pipe in place, as the C++ writer does.
# Usage: collect_tools_test.py WORK_DIR
import gzip
import json
import math
import os
import shutil
import subprocess
import sys
import time

from checks import check, finish  # tests/cli/checks.py, beside this script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECT = os.path.join(ROOT, "tools", "collect", "collect.py")
CARD = os.path.join(ROOT, "tools", "collect", "card.py")
work = os.path.abspath(sys.argv[1])
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)


def write_label(path, cid, split, measured_us, ops_us, tail_steps=0, environment="cpu-test"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    meta = {"framework_version": "1.13", "device": "test", "environment": environment, "model": "mlp",
            "family": "mlp", "optimizer": "sgd", "batch_size": 8, "measured_us": measured_us,
            "extra": {"config_id": cid, "split": split, "label.single_pass_deviation": "0.05",
                      "label.sum_discrepancy": "0"}}
    if tail_steps:
        meta["extra"]["tail_steps"] = str(tail_steps)
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
# a mistyped --out (no raw/ there) is refused before anything is written, and so is a bad window
typo = os.path.join(work, "dta")
for window, word in (("1195,1205", "does not exist"), ("1205,1195", "START before END"), ("x,y", "--invalidate")):
    r = subprocess.run([sys.executable, COLLECT, "--out", typo, "--configs", os.path.join(work, "ids.txt"),
                        "--invalidate", window], capture_output=True, text=True)
    check(r.returncode == 2 and word in r.stderr and not os.path.exists(typo),
          f"--invalidate {window} into a mistyped --out: rc {r.returncode}, created {os.path.exists(typo)} {r.stderr}")

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
# a label file cut mid-write (EOFError) or corrupt (zlib.error) is skipped with a note, not the end of the card
for name, blob in (("mlp-0003", None), ("mlp-0004", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage")):
    bad_label = os.path.join(data, "traces", "train", name + ".etst.gz")
    if blob is None:
        with open(os.path.join(data, "traces", "train", "mlp-0001.etst.gz"), "rb") as fh:
            whole = fh.read()
        blob = whole[:len(whole) // 2]
    with open(bad_label, "wb") as fh:
        fh.write(blob)
    r = subprocess.run([sys.executable, CARD, "--data", data, "--no-doc"], capture_output=True, text=True)
    card_bad = json.load(open(os.path.join(data, "card.json"))) if r.returncode == 0 else {}
    check(r.returncode == 0 and f"skipping {bad_label}" in r.stderr and card_bad.get("labelled") == 2,
          f"card with a damaged {name}: rc {r.returncode} {r.stderr[-300:]}")
    os.remove(bad_label)

# ---- labels with and without a tail step are not one dataset: card.py refuses a retest of the other kind (and
# writes no retest.json for it), and a dataset that mixes them; collect.py refuses to add labels of the other kind
tail_again = os.path.join(work, "card-retest-tail")
for cid, v in zip(("mlp-0001", "mlp-0002"), (110.0, 150.0)):
    write_label(os.path.join(tail_again, "traces", "train", cid + ".etst.gz"), cid, "train", v, [v], tail_steps=1)
before = open(os.path.join(data, "retest.json")).read()
r = subprocess.run([sys.executable, CARD, "--data", data, "--retest", tail_again, "--no-doc"], capture_output=True,
                   text=True)
check(r.returncode == 2 and "--tail-steps 1" in r.stderr and open(os.path.join(data, "retest.json")).read() == before,
      f"a retest with a tail step against labels without: rc {r.returncode} {r.stderr[-300:]}")
# nor one collected on another host: its figure would measure the two hosts, not the labels' noise
env_again = os.path.join(work, "card-retest-env")
for cid, v in zip(("mlp-0001", "mlp-0002"), (110.0, 150.0)):
    write_label(os.path.join(env_again, "traces", "train", cid + ".etst.gz"), cid, "train", v, [v],
                environment="cpu-other")
r = subprocess.run([sys.executable, CARD, "--data", data, "--retest", env_again, "--no-doc"], capture_output=True,
                   text=True)
check(r.returncode == 2 and "cpu-other" in r.stderr and "cpu-test" in r.stderr and
      open(os.path.join(data, "retest.json")).read() == before,
      f"a retest collected in another environment: rc {r.returncode} {r.stderr[-300:]}")
write_label(os.path.join(data, "traces", "train", "mlp-0005.etst.gz"), "mlp-0005", "train", 100.0, [100.0],
            tail_steps=1)
r = subprocess.run([sys.executable, CARD, "--data", data, "--no-doc"], capture_output=True, text=True)
check(r.returncode == 2 and "mixes labels" in r.stderr, f"a dataset mixing tail settings: rc {r.returncode} "
      f"{r.stderr[-300:]}")
r = subprocess.run([sys.executable, COLLECT, "--out", data, "--configs", os.path.join(work, "ids.txt"),
                    "--ets", "/bin/true"], capture_output=True, text=True)
check(r.returncode == 2 and "mlp-0001.etst.gz" in r.stderr and "--tail-steps 0" in r.stderr,
      f"collect.py tops up labels without a tail step only with --tail-steps 0: rc {r.returncode} {r.stderr[-300:]}")
os.remove(os.path.join(data, "traces", "train", "mlp-0005.etst.gz"))

# ---- card.py on a --data (or --retest) without labels: exit 2, nothing written (not card.json, not the doc)
from tools.collect import card as K  # noqa: E402

empty = os.path.join(work, "empty-data")
os.makedirs(empty)
doc = os.path.join(work, "dataset.md")
DOC = ("# card\n<!-- card:summary -->\nold\n<!-- /card:summary -->\n<!-- card:noise -->\nold\n<!-- /card:noise -->\n"
       "<!-- card:env -->\nold\n<!-- /card:env -->\n")
with open(doc, "w") as fh:
    fh.write(DOC)
for extra in ([], ["--no-doc"]):
    r = subprocess.run([sys.executable, CARD, "--data", empty, "--doc", doc, *extra], capture_output=True, text=True)
    check(r.returncode == 2 and "no labelled traces" in r.stderr, f"card on empty --data {extra}: rc {r.returncode} "
          f"{r.stderr}")
    check(os.listdir(empty) == [], f"card on empty --data {extra} wrote {os.listdir(empty)}")
    check(open(doc).read() == DOC, f"card on empty --data {extra} changed the doc")
with open(os.path.join(data, "retest.json")) as fh:
    retest_before = fh.read()
r = subprocess.run([sys.executable, CARD, "--data", data, "--retest", empty, "--no-doc"], capture_output=True,
                   text=True)
check(r.returncode == 2 and "--retest" in r.stderr, f"card --retest EMPTY: rc {r.returncode} {r.stderr}")
check(open(os.path.join(data, "retest.json")).read() == retest_before, "card --retest EMPTY kept retest.json")

# ---- a fresh clone has no raw/ nor collect/: the previous card's profiler-overhead and env figures stay, with a note
prev = json.load(open(os.path.join(data, "card.json")))
prev["profiled_over_unprofiled_q"] = {"0.0": 1.0, "0.1": 1.1, "0.5": 1.2, "0.9": 1.5, "1.0": 2.0}
prev["profiled_over_unprofiled_n"] = 2
prev["env_record"] = {"torch": "1.13", "threads": 1}
with open(os.path.join(data, "card.json"), "w") as fh:
    json.dump(prev, fh)
r = subprocess.run([sys.executable, CARD, "--data", data, "--doc", doc], capture_output=True, text=True)
check(r.returncode == 0, f"card without raw/: rc {r.returncode} {r.stderr}")
card3 = json.load(open(os.path.join(data, "card.json")))
check(card3.get("profiled_over_unprofiled_q") == prev["profiled_over_unprofiled_q"] and
      card3.get("profiled_over_unprofiled_n") == 2, f"profiled figures kept: {card3.get('profiled_over_unprofiled_q')}")
check(card3.get("env_record") == prev["env_record"], f"env_record kept: {card3.get('env_record')}")
check("kept the previous card.json's profiled" in r.stderr and "env_record" in r.stderr, f"a note says so: {r.stderr}")
text = open(doc).read()
check("| profiled / unprofiled iteration time (10% / median / 90% / max; 2 configs) | 1.10 / 1.20 / 1.50 / 2.00 |"
      in text, "the doc keeps the profiled / unprofiled row")
check("| torch | 1.13 |" in text and "| threads | 1 |" in text, "the doc keeps the env table")
# with raw/ present the ratio is measured again: label 100 us over the faster of warm-up iterations 2 and 3 (40 us)
st = os.path.join(data, "raw", "mlp-0001", "pass1.status.json")
os.makedirs(os.path.dirname(st))
with open(st, "w") as fh:
    json.dump({"ok": True, "warmup_ms": [5.0, 0.05, 0.04]}, fh)
r = subprocess.run([sys.executable, CARD, "--data", data, "--no-doc"], capture_output=True, text=True)
card4 = json.load(open(os.path.join(data, "card.json"))) if r.returncode == 0 else {}
check(card4.get("profiled_over_unprofiled_n") == 1 and
      abs(card4.get("profiled_over_unprofiled_q", {}).get("0.5", 0) - 2.5) < 1e-9 and
      "profiled / unprofiled figures" not in r.stderr,
      f"profiled ratio from raw/: {card4.get('profiled_over_unprofiled_q')}")

# the env table describes the labels' environment: of the records in collect/ (one per environment, and an older
# collection's env-pass<N>.json, which every pass overwrote, a rejected one included) the one naming it
coll = os.path.join(data, "collect")
os.makedirs(coll, exist_ok=True)
for name, rec in (("env-pass1.json", {"environment": "cpu-other", "torch": "2.0"}),
                  ("env-cpu-test.json", {"environment": "cpu-test", "torch": "1.13"})):
    with open(os.path.join(coll, name), "w") as fh:
        json.dump(rec, fh)
r = subprocess.run([sys.executable, CARD, "--data", data, "--no-doc"], capture_output=True, text=True)
card5 = json.load(open(os.path.join(data, "card.json"))) if r.returncode == 0 else {}
check(card5.get("env_record", {}).get("environment") == "cpu-test", f"the labels' env record: {card5.get('env_record')}")
os.remove(os.path.join(coll, "env-cpu-test.json"))
r = subprocess.run([sys.executable, CARD, "--data", data, "--no-doc"], capture_output=True, text=True)
card5 = json.load(open(os.path.join(data, "card.json"))) if r.returncode == 0 else {}
check(card5.get("env_record", {}).get("environment") != "cpu-other" and "describe other hosts" in r.stderr,
      f"a record of another host is no env table of these labels: {card5.get('env_record')} {r.stderr[-300:]}")
os.remove(os.path.join(coll, "env-pass1.json"))

# ---- quantiles: linear between order statistics, so the median of an even count is the mean of the middle two
check(K.quantiles([4, 1, 3, 2])[0.5] == 2.5 and K.quantiles([3, 1, 2])[0.5] == 2, "median of even / odd counts")
q = K.quantiles([10, 20, 30, 40, 50])
check(q[0.0] == 10 and q[1.0] == 50 and q[0.25] == 20 and abs(q[0.9] - 46) < 1e-9, f"quantiles {q}")
check(abs(card4.get("iter_ms_q", {}).get("0.5", 0) - 0.15) < 1e-12, f"card median of labels 100, 200 us: "
      f"{card4.get('iter_ms_q')}")
count = getattr(K, "_count", str)
check(count(2.0) == "2" and count(957.5) == "957.5", "an even count's median of ops prints as a count")

# ---- files the C++ side reads are replaced atomically: a failed replace leaves the old file and no temp file
target = os.path.join(work, "atomic.json")
with open(target, "w") as fh:
    fh.write("old")
real_replace = os.replace


def failing_replace(src, dst):
    raise OSError("disk full")


os.replace = failing_replace
try:
    getattr(K, "atomic_write", lambda path, text: None)(target, "new")
    check(False, "card.atomic_write reports a failed replace")
except OSError:
    pass
finally:
    os.replace = real_replace
check(open(target).read() == "old" and sorted(os.listdir(work)).count("atomic.json") == 1 and
      not [f for f in os.listdir(work) if f.startswith("atomic.json.tmp")], "old file kept, temp file removed")
check(not [f for f in os.listdir(data) if ".tmp" in f], f"no temp files left in DATA: {os.listdir(data)}")

# ---- and durably: the temporary is flushed to the disk before the rename, its folder after (os.fsync interposed)
import stat  # noqa: E402
synced = []
real_fsync = os.fsync


def counting_fsync(fd):
    synced.append("folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
    return real_fsync(fd)


os.fsync = counting_fsync
try:
    K.atomic_write(target, "durable")
finally:
    os.fsync = real_fsync
check(synced == ["file", "folder"] and open(target).read() == "durable", f"atomic_write's flushes: {synced}")

# ---- on Windows (os.name "nt", simulated here) a file is flushed through a descriptor open for writing, which
# FlushFileBuffers needs (a read-only one made every atomic_write fail there), and no folder is opened to flush
import atomic_file  # noqa: E402  (tools/, on the path through tools.collect.card)
real_open, opened = os.open, []


def recording_open(path, flags, *args, **kw):  # os.open, recording (path, flags)
    opened.append((path, flags))
    return real_open(path, flags, *args, **kw)


real_name = os.name
os.open, os.name = recording_open, "nt"
try:
    atomic_file.sync_path(target)
    atomic_file.sync_path(work)
finally:
    os.open, os.name = real_open, real_name
nt_opens = [(os.path.basename(f), fl & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR), os.path.isdir(f)) for f, fl in opened]
check(nt_opens == [("atomic.json", os.O_RDWR, False)], f"sync_path on Windows opens {nt_opens}")

# ---- the temporary is created new under a name of its own: a symlink planted at the name the writer used to take
# (<path>.tmp<pid>) is not written through; the replaced file's mode is kept (a private file stays private)
victim = os.path.join(work, "victim.txt")
with open(victim, "w") as fh:
    fh.write("untouched")
private = os.path.join(work, "private.json")
with open(private, "w") as fh:
    fh.write("old")
os.chmod(private, 0o640)
os.symlink(victim, f"{private}.tmp{os.getpid()}")
K.atomic_write(private, "new")
check(open(victim, "rb").read() == b"untouched" and open(private).read() == "new" and not os.path.islink(private),
      f"atomic_write beside a planted symlink: victim {open(victim, 'rb').read()[:20]!r}, "
      f"file {open(private).read()!r}")
check(stat.S_IMODE(os.stat(private).st_mode) == 0o640, f"atomic_write keeps the mode: {oct(os.stat(private).st_mode)}")
check([n for n in os.listdir(work) if n.startswith("private.json.")] == [f"private.json.tmp{os.getpid()}"],
      f"atomic_write leaves no temporary of its own: {os.listdir(work)}")

# ---- a symlink at the path is followed, as the C++ writer's: its target is replaced and the link stays (a data
# folder linked elsewhere keeps being written there); a dangling link creates its target, a loop of links and a
# folder are refused before any temporary is made
real = os.path.join(work, "real.json")
with open(real, "w") as fh:
    fh.write("old")
os.chmod(real, 0o600)
link = os.path.join(work, "link.json")
os.symlink("real.json", link)
K.atomic_write(link, "through")
check(os.path.islink(link) and open(real).read() == "through" and stat.S_IMODE(os.stat(real).st_mode) == 0o600,
      f"atomic_write through a symlink: link kept {os.path.islink(link)}, target {open(real).read()!r}")
dangling = os.path.join(work, "dangling.json")
os.symlink("made.json", dangling)
K.atomic_write(dangling, "made")
check(os.path.islink(dangling) and open(os.path.join(work, "made.json")).read() == "made",
      "atomic_write through a dangling symlink creates its target")
os.symlink("loop-b", os.path.join(work, "loop-a"))
os.symlink("loop-a", os.path.join(work, "loop-b"))
os.open = recording_open
try:
    for bad, kind in ((os.path.join(work, "loop-a"), "a loop of symlinks"), (work, "a folder"), ("", "an empty path")):
        opened.clear()
        try:
            K.atomic_write(bad, "x")
            check(False, f"atomic_write refuses {kind}")
        except OSError:
            pass
        check(not opened, f"atomic_write refuses {kind} before it creates anything: opened {opened}")
finally:
    os.open = real_open
# after a relative link that climbs out of a linked folder (dirlink/l.json -> ../real2.json), the folder flushed
# after the rename is the one the file is in, not the one "dirlink/.." folds to in text
os.makedirs(os.path.join(work, "other", "dir"))
os.symlink(os.path.join("other", "dir"), os.path.join(work, "dirlink"))
os.symlink(os.path.join("..", "real2.json"), os.path.join(work, "other", "dir", "l.json"))
synced_dirs = []


def recording_fsync(fd):
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode):
        synced_dirs.append(st.st_ino)
    return real_fsync(fd)


os.fsync = recording_fsync
try:
    K.atomic_write(os.path.join(work, "dirlink", "l.json"), "climbed")
finally:
    os.fsync = real_fsync
check(open(os.path.join(work, "other", "real2.json")).read() == "climbed" and
      synced_dirs == [os.stat(os.path.join(work, "other")).st_ino],
      f"atomic_write through dirlink/l.json -> ../real2.json flushes other/: {synced_dirs} "
      f"(other/ {os.stat(os.path.join(work, 'other')).st_ino}, work {os.stat(work).st_ino})")
check(not [n for n in os.listdir(work) if ".tmp" in n and not n.startswith("private.json.")],
      f"no temporary left by the refusals: {os.listdir(work)}")
fifo = os.path.join(work, "pipe.json")
os.mkfifo(fifo)
reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
K.atomic_write(fifo, "piped")
got = os.read(reader, 100)
os.close(reader)
check(stat.S_ISFIFO(os.stat(fifo).st_mode) and got == b"piped", f"atomic_write into a pipe writes in place: {got!r}")
os.remove(fifo)
log = os.path.join(work, "log.txt")
with open(log, "w") as fh:
    fh.write("kept")
log_fd = os.open(log, os.O_WRONLY | os.O_APPEND)
try:
    K.atomic_write(f"/proc/self/fd/{log_fd}", "x")
    check(False, "atomic_write refuses a descriptor open on a regular file (/dev/stdout redirected to a log)")
except OSError:
    pass
os.close(log_fd)
check(open(log).read() == "kept", f"the log behind the descriptor is kept: {open(log).read()!r}")

# ---- threads of one process replacing one file: a writer never removes another's temporary (the name it renamed
# away may already be the next writer's)
import threading  # noqa: E402
shared, errors = os.path.join(work, "shared.json"), []


def replace_often(i):
    try:
        for k in range(300):
            K.atomic_write(shared, f"{i}-{k}")
    except OSError as e:
        errors.append(repr(e))


writers = [threading.Thread(target=replace_often, args=(i,)) for i in range(4)]
for t in writers:
    t.start()
for t in writers:
    t.join()
check(not errors and not [n for n in os.listdir(work) if n.startswith("shared.json.")],
      f"4 threads x 300 replacements of one file: {len(errors)} failed ({errors[:2]})")

# ---- collect.py in a copied tree whose worker is a stub (no torch, no timing): what a run leaves behind
tree = os.path.join(work, "tree")
os.makedirs(os.path.join(tree, "tools", "collect"))
for f in ("__init__.py", "collect.py", "card.py", "configs.py", "env.py", "zoo.py", "randwire.py", "randgen.py",
          "reproduce.py"):
    shutil.copy(os.path.join(ROOT, "tools", "collect", f), os.path.join(tree, "tools", "collect", f))
shutil.copy(os.path.join(ROOT, "tools", "atomic_file.py"), os.path.join(tree, "tools", "atomic_file.py"))
with open(os.path.join(tree, "tools", "collect", "worker.py"), "w") as fh:
    fh.write("""import argparse, json, os, time
ap = argparse.ArgumentParser()
ap.add_argument("--ids")
ap.add_argument("--pass", dest="p", type=int)
ap.add_argument("--raw")
ap.add_argument("--warmup", type=int)
ap.add_argument("--iters", type=int)
ap.add_argument("--isolated", action="store_true")
ap.add_argument("--heap-mb", type=int, default=0)
ap.add_argument("--tail-steps", type=int, default=0)
ap.add_argument("--env-out", default="")
a, _ = ap.parse_known_args()
ids = open(a.ids).read().split()
if a.env_out and os.environ.get("STUB_ENV"):  # the environment record, as the worker writes it before its configs
    json.dump({"environment": os.environ["STUB_ENV"], "pid": os.getpid()}, open(a.env_out, "w"))
if os.environ.get("STUB_PIDFILE"):
    open(os.environ["STUB_PIDFILE"], "w").write(str(os.getpid()))
for cid in ids:
    d = os.path.join(a.raw, cid)
    os.makedirs(d, exist_ok=True)
    if os.environ.get("STUB_SLEEP"):  # a long config: the marker names it while it runs
        open(os.path.join(a.raw, ".current-%d" % os.getpid()), "w").write(cid)
        time.sleep(float(os.environ["STUB_SLEEP"]))
    open(os.path.join(d, "pass%d.json.gz" % a.p), "wb").close()
    rec = {"ok": True, "pass": a.p, "pid": os.getpid(), "process_ids": len(ids), "finished_unix": time.time(),
           "wall_s": 0.01,
           "settings": dict({"warmup": a.warmup, "iters": a.iters}, **({"isolated": True} if a.isolated else {}),
                            **({"heap_mb": a.heap_mb} if a.heap_mb else {}),
                            **({"tail_steps": a.tail_steps} if a.tail_steps else {}))}
    if os.environ.get("STUB_ENV"):
        rec["env"] = {"environment": os.environ["STUB_ENV"]}
    if os.environ.get("STUB_SPEED"):  # JSON list of machine slowness factors, one per worker process (= pass); an
        # entry may be {config: factor or [before, after]} (1.0 for the configs it does not name)
        f = json.load(open(os.environ["STUB_SPEED"]))[0]
        f = f.get(cid, 1.0) if isinstance(f, dict) else f
        f = f if isinstance(f, list) else [f]
        rec["probe"] = {w: {"gemm_ms": 3.0 * x, "small_ops_ms": 2.0 * x} for w, x in zip(("before", "after"), f)}
    json.dump(rec, open(os.path.join(d, "pass%d.status.json" % a.p), "w"))
    print("DONE %s 1 0.01" % cid, flush=True)
    if os.environ.get("STUB_DIE_AFTER") == cid:  # dies between configs, its marker still naming the finished one
        open(os.path.join(a.raw, ".current-%d" % os.getpid()), "w").write(cid)
        os._exit(3)
if os.environ.get("STUB_SPEED"):  # the next worker runs at the next factor
    json.dump(json.load(open(os.environ["STUB_SPEED"]))[1:], open(os.environ["STUB_SPEED"], "w"))
""")
TREE_COLLECT = os.path.join(tree, "tools", "collect", "collect.py")

# ---- collect.py refuses a bad selection before creating any folder (run in the stub tree, so that a regression
# that accepts the selection runs no real collection)
bad_ids = os.path.join(work, "bad-ids.txt")
with open(bad_ids, "w") as fh:
    fh.write("mlp-0001\nbogus-1\n")
twice_ids = os.path.join(work, "twice-ids.txt")
with open(twice_ids, "w") as fh:
    fh.write("mlp-0001\nmlp-0002\nmlp-0001  # again\n")  # the second run would be warm, in the same worker
off_manifest = os.path.join(work, "off-manifest-ids.txt")
with open(off_manifest, "w") as fh:
    fh.write("resnet-5\n")  # a known family, but no id of the manifest
refused = os.path.join(work, "refused")
for extra, word in ((["--configs", os.path.join(work, "no-such-ids.txt")], "no-such-ids.txt"),
                    (["--configs", bad_ids], "bogus-1"),
                    (["--configs", os.path.join(work, "ids.txt"), "--block", "0"], "--block"),
                    (["--families", "mlp,resnt"], "known families: "),
                    (["--families", "resnt", "--print-ids"], "resnt"),
                    (["--configs", off_manifest], "resnet-5"),
                    (["--configs", twice_ids], "named more than once (mlp-0001)"),
                    (["--families", ",", "--print-ids"], "names no family")):
    r = subprocess.run([sys.executable, TREE_COLLECT, "--out", refused, "--no-label", *extra], capture_output=True,
                       text=True)
    check(r.returncode == 2 and word in r.stderr, f"collect {extra}: rc {r.returncode} {r.stderr[-300:]}")
    check(not os.path.exists(refused), f"collect {extra} created {refused}")

# a clean pass leaves no ids-pass*.txt (nor worker stderr) in OUT/collect
stub_out = os.path.join(work, "stub-out")
r = subprocess.run([sys.executable, TREE_COLLECT, "--out", stub_out,
                    "--configs", os.path.join(work, "ids.txt"), "--passes", "2", "--no-label"],
                   capture_output=True, text=True)
check(r.returncode == 0, f"collect with a stub worker: rc {r.returncode} {r.stderr[-500:]}")
left = sorted(os.listdir(os.path.join(stub_out, "collect"))) if os.path.isdir(os.path.join(stub_out, "collect")) else []
check(left == ["run.jsonl"], f"OUT/collect after clean passes: {left}")
check(all(os.path.exists(os.path.join(stub_out, "raw", cid, f"pass{p}.status.json")) for cid in ids for p in (1, 2)),
      "the stub worker ran both passes of both configs")

# ---- trace_export.add_ets_metadata (the worker's CUDA path: real Kineto's export, then the "ets" object the importer
# reads, tail_steps among it) copies the trace's bytes as they are: re-serialising them in Python rounded Kineto's
# epoch-µs timestamps with ns decimals to ~0.25 µs. It refuses what is not a trace.
sys.path.insert(0, os.path.join(ROOT, "tools"))
import trace_export  # noqa: E402  (no torch at module level)
meta = {"tail_steps": 1, "family": "f"}
want_tail = b',"ets":{"tail_steps":1,"family":"f"}}'
sources = {"synthetic": b'{"traceEvents": [{"ph": "X", "name": "k", "ts": 1712195495519689.047, "dur": 2.001}],\n'
                        b' "ets": {"model": "m"}}\n\n'}
hta = os.path.join(ROOT, "..", "shared", "data", "kineto-gpu", "hta",
                   "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")
if os.path.exists(hta):
    with gzip.open(hta, "rb") as fh:
        sources["hta_ns_resolution"] = fh.read()
for name, raw in sources.items():
    src = os.path.join(work, f"meta-{name}.json")
    with open(src, "wb") as fh:
        fh.write(raw)
    # reads that cut keys and the closing brace, and one read for the whole file
    for chunk in (7 if name == "synthetic" else 4093, 1 << 20):
        trace_export.add_ets_metadata(src, src + ".gz", meta, chunk=chunk)
        with gzip.open(src + ".gz", "rb") as fh:
            out = fh.read()
        check(out == raw.rstrip()[:-1] + want_tail and json.loads(out)["ets"] == meta,
              f"add_ets_metadata keeps {name}'s bytes (chunk {chunk}) and appends the metadata: ...{out[-120:]!r}")
for bad in (b"[1, 2]", b'{"other": 1}', b'{"traceEvents": []', b"", b"   "):
    with open(os.path.join(work, "meta-bad.json"), "wb") as fh:
        fh.write(bad)
    try:
        trace_export.add_ets_metadata(os.path.join(work, "meta-bad.json"), os.path.join(work, "meta-bad.out"), meta)
        check(False, f"add_ets_metadata accepted {bad!r}")
    except ValueError as e:
        check("Chrome JSON trace" in str(e) and not os.path.exists(os.path.join(work, "meta-bad.out")),
              f"add_ets_metadata refuses {bad!r}, leaving no output: {e}")
# a failure leaves an earlier file at the destination as it was (it used to be truncated first, then removed)
earlier = os.path.join(work, "meta-earlier.json")
with open(earlier, "w") as fh:
    fh.write("earlier trace")
try:
    trace_export.add_ets_metadata(os.path.join(work, "meta-bad.json"), earlier, meta)
except ValueError:
    pass
with open(earlier) as fh:
    check(fh.read() == "earlier trace" and not [n for n in os.listdir(work) if n.startswith("meta-earlier.json.")],
          "add_ets_metadata that fails keeps the earlier file and leaves no temporary")

# the same for its temporary: a planted symlink is not written through, the earlier file's mode is kept, and the
# gzip output is the same bytes whatever the temporary was called (no name or time in its header)
dst = os.path.join(work, "meta-private.json.gz")
src = os.path.join(work, "meta-synthetic.json")
trace_export.add_ets_metadata(src, dst, meta)
first = open(dst, "rb").read()
os.chmod(dst, 0o600)
os.symlink(victim, f"{dst}.tmp{os.getpid()}")
time.sleep(1.1)  # a header carrying the time would now differ
trace_export.add_ets_metadata(src, dst, meta)
check(open(victim, "rb").read() == b"untouched" and not os.path.islink(dst) and open(dst, "rb").read() == first,
      f"add_ets_metadata beside a planted symlink: victim {open(victim, 'rb').read()[:20]!r}, same bytes "
      f"{open(dst, 'rb').read() == first}")
check(stat.S_IMODE(os.stat(dst).st_mode) == 0o600, f"add_ets_metadata keeps the mode: {oct(os.stat(dst).st_mode)}")

# ---- the worker removes the temporaries a killed worker left beside a pass (its export's, the atomic writer's of
# that export, e.g. pass1.json.gz.tmp<pid>.json.gz.tmp<pid>-0, and the status file's), but not a live worker's
from tools.collect import worker as W  # noqa: E402  (no torch at module level)
gone = subprocess.Popen(["true"])
gone.wait()
alive = subprocess.Popen(["sleep", "60"])
tmp_dir = os.path.join(work, "stale-temps")
os.makedirs(tmp_dir)
trace_p, status_p = os.path.join(tmp_dir, "pass1.json.gz"), os.path.join(tmp_dir, "pass1.status.json")
dead, live = gone.pid, alive.pid
stale = [f"pass1.json.gz.tmp{dead}.json.gz", f"pass1.json.gz.tmp{dead}.json.gz.tmp{dead}-0",
         f"pass1.json.gz.tmp{dead}.json", f"pass1.status.json.tmp{dead}-3"]
kept = [f"pass1.json.gz.tmp{live}.json.gz.tmp{live}-0", f"pass1.json.gz.tmp{live}.json.gz", "pass1.json.gz.tmpnotes",
        f"pass1.status.json.tmp{live}-0"]
for f in stale + kept:
    open(os.path.join(tmp_dir, f), "w").close()
W._remove_stale_temps(trace_p)
W._remove_stale_temps(status_p)
alive.kill()
alive.wait()
check(sorted(os.listdir(tmp_dir)) == sorted(kept), f"stale temporaries removed, live ones kept: {os.listdir(tmp_dir)}")

# ---- tools/export_etsm.py refuses an --out or --parity naming a folder (usage, exit 2) before building anything; it
# used to end in an IsADirectoryError traceback after the export's work
EXPORT = os.path.join(ROOT, "tools", "export_etsm.py")
# export_etsm imports numpy: this interpreter's, else Debian's (whose torch the tool serves), else not checked
EXPORT_PY = next((py for py in (sys.executable, "/usr/bin/python3") if os.path.exists(py) and subprocess.run(
    [py, "-c", "import numpy"], capture_output=True).returncode == 0), None)
for flag in ("--out", "--parity") if EXPORT_PY else ():
    argv = ["--out", os.path.join(work, "m.etsm")] if flag == "--parity" else []
    r = subprocess.run([EXPORT_PY, EXPORT, "export", *argv, flag, work], capture_output=True, text=True)
    check(r.returncode == 2 and "is a folder" in r.stderr and "Traceback" not in r.stderr and
          not os.path.exists(os.path.join(work, "m.etsm")), f"export_etsm {flag} FOLDER: rc {r.returncode} "
          f"{r.stderr[-300:]}")
if EXPORT_PY:
    # an output naming an input or the other output (the parity file replaced the model, exit 0), and a folder no
    # file can be created in (/proc/self, also for root: a traceback after the export's work): refused up front
    weights = os.path.join(work, "w.pt")
    with open(weights, "wb") as fh:
        fh.write(b"weights")
    m = os.path.join(work, "m.etsm")
    for argv, want in ((["--out", m, "--parity", os.path.join(work, ".", "m.etsm")], "same file"),
                       (["--out", weights, "--state-dict", weights], "same file"),
                       (["--out", "/proc/self/m.etsm"], "cannot write")):
        if argv[1].startswith("/proc/") and not os.path.isdir("/proc/self"):
            continue
        r = subprocess.run([EXPORT_PY, EXPORT, "export", *argv, "--input-size", "4", "--hidden", "4", "--layers", "1"],
                           capture_output=True, text=True)
        check(r.returncode == 2 and want in r.stderr and "Traceback" not in r.stderr and not os.path.exists(m)
              and open(weights, "rb").read() == b"weights", f"export_etsm {argv}: rc {r.returncode} {r.stderr[-300:]}")

# ---- the worker's skip rule: the median warm-up iteration over --max-iter-s, decided as soon as it is certain (a
# first warm-up paying one-off costs alone no longer drops a configuration); --rt is one of a pass's settings
from tools.collect import env as E  # noqa: E402  (no torch at module level)
for times, planned, want in (([2.3], 3, None), ([2.3, 1.7, 1.7], 3, False), ([2.3, 2.5], 3, True),
                             ([1.0, 1.0, 1.0], 3, False), ([3.0], 1, True), ([2.1, 1.0, 2.2, 1.0], 4, True),
                             ([], 0, False)):
    check(E.warmup_too_slow(times, planned, 2.0) is want,
          f"warmup_too_slow({times}, {planned}, 2.0) = {E.warmup_too_slow(times, planned, 2.0)}, not {want}")
check(E.pass_settings(3, 6, False, 0, True) == {"warmup": 3, "iters": 6, "rt": True} and
      E.pass_settings(3, 6, False, 0) == {"warmup": 3, "iters": 6},
      f"--rt in a pass's settings: {E.pass_settings(3, 6, False, 0, True)}")
check(E.pass_settings(3, 6, False, 0, False, 1) == {"warmup": 3, "iters": 6, "tail_steps": 1},
      f"--tail-steps in a pass's settings: {E.pass_settings(3, 6, False, 0, False, 1)}")

# ---- a worker that dies between configs (after one's DONE, its marker still naming it) is not blamed on that
# config: its good pass stays, and the rest run in a new worker (the finished pass was overwritten as crashed)
die_out = os.path.join(work, "die-out")
r = subprocess.run([sys.executable, TREE_COLLECT, "--out", die_out, "--configs", os.path.join(work, "ids.txt"),
                    "--passes", "1", "--no-label"], capture_output=True, text=True,
                   env={**os.environ, "STUB_DIE_AFTER": ids[0]})
died = {cid: json.load(open(os.path.join(die_out, "raw", cid, "pass1.status.json"))) for cid in ids}
check(r.returncode == 0 and all(st.get("ok") for st in died.values()) and
      len({st["pid"] for st in died.values()}) == 2,
      f"a worker dying after {ids[0]}: rc {r.returncode} {died} {r.stderr[-300:]}")

# ---- --isolate: every pass of every config in a worker process of its own; a pass from a shared worker does not
# count as done for an isolated collection (its label would depend on its neighbours), nor the other way round
def stub_statuses(out):
    return {(cid, p): json.load(open(os.path.join(out, "raw", cid, f"pass{p}.status.json"))) for cid in ids
            for p in (1, 2)}


def units_to_run(stderr):
    line = [ln for ln in stderr.splitlines() if "config-passes to run" in ln]
    return int(line[0].split(" config-passes")[0].rsplit(" ", 1)[1]) if line else -1


shared = stub_statuses(stub_out)
check(all(st["process_ids"] == len(ids) for st in shared.values()) and len({st["pid"] for st in shared.values()}) == 2,
      f"without --isolate one worker per pass runs every config: {shared}")
iso_cmd = [sys.executable, TREE_COLLECT, "--configs", os.path.join(work, "ids.txt"), "--passes", "2", "--no-label",
           "--isolate"]
r = subprocess.run(iso_cmd + ["--out", stub_out], capture_output=True, text=True)
check(r.returncode == 0 and units_to_run(r.stderr) == 2 * len(ids),
      f"--isolate over shared-worker passes runs them all again: rc {r.returncode} {r.stderr[-300:]}")
iso = stub_statuses(stub_out)
check(all(st["process_ids"] == 1 and st["settings"].get("isolated") for st in iso.values()) and
      len({st["pid"] for st in iso.values()}) == len(iso), f"--isolate: one process per config and pass: {iso}")
r = subprocess.run(iso_cmd + ["--out", stub_out], capture_output=True, text=True)
check(r.returncode == 0 and units_to_run(r.stderr) == 0 and stub_statuses(stub_out) == iso,
      f"a second --isolate run resumes with nothing to do: {r.stderr[-300:]}")
r = subprocess.run(iso_cmd[:-1] + ["--out", stub_out], capture_output=True, text=True)
check(r.returncode == 0 and units_to_run(r.stderr) == 2 * len(ids),
      f"nor do isolated passes count without --isolate (a label's passes all ran one way): {r.stderr[-300:]}")

# ---- --heap-mb: workers pre-fault 8 GiB of heap unless told otherwise; passes with another heap setting (or
# from before it existed) are not counted as done
check(all(st["settings"].get("heap_mb") == 8192 for st in stub_statuses(stub_out).values()),
      f"the default heap pre-fault reaches the worker: {stub_statuses(stub_out)}")
heap_cmd = iso_cmd[:-1] + ["--out", stub_out, "--heap-mb"]
r = subprocess.run(heap_cmd + ["0"], capture_output=True, text=True)
check(r.returncode == 0 and units_to_run(r.stderr) == 2 * len(ids) and
      all("heap_mb" not in st["settings"] for st in stub_statuses(stub_out).values()),
      f"--heap-mb 0 over 8 GiB passes runs them again, without a pre-fault: {r.stderr[-300:]}")
r = subprocess.run(heap_cmd + ["0"], capture_output=True, text=True)
check(r.returncode == 0 and units_to_run(r.stderr) == 0, f"and then resumes with nothing to do: {r.stderr[-300:]}")
r = subprocess.run(heap_cmd + ["-1"], capture_output=True, text=True)
check(r.returncode == 2 and "--heap-mb" in r.stderr, f"--heap-mb -1 is refused: rc {r.returncode} {r.stderr[-300:]}")
r = subprocess.run(heap_cmd + [str(1 << 40)], capture_output=True, text=True)
check(r.returncode == 2 and "of this machine's" in r.stderr and units_to_run(r.stderr) == -1,
      f"a pre-fault beyond 3/4 of the memory is refused before any pass: rc {r.returncode} {r.stderr[-300:]}")

# ---- --tail-steps: one by default; passes without a tail step (as every collection before it had) are not
# counted as done, so that no label mixes iterations ended at a ProfilerStep# span with ones ended by a successor
tail_cmd = heap_cmd[:-1] + ["--heap-mb", "0"]
check(all(st["settings"].get("tail_steps") == 1 for st in stub_statuses(stub_out).values()),
      f"the default tail step reaches the worker: {stub_statuses(stub_out)}")
r = subprocess.run(tail_cmd + ["--tail-steps", "0"], capture_output=True, text=True)
check(r.returncode == 0 and units_to_run(r.stderr) == 2 * len(ids) and
      all("tail_steps" not in st["settings"] for st in stub_statuses(stub_out).values()),
      f"--tail-steps 0 over tailed passes runs them again, without a tail: {r.stderr[-300:]}")
for st_path in (os.path.join(stub_out, "raw", cid, f"pass{p}.status.json") for cid in ids for p in (1, 2)):
    st = json.load(open(st_path))
    del st["settings"]  # a pass from before settings were recorded
    json.dump(st, open(st_path, "w"))
r = subprocess.run(tail_cmd, capture_output=True, text=True)
check(r.returncode == 0 and units_to_run(r.stderr) == 2 * len(ids),
      f"passes without settings (before the tail step) do not count for a tailed collection: {r.stderr[-300:]}")
# reproduce.py re-collects committed labels the way they were taken: with their tail steps, none before them
from tools.collect import reproduce as R  # noqa: E402
check(R.tail_steps_of([{"tail_steps": 0}, {}]) == 0 and R.tail_steps_of([{"tail_steps": 1}]) == 1 and
      R.tail_steps_of([{"tail_steps": 1}, {"tail_steps": 0}]) is None, "reproduce.py's --tail-steps of the labels")
# ... and their heap pre-fault: the label's record, else its recorded passes', else none (the committed labels
# predate it), so that a scratch collection does not pre-fault 8 GiB for labels taken without
heap_of = getattr(R, "heap_mb_of", lambda *a: -1)
check(heap_of([{"heap_mb": None}]) == 0 and heap_of([{"heap_mb": 8192}, {"heap_mb": 8192}]) == 8192 and
      heap_of([{"heap_mb": None}], [[{"heap_mb": 8192}, {"heap_mb": 8192}]]) == 8192 and
      heap_of([{"heap_mb": None}], [[{"warmup": 3}]]) == 0 and
      heap_of([{"heap_mb": 8192}, {"heap_mb": None}]) is None, "reproduce.py's --heap-mb of the labels")
rep_data, rep_work = os.path.join(work, "repro-data"), os.path.join(work, "repro-work")
write_label(os.path.join(rep_data, "traces", C.config("mlp-0001")["split"], "mlp-0001.etst.gz"), "mlp-0001",
            C.config("mlp-0001")["split"], 100.0, [100.0])
r = subprocess.run([sys.executable, os.path.join(tree, "tools", "collect", "reproduce.py"), "--configs", "mlp-0001",
                    "--data", rep_data, "--work", rep_work, "--passes", "1", "--ets", "/bin/false"],
                   capture_output=True, text=True)
rep_st = os.path.join(rep_work, "raw", "mlp-0001", "pass1.status.json")
rep_settings = json.load(open(rep_st)).get("settings", {}) if os.path.exists(rep_st) else None
check(rep_settings is not None and "heap_mb" not in rep_settings and "tail_steps" not in rep_settings,
      f"reproduce.py re-collects labels without a pre-fault without one: {rep_settings} {r.stderr[-300:]}")
r = subprocess.run(tail_cmd + ["--tail-steps", "-1"], capture_output=True, text=True)
check(r.returncode == 2 and "--tail-steps" in r.stderr, f"--tail-steps -1 is refused: rc {r.returncode}")

# ---- the speed gate: a block's pass whose probes are off the environment's reference speed is set aside and run
# again after a pause; when the retries run out the collector stops (exit 3) and a later run resumes
def gated(out, factors, *extra):
    speed = os.path.join(work, "stub-speed.json")
    with open(speed, "w") as fh:
        json.dump(factors, fh)
    return subprocess.run([sys.executable, TREE_COLLECT, "--out", out, "--configs", os.path.join(work, "ids.txt"),
                           "--passes", "2", "--no-label", "--speed-pause", "0", *extra], capture_output=True,
                          text=True, env={**os.environ, "STUB_SPEED": speed, "STUB_ENV": "cpu-s"})


def speed_events(out):
    with open(os.path.join(out, "collect", "run.jsonl")) as fh:
        return [e for e in map(json.loads, fh) if e.get("ev") == "speed"]


def aside(out, p):
    return sorted(f for cid in ids for f in os.listdir(os.path.join(out, "raw", cid))
                  if f.startswith(f"pass{p}.slow-") and f.endswith(".status.json"))


gate_out = os.path.join(work, "gate-out")
r = gated(gate_out, [1.0, 1.2, 1.03], "--speed-retries", "1")  # pass 1 sets the reference; pass 2 runs 20% slow
ref = json.load(open(os.path.join(gate_out, "speed_ref.json"))) if r.returncode == 0 else {}
check(r.returncode == 0 and ref.get("cpu-s", {}).get("gemm_ms") == 3.0 and ref["cpu-s"].get("small_ops_ms") == 2.0,
      f"the first gated pass is the reference: rc {r.returncode} {ref} {r.stderr[-400:]}")
check([e["ok"] for e in speed_events(gate_out)] == [True, False, True] and "set aside" in r.stderr,
      f"the slow pass 2 is run again and then passes the gate: {speed_events(gate_out)}")
check(len(aside(gate_out, 2)) == len(ids) and not aside(gate_out, 1),
      f"the slow pass's files are kept aside: {aside(gate_out, 2)}")
sts = stub_statuses(gate_out) if r.returncode == 0 else {}
check(sts and all(math.isclose(st["probe"]["before"]["gemm_ms"], 3.0 * (1.0 if p == 1 else 1.03))
                  for (cid, p), st in sts.items()), f"the passes kept ran at the reference speed: {sts}")
# a pass that finished before an interruption is judged when the run resumes, with the block's other passes: here
# mlp-0001's pass 2 ran 40% fast and the run stopped before the gate saw it; the resumed run sets it aside
resume_out = os.path.join(work, "gate-resume")
r = gated(resume_out, [1.0, 1.0], "--speed-retries", "1")
check(r.returncode == 0, f"gated stub run: rc {r.returncode} {r.stderr[-300:]}")
for f in ("pass2.status.json", "pass2.json.gz"):
    os.remove(os.path.join(resume_out, "raw", "mlp-0002", f))
st_path = os.path.join(resume_out, "raw", "mlp-0001", "pass2.status.json")
st = json.load(open(st_path))
st.pop("speed_judged", None)
st["probe"] = {"before": {"gemm_ms": 1.8, "small_ops_ms": 1.2}}
json.dump(st, open(st_path, "w"))
r = gated(resume_out, [1.0, 1.0], "--speed-retries", "1")
sts = stub_statuses(resume_out) if r.returncode == 0 else {}
check(r.returncode == 0 and [e["ok"] for e in speed_events(resume_out)][2:] == [False, True] and
      [f for f in aside(resume_out, 2) if f.startswith("pass2.slow-")] and
      all(math.isclose(st["probe"]["before"]["gemm_ms"], 3.0) for st in sts.values()),
      f"an off-speed pass from before an interruption is judged on resume: rc {r.returncode} {speed_events(resume_out)} "
      f"{aside(resume_out, 2)} {r.stderr[-300:]}")
r = gated(resume_out, [1.0], "--speed-retries", "0")
check(r.returncode == 0 and len(speed_events(resume_out)) == 4, f"judged passes are not judged again: "
      f"{speed_events(resume_out)}")
stop_out = os.path.join(work, "gate-stop")
r = gated(stop_out, [1.0, 0.8, 0.8], "--speed-retries", "1")  # 20% faster is off the reference too
check(r.returncode == 3 and "stopped" in r.stderr and len(aside(stop_out, 2)) == 2 * len(ids) and
      not any(os.path.exists(os.path.join(stop_out, "raw", cid, "pass2.status.json")) for cid in ids),
      f"retries run out: exit 3, both runs of pass 2 set aside: rc {r.returncode} {aside(stop_out, 2)} {r.stderr[-300:]}")
r = gated(stop_out, [1.01], "--speed-retries", "0")
check(r.returncode == 0 and units_to_run(r.stderr) == len(ids) and len(speed_events(stop_out)) == 4,
      f"a later run resumes with pass 2 only, against the kept reference: rc {r.returncode} {r.stderr[-300:]}")
# ---- the config gate: a configuration whose own probes (before or after it) ran more than --config-gate slower than
# the reference is run again in a fresh worker, alone with the others it caught, while the block's medians stay at
# speed; after --config-retries re-runs its last pass is kept, its slowness recorded. Faster is not a slow spell.
def config_events(out):
    path = os.path.join(out, "collect", "run.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as fh:
        return [e for e in map(json.loads, fh) if e.get("ev") == "config_speed"]


def config_aside(out, cid, p):
    d = os.path.join(out, "raw", cid)
    return sorted(f for f in (os.listdir(d) if os.path.isdir(d) else [])
                  if f.startswith(f"pass{p}.slow-config-") and f.endswith(".status.json"))


cg_out = os.path.join(work, "config-gate")
r = gated(cg_out, [1.0, {"mlp-0001": [1.0, 1.4]}, 1.0], "--config-pause", "0")
sts = stub_statuses(cg_out) if r.returncode == 0 else {}
check(r.returncode == 0 and [e["ok"] for e in speed_events(cg_out)] == [True, True] and
      [e["again"] for e in config_events(cg_out)] == [{"mlp-0001": 0.4}] and
      len(config_aside(cg_out, "mlp-0001", 2)) == 1 and not config_aside(cg_out, "mlp-0002", 2) and
      not config_aside(cg_out, "mlp-0001", 1),
      f"a pass slow after its configuration is run again, alone: rc {r.returncode} {config_events(cg_out)} "
      f"{r.stderr[-300:]}")
check(sts and "after" not in sts[("mlp-0001", 2)]["probe"] and sts[("mlp-0001", 2)]["pid"] not in
      (sts[("mlp-0002", 2)]["pid"], sts[("mlp-0001", 1)]["pid"]) and
      all("config_slow" not in st.get("speed_judged", {}) for st in sts.values()) and
      all(st.get("speed_judged") for st in sts.values()),
      f"the pass kept is the re-run's, in a worker of its own, judged: {sts}")
kept_aside = config_aside(cg_out, "mlp-0001", 2)
aside_st = json.load(open(os.path.join(cg_out, "raw", "mlp-0001", kept_aside[0]))) if kept_aside else {}
check(math.isclose(aside_st.get("probe", {}).get("after", {}).get("gemm_ms", 0), 4.2),
      f"the slow pass is kept aside: {aside_st}")
r = gated(cg_out, [1.0], "--config-pause", "0")
check(r.returncode == 0 and units_to_run(r.stderr) == 0 and len(config_events(cg_out)) == 1,
      f"a resumed run has nothing to do: rc {r.returncode} {r.stderr[-300:]}")
# the block gate judges the machine by the configurations outside spells: one configuration 50% slow in a block of
# two moves the medians 25%, yet only that one is run again (the whole block used to go round, after a pause)
cg_out = os.path.join(work, "config-gate-block")
r = gated(cg_out, [1.0, {"mlp-0001": 1.5}, 1.0], "--config-pause", "0", "--speed-retries", "0")
ev = speed_events(cg_out)
check(r.returncode == 0 and [e["ok"] for e in ev] == [True, True] and ev[1].get("in_spells") == 1 and
      ev[1].get("gemm_ms") == 3.0 and not [f for f in aside(cg_out, 2) if not f.startswith("pass2.slow-config-")] and
      [e["again"] for e in config_events(cg_out)] == [{"mlp-0001": 0.5}],
      f"a spell in one configuration does not send the block round: rc {r.returncode} {ev} {config_events(cg_out)} "
      f"{r.stderr[-300:]}")
cg_out = os.path.join(work, "config-gate-keep")
slow1 = {"mlp-0001": [1.0, 1.5]}
r = gated(cg_out, [1.0, slow1, slow1, slow1], "--config-pause", "0", "--config-retries", "2")
sts = stub_statuses(cg_out) if r.returncode == 0 else {}
check(r.returncode == 0 and len(config_aside(cg_out, "mlp-0001", 2)) == 2 and
      [e["again"] for e in config_events(cg_out)] == [{"mlp-0001": 0.5}] * 2 and
      config_events(cg_out)[-1].get("kept") == {} and
      sts.get(("mlp-0001", 2), {}).get("speed_judged", {}).get("config_slow") == 0.5 and
      "config_slow" not in sts.get(("mlp-0002", 2), {}).get("speed_judged", {"config_slow": 1}),
      f"after --config-retries re-runs the last pass is kept, its slowness recorded: rc {r.returncode} "
      f"{config_events(cg_out)} {sts} {r.stderr[-300:]}")
for out, factors, extra, why in (
        ("config-gate-fast", [1.0, {"mlp-0002": [1.0, 0.7]}], [], "a pass faster than the reference"),
        ("config-gate-off", [1.0, slow1], ["--config-gate", "0"], "--config-gate 0"),
        ("config-gate-within", [1.0, {"mlp-0001": [1.0, 1.08]}], [], "8% slower, within the default 10%")):
    r = gated(os.path.join(work, out), factors, "--config-pause", "0", *extra)
    check(r.returncode == 0 and not config_events(os.path.join(work, out)) and
          not any(config_aside(os.path.join(work, out), cid, 2) for cid in ids),
          f"{why} is not run again: rc {r.returncode} {r.stderr[-300:]}")
for extra in (["--config-gate", "-0.1"], ["--config-retries", "-1"], ["--config-pause", "-1"]):
    r = gated(os.path.join(work, "config-gate-bad"), [1.0], *extra)
    check(r.returncode == 2 and extra[0] in r.stderr and not os.path.exists(os.path.join(work, "config-gate-bad")),
          f"collect {extra} is refused: rc {r.returncode} {r.stderr[-300:]}")
# a reference taken in a slow spell: every pass at the usual speed is then off, and a resume could never pass;
# --invalidate over the spell drops it with the passes (it lists the passes it came from), and the next gated pass
# sets a new one
inv_out = os.path.join(work, "gate-inv")
t_before = time.time()
r = gated(inv_out, [1.5, 1.0], "--speed-retries", "0")
ref = json.load(open(os.path.join(inv_out, "speed_ref.json"))).get("cpu-s", {})
check(r.returncode == 3 and ref.get("gemm_ms") == 4.5 and sorted(ref.get("passes", [])) == sorted(ids) and
      ref.get("gated_pass") == 1, f"a slow first pass became the reference: rc {r.returncode} {ref}")
t_after = time.time()
r = subprocess.run([sys.executable, TREE_COLLECT, "--out", inv_out, "--configs", os.path.join(work, "ids.txt"),
                    "--passes", "2", "--invalidate", f"{t_before},{t_after}"], capture_output=True, text=True)
check(r.returncode == 0 and "cpu-s" not in json.load(open(os.path.join(inv_out, "speed_ref.json"))) and
      "came from a pass moved aside" in r.stderr, f"--invalidate drops that reference: rc {r.returncode} "
      f"{r.stderr[-300:]}")
r = gated(inv_out, [1.0, 1.02], "--speed-retries", "0")
check(r.returncode == 0 and json.load(open(os.path.join(inv_out, "speed_ref.json")))["cpu-s"]["gemm_ms"] == 3.0,
      f"and the resumed run gates on a new one: rc {r.returncode} {r.stderr[-300:]}")
# a reference taken before the window stays, even when a later run of one of its passes (same id and pass number)
# fell in the window and moved aside
refs = json.load(open(os.path.join(inv_out, "speed_ref.json")))
refs["cpu-s"]["span_unix"] = [1.0, 2.0]  # taken long before
with open(os.path.join(inv_out, "speed_ref.json"), "w") as fh:
    json.dump(refs, fh)
r = subprocess.run([sys.executable, TREE_COLLECT, "--out", inv_out, "--configs", os.path.join(work, "ids.txt"),
                    "--passes", "2", "--invalidate", f"{t_after},{time.time() + 1}"], capture_output=True, text=True)
check(r.returncode == 0 and "cpu-s" in json.load(open(os.path.join(inv_out, "speed_ref.json"))) and
      "passes of 2 configs" in r.stderr, f"a reference from before the window stays: rc {r.returncode} "
      f"{r.stderr[-300:]}")
# a reference kept where collections before this one put it (OUT/collect/) still holds
old_out = os.path.join(work, "gate-oldref")
os.makedirs(os.path.join(old_out, "collect"))
with open(os.path.join(old_out, "collect", "speed_ref.json"), "w") as fh:
    json.dump({"cpu-s": {"gemm_ms": 6.0, "small_ops_ms": 4.0, "source": "first gated pass"}}, fh)
r = gated(old_out, [1.0], "--speed-retries", "0")
check(r.returncode == 3 and speed_events(old_out)[0].get("gemm_ms_rel") == -0.5 and
      not os.path.exists(os.path.join(old_out, "collect", "speed_ref.json")),
      f"the reference in OUT/collect/ is read, and moved beside the labels: rc {r.returncode} {speed_events(old_out)}")
os.remove(os.path.join(old_out, "speed_ref.json"))  # what the exit-3 message says to do with a bad reference
r = gated(old_out, [1.0, 1.0], "--speed-retries", "0")
check(r.returncode == 0, f"deleting it drops it: rc {r.returncode} {r.stderr[-300:]}")
# an OUT whose manifest is not this tree's (a dataset from before the generator families) is refused before any
# pass: its labels would be trained on and carded under a manifest that does not list them
stale_out = os.path.join(work, "stale-manifest")
os.makedirs(stale_out)
with open(os.path.join(ROOT, "data", "manifest.json")) as fh:
    m = json.load(fh)
m["configs"] = m["configs"][:-1]
with open(os.path.join(stale_out, "manifest.json"), "w") as fh:
    json.dump(m, fh)
r = gated(stale_out, [1.0], "--speed-retries", "0")
check(r.returncode == 2 and "not this tree's manifest" in r.stderr and "--manifest" in r.stderr and
      not os.path.exists(os.path.join(stale_out, "raw")), f"a stale manifest is refused: rc {r.returncode} "
      f"{r.stderr[-300:]}")
r = subprocess.run([sys.executable, TREE_COLLECT, "--out", stale_out, "--manifest"], capture_output=True, text=True)
r = gated(stale_out, [1.0, 1.0], "--speed-retries", "0") if r.returncode == 0 else r
check(r.returncode == 0, f"and taken once --manifest rewrote it: rc {r.returncode} {r.stderr[-300:]}")
ref_out = os.path.join(work, "gate-ref")
r = gated(ref_out, [1.5], "--speed-retries", "0", "--speed-ref", "3,2")
check(r.returncode == 3 and speed_events(ref_out)[0].get("gemm_ms_rel") == 0.5,
      f"--speed-ref is the reference from the first pass on: rc {r.returncode} {speed_events(ref_out)}")
r = gated(os.path.join(work, "gate-off"), [1.0, 1.5], "--speed-gate", "0")
check(r.returncode == 0 and not speed_events(os.path.join(work, "gate-off")), f"--speed-gate 0: no gate: {r.stderr[-300:]}")
for extra, word in ((["--speed-ref", "3"], "--speed-ref"), (["--speed-ref", "3,nan"], "--speed-ref"),
                    (["--speed-gate", "1.5"], "--speed-gate"), (["--speed-retries", "-1"], "--speed-retries")):
    r = gated(os.path.join(work, "gate-bad"), [1.0], *extra)
    check(r.returncode == 2 and word in r.stderr and not os.path.exists(os.path.join(work, "gate-bad")),
          f"collect {extra} refused: rc {r.returncode} {r.stderr[-300:]}")

# ---- a config whose passes ran in two environments (a run resumed on another host) is not labelled; one whose
# passes agree is labelled under that environment (a stub `ets label` records its arguments)
mixed_out = os.path.join(work, "mixed-out")
stub_ets = os.path.join(work, "stub-ets")
with open(stub_ets, "w") as fh:
    fh.write(f"#!{sys.executable}\nimport json, sys\nargs = sys.argv[1:]\n"
             "open(args[args.index('-o') + 1], 'w').write(json.dumps(args))\n")
os.chmod(stub_ets, 0o755)
base_cmd = [sys.executable, TREE_COLLECT, "--out", mixed_out, "--configs", os.path.join(work, "ids.txt"),
            "--passes", "2"]
r = subprocess.run(base_cmd + ["--no-label"], capture_output=True, text=True, env={**os.environ, "STUB_ENV": "cpu-a"})
check(r.returncode == 0, f"stub passes in cpu-a: rc {r.returncode} {r.stderr[-500:]}")
# pass 2 of mlp-0001 as if it had run in cpu-b (a collector run there now stops at once, below): its record says so
st_path = os.path.join(mixed_out, "raw", "mlp-0001", "pass2.status.json")
st = json.load(open(st_path))
st["env"] = {"environment": "cpu-b"}
json.dump(st, open(st_path, "w"))
r = subprocess.run(base_cmd + ["--ets", stub_ets], capture_output=True, text=True,
                   env={**os.environ, "STUB_ENV": "cpu-a"})
check(r.returncode == 0, f"passes of mlp-0001 in cpu-a and cpu-b, then labels: rc {r.returncode} {r.stderr[-500:]}")
label_of = {cid: os.path.join(mixed_out, "traces", C.config(cid)["split"], cid + ".etst.gz") for cid in ids}
check(not os.path.exists(label_of["mlp-0001"]), "passes from cpu-a and cpu-b: no label")
if os.path.exists(label_of["mlp-0002"]):
    args = json.load(open(label_of["mlp-0002"]))
    check(args[args.index("--environment") + 1] == "cpu-a", f"labelled under its passes' environment: {args}")
else:
    check(False, "passes that agree (cpu-a): labelled")
with open(os.path.join(mixed_out, "collect", "run.jsonl")) as fh:
    label_evs = [json.loads(line) for line in fh if '"label"' in line]
check([(e["config"], e["ok"]) for e in label_evs] == [("mlp-0001", False), ("mlp-0002", True)] and
      "cpu-a, cpu-b" in label_evs[0].get("stderr", ""), f"label events: {label_evs}")

# passes recorded in OUT before any label (a collection begun with --no-label) set its environment: a run on a
# host of another one stops after its first pass and labels nothing, not one configuration per environment
nolab_out = os.path.join(work, "nolabel-env")
with open(os.path.join(work, "id1.txt"), "w") as fh:
    fh.write("mlp-0001\n")
nolab_cmd = [sys.executable, TREE_COLLECT, "--out", nolab_out, "--passes", "2", "--heap-mb", "0"]
r = subprocess.run(nolab_cmd + ["--configs", os.path.join(work, "id1.txt"), "--no-label"], capture_output=True,
                   text=True, env={**os.environ, "STUB_ENV": "cpu-a"})
check(r.returncode == 0, f"--no-label passes in cpu-a: rc {r.returncode} {r.stderr[-300:]}")
r = subprocess.run(nolab_cmd + ["--configs", os.path.join(work, "ids.txt"), "--ets", stub_ets], capture_output=True,
                   text=True, env={**os.environ, "STUB_ENV": "cpu-b"})
nolab_labels = [f for _, _, fs in os.walk(os.path.join(nolab_out, "traces")) for f in fs]
check(r.returncode == 2 and "cpu-a" in r.stderr and "cpu-b" in r.stderr and not nolab_labels,
      f"a host of another environment than OUT's recorded passes: rc {r.returncode} {nolab_labels} {r.stderr[-300:]}")
r = subprocess.run(nolab_cmd + ["--configs", os.path.join(work, "ids.txt"), "--ets", stub_ets], capture_output=True,
                   text=True, env={**os.environ, "STUB_ENV": "cpu-a"})
nolab_labels = sorted(f for _, _, fs in os.walk(os.path.join(nolab_out, "traces")) for f in fs)
check(r.returncode == 0 and nolab_labels == ["mlp-0001.etst.gz", "mlp-0002.etst.gz"],
      f"the passes' own environment goes on: rc {r.returncode} {nolab_labels} {r.stderr[-300:]}")

# ---- a collection continued on a host of another environment stops after that host's first pass, before hours of
# passes it could not label into this dataset; on a host of the labels' environment it goes on
env_out = os.path.join(work, "env-out")
write_label(os.path.join(env_out, "traces", C.config("mlp-0002")["split"], "mlp-0002.etst.gz"), "mlp-0002",
            C.config("mlp-0002")["split"], 200.0, [100.0, 100.0], tail_steps=1)  # environment cpu-test
env_cmd = [sys.executable, TREE_COLLECT, "--out", env_out, "--configs", os.path.join(work, "ids.txt"),
           "--passes", "2", "--ets", stub_ets]
# with --no-label too: its passes could later be labelled into this dataset
r = subprocess.run(env_cmd + ["--no-label"], capture_output=True, text=True, env={**os.environ, "STUB_ENV": "cpu-other"})
check(r.returncode == 2 and "cpu-other" in r.stderr, f"--no-label in another environment: rc {r.returncode} "
      f"{r.stderr[-300:]}")
speed_file = os.path.join(work, "stub-speed-env.json")
with open(speed_file, "w") as fh:
    json.dump([1.0, 1.0, 1.0], fh)
r = subprocess.run(env_cmd, capture_output=True, text=True,
                   env={**os.environ, "STUB_ENV": "cpu-other", "STUB_SPEED": speed_file})
refs = json.load(open(os.path.join(env_out, "speed_ref.json"))) if os.path.exists(os.path.join(env_out,
                                                                                               "speed_ref.json")) else {}
check("cpu-other" not in refs, f"a pass of another environment sets no speed reference: {refs}")
env_recs = {f: json.load(open(os.path.join(env_out, "collect", f))) for f in os.listdir(os.path.join(env_out, "collect"))
            if f.endswith(".json")}
check(not [f for f, rec in env_recs.items() if rec.get("environment") == "cpu-other"],
      f"a pass set aside for its environment leaves no environment record: {env_recs}")
check(r.returncode == 2 and "cpu-other" in r.stderr and "cpu-test" in r.stderr and
      not os.path.exists(os.path.join(env_out, "raw", "mlp-0001", "pass1.status.json")) and
      [f for f in os.listdir(os.path.join(env_out, "raw", "mlp-0001")) if f.startswith("pass1.other-env-")] and
      not os.path.exists(os.path.join(env_out, "raw", "mlp-0001", "pass2.status.json")),
      f"another environment stops after its first pass: rc {r.returncode} {r.stderr[-300:]}")
r = subprocess.run(env_cmd, capture_output=True, text=True, env={**os.environ, "STUB_ENV": "cpu-test"})
check(r.returncode == 0 and os.path.exists(os.path.join(env_out, "traces", C.config("mlp-0001")["split"],
                                                        "mlp-0001.etst.gz")),
      f"the labels' environment goes on: rc {r.returncode} {r.stderr[-300:]}")
check(sorted(os.listdir(os.path.join(env_out, "collect"))) == ["env-cpu-test.json", "run.jsonl"],
      f"one environment record per environment, no temporary: {os.listdir(os.path.join(env_out, 'collect'))}")
# a corrupt label (a gzip header, then no valid deflate block: zlib.error) is card.py's to report: the collector's
# scan of the labels skips it
bad_label = os.path.join(env_out, "traces", "train", "mlp-corrupt.etst.gz")
with open(bad_label, "wb") as fh:
    fh.write(gzip.compress(b"x")[:10] + b"\xff" * 40)
r = subprocess.run(env_cmd, capture_output=True, text=True, env={**os.environ, "STUB_ENV": "cpu-test"})
check(r.returncode == 0 and "Traceback" not in r.stderr, f"a corrupt label in OUT: rc {r.returncode} {r.stderr[-300:]}")
os.remove(bad_label)
# a --quick dry run is not a dataset: a second host may add to it
quick_out = os.path.join(work, "quick-env")
shutil.copytree(env_out, quick_out)
os.remove(os.path.join(quick_out, "traces", C.config("mlp-0001")["split"], "mlp-0001.etst.gz"))
shutil.rmtree(os.path.join(quick_out, "raw", "mlp-0001"))
r = subprocess.run([*env_cmd[:3], quick_out, *env_cmd[4:], "--quick"], capture_output=True, text=True,
                   env={**os.environ, "STUB_ENV": "cpu-other"})
check(r.returncode == 0 and os.path.exists(os.path.join(quick_out, "raw", "mlp-0001", "pass2.status.json")),
      f"--quick on another host: rc {r.returncode} {r.stderr[-300:]}")

# ---- SIGINT (Ctrl-C) or SIGTERM (a scheduler) to the collector: it stops its worker (not left running, orphaned),
# removes its temporaries (ids-pass*, worker stderr, raw/.current-*), logs an 'interrupted' end and exits 128 +
# the signal without a traceback
import signal  # noqa: E402
sig_out = os.path.join(work, "sig-out")
for sig in (signal.SIGINT, signal.SIGTERM):
    pidfile = os.path.join(work, "stub-worker.pid")
    if os.path.exists(pidfile):
        os.remove(pidfile)
    proc = subprocess.Popen([sys.executable, TREE_COLLECT, "--out", sig_out, "--configs", os.path.join(work, "ids.txt"),
                             "--passes", "2", "--no-label", "--heap-mb", "0"], stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "STUB_SLEEP": "60", "STUB_PIDFILE": pidfile, "STUB_ENV": "cpu-sig"})
    deadline = time.time() + 30
    while not (os.path.exists(pidfile) and os.path.getsize(pidfile)) and time.time() < deadline:
        time.sleep(0.05)
    worker_pid = int(open(pidfile).read()) if os.path.exists(pidfile) else 0
    time.sleep(0.3)  # the worker is asleep in its first config, its marker written
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    time.sleep(0.2)
    try:
        os.kill(worker_pid, 0) if worker_pid else None
        orphan = bool(worker_pid)
    except ProcessLookupError:
        orphan = False
    if orphan:
        os.kill(worker_pid, signal.SIGKILL)  # leave no stub behind
    left = sorted(os.listdir(os.path.join(sig_out, "collect")))
    markers = [f for f in os.listdir(os.path.join(sig_out, "raw")) if f.startswith(".current-")]
    with open(os.path.join(sig_out, "collect", "run.jsonl")) as fh:
        last = json.loads(fh.readlines()[-1])
    check(proc.returncode == 128 + sig and "Traceback" not in err and "interrupted" in err,
          f"{sig.name} to the collector: rc {proc.returncode} {err[-300:]}")
    check(worker_pid and not orphan, f"{sig.name}: the worker {worker_pid} is stopped, not orphaned")
    check(left == ["run.jsonl"] and not markers, f"{sig.name}: temporaries left: {left} {markers}")
    check(last.get("ev") == "end" and last.get("stopped") == "interrupted", f"{sig.name}: last event {last}")

# ---- env.py: a name without a model number (a VM's masked "AMD EPYC") gets the CPUID family / model
from tools.collect import env as E  # noqa: E402

check(E.cpu_slug("AMD EPYC", "f26m2") == "amd-epyc-f26m2" and E.cpu_slug("AMD EPYC", "f25m1") == "amd-epyc-f25m1",
      "two masked EPYC generations get two ids")
check(E.cpu_slug("AMD EPYC 7B13 64-Core", "f25m1") == "amd-epyc-7b13-64-core", "a numbered name is kept as it is")
check(E.cpu_slug("NVIDIA H200") == "nvidia-h200", "a given (GPU) name gets no host signature")
check(E.cpu_slug("Intel(R) Xeon(R) CPU @ 2.20GHz", "") == "intel-xeon", "no signature where cpuinfo has none")

# ---- env.py's heap pre-fault: the settings are glibc's, the pre-fault touches what it is asked for
check(set(E.HEAP_VARS) == {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"} and
      int(E.HEAP_VARS["MALLOC_MMAP_THRESHOLD_"]) == 32 << 20, f"heap settings: {E.HEAP_VARS}")
saved = {k: os.environ.pop(k, None) for k in E.HEAP_VARS}
check(not E.heap_vars_set(), "heap settings not in effect without the variables")
os.environ.update(E.HEAP_VARS)
check(E.heap_vars_set(), "heap settings in effect with them")
for k, v in saved.items():
    if v is None:
        os.environ.pop(k)
    else:
        os.environ[k] = v
f0 = E.minor_faults()
E.prefault_heap(64)
check(E.minor_faults() - f0 >= 64 * 256 // 2, f"a 64 MiB pre-fault touches its pages: {E.minor_faults() - f0} faults")

# ---- drift.py: the speed probes of a collection, binned in time; a slow spell becomes an --invalidate window, and a
# retest taken at another speed says so
DRIFT = os.path.join(ROOT, "tools", "collect", "drift.py")
dd, dr = os.path.join(work, "drift-data"), os.path.join(work, "drift-retest")


def probe_pass(root, cid, p, t, gemm, small, warm):
    d = os.path.join(root, "raw", cid)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"pass{p}.status.json"), "w") as fh:
        json.dump({"ok": True, "config": cid, "pass": p, "finished_unix": t, "warmup_ms": [warm * 1.3, warm * 1.1, warm],
                   "probe": {"before": {"gemm_ms": gemm, "small_ops_ms": small}}}, fh)


t0 = 1_700_000_000.0  # a whole minute
for i in range(30):  # one pass a minute; minutes 20-29 run 10% slower on the GEMM probe
    probe_pass(dd, f"mlp-{i:04d}", 1, t0 + 60 * i + 1, 3.3 * (1.1 if i >= 20 else 1.0), 3.5, 10.0)
probe_pass(dd, "mlp-0099", 1, t0 + 5, 3.3, 3.5, 10.0)
os.remove(os.path.join(dd, "raw", "mlp-0099", "pass1.status.json"))  # an unreadable or missing status is skipped
os.makedirs(os.path.join(dd, "raw", "mlp-0098"))
with open(os.path.join(dd, "raw", "mlp-0098", "pass1.status.json"), "w") as fh:
    fh.write("{not json")
for i in range(0, 30, 3):  # the retest: 20% slower warm-ups, GEMM +10% against each config's first pass
    probe_pass(dr, f"mlp-{i:04d}", 1, t0 + 7200 + i, 3.3 * 1.1, 3.5, 12.0)
r = subprocess.run([sys.executable, DRIFT, "--data", dd, "--retest", dr, "--minutes", "10", "--json"],
                   capture_output=True, text=True)
check(r.returncode == 0, f"drift.py rc {r.returncode}: {r.stderr}")
rep = json.loads(r.stdout) if r.returncode == 0 else {"bins": [], "drifted": [], "retest": {}}
check([b["passes"] for b in rep["bins"]] == [10, 10, 10], f"three 10-minute bins: {rep['bins']}")
check([b["drifted"] for b in rep["bins"]] == [False, False, True], "only the slow third is drifted")
check(rep["drifted"] == [[t0 + 1 + 1200, t0 + 1 + 1800]], f"one window over the slow bin: {rep['drifted']}")
rt = rep.get("retest", {})
check(rt.get("n") == 10 and abs(rt.get("warmup_ms", 0) - 1.2) < 1e-9 and abs(rt.get("small_ops_ms", 0) - 1.0) < 1e-9,
      f"retest ratios: {rt}")
# configs 0, 3, ..., 18 were first timed at 3.3 and 21, 24, 27 at 3.63: the median ratio of the ten is 1.1
check(abs(rt.get("gemm_ms", 0) - 1.1) < 1e-9, f"retest GEMM ratio {rt.get('gemm_ms')}")
r = subprocess.run([sys.executable, DRIFT, "--data", dd], capture_output=True, text=True)
check(r.returncode == 0 and "--invalidate" in r.stdout and r.stdout.count("drifted window") == 1,
      f"drift.py prints the window as an --invalidate: {r.stdout} {r.stderr}")
ref_line = [ln for ln in r.stdout.splitlines() if "--speed-ref" in ln]
got_ref = [float(x) for x in ref_line[0].rsplit(" ", 1)[1].split(",")] if ref_line else []
check(len(got_ref) == 2 and all(math.isclose(g, rep["reference"][k], rel_tol=1e-4)
                                for g, k in zip(got_ref, ("gemm_ms", "small_ops_ms"))),
      f"drift.py prints its reference as collect.py --speed-ref: {ref_line} vs {rep['reference']}")
empty = os.path.join(work, "drift-empty")
os.makedirs(empty)
r = subprocess.run([sys.executable, DRIFT, "--data", empty], capture_output=True, text=True)
check(r.returncode == 2 and "no pass with a speed probe" in r.stderr, f"drift.py on no passes: rc {r.returncode}")

# ---- collect.py --redo-unlabelled reads its log on past a line cut by a kill (the next run appends after it)
import argparse  # noqa: E402
from tools.collect import collect as C  # noqa: E402
redo = os.path.join(work, "redo")
shutil.rmtree(redo, ignore_errors=True)
col = C.Collector(argparse.Namespace(out=redo, raw="", ets="/bin/true", warmup=3, iters=6, isolate=False,
                                     heap_mb=8192, passes=3, tail_steps=1))
for cid in ("resnet-0001", "resnet-0002"):
    os.makedirs(os.path.join(col.raw, cid), exist_ok=True)
    for p_ in (1, 2, 3):
        with open(os.path.join(col.raw, cid, f"pass{p_}.status.json"), "w") as fh:
            json.dump({"ok": True}, fh)
with open(col.log_path, "w") as fh:
    fh.write(json.dumps({"ev": "label", "config": "resnet-0001", "ok": False}) + "\n")
    fh.write('{"ev": "pass", "config": "resnet-0003", "pa')  # cut mid-write
    fh.write(json.dumps({"ev": "start"}) + "\n")
    fh.write(json.dumps({"ev": "label", "config": "resnet-0002", "ok": False}) + "\n")
# resnet-0003's passes failed labelling at t = 1000; fresh ones (finished after it) await their label: a
# --redo-unlabelled run interrupted while labelling, run again, must not reject its own fresh passes
os.makedirs(os.path.join(col.raw, "resnet-0003"), exist_ok=True)
for p_ in (1, 2, 3):
    with open(os.path.join(col.raw, "resnet-0003", f"pass{p_}.status.json"), "w") as fh:
        json.dump({"ok": True, "finished_unix": 1000.0 + 10 * p_}, fh)
with open(col.log_path, "a") as fh:
    fh.write(json.dumps({"ev": "label", "config": "resnet-0003", "ok": False, "t": 1000.0}) + "\n")
col._forget_unlabelled([{"id": "resnet-0001"}, {"id": "resnet-0002"}, {"id": "resnet-0003"}])
for cid in ("resnet-0001", "resnet-0002"):
    left = sorted(os.listdir(os.path.join(col.raw, cid)))
    check(not [f for f in left if f.startswith("pass") and "rejected" not in f],
          f"--redo-unlabelled set {cid}'s passes aside past the cut line: {left}")
left = sorted(os.listdir(os.path.join(col.raw, "resnet-0003")))
check(left == [f"pass{p_}.status.json" for p_ in (1, 2, 3)],
      f"--redo-unlabelled keeps passes that finished after the failed label: {left}")

# ---- --quick gives its small values only to what was not given: an explicit --warmup / --iters wins
class _Stop(Exception):
    pass


seen = []


def _fake_popen(cmd, **kw):
    seen.append(cmd)
    raise _Stop


real_popen = C.subprocess.Popen
C.subprocess.Popen = _fake_popen
ids = os.path.join(work, "quick-ids.txt")
with open(ids, "w") as fh:
    fh.write("mlp-0001\n")
try:
    for argv, want in ((["--iters", "10", "--warmup", "3"], ("3", "10")), ([], ("1", "5"))):
        seen.clear()
        try:
            C.main(["--quick", *argv, "--out", os.path.join(work, "quick-out"), "--configs", ids, "--no-label",
                    "--heap-mb", "0"])
        except _Stop:
            pass
        cmd = seen[0] if seen else []
        got = (cmd[cmd.index("--warmup") + 1], cmd[cmd.index("--iters") + 1]) if "--warmup" in cmd else None
        check(got == want, f"--quick {argv}: worker runs --warmup/--iters {got}, wanted {want}")
finally:
    C.subprocess.Popen = real_popen

# recompress.py: every label smaller (level 1 -> 9, then zopfli while over the budget where pigz exists), the same
# bytes when decompressed, the dataset counted as the dataset_size test counts it (files beside the labels too).
RECOMPRESS = os.path.join(ROOT, "tools", "collect", "recompress.py")
rc_data = os.path.join(work, "recompress")
raws = {}
for i in range(3):
    body = "".join(json.dumps({"n": "conv2d", "i": [[[8, 16 + i, 32, 32], "float32"]], "t": 10.5 + k, "g": k % 7})
                   + "\n" for k in range(400 * (i + 1))).encode()
    path = os.path.join(rc_data, "traces", "train", f"mlp-{i:04d}.etst.gz")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(gzip.compress(body, 1))
    raws[path] = body
with open(os.path.join(rc_data, "manifest.json"), "w") as fh:
    fh.write("{}" + " " * 5000)
sizes = lambda: {p: os.path.getsize(p) for p in raws}
before = sizes()
side = 5002  # the manifest counts; a budget between it and the labels' sum forces zopfli
p = subprocess.run([sys.executable, RECOMPRESS, "--data", rc_data, "--dry-run", "--budget", "1e9"],
                   capture_output=True, text=True)
check(p.returncode == 0 and f"{sum(before.values()) + side:,}" in p.stdout and sizes() == before,
      f"recompress --dry-run counts labels and manifest, changes nothing: {p.returncode} {p.stdout}")
p = subprocess.run([sys.executable, RECOMPRESS, "--data", rc_data, "--budget", "1e9"], capture_output=True, text=True)
level9 = sizes()
check(p.returncode == 0 and all(level9[q] < before[q] for q in raws), f"recompress: level 9 smaller: {p.stdout}")
check(all(gzip.decompress(open(q, "rb").read()) == raws[q] for q in raws), "recompress: bytes kept at level 9")
if shutil.which("pigz"):
    p = subprocess.run([sys.executable, RECOMPRESS, "--data", rc_data, "--budget", "5003"], capture_output=True,
                       text=True)
    check(p.returncode == 1 and "OVER" in p.stdout and all(sizes()[q] < level9[q] for q in raws)
          and all(gzip.decompress(open(q, "rb").read()) == raws[q] for q in raws),
          f"recompress: zopfli on every label while over, bytes kept, exit 1 still over: {p.returncode} {p.stdout}")
p = subprocess.run([sys.executable, RECOMPRESS, "--data", os.path.join(work, "no-such")], capture_output=True,
                   text=True)
check(p.returncode == 2 and "no labels" in p.stderr, f"recompress: no labels refused: {p.returncode} {p.stderr}")
check(not any(n.endswith(".part") for n in os.listdir(os.path.dirname(next(iter(raws))))), "recompress: no .part left")

finish("collect tools: invalidate and retest bookkeeping, card safeguards and collect refusals hold")
