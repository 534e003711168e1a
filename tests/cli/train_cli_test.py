#!/usr/bin/env python3
# `ets train` output contract on the committed pilot dataset's smallest traces with a tiny network: the --json
# summary (epochs, steps, history, wall time, kernels), the reported val MRE equals what `ets eval` computes for the
# written model (with and without the weight average, and for a GRU), a time budget ends the run early but still
# writes a usable model, and bad budgets, decays or cells are refused; ETS_TRAIN_ISA caps the kernels; the JSON
# escapes the output path, divergence is ets.train.12, and eval of a split without labels is refused; --out may be a
# FIFO (the model streams through) or a symlink (kept; its target replaced with its mode), --checkpoint not a FIFO.
# Values are checked against each other, never hard-coded.
# Usage: train_cli_test.py ETS DATA_DIR WORK_DIR
import json
import math
import os
import subprocess
import sys

from checks import check, failures, finish, smallest_traces  # tests/cli/checks.py, beside this script

ets, pilot, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
for stale in ("never.etsm",):  # what a failed earlier run may have left, which a check below must not find
    if os.path.exists(os.path.join(work, stale)):
        os.remove(os.path.join(work, stale))
# the pilot set's smallest train traces (every run below reads them again, and all 51 took minutes under ASan); the
# whole val split, so that a validation takes long enough to show in the summary's seconds
data = smallest_traces(pilot, os.path.join(work, "data"), {"train": 16, "val": None})


TINY = ["--hidden", "8", "--layers", "1", "--batch", "64", "--max-windows", "256", "--threads", "1", "--quiet", "--json"]


def run_train(out, *extra):
    p = subprocess.run([ets, "train", "--data", data, "--out", out, *TINY, *extra], capture_output=True, text=True)
    check(p.returncode == 0, f"ets train {' '.join(extra)}: rc {p.returncode}; stderr {p.stderr}")
    return json.loads(p.stdout) if p.returncode == 0 else {}


def eval_val_mre(model, what):
    """ets eval of a written model on the val split: its MRE, or None (a failure is recorded) when it cannot run."""
    p = subprocess.run([ets, "eval", "--model", model, "--data", data, "--split", "val", "--json", "--threads", "1"],
                       capture_output=True, text=True)
    check(p.returncode == 0, f"ets eval of {what}: rc {p.returncode}; {p.stderr}")
    return json.loads(p.stdout)["methods"]["ets"]["mre"] if p.returncode == 0 else None


def check_val_mre_matches(model, j, what):
    """The trainer's own figure must be what evaluation of the written file gives (no second validation pass)."""
    ev = eval_val_mre(model, what)
    if ev is not None:
        check(abs(ev - j["val_mre"]) <= 1e-5 * max(1.0, ev), f"{what}: eval val MRE {ev} vs train's {j['val_mre']}")


# ---- a full short run: three epochs of 256 windows in steps of 64
model = os.path.join(work, "tiny.etsm")
j = run_train(model, "--epochs", "3", "--max-minutes", "0")
if j:
    check(j["epochs"] == 3 and not j["out_of_time"] and not j["early_stopped"], f"ran 3 epochs: {j}")
    check(j["steps"] == 3 * math.ceil(256 / 64) and j["batch"] == 64, f"steps {j['steps']} batch {j['batch']}")
    check(len(j["history"]) == 3 and [h["epoch"] for h in j["history"]] == [0, 1, 2], f"history {j['history']}")
    best = j["history"][j["best_epoch"]]["val_mre"]
    check(best == min(h["val_mre"] for h in j["history"]), "the kept epoch has the lowest val MRE")
    check(abs(j["val_mre"] - best) < 1e-6, f"val_mre {j['val_mre']} is the kept epoch's {best}")
    check(j["wall_seconds"] >= j["seconds"] > 0, f"wall {j['wall_seconds']} >= trainer {j['seconds']}")
    check(j.get("kernels") in ("avx512", "avx2-fma", "generic"), f"kernels {j.get('kernels')}")
    check_val_mre_matches(model, j, "the trained model")

