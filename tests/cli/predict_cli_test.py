#!/usr/bin/env python3
# Output-shape test of `ets predict`: JSON lines (keys, types, interval around the prediction, measured from the
# trace), --format gavel (throughputs[env][job_type]["null"] = 1e6 / predicted_us) and --format matrix (CSV).
# Usage: predict_cli_test.py ETS MODEL_A MODEL_B TRACE. Values are checked against each other, never hard-coded.
import ast
import csv
import io
import json
import math
import re
import os
import resource
import shutil
import subprocess
import sys

from checks import check, failures, finish, read_etst  # tests/cli/checks.py, beside this script

ets, model_a, model_b, trace = sys.argv[1:5]


def run(*args, expect_rc=0, env=None):
    p = subprocess.run([ets, "predict", *args], capture_output=True, text=True, env=env)
    if p.returncode != expect_rc:
        failures.append(f"ets predict {' '.join(args)}: rc {p.returncode} (wanted {expect_rc}); stderr: {p.stderr}")
    return p


# JSON lines: one object per trace (x env)
p = run(trace, trace, "--model", model_a, "--json")
lines = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
check(len(lines) == 2, f"2 traces -> 2 JSON lines, got {len(lines)}")
inspect = json.loads(subprocess.run([ets, "inspect", trace, "--json"], capture_output=True, text=True).stdout)
for o in lines:
    for k in ("trace", "predicted_us", "measured_us", "interval_us", "ops", "env", "time_us", "gap_us", "phase_us",
              "backend"):
        check(k in o, f"key {k} missing in {o}")
    check(o["trace"] == trace, "trace path echoed")
    check(o["env"] == "cpu-test", f"env from the model's hardware_env, got {o['env']}")
    lo, hi = o["interval_us"]
    check(lo <= o["predicted_us"] <= hi, f"interval {lo}..{hi} holds {o['predicted_us']}")
    check(o["predicted_us"] > 0, "positive prediction")
    check(abs(o["time_us"] + o["gap_us"] - o["predicted_us"]) <= 1e-3 * o["predicted_us"] + 0.01,
          "time + gap = predicted")
    ph = o["phase_us"]
    check(abs(ph["forward"] + ph["backward"] + ph["update"] - o["predicted_us"]) <= 1e-3 * o["predicted_us"] + 0.01,
          "phases sum to predicted")
    # the chosen iteration is one of the file's iterations, with its op count and measured time
    its = {it["iteration"]: it for it in inspect["iterations"]}
    check(o["iteration"] in its, "iteration exists in the file")
    it = its.get(o["iteration"], {})
    check(o["ops"] == it.get("ops"), "op count matches ets inspect")
    check(o["measured_us"] is not None and abs(o["measured_us"] - it.get("measured_us", -1)) < 1e-2,
          "measured_us matches ets inspect")
    # the representative iteration has the median measured time, the lower middle one for an even count
    middle = sorted(i["measured_us"] for i in inspect["iterations"] if i["measured_us"] is not None)
    check(middle and abs(o["measured_us"] - middle[(len(middle) - 1) // 2]) <= 1e-2,
          f"measured {o['measured_us']} is the (lower) median of {middle}")
    pi = inspect.get("predicted_index")
    check(pi is not None and inspect["iterations"][pi]["iteration"] == o["iteration"],
          f"inspect's predicted_index {pi} names the iteration predict used ({o['iteration']})")

# --env renames; two models; text format
p = run(trace, "--model", model_a, "--env", "renamed", "--format", "json")
check(json.loads(p.stdout.splitlines()[0])["env"] == "renamed", "--env names the environment")
p = run(trace, "--model", model_a)
check(trace in p.stdout and "predicted" in p.stdout and "measured" in p.stdout, f"text output: {p.stdout}")

# gavel: throughputs[env][job_type]["null"] in steps/s
two = f"a={model_a},b={model_b}"
js = json.loads(run(trace, "--model", two, "--json").stdout.splitlines()[0])
gavel = json.loads(run(trace, "--model", two, "--format", "gavel").stdout)
check(sorted(gavel) == ["a", "b"], f"gavel envs {sorted(gavel)}")
for env in gavel:
    check(len(gavel[env]) == 1, "one job type per trace")
    (jt, v), = gavel[env].items()
    check(jt.startswith("('") and jt.endswith("', 1)"), f"gavel job type key {jt}")
    check(set(v) == {"null"} and v["null"] > 0, f"gavel entry {v}")
# Gavel reads a key back with re.match(r"\('(.*)', (\d+)\)"): two jobs of one name must differ inside the quotes
twice = json.loads(run(trace, trace, "--model", model_a, "--format", "gavel").stdout)
keys = list(next(iter(twice.values())))
parsed = [re.match(r"\('(.*)', (\d+)\)", k) for k in keys]
check(len(keys) == 2 and all(parsed) and len({m.group(1) for m in parsed}) == 2,
      f"gavel keys of two jobs of one name stay distinct after Gavel's parse: {keys}")
check(all(isinstance(ast.literal_eval(k), tuple) for k in keys), f"gavel keys are Python tuple literals: {keys}")
a_steps = gavel["a"][next(iter(gavel["a"]))]["null"]
check(abs(a_steps - 1e6 / js["predicted_us"]) <= 1e-4 * a_steps, "steps/s = 1e6 / predicted_us")

# matrix: job x resource CSV
rows = list(csv.reader(io.StringIO(run(trace, trace, "--model", two, "--format", "matrix").stdout)))
check(rows[0] == ["job", "a", "b"], f"matrix header {rows[0]}")
check(len(rows) == 3 and all(r[0] == trace for r in rows[1:]), "one row per trace")
check(abs(float(rows[1][1]) - js["predicted_us"]) <= 1e-3 * js["predicted_us"], "matrix value = predicted_us")
check(rows[1][1] != rows[1][2], "the two models give different columns")

# errors: missing model file, bad format, missing default model
run(trace, "--model", "/nonexistent.etsm", expect_rc=1)
run(trace, "--model", model_a, "--format", "xml", expect_rc=2)
env = dict(os.environ, ETS_MODEL="/nonexistent/default.etsm")
p = run(trace, env=env, expect_rc=1)
check("ets.model." in p.stderr, f"ETS_MODEL pointing nowhere reports the model id: {p.stderr}")

# --backend: cpu gives the default's numbers on a machine without a usable GPU; cuda is a usage error in a build
# without CUDA, a runtime error (ets.cuda.1) without a device, else agrees with the CPU; anything else is a usage error
cuda_build = "(cuda)" in subprocess.run([ets, "--version"], capture_output=True, text=True).stdout
cpu = json.loads(run(trace, "--model", model_a, "--json", "--backend", "cpu").stdout.splitlines()[0])
check(cpu["predicted_us"] > 0 and cpu["backend"] == "cpu-eigen", f"--backend cpu predicts on the CPU: {cpu}")
p = run(trace, "--model", model_a, "--json", "--backend", "gpu", expect_rc=2)
check("auto, cpu or cuda" in p.stderr and p.stdout == "", f"--backend gpu: {p.stderr!r}")
p = subprocess.run([ets, "predict", trace, "--model", model_a, "--json", "--backend", "cuda"], capture_output=True,
                   text=True)

def auto_is_cpu():
    auto = json.loads(run(trace, "--model", model_a, "--json", "--backend", "auto").stdout.splitlines()[0])
    check(auto["predicted_us"] == cpu["predicted_us"] and auto["backend"] == "cpu-eigen",
          f"--backend auto is the CPU here: {auto} vs {cpu}")


if not cuda_build:
    check(p.returncode == 2 and "built without CUDA" in p.stderr, f"--backend cuda, CPU-only build: {p.stderr!r}")
    auto_is_cpu()
elif p.returncode == 1:
    check("ets.cuda.1" in p.stderr, f"--backend cuda without a device names ets.cuda.1: {p.stderr!r}")
    auto_is_cpu()  # no usable device: auto falls back to the CPU
else:
    gpu = json.loads(p.stdout.splitlines()[0]) if p.returncode == 0 and p.stdout.strip() else {}
    check(gpu and gpu["backend"] == "cuda-cudnn" and
          abs(gpu["predicted_us"] - cpu["predicted_us"]) <= 1e-4 * cpu["predicted_us"],
          f"--backend cuda runs on cuDNN and agrees with cpu: {gpu} vs {cpu}")

# --json with another --format is a usage error naming both (it used to print text); with --format json it agrees
for fmt in ("text", "gavel", "matrix"):
    p = run(trace, "--model", model_a, "--format", fmt, "--json", expect_rc=2)
    check("--json" in p.stderr and "--format" in p.stderr and p.stdout == "",
          f"--format {fmt} --json: {p.stderr!r} {p.stdout[:100]!r}")
p = run(trace, "--model", model_a, "--json", "--format", "json")
rows = [json.loads(l) for l in p.stdout.splitlines()] if p.returncode == 0 else []
check(rows and rows[0]["trace"] == trace, f"--json --format json prints JSON: {p.stdout[:100]!r}")

# --model items: an empty environment name, path or item is a usage error, never a silent fallback
for bad, says in ((f"={model_a}", "empty environment name"), (f"a={model_a},,b={model_b}", "empty item"),
                  (f"a={model_a},", "empty item"), (f",{model_a}", "empty item"), ("a=", "no model path"),
                  (f"a={model_a},b=", "no model path"), ("", "needs a path")):
    p = run(trace, "--model", bad, expect_rc=2)
    check(says in p.stderr and "--model" in p.stderr and p.stdout == "", f"--model {bad!r}: {p.stderr!r}")
p = run(trace, "--model", model_a, "--env", "", expect_rc=2)
check("--env" in p.stderr, f"--env '': {p.stderr!r}")
p = run(trace, "--model", f"k80={model_a}", "--json")
rows = [json.loads(l) for l in p.stdout.splitlines()] if p.returncode == 0 else []
check(rows and rows[0]["env"] == "k80", f"--model ENV=M names the environment: {p.stdout[:100]!r}")
# --model repeats: two --model options are the two models of "a=A,b=B", never only the last one
p = run(trace, "--model", f"a={model_a}", "--model", f"b={model_b}", "--format", "matrix")
rep = list(csv.reader(io.StringIO(p.stdout))) if p.returncode == 0 else []
want = list(csv.reader(io.StringIO(run(trace, "--model", two, "--format", "matrix").stdout)))
check(rep == want and rep and rep[0] == ["job", "a", "b"], f"--model a=A --model b=B: {rep} vs {want}")
# an item without ENV= before one with it: two models (it was read as one, environment "A,b")
p = run(trace, "--model", f"{model_a},b={model_b}", "--format", "matrix")
mixed = list(csv.reader(io.StringIO(p.stdout))) if p.returncode == 0 else []
check(mixed and mixed[0] == ["job", "cpu-test", "b"], f"--model A,b=B: {mixed}")
# any other value option given twice is a usage error (one value would silently win)
p = run(trace, "--model", model_a, "--format", "json", "--format", "text", expect_rc=2)
check("--format" in p.stderr and "given twice" in p.stderr and p.stdout == "", f"--format twice: {p.stderr!r}")
# a model path holding '=' or ',' (a run=3 folder) is one model, alone or after ENV=
import tempfile as _tf0
with _tf0.TemporaryDirectory() as odd_dir:
    folder = os.path.join(odd_dir, "run=3,seed=1")
    os.makedirs(folder)
    odd_model = os.path.join(folder, "m.etsm")
    __import__("shutil").copyfile(model_a, odd_model)
    for value, env_name in ((odd_model, "cpu-test"), (f"k80={odd_model}", "k80")):
        p = run(trace, "--model", value, "--json")
        rows = [json.loads(l) for l in p.stdout.splitlines()] if p.returncode == 0 else []
        check(len(rows) == 1 and rows[0]["env"] == env_name and rows[0]["model"].endswith("run=3,seed=1/m.etsm"),
              f"--model {value!r}: {p.stdout[:200]!r} {p.stderr!r}")
    # Gavel parses its keys with a regular expression, not as Python: a quote or backslash in the job's name comes
    # back verbatim from Gavel's own parse, never with an escaping backslash in it
    named = os.path.join(odd_dir, "named.etst")
    odd_name = "o'ne\\net"
    subprocess.run([ets, "label", trace, "-o", named, "--model", odd_name], check=True, capture_output=True)
    g = json.loads(run(named, "--model", model_a, "--format", "gavel").stdout or "{}")
    keys = [k for env_keys in g.values() for k in env_keys]
    parsed = [re.match(r"\('(.*)', (\d+)\)", k) for k in keys]
    check(len(keys) == 1 and parsed[0] and parsed[0].group(1).split(" (batch size")[0] == odd_name,
          f"gavel key of a job named {odd_name!r}: {keys}")
    # Keys are told apart as written: names that differ only in what the key rewrites (a line break becomes a space)
    # and a name that already ends in " #2" stay distinct jobs (Python's json.load keeps the last of equal keys)
    labelled = []
    for i, name in enumerate(("x\nb", "x b", "q", "q", "q #2")):
        path = os.path.join(odd_dir, f"kj{i}.etst")
        subprocess.run([ets, "label", trace, "-o", path, "--model", name], check=True, capture_output=True)
        labelled.append(path)
    out = run(*labelled, "--model", model_a, "--format", "gavel").stdout
    g = json.loads(out or "{}")
    keys = [k for env_keys in g.values() for k in env_keys]
    check(len(keys) == len(labelled) and out.count("\"('") == len(labelled),
          f"gavel keys of names that write alike: {keys}")
    # environments are the outer keys: two ids that write alike once made valid UTF-8 are refused, a usage error
    p = subprocess.run([ets.encode(), b"predict", trace.encode(), b"--model",
                        b"caf\xe9=" + model_a.encode() + b",caf\xe8=" + model_a.encode(), b"--format", b"gavel"],
                       capture_output=True)
    check(p.returncode == 2 and b"one JSON key" in p.stderr and p.stdout == b"",
          f"gavel with two environments that write alike: rc {p.returncode} {p.stderr!r}")
    # a byte that is no UTF-8 and a real U+FFFD read back as one character: the same key (the byte was written
    # as the escape \ufffd, the character raw, so the check saw two keys that a JSON reader merged)
    p = subprocess.run([ets.encode(), b"predict", trace.encode(), b"--model",
                        b"k\xff=" + model_a.encode() + b",k\xef\xbf\xbd=" + model_a.encode(), b"--format", b"gavel"],
                       capture_output=True)
    check(p.returncode == 2 and b"one JSON key" in p.stderr,
          f"gavel with environments 'k\\xff' and 'k\\ufffd': rc {p.returncode} {p.stderr!r}")

# an installed ets (bin/ beside share/ets/models/) uses its own default model, not the source tree it was built from
import tempfile as _tf
with _tf.TemporaryDirectory() as prefix:
    os.makedirs(os.path.join(prefix, "bin"))
    os.makedirs(os.path.join(prefix, "share", "ets", "models"))
    installed = os.path.join(prefix, "bin", "ets")
    shutil_copy = __import__("shutil").copy2
    shutil_copy(ets, installed)
    own = os.path.join(prefix, "share", "ets", "models", "default.etsm")
    shutil_copy(model_b, own)
    env = {k: v for k, v in os.environ.items() if k != "ETS_MODEL"}
    p = subprocess.run([installed, "predict", trace, "--json"], capture_output=True, text=True, env=env)
    check(p.returncode == 0, f"installed ets without --model: rc {p.returncode} {p.stderr}")
    if p.returncode == 0:
        used = json.loads(p.stdout.splitlines()[0]).get("model", "")
        check(os.path.realpath(used) == os.path.realpath(own), f"installed ets used {used}, not its own {own}")

# robustness of the tool's output: JSON stays valid for any file name, lost output is an error, numbers are checked
import tempfile

with tempfile.TemporaryDirectory() as tmp:
    odd = os.path.join(tmp.encode(), b"t\xff\"q\\.json.gz")  # not UTF-8, a quote and a backslash
    shutil.copyfile(trace, odd)
    p = subprocess.run([os.fsencode(ets), b"predict", odd, b"--model", os.fsencode(model_a), b"--json"],
                       capture_output=True)
    check(p.returncode == 0, f"odd file name: rc {p.returncode} {p.stderr!r}")
    try:
        o = json.loads(p.stdout.decode("utf-8"))
        check(o["trace"].endswith('t\ufffd"q\\.json.gz'), f"odd name echoed as {o['trace']!r}")
    except (UnicodeDecodeError, ValueError) as e:
        failures.append(f"odd file name: output is not UTF-8 JSON ({e}): {p.stdout!r}")
    # t = g = 1e308 for both ops: their sum overflows, so the gap share is not a number; JSON says null
    inf_etst = os.path.join(tmp, "huge.etst")
    op = ('{"n":"relu","r":"aten::relu","p":0,"i":[[[4,4],"float32"]],"h":{},"f":null,"b":null,"s":0,'
          '"t":1e+308,"g":1e+308,"q":1,"k":0}\n')
    with open(inf_etst, "w") as fh:
        fh.write('{"format":"ets-trace","version":[1,0]}\n'
                 '{"trace":{"source_format":"live","source_path":"","framework":"","framework_version":"","device":"",'
                 '"environment":"","model":"","family":"","optimizer":"","batch_size":0,"extra":{},"iteration":0,'
                 '"start_us":0,"measured_us":null,"ops":2}}\n' + op + op +
                 '{"end":{"traces":1}}\n')
    # an iteration timed at 0 µs was not timed: measured_us is null in --json, as for a trace without timings
    def edited_copy(name, *edits):
        """The trace as a canonical .etst file in tmp, with each (pattern, replacement) of `edits` applied to its
        text in turn."""
        path = os.path.join(tmp, name)
        subprocess.run([ets, "convert", trace, "-o", path, "--quiet"], check=True)
        with open(path) as fh:
            text = fh.read()
        for pattern, replacement in edits:
            text = re.sub(pattern, replacement, text)
        with open(path, "w") as fh:
            fh.write(text)
        return path

    untimed = (r'"measured_us":[0-9.e+-]+', '"measured_us":0')
    zero = edited_copy("zero.etst", untimed)
    p = subprocess.run([ets, "predict", zero, "--model", model_a, "--json"], capture_output=True, text=True)
    rows = [json.loads(line) for line in p.stdout.splitlines()] if p.returncode == 0 else []
    check(rows and all(r["measured_us"] is None and r["rel_error"] is None for r in rows),
          f"predict of an iteration timed at 0: rc {p.returncode} {p.stdout[:300]}")
    p = subprocess.run([ets, "inspect", zero, "--json"], capture_output=True, text=True)
    check(p.returncode == 0 and all(i["measured_us"] is None for i in json.loads(p.stdout)["iterations"]),
          f"inspect of iterations timed at 0: {p.stdout[:300]}")
    # a trace on a pipe is read once: its format comes from that read, also when it holds no iterations
    empty = os.path.join(tmp, "empty.etst")
    with open(empty, "w") as fh:
        fh.write('{"format":"ets-trace","version":[1,0]}\n{"end":{"traces":0}}\n')
    for source in (empty, trace):
        with open(source, "rb") as fh:
            p = subprocess.run([ets, "inspect", "/dev/stdin", "--json"], stdin=fh, capture_output=True, text=True)
        q = subprocess.run([ets, "inspect", source, "--json"], capture_output=True, text=True)
        try:
            piped, direct = json.loads(p.stdout), json.loads(q.stdout)
            piped.pop("path"), direct.pop("path")
            check(p.returncode == 0 and piped == direct and piped["format"] != "unknown",
                  f"inspect of {os.path.basename(source)} on a pipe: {p.stdout[:300]} against {q.stdout[:300]}")
        except ValueError as e:
            failures.append(f"inspect of {os.path.basename(source)} on a pipe is not JSON ({e}): {p.stdout[:200]}")
    # "-" is standard input (once): the same prediction as of the file itself
    with open(trace, "rb") as fh:
        p = subprocess.run([ets, "predict", "-", "--model", model_a, "--json"], stdin=fh, capture_output=True, text=True)
    q = subprocess.run([ets, "predict", trace, "--model", model_a, "--json"], capture_output=True, text=True)
    try:
        piped, direct = json.loads(p.stdout), json.loads(q.stdout)
        check(p.returncode == 0 and piped["predicted_us"] == direct["predicted_us"] and piped["ops"] == direct["ops"],
              f"predict - (standard input): {p.stdout[:300]} against {q.stdout[:300]}")
    except ValueError as e:
        failures.append(f"predict - (standard input) is not JSON ({e}): rc {p.returncode} {p.stderr[:200]}")
    with open(trace, "rb") as fh:
        p = subprocess.run([ets, "inspect", "-", "-"], stdin=fh, capture_output=True, text=True)
    check(p.returncode == 2 and "'-' (standard input) is given twice" in p.stderr,
          f"inspect - -: rc {p.returncode} {p.stderr[:200]}")
    # a measurement the trace says was taken on other hardware is shown, but no error is computed against it
    other_hw = edited_copy("other_hw.etst", (r'"environment":"[^"]*"', '"environment":"some-other-gpu"'))
    p = subprocess.run([ets, "predict", other_hw, "--model", model_a, "--json"], capture_output=True, text=True)
    rows = [json.loads(line) for line in p.stdout.splitlines()] if p.returncode == 0 else []
    check(rows and all(r["measured_us"] is not None and r["rel_error"] is None for r in rows),
          f"predict of a trace measured elsewhere: rc {p.returncode} {p.stdout[:300]}")
    p = subprocess.run([ets, "predict", other_hw, "--model", model_a], capture_output=True, text=True)
    check(p.returncode == 0 and "on 'some-other-gpu' (other hardware: no error)" in p.stdout and "%" not in p.stdout,
          f"text predict of a trace measured elsewhere: {p.stdout[:300]}")
    # a trace that names no environment is told by its device kind: an iteration that ran GPU kernels is no error
    # of the CPU model ("cpu-test"), one that ran none is compared
    unnamed = (r'"environment":"[^"]*"', '"environment":""')
    for name, edits, compared in (("unnamed_cpu.etst", [unnamed], True),
                                  ("unnamed_gpu.etst", [unnamed, (r'"k":0', '"k":2')], False)):
        path = edited_copy(name, *edits)
        p = subprocess.run([ets, "predict", path, "--model", model_a, "--json"], capture_output=True, text=True)
        rows = [json.loads(line) for line in p.stdout.splitlines()] if p.returncode == 0 else []
        check(rows and all(r["measured_us"] is not None and (r["rel_error"] is not None) == compared for r in rows),
              f"predict of {name}: rc {p.returncode} {p.stdout[:300]} {p.stderr[:300]}")
        p = subprocess.run([ets, "predict", path, "--model", model_a], capture_output=True, text=True)
        check(p.returncode == 0 and ("on a GPU (other hardware: no error)" in p.stdout) != compared
              and ("%)" in p.stdout) == compared, f"text predict of {name}: {p.stdout[:300]} {p.stderr[:300]}")
    # ets label: one file given twice would pass for two perfectly agreeing passes; ranges are usage errors
    labelled = os.path.join(tmp, "labelled.etst.gz")
    for extra, what in (([trace, trace], "given twice"), ([trace, "--threshold", "-1"], "--threshold"),
                        ([trace, "--tolerance", "2"], "--tolerance")):
        p = subprocess.run([ets, "label", *extra, "-o", labelled], capture_output=True, text=True)
        check(p.returncode == 2 and what in p.stderr and not os.path.exists(labelled),
              f"label {extra}: rc {p.returncode} {p.stderr}")
    p = subprocess.run([ets, "label", trace, "-o", labelled, "--json"], capture_output=True, text=True)
    check(p.returncode == 0 and os.path.exists(labelled), f"label of one pass: rc {p.returncode} {p.stderr}")
    try:
        row = json.loads(p.stdout)
        check(row["measured_us"] > 0 and row["sum_us"] > 0 and len(row["pass_median_us"]) == 1
              and 0 <= row["gap_share"] < 1 and row["disagrees"] is False, f"label --json: {p.stdout}")
    except (ValueError, KeyError, TypeError) as e:
        failures.append(f"label --json ({e!r}): {p.stdout}")
    # inspect reads every file before printing: a failing later file prints nothing of the earlier ones
    p = subprocess.run([ets, "inspect", trace, os.path.join(tmp, "missing.json"), "--json"], capture_output=True,
                       text=True)
    check(p.returncode == 1 and p.stdout == "" and "ets.io.1" in p.stderr, f"inspect with a missing file: {p.stdout[:200]}")
    # an output that is a directory is said to be one, not reported through a temporary file's name
    as_dir = os.path.join(tmp, "folder.etst")
    os.makedirs(as_dir, exist_ok=True)
    p = subprocess.run([ets, "convert", trace, "-o", as_dir], capture_output=True, text=True)
    check(p.returncode == 1 and "is a directory" in p.stderr and ".part-" not in p.stderr,
          f"convert -o a directory: {p.stderr}")
    # convert warns when its inputs describe different jobs (predict would stand the file for one of them)
    other = edited_copy("other.etst", untimed, (r'"model":"[^"]*"', '"model":"another"'))
    both = os.path.join(tmp, "both.etst")
    p = subprocess.run([ets, "convert", zero, other, "-o", both, "--quiet"], capture_output=True, text=True)
    check(p.returncode == 0 and "holds 2 different jobs" in p.stderr, f"convert of two jobs: {p.stderr}")
    zero_copy = os.path.join(tmp, "zero-copy.etst")  # the same job in a second file (one file twice warns otherwise)
    shutil.copyfile(zero, zero_copy)
    p = subprocess.run([ets, "convert", zero, zero_copy, "-o", both, "--quiet"], capture_output=True, text=True)
    check(p.returncode == 0 and p.stderr == "", f"convert of one job in two files warns: {p.stderr}")
    # an absurd but finite measurement (1e308 µs) prints in exponent form, not as 300 digits, and stays JSON
    vast = edited_copy("vast-measured.etst", (r'"measured_us":[0-9.e+-]+', '"measured_us":1e308'))
    for cmd in (["inspect", vast], ["inspect", vast, "--json"], ["predict", vast, "--model", model_a],
                ["predict", vast, "--model", model_a, "--json"]):
        p = subprocess.run([ets] + cmd, capture_output=True, text=True)
        digits = max((len(d) for d in re.findall(r"[0-9]+", p.stdout)), default=0)
        check(p.returncode == 0 and re.search(r"e\+30[58]", p.stdout) and digits < 20,
              f"{' '.join(cmd[:1] + cmd[2:])} of 1e308 µs: rc {p.returncode}, {digits} digits in a row: "
              f"{p.stdout[:200]} {p.stderr[:200]}")
        if "--json" in cmd:
            for line in p.stdout.splitlines():
                json.loads(line)
    # ops without timings (as in an ET file): the gap share is unknown, not 0
    zero = edited_copy("zero.etst", untimed, (r'"([tg])":[0-9.e+-]+', r'"\1":0'))
    p = subprocess.run([ets, "inspect", zero, "--json"], capture_output=True, text=True)
    check(p.returncode == 0 and all(i["gap_share"] is None for i in json.loads(p.stdout)["iterations"]),
          f"inspect of untimed ops: {p.stdout[:300]}")
    p = subprocess.run([ets, "inspect", inf_etst, "--json"], capture_output=True, text=True)
    check(p.returncode == 0, f"inspect of a huge trace: rc {p.returncode} {p.stderr}")
    try:
        check(json.loads(p.stdout)["iterations"][0]["gap_share"] is None, f"gap_share of an overflowing sum: {p.stdout}")
    except ValueError as e:
        failures.append(f"inspect --json is not JSON ({e}): {p.stdout}")

    def strict_float(text):
        """A JSON number no double holds (1.798e+308) is an error here, as in strict readers; Python's own reads inf."""
        v = float(text)
        if not math.isfinite(v):
            raise ValueError(f"{text} is beyond a double's range")
        return v

    def etst(name, iterations):
        """A hand-written .etst file: iterations is a list of (measured_us, [op lines])."""
        path = os.path.join(tmp, name)
        with open(path, "w") as fh:
            fh.write('{"format":"ets-trace","version":[1,0]}\n')
            for i, (measured, ops) in enumerate(iterations):
                fh.write('{"trace":{"source_format":"live","source_path":"","framework":"","framework_version":"",'
                         '"device":"","environment":"","model":"m","family":"","optimizer":"","batch_size":0,'
                         f'"extra":{{}},"iteration":{i},"start_us":0,"measured_us":{measured!r},"ops":{len(ops)}}}}}\n')
                fh.writelines(line + "\n" for line in ops)
            fh.write(f'{{"end":{{"traces":{len(iterations)}}}}}\n')
        return path

    def relu(t, g, dims="[4,4]"):
        return ('{"n":"relu","r":"aten::relu","p":0,"i":[[%s,"float32"]],"h":{},"f":null,"b":null,"s":0,'
                '"t":%r,"g":%r,"q":1,"k":0}' % (dims, t, g))

    # the largest double: rounded to 4 digits it was 1.798e+308, past the range (strict JSON readers refuse the
    # line, Python reads infinity); the median of two iterations measured at it overflowed to null
    biggest = sys.float_info.max
    top = etst("biggest.etst", [(biggest, [relu(10.0, 1.0)]), (biggest, [relu(10.0, 1.0)])])
    p = subprocess.run([ets, "predict", top, "--model", model_a, "--json"], capture_output=True, text=True)
    try:
        rows = [json.loads(line, parse_float=strict_float) for line in p.stdout.splitlines()]
        check(p.returncode == 0 and rows and all(r["measured_us"] == biggest for r in rows),
              f"predict of DBL_MAX µs: rc {p.returncode} {p.stdout[:300]} {p.stderr[:200]}")
    except ValueError as e:
        failures.append(f"predict --json of DBL_MAX µs ({e}): {p.stdout[:300]}")
    p = subprocess.run([ets, "inspect", top, "--json"], capture_output=True, text=True)
    try:
        o = json.loads(p.stdout, parse_float=strict_float)
        check(o["median_measured_us"] == biggest and all(i["measured_us"] == biggest for i in o["iterations"]),
              f"inspect of two iterations at DBL_MAX µs: {p.stdout[:400]}")
    except ValueError as e:
        failures.append(f"inspect --json of DBL_MAX µs ({e}): {p.stdout[:300]}")
    p = subprocess.run([ets, "inspect", top], capture_output=True, text=True)
    check(p.returncode == 0 and "n/a" not in p.stdout, f"inspect text of DBL_MAX µs: {p.stdout[:400]}")
    # a measurement too small for the printed decimals is shown in exact form, never as 0 (which reads as "not
    # measured"): 5e-324 µs (the smallest double) and 2e-7 µs, in JSON and in text
    for tiny in (5e-324, 2e-7):
        small = etst(f"tiny-{tiny}.etst", [(tiny, [relu(10.0, 1.0)])])
        p = subprocess.run([ets, "predict", small, "--model", model_a, "--json"], capture_output=True, text=True)
        rows = [json.loads(line) for line in p.stdout.splitlines()] if p.returncode == 0 else []
        check(rows and all(r["measured_us"] == tiny for r in rows),
              f"predict --json of {tiny} µs: rc {p.returncode} {p.stdout[:300]} {p.stderr[:200]}")
        p = subprocess.run([ets, "predict", small, "--model", model_a], capture_output=True, text=True)
        shown = re.search(r"measured ([0-9.e+-]+) (ms|us)", p.stdout)
        check(p.returncode == 0 and shown and float(shown.group(1)) * (1e3 if shown.group(2) == "ms" else 1) > 0,
              f"predict text of {tiny} µs: rc {p.returncode} {p.stdout[:300]}")
        p = subprocess.run([ets, "inspect", small, "--json"], capture_output=True, text=True)
        check(p.returncode == 0 and json.loads(p.stdout)["iterations"][0]["measured_us"] == tiny,
              f"inspect --json of {tiny} µs: {p.stdout[:300]}")
        p = subprocess.run([ets, "inspect", small], capture_output=True, text=True)
        shown = re.search(r"median measured ([0-9.e+-]+) us", p.stdout)
        check(p.returncode == 0 and shown and float(shown.group(1)) > 0, f"inspect text of {tiny} µs: {p.stdout[:300]}")
    # the times overflow their sum while the gaps do not: the share is unknown, not 0
    over = etst("time-overflow.etst", [(0, [relu(1e308, 1e308), relu(1e308, 0.0)])])
    p = subprocess.run([ets, "inspect", over, "--json"], capture_output=True, text=True)
    check(p.returncode == 0 and json.loads(p.stdout)["iterations"][0]["gap_share"] is None,
          f"gap_share of a sum that overflows with finite gaps: {p.stdout[:300]}")
    # a Kineto op whose shape's element count is past a double's range: its FLOPs and bytes are unknown (NaN), so
    # convert writes it (an .etst file holds no infinite count) and the file reads back
    kineto = os.path.join(tmp, "vast-dims.json")
    with open(kineto, "w") as fh:
        json.dump({"traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 100, "dur": 100},
            {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 110, "dur": 10,
             "args": {"Input Dims": [[2 ** 63 - 1] * 20], "Input type": ["float"]}}]}, fh)
    converted = os.path.join(tmp, "vast-dims.etst")
    p = subprocess.run([ets, "convert", kineto, "-o", converted, "--quiet"], capture_output=True, text=True)
    check(p.returncode == 0, f"convert of a Kineto op with a vast shape: rc {p.returncode} {p.stderr}")
    if p.returncode == 0:
        op_rows = [o for _, ops in read_etst(converted)[1] for o in ops]
        check(len(op_rows) == 1 and op_rows[0]["f"] is None and op_rows[0]["b"] is None,
              f"FLOPs / bytes of a vast shape: {op_rows}")
        p = subprocess.run([ets, "inspect", converted, "--json"], capture_output=True, text=True)
        check(p.returncode == 0, f"the converted file reads back: rc {p.returncode} {p.stderr}")
if os.path.exists("/dev/full"):
    with open("/dev/full", "w") as full:
        p = subprocess.run([ets, "predict", trace, "--model", model_a, "--json"], stdout=full, stderr=subprocess.PIPE,
                           text=True)
    check(p.returncode == 1 and "[ets.cli.2]" in p.stderr, f"output to a full disk: rc {p.returncode} {p.stderr}")
    for args in (["--version"], ["--help"], ["predict", "--help"]):
        with open("/dev/full", "w") as full:
            p = subprocess.run([ets, *args], stdout=full, stderr=subprocess.PIPE, text=True)
        check(p.returncode == 1 and "[ets.cli.2]" in p.stderr, f"ets {args} to a full disk: rc {p.returncode} {p.stderr}")
p = run(trace, "--model", model_a, "--help")
check(p.stdout.startswith("usage: ets predict"), f"--help after other arguments prints the usage: {p.stdout}")
for bad in ("0abc", "1.5", "nan", "99999999999"):
    p = run(trace, "--model", model_a, "--rank", bad, expect_rc=2)
    check("--rank" in p.stderr, f"--rank {bad}: {p.stderr}")

# /dev/zero is no trace by its first bytes: refused at once (it used to be read to the limit, 8 GB here)
if os.path.exists("/dev/zero"):
    p = run("/dev/zero", "--model", model_a, expect_rc=1)
    check("[ets.import.1]" in p.stderr, f"/dev/zero is no trace: {p.stderr}")


def endless_blanks(args, **kw):
    """ets ARGS reading /dev/stdin from `yes ''`: blank lines with no end, which any JSON trace could start with."""
    yes = subprocess.Popen(["yes", ""], stdout=subprocess.PIPE)
    try:
        return subprocess.run([ets, *args], stdin=yes.stdout, capture_output=True, text=True, **kw)
    finally:
        yes.kill()
        yes.wait()


# --max-bytes: a stream with no end stops one byte past the limit with ets.io.6, and without the option the CLI's own
# limit, a quarter of the memory the process may use, does the same (here under a 1 GiB address-space limit, so it
# comes at about 200 MiB: a host's memory would take long to fill)
if shutil.which("yes") and os.path.exists("/dev/stdin"):
    p = endless_blanks(["predict", "/dev/stdin", "--model", model_a, "--max-bytes", "1M"], timeout=120)
    check(p.returncode == 1 and "[ets.io.6]" in p.stderr and "more than 1048576 bytes" in p.stderr
          and "--max-bytes" in p.stderr, f"endless blanks under --max-bytes 1M: rc {p.returncode} {p.stderr}")
    with open(ets, "rb") as fh:
        asan = b"__asan_init" in fh.read()
    if not asan:  # ASan reserves terabytes of address space: it cannot run under such a limit
        cap = 1 << 30
        p = endless_blanks(["predict", "/dev/stdin", "--model", model_a], timeout=120,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (cap, cap)))
        m = re.search(r"more than (\d+) bytes", p.stderr)
        check(p.returncode == 1 and "[ets.io.6]" in p.stderr and m and 0 < int(m.group(1)) <= cap // 4,
              f"endless blanks with the default limit under a 1 GiB address space: rc {p.returncode} {p.stderr}")
        # with no limit memory runs out while the stream is read: --keep-going skips that trace alone (ets.cli.3)
        p = endless_blanks(["predict", "/dev/stdin", trace, "--model", model_a, "--max-bytes", "0", "--json",
                            "--keep-going"], timeout=120,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (cap, cap)))
        rows = [json.loads(l) for l in p.stdout.splitlines()] if p.stdout.strip() else []
        check(p.returncode == 1 and len(rows) == 2 and rows[0].get("error", {}).get("id") == "ets.cli.3"
              and rows[1]["trace"] == trace and rows[1].get("predicted_us") and "[ets.cli.3]" in p.stderr,
              f"--keep-going past a trace that runs out of memory: rc {p.returncode} {p.stdout[:400]} {p.stderr}")