# ---- a budget far shorter than one epoch: one step, validated, and the model is still written and loads
short = os.path.join(work, "short.etsm")
j = run_train(short, "--epochs", "50", "--max-minutes", "0.00001")
if j:
    check(j["out_of_time"] and j["epochs"] == 1 and j["steps"] >= 1, f"budget run: {j}")
    check(j["val_mre"] > 0, "the budget run was still validated")
    eval_val_mre(short, "the budget run's model")  # it loads and predicts

# ---- with the weight average the kept weights are the average: its score is still what eval of the file gives,
# and the provenance records the decay
avg = os.path.join(work, "ema.etsm")
j = run_train(avg, "--epochs", "2", "--max-minutes", "0", "--ema", "0.9")
if j:
    check_val_mre_matches(avg, j, "the averaged model")
    with open(avg, "rb") as f:
        check(b"ema=0.9" in f.read(), "provenance hyper records ema=0.9")

# ---- time-weighted loss: a different model from the same seed, and the provenance records the power
weighted = os.path.join(work, "weighted.etsm")
j_plain = run_train(os.path.join(work, "plain2.etsm"), "--epochs", "2", "--max-minutes", "0")
j = run_train(weighted, "--epochs", "2", "--max-minutes", "0", "--loss-weight", "0.5")
if j and j_plain:
    check_val_mre_matches(weighted, j, "the time-weighted model")
    check(j["val_mre"] != j_plain["val_mre"], f"--loss-weight 0.5 trains other weights: {j['val_mre']} both")
    with open(weighted, "rb") as f:
        check(b"loss_time_power=0.5" in f.read(), "provenance hyper records loss_time_power=0.5")

# ---- a GRU network: the file says so (arch bigru, cell=gru), and eval of it reproduces the trainer's val MRE
gru = os.path.join(work, "gru.etsm")
j = run_train(gru, "--epochs", "2", "--max-minutes", "0", "--cell", "gru")
if j:
    check_val_mre_matches(gru, j, "the GRU model")
    with open(gru, "rb") as f:
        blob = f.read()
        check(b"bigru" in blob and b"cell=gru" in blob, "a GRU model is stored as arch bigru with cell=gru")
    with open(model, "rb") as f:
        check(b"cell=lstm" in f.read(), "the default cell is the LSTM")

# ---- ETS_TRAIN_ISA caps the training kernels, and the summary names them; an unknown value is ets.train.19
for isa, want in (("generic", "generic"), ("bogus", None)):
    p = subprocess.run([ets, "train", "--data", data, "--out", os.path.join(work, "isa.etsm"), *TINY, "--epochs", "1",
                        "--max-minutes", "0"], capture_output=True, text=True, env=dict(os.environ, ETS_TRAIN_ISA=isa))
    if want:
        check(p.returncode == 0 and json.loads(p.stdout).get("kernels") == want,
              f"ETS_TRAIN_ISA={isa}: rc {p.returncode}; {p.stdout} {p.stderr}")
    else:
        check(p.returncode == 1 and "ets.train.19" in p.stderr, f"ETS_TRAIN_ISA={isa}: rc {p.returncode}; {p.stderr}")

# ---- bad budgets, decays, cells and epoch counts are usage errors (rc 2) with a message naming the option
# (before any data is read: a bad --lr used to fail only after loading, with exit 1)
for args in (["--max-minutes", "-1"], ["--ema", "1"], ["--ema", "-0.5"], ["--cell", "rnn"], ["--epochs", "0"],
             ["--lr", "0"], ["--lr", "-1"], ["--batch", "0"], ["--layers", "0"], ["--width", "0"], ["--stride", "13"],
             ["--width", "2", "--stride", "3"], ["--clip", "-1"], ["--weight-decay", "-1"], ["--val-split", "train"],
             ["--loss-weight", "2.5"], ["--loss-weight", "-1"],
             # the training split under other spellings; a control character predict would refuse in the model;
             # a thread count no host has; the model written over its own checkpoint
             ["--val-split", "traces/train"], ["--val-split", "train/"], ["--environment", "cpu\nx"],
             ["--threads", "100000"], ["--checkpoint", os.path.join(work, ".", "never.etsm")],
             ["--checkpoint", "-"],  # "-" is not stdout here (and was a file named "-")
             ["--anneal-to-budget", "--max-minutes", "0"],  # no budget to follow: the flag would do nothing
             # a network past a model file's 2^29 parameters: said before the data is read (it was ets.train.2
             # after loading and encoding, 17 s and 3.6 GB into the full dataset)
             ["--layers", "2", "--hidden", "6000"],
             # a checkpoint written over a trace trained on (the next run failed on it as an unknown format)
             ["--checkpoint", os.path.join(data, "traces", "val", sorted(os.listdir(os.path.join(data, "traces", "val")))[0])]):
    p = subprocess.run([ets, "train", "--data", data, "--out", os.path.join(work, "never.etsm"), *args],
                       capture_output=True, text=True)
    check(p.returncode == 2 and args[-2] in p.stderr, f"{args}: rc {p.returncode}; {p.stderr}")