# A CUDA build loads cuBLAS when the GPU backend first runs, not at start: the tool used to map libcublasLt at start
# (~215 MB resident) and could not even print its version under a 0.5 GiB address-space limit; a CPU prediction
# never needs it
version = subprocess.run([ets, "--version"], capture_output=True, text=True).stdout
with open(ets, "rb") as fh:
    sanitized = b"__asan_init" in fh.read()  # ASan reserves terabytes of address space: no such limit for it
if "(cuda)" in version and not sanitized:
    cap = 512 << 20
    for argv in (["--version"], ["predict", trace, "--model", model_a, "--backend", "cpu"]):
        p = subprocess.run([ets, *argv], capture_output=True, text=True, timeout=120,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (cap, cap)))
        check(p.returncode == 0 and p.stdout, f"CUDA build, ets {argv[0]} under a 0.5 GiB address space: rc "
              f"{p.returncode} {p.stderr[-300:]}")
# the limit and the trace: one byte short is refused, its size is read
with open(trace, "rb") as fh:
    raw = fh.read()
size = len(__import__("gzip").decompress(raw)) if raw[:2] == b"\x1f\x8b" else len(raw)
p = run(trace, "--model", model_a, "--max-bytes", str(size - 1), expect_rc=1)
check("[ets.io.6]" in p.stderr, f"--max-bytes one short of the trace: {p.stderr}")
base = run(trace, "--model", model_a, "--json").stdout
p = run(trace, "--model", model_a, "--json", "--max-bytes", str(size))
check(p.stdout == base and base, "--max-bytes of exactly the trace's size predicts as without it")

# --keep-going: the traces that can be read are predicted as alone, each one that cannot is reported once on
# stderr and, with --json, as an error object where it stood; the exit code is 1. Without it nothing is printed.
missing = os.path.join(os.path.dirname(os.path.abspath(trace)), "no-such-trace.json")
empty = os.devnull
alone = run(trace, "--model", model_a, "--json").stdout.splitlines()
p = run(trace, missing, trace, empty, "--model", model_a, "--json", "--keep-going", expect_rc=1)
rows = [json.loads(l) for l in p.stdout.splitlines()]
check([r["trace"] for r in rows] == [trace, missing, trace, empty], f"--keep-going --json rows in input order: {rows}")
check(p.stdout.splitlines()[0] == alone[0] and p.stdout.splitlines()[2] == alone[0],
      "--keep-going: a readable trace is predicted as when it is alone")
errs = [r.get("error", {}) for r in rows[1::2]]
check([e.get("id") for e in errs] == ["ets.io.1", "ets.import.1"] and all(e.get("message") for e in errs)
      and not any(e.get("message", "").startswith("[") for e in errs), f"--keep-going error objects: {errs}")
check(p.stderr.count("[ets.io.1]") == 1 and p.stderr.count("[ets.import.1]") == 1 and "--keep-going" in p.stderr,
      f"--keep-going: one stderr line per skipped trace: {p.stderr}")