check(not os.path.exists(os.path.join(work, "never.etsm")), "nothing written for a refused command")
# ---- nor may --out replace a trace of the dataset, under any spelling, or its manifest
victim = os.path.join(data, "traces", "train", sorted(os.listdir(os.path.join(data, "traces", "train")))[0])
with open(victim, "rb") as fh:
    before = fh.read()
for out in (victim, os.path.join(data, "traces", ".", "train", "..", "train", os.path.basename(victim)),
            os.path.join(data, "manifest.json")):
    p = subprocess.run([ets, "train", "--data", data, "--out", out, *TINY], capture_output=True, text=True)
    check(p.returncode == 2 and "lies in the dataset" in p.stderr, f"--out {out}: rc {p.returncode}; {p.stderr}")
check(not os.path.exists(os.path.join(data, "manifest.json")), "no manifest written into the dataset")
with open(victim, "rb") as fh:
    check(fh.read() == before, "the trace named by --out is unchanged")

# ---- --max-bytes bounds each file of the splits read (as `ets predict` bounds a trace): ets.io.6 names the file
p = subprocess.run([ets, "train", "--data", data, "--out", os.path.join(work, "never.etsm"), *TINY, "--max-bytes", "1K"],
                   capture_output=True, text=True)
check(p.returncode == 1 and "[ets.io.6]" in p.stderr and ".etst" in p.stderr and "--max-bytes" in p.stderr
      and not os.path.exists(os.path.join(work, "never.etsm")), f"train --max-bytes 1K: rc {p.returncode}; {p.stderr}")
p = subprocess.run([ets, "train", "--data", data, "--out", os.path.join(work, "never.etsm"), "--max-bytes", "1X"],
                   capture_output=True, text=True)
check(p.returncode == 2 and "--max-bytes" in p.stderr, f"train --max-bytes 1X: rc {p.returncode}; {p.stderr}")

# ---- an --out that cannot be written fails before training, not after it
# (a data folder that does not exist: had the data been read first, the error would be its ets.eval.1)
p = subprocess.run([ets, "train", "--data", os.path.join(work, "no-such-data"), "--out",
                    os.path.join(work, "no", "such", "m.etsm")], capture_output=True, text=True)
check(p.returncode == 1 and "ets.model.9" in p.stderr and "loading" not in p.stderr,
      f"--out into a missing folder: rc {p.returncode}; {p.stderr}")

# ---- a checkpoint that cannot be written is refused before the data is read, not at the first validation
p = subprocess.run([ets, "train", "--data", os.path.join(work, "no-such-data"), "--out", os.path.join(work, "ck.etsm"),
                    "--checkpoint", os.path.join(work, "no", "such", "ck")], capture_output=True, text=True)
check(p.returncode == 1 and "ets.train.11" in p.stderr, f"--checkpoint into a missing folder: rc {p.returncode}; {p.stderr}")

# ---- a pipe as --out streams the model through it (renaming a temporary over it would replace the pipe); a pipe as
# --checkpoint, which is replaced whole and read back to resume, is refused before the data is read
import threading  # noqa: E402
fifo = os.path.join(work, "out.fifo")
if not os.path.exists(fifo):
    os.mkfifo(fifo)
got = []
reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
reader.start()
p = subprocess.run([ets, "train", "--data", data, "--out", fifo, *TINY, "--epochs", "1", "--max-minutes", "0"],
                   capture_output=True, text=True, timeout=300)
reader.join(60)
check(p.returncode == 0 and os.path.exists(fifo) and not os.path.isfile(fifo),
      f"--out a FIFO: rc {p.returncode}, still a FIFO {os.path.exists(fifo) and not os.path.isfile(fifo)}; {p.stderr}")
if p.returncode == 0 and got:
    streamed = os.path.join(work, "streamed.etsm")
    with open(streamed, "wb") as fh:
        fh.write(got[0])
    check_val_mre_matches(streamed, json.loads(p.stdout), "the model streamed through a FIFO")
p = subprocess.run([ets, "train", "--data", os.path.join(work, "no-such-data"), "--out", os.path.join(work, "ck.etsm"),
                    "--checkpoint", fifo], capture_output=True, text=True, timeout=60)
check(p.returncode == 1 and "ets.train.11" in p.stderr and "not a regular file" in p.stderr,
      f"--checkpoint a FIFO: rc {p.returncode}; {p.stderr}")

# ---- a symlink as --out keeps pointing at the model: its target is replaced, with the target's permissions
target_dir = os.path.join(work, "models-real")
os.makedirs(target_dir, exist_ok=True)
target, link = os.path.join(target_dir, "m.etsm"), os.path.join(work, "linked.etsm")
for f in (target, link):
    if os.path.lexists(f):
        os.remove(f)
open(target, "wb").close()
os.chmod(target, 0o640)
os.symlink(os.path.join("models-real", "m.etsm"), link)
j = run_train(link, "--epochs", "1", "--max-minutes", "0")
check(os.path.islink(link) and os.path.getsize(target) > 0 and (os.stat(target).st_mode & 0o777) == 0o640,
      f"--out through a symlink: link kept {os.path.islink(link)}, target {os.path.getsize(target)} bytes, mode "
      f"{oct(os.stat(target).st_mode & 0o777)}")
if j:
    check_val_mre_matches(link, j, "the model written through a symlink")

# ---- without validation (--val-split ""): a warning, and val_mre is null rather than -1
novalid = os.path.join(work, "noval.etsm")
p = subprocess.run([ets, "train", "--data", data, "--out", novalid, *TINY, "--epochs", "1", "--max-minutes", "0",
                    "--val-split", ""], capture_output=True, text=True)
check(p.returncode == 0 and "no early stopping" in p.stderr, f"--val-split '': rc {p.returncode}; {p.stderr}")
if p.returncode == 0:
    j = json.loads(p.stdout)
    check(j["val_mre"] is None and all(h["val_mre"] is None for h in j["history"]), f"unvalidated run: {j}")

# ---- Ctrl-C stops the run, still writes the best weights so far and its summary, then ends by SIGINT (so a
# shell's `ets train ... && next` stops); a SIGINT the caller ignores stays ignored
import signal
LONG = ["--hidden", "8", "--layers", "1", "--batch", "64", "--max-windows", "256", "--threads", "1", "--json",
        "--epochs", "100000", "--patience", "0", "--max-minutes", "5"]


def start_training(out, ignore_sigint=False):
    proc = subprocess.Popen([ets, "train", "--data", data, "--out", out, *LONG], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None)
    for line in proc.stderr:  # not a terminal: one line per validation; the first means training is under way
        if "val MRE" in line:
            break
    return proc


stopped = os.path.join(work, "interrupted.etsm")
proc = start_training(stopped)
proc.send_signal(signal.SIGINT)
try:
    out, err = proc.communicate(timeout=120)
except subprocess.TimeoutExpired:  # SIGINT no longer stops training: fail, and do not leave the run behind
    proc.kill()
    out, err = proc.communicate()
    failures.append("SIGINT did not stop ets train within 120 s")
check(proc.returncode == -signal.SIGINT and os.path.exists(stopped), f"interrupted run: rc {proc.returncode}; {err[-300:]}")
try:
    j = json.loads(out)
    check(j["interrupted"] and j["epochs"] < 100000, f"interrupted run summary: {j}")
    check_val_mre_matches(stopped, j, "the interrupted run's model (its best weights)")
except ValueError:
    failures.append(f"interrupted run printed no JSON summary: {out[:200]!r}")
# ---- SIGTERM (a batch system stopping the job) is handled as Ctrl-C is, and the command ends by SIGTERM
termed = os.path.join(work, "terminated.etsm")
proc = start_training(termed)
proc.send_signal(signal.SIGTERM)
try:
    out, err = proc.communicate(timeout=120)