# an empty path (a script's unset variable) is an input like any other: its error object comes where it stood
for args in (["", trace], [trace, ""], [""]):
    p = run(*args, "--model", model_a, "--json", "--keep-going", expect_rc=1)
    rows = [json.loads(l) for l in p.stdout.splitlines()]
    check([r["trace"] for r in rows] == args and [r.get("error", {}).get("id") for r in rows if not r["trace"]]
          == ["ets.io.1"], f"--keep-going --json with an empty path among {args}: {rows}")
p = run(trace, missing, "--model", model_a, "--json", expect_rc=1)
check(p.stdout == "" and "[ets.io.1]" in p.stderr, f"without --keep-going nothing is printed: {p.stdout!r}")
p = run(missing, trace, "--model", model_a, "--keep-going", "--format", "matrix", expect_rc=1)
matrix_rows = list(csv.reader(io.StringIO(p.stdout)))
check(len(matrix_rows) == 2 and matrix_rows[1][0] == trace, f"--keep-going matrix: only the readable trace: {matrix_rows}")
p = run(missing, "--model", model_a, "--keep-going", "--format", "gavel", expect_rc=1)
check(p.stdout.strip() and all(v == {} for v in json.loads(p.stdout).values()),
      f"--keep-going gavel with every trace skipped: valid and empty: {p.stdout!r}")
p = run(trace, "--model", model_a, "--json", "--keep-going")
check(p.stdout.splitlines() == alone and p.stderr == "", "--keep-going with nothing to skip: the same output, exit 0")

# --batch-size N: the batch size of a trace that records none (an Execution Trace); a trace's own wins
et = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "et_pair_sgd.et.json.gz")


def predicted(*args):
    out = run(*args, "--model", model_a, "--json").stdout.splitlines()
    return json.loads(out[0])["predicted_us"] if out else None


unknown, two, sixty_four = predicted(et), predicted(et, "--batch-size", "2"), predicted(et, "--batch-size", "64")
check(None not in (unknown, two, sixty_four) and len({unknown, two, sixty_four}) == 3,
      f"--batch-size is the ET's batch size, a feature: {unknown} (unknown), {two} (2), {sixty_four} (64)")
check(predicted(et, "--batch-size", "2") == two, "--batch-size predicts the same twice")
own = predicted(trace)
check(own is not None and predicted(trace, "--batch-size", "64") == own,
      "--batch-size leaves a trace that records its batch size as it is")
# ets convert takes it too: the canonical file keeps the batch size, and predicts as the ET with the option
import tempfile  # noqa: E402
with tempfile.TemporaryDirectory() as tmp:
    etst = os.path.join(tmp, "et.etst")
    c = subprocess.run([ets, "convert", et, "-o", etst, "--batch-size", "2", "--quiet"], capture_output=True, text=True)
    check(c.returncode == 0, f"ets convert --batch-size: rc {c.returncode} {c.stderr}")
    check(predicted(etst) == two, f"the converted ET predicts as the ET with --batch-size 2: {predicted(etst)} vs {two}")
for bad in ("0", "-3", "2x", ""):
    p = run(et, "--model", model_a, "--batch-size", bad, expect_rc=2)
    check("--batch-size" in p.stderr, f"--batch-size {bad!r} refused: {p.stderr}")

finish("cli_predict: all checks passed")