except subprocess.TimeoutExpired:
    proc.kill()
    out, err = proc.communicate()
    failures.append("SIGTERM did not stop ets train within 120 s")
check(proc.returncode == -signal.SIGTERM and os.path.exists(termed) and "interrupted (SIGTERM)" in err,
      f"terminated run: rc {proc.returncode}; {err[-300:]}")
try:
    j = json.loads(out)
    check(j["interrupted"], f"terminated run summary: {j}")
    check_val_mre_matches(termed, j, "the terminated run's model (its best weights)")
except ValueError:
    failures.append(f"terminated run printed no JSON summary: {out[:200]!r}")
ignoring = start_training(os.path.join(work, "ignoring.etsm"), ignore_sigint=True)
ignoring.send_signal(signal.SIGINT)
for line in ignoring.stderr:  # it goes on validating: the next epoch's line comes
    if "val MRE" in line:
        break
check(ignoring.poll() is None and "interrupted" not in line,
      f"a run started with SIGINT ignored stopped on SIGINT (rc {ignoring.poll()})")
ignoring.kill()
ignoring.communicate(timeout=60)

# ---- a second signal while the cut checkpoint or the model is being written ends the run at once, and removes
# the file's temporary (it used to kill the process with the temporary left: SA_RESETHAND had reset the handler)
import glob
import time
with open(ets, "rb") as fh:
    asan = b"__asan_init" in fh.read()
twice = os.path.join(work, "twice")
os.makedirs(twice, exist_ok=True)
# (not under ASan: an epoch of this network takes minutes there, and the path is signal handling, not memory)
proc = None if asan else subprocess.Popen([ets, "train", "--data", data, "--out", os.path.join(twice, "m.etsm"), "--checkpoint",
                         os.path.join(twice, "ck"), "--hidden", "256", "--layers", "1", "--batch", "64",
                         "--max-windows", "16", "--threads", "1", "--epochs", "100000", "--patience", "0",
                         "--max-minutes", "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
if proc is not None:
    for line in proc.stderr:
        if "val MRE" in line:
            break
    proc.send_signal(signal.SIGTERM)
    caught = False
    deadline = time.time() + 120
    while proc.poll() is None and time.time() < deadline:
        if glob.glob(os.path.join(twice, "*.tmp-*")) + glob.glob(os.path.join(twice, "*.part-*")):
            proc.send_signal(signal.SIGTERM)  # the second, inside a write
            caught = True
            break
        time.sleep(0.0005)
    try:
        proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        failures.append("two SIGTERMs did not end ets train within 120 s")
    left = [f for f in os.listdir(twice) if ".tmp-" in f or ".part-" in f]
    check(proc.returncode == -signal.SIGTERM and not left,
          f"a second SIGTERM {'inside a write' if caught else '(no write seen)'}: rc {proc.returncode}, left {left}")

# ---- an output path JSON must escape, and divergence reported as such (not as an aggregator error)
odd = os.path.join(work, 'q"x\\y.etsm')
j = run_train(odd, "--epochs", "1", "--max-minutes", "0")
check(j.get("model") == odd, f"--json echoes the output path {odd!r} as {j.get('model')!r}")
p = subprocess.run([ets, "train", "--data", data, "--out", os.path.join(work, "diverged.etsm"), *TINY, "--epochs", "1",
                    "--max-minutes", "0", "--lr", "1e9"], capture_output=True, text=True)
check(p.returncode == 1 and "ets.train.12" in p.stderr, f"--lr 1e9 diverges with ets.train.12: rc {p.returncode} {p.stderr}")
# ---- ets eval of a split without a labelled trace is refused, not scored 0%
empty = os.path.join(work, "empty-split")
os.makedirs(os.path.join(empty, "traces", "test"), exist_ok=True)
p = subprocess.run([ets, "eval", "--model", model, "--data", empty, "--split", "test"], capture_output=True, text=True)
check(p.returncode == 1 and "ets.eval.4" in p.stderr, f"eval of an empty split: rc {p.returncode} {p.stderr}")

finish("ets train: summary, budget, weight average, GRU cell and refusal hold")
