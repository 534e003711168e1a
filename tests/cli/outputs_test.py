#!/usr/bin/env python3
# Where `ets convert`, `ets label` and `ets eval` put what they write. Each writes a temporary beside its output and
# renames it into place, so a symlink as the output must keep pointing where it did (its target is replaced), a pipe
# or device must be written in place (not replaced by a regular file), and a file rewritten keeps its permissions.
# An output that cannot be written is refused before any input is read. `ets label` refuses one pass given twice
# under two spellings (./x, a symlink), or -o naming a pass, and reads --batch-size exactly; "--id -h" is an id. A
# SIGTERM during a write or a benchmark leaves no temporary behind, nor does a benchmark that cannot write its input
# tensors (an error with an id). Values are checked against each other; label refuses an --environment with a
# control character.
# Usage: outputs_test.py ETS TRACE WORK_DIR
import gzip
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time

from checks import check, finish  # tests/cli/checks.py, beside this script

ets, trace, work = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)


def run(*args, **kw):
    return subprocess.run([ets, *args], capture_output=True, timeout=120, **kw)


reference = os.path.join(work, "reference.etst")
p = run("convert", trace, "-o", reference, "--quiet")
check(p.returncode == 0, f"convert: rc {p.returncode} {p.stderr!r}")
with open(reference, "rb") as fh:
    want = fh.read()

# ---- a symlink (a relative one, to a folder of its own) is kept; its target gets the file
os.makedirs("real")
os.symlink(os.path.join("real", "t.etst"), "link.etst")  # dangling until written
p = run("convert", trace, "-o", "link.etst", "--quiet")
check(p.returncode == 0 and os.path.islink("link.etst") and open("real/t.etst", "rb").read() == want,
      f"convert through a dangling symlink: rc {p.returncode}, link kept {os.path.islink('link.etst')} {p.stderr!r}")
p = run("convert", trace, "-o", "link.etst", "--quiet")  # again, now that the target exists
check(p.returncode == 0 and os.path.islink("link.etst") and open("real/t.etst", "rb").read() == want,
      f"convert through a symlink to an existing file: rc {p.returncode} {p.stderr!r}")
os.symlink("loop-b.etst", "loop-a.etst")
os.symlink("loop-a.etst", "loop-b.etst")
p = run("convert", trace, "-o", "loop-a.etst", "--quiet")
check(p.returncode == 1 and b"loop of symlinks" in p.stderr and b"ets.etst.1" in p.stderr,
      f"convert to a loop of symlinks: rc {p.returncode} {p.stderr!r}")

# ---- a pipe: the file streams through it (gzip-compressed for .gz) and the pipe stays a pipe
fifo = "pipe.etst.gz"
os.mkfifo(fifo)
got = []
reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
reader.start()
p = run("convert", trace, "-o", fifo, "--quiet")
reader.join(60)
check(p.returncode == 0 and stat.S_ISFIFO(os.stat(fifo).st_mode) and got and gzip.decompress(got[0]) == want,
      f"convert into a FIFO: rc {p.returncode}, still a FIFO {stat.S_ISFIFO(os.stat(fifo).st_mode)}, "
      f"{len(got[0]) if got else 0} bytes read {p.stderr!r}")
# a symlink to a pipe, the way /dev/stdout is one: written through the link, which stays
os.symlink("/proc/self/fd/1", "stdout.etst")
p = run("convert", trace, "-o", "stdout.etst", "--quiet")
check(p.returncode == 0 and p.stdout == want and os.path.islink("stdout.etst"),
      f"convert to a link to the process's stdout pipe: rc {p.returncode}, {len(p.stdout)} bytes {p.stderr!r}")

# ---- a device is written in place, never replaced by a regular file (as root, `-o /dev/null` would be)
if hasattr(os, "mknod"):
    try:
        os.mknod("null.etst", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        have_dev = True
    except PermissionError:
        have_dev = False
    if have_dev:
        p = run("label", trace, "-o", "null.etst")
        check(p.returncode == 0 and stat.S_ISCHR(os.stat("null.etst").st_mode),
              f"label into a character device: rc {p.returncode}, still a device "
              f"{stat.S_ISCHR(os.stat('null.etst').st_mode)} {p.stderr!r}")

# ---- a rewritten file keeps its mode: a private file stays private
for cmd, name in ((["convert", trace, "--quiet", "-o"], "private.etst"), (["label", trace, "-o"], "private-l.etst")):
    with open(name, "w") as fh:
        fh.write("old")
    os.chmod(name, 0o600)
    p = run(*cmd, name)
    check(p.returncode == 0 and os.path.getsize(name) > 3 and stat.S_IMODE(os.stat(name).st_mode) == 0o600,
          f"{cmd[0]} over a 0600 file: rc {p.returncode}, mode {oct(stat.S_IMODE(os.stat(name).st_mode))}")

# ---- an output that cannot be written is refused before any input is read (the input does not exist either)
for cmd in (["convert", "no-such-input.json"], ["label", "no-such-input.json"]):
    p = run(*cmd, "-o", os.path.join("no", "such", "folder", "x.etst"))
    check(p.returncode == 1 and b"ets.etst.1" in p.stderr and b"no-such-input" not in p.stderr,
          f"{cmd[0]} into a missing folder: rc {p.returncode} {p.stderr!r}")

# ---- one pass under two names would pass for two passes that agree perfectly
shutil.copyfile(trace, "pass.json.gz")
os.symlink("pass.json.gz", "pass-link.json.gz")
for second in ("./pass.json.gz", "pass-link.json.gz", os.path.join(work, "pass.json.gz")):
    p = run("label", "pass.json.gz", second, "-o", "twice.etst")
    check(p.returncode == 2 and b"one file" in p.stderr and not os.path.exists("twice.etst"),
          f"label pass.json.gz {second}: rc {p.returncode} {p.stderr!r}")

# ---- -o naming one of the passes (another spelling of it) would replace a raw measurement by the label
# (a pass may be a canonical .etst file, so its name passes the extension check)
p = run("convert", trace, "-o", "pass2.etst.gz", "--quiet")
with open("pass2.etst.gz", "rb") as fh:
    pass2 = fh.read()
p = run("label", "pass.json.gz", "pass2.etst.gz", "-o", "./pass2.etst.gz")
check(p.returncode == 2 and b"overwrite" in p.stderr and open("pass2.etst.gz", "rb").read() == pass2,
      f"label -o onto a pass: rc {p.returncode} {p.stderr!r}")

# ---- convert: inputs without an iteration write nothing (predict would refuse the file); one input given twice warns
with open("zero.etst", "w") as fh:
    fh.write('{"format":"ets-trace","version":[1,0]}\n{"end":{"traces":0}}\n')
p = run("convert", "zero.etst", "-o", "zero-out.etst")
check(p.returncode == 1 and b"ets.cli.4" in p.stderr and not os.path.exists("zero-out.etst"),
      f"convert of no iteration: rc {p.returncode} {p.stderr!r}")
p = run("convert", trace, "./" + os.path.relpath(reference), "-o", "twice.etst", "--quiet")
check(p.returncode == 0 and b"given before" not in p.stderr, f"convert of two files: {p.stderr!r}")
p = run("convert", reference, "./" + os.path.relpath(reference), "-o", "twice.etst", "--quiet")
check(p.returncode == 0 and b"given before" in p.stderr, f"convert of one file twice: no warning {p.stderr!r}")

# ---- "-" as the output is refused (standard output carries the summary line)
p = run("label", trace, "-o", "-")
check(p.returncode == 2 and b"standard output" in p.stderr and not os.path.exists("-"),
      f"label -o -: rc {p.returncode} {p.stderr!r}")
# a trace output is *.etst or *.etst.gz, as convert's: the dataset lists traces by that name, .gz compresses
for cmd in (["label", trace], ["convert", trace, "--quiet"]):
    for name in ("./-", "labelled.json", "labelled.gz", "labelled.etst.zip"):
        p = run(*cmd, "-o", name)
        check(p.returncode == 2 and b"must end in .etst or .etst.gz" in p.stderr and not os.path.exists(name),
              f"{cmd[0]} -o {name}: rc {p.returncode} {p.stderr!r}")

# ---- an environment id with a control character would name a model no predictor loads (ets.predict.9): label
# refuses it as train does, before any pass is read
for env in ("cpu\tx", "cpu\nx"):
    p = run("label", "no-such-pass.json", "-o", "env.etst", "--environment", env)
    check(p.returncode == 2 and b"--environment holds a control character" in p.stderr and not os.path.exists("env.etst"),
          f"label --environment {env!r}: rc {p.returncode} {p.stderr!r}")

# ---- an option's value that looks like --help / -h is the value, not a request for help
p = run("label", trace, "-o", "id-h.etst", "--id", "-h")
got_id = None
if p.returncode == 0 and os.path.exists("id-h.etst"):
    with open("id-h.etst") as fh:
        got_id = json.loads(fh.read().splitlines()[1])["trace"].get("extra", {}).get("config_id")
check(p.returncode == 0 and got_id == "-h" and b"usage" not in p.stdout,
      f"label --id -h: rc {p.returncode}, id {got_id!r}, stdout {p.stdout[:60]!r}")

# ---- SIGTERM while a file is written: the process ends by the signal and leaves neither the file nor its temporary
for attempt in range(3):  # a run that ends before its temporary was seen is retried with twice the inputs
    for f in os.listdir("."):
        if f.startswith("big.etst.gz"):
            os.remove(f)
    proc = subprocess.Popen([ets, "convert", *[trace] * (200 << attempt), "-o", "big.etst.gz", "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen = False
    while proc.poll() is None and not seen:
        seen = any(f.startswith("big.etst.gz.part-") for f in os.listdir("."))  # the writer's temporary
    if seen:
        proc.send_signal(signal.SIGTERM)
    rc = proc.wait(120)
    if seen:
        left = [f for f in os.listdir(".") if f.startswith("big.etst.gz")]
        check(rc == -signal.SIGTERM and not left, f"convert ended by SIGTERM: rc {rc}, left {left}")
        break
else:
    check(False, "convert finished every time before its temporary was seen: the SIGTERM check did not run")

# ---- `ets bench` interrupted: its temporary folder (models, input tensors) is removed as on a normal end
tmp = os.path.join(work, "tmp")
os.makedirs(tmp)
proc = subprocess.Popen([ets, "bench", "--no-peers", "--rounds", "1000", "--hidden", "16", "--windows", "8",
                         "--sample-ms", "5"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        env=dict(os.environ, TMPDIR=tmp))
while proc.poll() is None and not os.listdir(tmp):
    pass
proc.send_signal(signal.SIGTERM)
rc = proc.wait(120)
check(rc == -signal.SIGTERM and not os.listdir(tmp), f"bench ended by SIGTERM: rc {rc}, left {os.listdir(tmp)}")
def running(script):
    """Processes whose command line names script (read from /proc: pgrep may not be installed)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if script.encode() in fh.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


# a peer that never answers (hung, or waiting forever) is stopped after --peer-timeout: ETS is timed alone, the
# benchmark ends with the peers' timings missing and a warning, and no peer process is left behind
with open("silent_peer.py", "w") as fh:  # says ready, answers check, then hangs on the first timed run
    fh.write("import sys, time\n"
             "print('ready {\"fake\": 1}', flush=True)\n"
             "for line in sys.stdin:\n"
             "    if line.startswith('check'): print('0 0', flush=True)\n"
             "    elif line.startswith('run'): time.sleep(1000)\n"
             "    else: break\n")
with open("mute_peer.py", "w") as fh:  # never says ready
    fh.write("import time\ntime.sleep(1000)\n")
for name, what in (("silent_peer.py", "stopped answering"), ("mute_peer.py", "did not start")):
    script = os.path.abspath(name)
    p = run("bench", "--rounds", "2", "--hidden", "8", "--windows", "1", "--sample-ms", "2", "--json",
            "--python", sys.executable, "--peer-script", script, "--peer-timeout", "1")
    got = json.loads(p.stdout) if p.returncode == 0 else {}
    left = running(script)
    check(p.returncode == 0 and what.encode() in p.stderr and got.get("cases") and
          all(c["torch_ms"] is None for c in got["cases"]) and not left,
          f"bench with a peer that {what}: rc {p.returncode} {p.stderr!r} left {left}")
def terminated(proc, signals):
    """Sends `signals` SIGTERMs back to back; the exit status, or a note when it still runs 30 s later (killed)."""
    for _ in range(signals):
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        return f"still running 30 s after {signals} SIGTERM(s)"


# SIGTERM while a peer hangs mid-command ends the benchmark at once (it used to wait for the peer forever)
proc = subprocess.Popen([ets, "bench", "--rounds", "2", "--hidden", "8", "--windows", "1", "--sample-ms", "2",
                         "--python", sys.executable, "--peer-script", os.path.abspath("silent_peer.py")],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, TMPDIR=tmp))
time.sleep(2)
rc = terminated(proc, 1)
left = running(os.path.abspath("silent_peer.py"))
check(rc == -signal.SIGTERM and not left and not os.listdir(tmp), f"bench with a hung peer, SIGTERM: rc {rc}, "
      f"left {left} {os.listdir(tmp)}")
# a second SIGTERM ends the benchmark at once, running no destructor: the handler itself stops the peer and empties
# and removes the temporary folder (it was left behind before), with or without a peer
for peer_args in ([], ["--no-peers"]):
    proc = subprocess.Popen([ets, "bench", "--rounds", "1000", "--hidden", "8", "--windows", "1", "--sample-ms", "5",
                             "--python", sys.executable, "--peer-script", os.path.abspath("silent_peer.py"),
                             *peer_args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, TMPDIR=tmp))
    deadline = time.time() + 60
    while proc.poll() is None and time.time() < deadline and not (
            os.listdir(tmp) and any(n.startswith("model_") for d in os.listdir(tmp)
                                    for n in os.listdir(os.path.join(tmp, d)))):
        time.sleep(0.01)
    time.sleep(0.5)  # past the models: the peer is started (or ETS is timing alone)
    rc = terminated(proc, 2)
    left = running(os.path.abspath("silent_peer.py"))
    check(rc == -signal.SIGTERM and not left and not os.listdir(tmp),
          f"bench {peer_args} ended by a second SIGTERM: rc {rc}, left {left} {os.listdir(tmp)}")
    for d in os.listdir(tmp):
        shutil.rmtree(os.path.join(tmp, d), ignore_errors=True)
# a peer's outputs are compared with ETS's: a peer whose outputs differ (1.0 here) or are NaN gets no speedup, a
# warning says so and the command fails after its report; "null" (ONNX Runtime not installed) stays a missing peer
# and fails nothing. Both used to be reported as speedups with exit 0, a NaN printed as null like a missing peer.
for name, check_answer, run_answer, want_diff, want_rc in (("agreeing_peer.py", "0 null", "1 null", 0.0, 0),
                                                           ("wrong_peer.py", "1.0 null", "1 null", 1.0, 1),
                                                           ("nan_peer.py", "nan nan", "1 2", "nan", 1)):
    with open(name, "w") as fh:
        fh.write("import sys\n"
                 "print('ready {}', flush=True)\n"
                 "for line in sys.stdin:\n"
                 f"    if line.startswith('check'): print('{check_answer}', flush=True)\n"
                 f"    elif line.startswith('run'): print('{run_answer}', flush=True)\n"
                 "    else: break\n")
    p = run("bench", "--rounds", "1", "--hidden", "8", "--windows", "1", "--sample-ms", "2", "--json",
            "--python", sys.executable, "--peer-script", os.path.abspath(name), env=dict(os.environ, TMPDIR=tmp))
    try:
        c = json.loads(p.stdout)["cases"][0]
    except (ValueError, KeyError, IndexError):
        c = {}
    warned = b"PyTorch's outputs" in p.stderr and b"speedup is not reported" in p.stderr
    if want_rc == 0:
        ok = (isinstance(c.get("speedup_vs_torch"), float) and c.get("max_abs_diff_ort") is None
              and c.get("speedup_vs_ort") is None and not warned)
    else:
        ok = c.get("speedup_vs_torch") is None and c.get("torch_ms") is not None and warned
    check(p.returncode == want_rc and c.get("max_abs_diff_torch") == want_diff and ok
          and 0 < c.get("output_tolerance", 0) < 1e-3 and not os.listdir(tmp),
          f"bench with {name}: rc {p.returncode} case {c} {p.stderr[-500:]!r}")
    if want_diff == "nan":
        check(c.get("max_abs_diff_ort") == "nan" and c.get("speedup_vs_ort") is None and b"ONNX Runtime's outputs are "
              b"not numbers" in p.stderr, f"bench with {name}: ORT {c} {p.stderr[-500:]!r}")
    table = run("bench", "--rounds", "1", "--hidden", "8", "--windows", "1", "--sample-ms", "2",
                "--python", sys.executable, "--peer-script", os.path.abspath(name), env=dict(os.environ, TMPDIR=tmp))
    check(table.returncode == want_rc and b"diff torch" in table.stdout, f"bench table with {name}: rc "
          f"{table.returncode} {table.stdout[-600:]!r}")
# the report names the instruction set ETS's forward pass is compiled for and whether the build is native: results
# flip with them (a portable build runs SSE2 on x86-64)
p = run("bench", "--no-peers", "--rounds", "1", "--hidden", "8", "--windows", "1", "--sample-ms", "2", "--json",
        env=dict(os.environ, TMPDIR=tmp))
got = json.loads(p.stdout) if p.returncode == 0 else {}
check(got.get("ets_build") in ("portable", "native") and isinstance(got.get("ets_isa"), str) and got["ets_isa"]
      and not got["ets_isa"].startswith("isa_") and "ETS_DETAIL" not in got["ets_isa"],
      f"bench --json names the build: {str(got)[:300]} {p.stderr!r}")
p = run("bench", "--no-peers", "--rounds", "1", "--hidden", "8", "--windows", "1", "--sample-ms", "2",
        env=dict(os.environ, TMPDIR=tmp))
check(p.returncode == 0 and f"ETS forward compiled for {got.get('ets_isa')} ({got.get('ets_build')} build".encode()
      in p.stdout, f"bench's table names the build: {p.stdout[:300]!r}")
# a peer that answers but never reads its stdin: once the pipe is full (~64 KiB of commands) a write would block
# forever; it waits under --peer-timeout instead, and the peer is stopped as a silent one
with open("deaf_peer.py", "w") as fh:
    fh.write("import sys\n"
             "print('ready {}', flush=True)\n"
             "while True:\n"
             "    sys.stdout.write('0 null\\n' * 1000)\n"  # agreeing outputs: a disagreement would fail the run
             "    sys.stdout.flush()\n")
# (8 cases of width 1: ~80 bytes of commands a round fill the pipe in ~820 rounds; each round's GEMM ceiling and
# forwards stay small. 8,000 rounds of one width-12 case took 145 s under ASan on a slower 2-core host.)
p = run("bench", "--rounds", "2000", "--hidden", "8", "--windows", "1,2,3,4,5,6,7,8", "--width", "1",
        "--sample-ms", "0.01", "--json", "--python", sys.executable, "--peer-script", os.path.abspath("deaf_peer.py"),
        "--peer-timeout", "1")
left = running(os.path.abspath("deaf_peer.py"))
check(p.returncode == 0 and b"stopped answering" in p.stderr and not left,
      f"bench with a peer that never reads: rc {p.returncode} {p.stderr[-300:]!r} left {left}")
# ... and while a peer takes its time to end after "quit" (the benchmark itself done): SIGTERM kills it at once
with open("slow_quit_peer.py", "w") as fh:
    fh.write("import sys, time\n"
             "print('ready {}', flush=True)\n"
             "for line in sys.stdin:\n"
             "    if line.startswith('check'): print('0 0', flush=True)\n"
             "    elif line.startswith('run'): print('1 null', flush=True)\n"
             "    else: break\n"
             "open(sys.argv[1] + '.quit', 'w').close()\n"
             "time.sleep(1000)\n")
quit_marker = None
proc = subprocess.Popen([ets, "bench", "--rounds", "1", "--hidden", "8", "--windows", "1", "--sample-ms", "2",
                         "--python", sys.executable, "--peer-script", os.path.abspath("slow_quit_peer.py"),
                         "--peer-timeout", "60"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        env=dict(os.environ, TMPDIR=tmp))
deadline = time.monotonic() + 60
while proc.poll() is None and time.monotonic() < deadline and not quit_marker:
    quit_marker = next((f for f in os.listdir(tmp) if f.endswith(".quit")), None)
    time.sleep(0.05)
proc.send_signal(signal.SIGTERM)
t_term = time.monotonic()
try:
    rc = proc.wait(30)
except subprocess.TimeoutExpired:
    proc.kill()
    rc = "still running 30 s after SIGTERM"
waited = time.monotonic() - t_term
left = running(os.path.abspath("slow_quit_peer.py"))
for f in os.listdir(tmp):
    if f.endswith(".quit"):
        os.remove(os.path.join(tmp, f))
check(quit_marker and rc == -signal.SIGTERM and waited < 5 and not left and not os.listdir(tmp),
      f"bench, SIGTERM while the peer ends: quit seen {quit_marker}, rc {rc} after {waited:.1f} s, left {left} "
      f"{os.listdir(tmp)}")
# more positions than one forward call takes is a usage error, said before any work
p = run("bench", "--no-peers", "--rounds", "1", "--hidden", "8", "--windows", "2147483647",
        env=dict(os.environ, TMPDIR=tmp))
check(p.returncode == 2 and b"--windows 2147483647" in p.stderr and b"positions" in p.stderr and not os.listdir(tmp),
      f"bench --windows 2^31-1: rc {p.returncode} {p.stderr!r}")
# sizes that cannot fit in memory end in an error with an id, before they are allocated: where the kernel
# overcommits (vm.overcommit_memory=1) or a control group caps memory, the allocation succeeded and the process was
# killed while it filled the memory (a 128 GiB GPU machine ran this test past its time limit). 2.3 TiB here.
p = run("bench", "--no-peers", "--rounds", "1", "--hidden", "512", "--windows", "100000000",
        env=dict(os.environ, TMPDIR=tmp))
check(p.returncode == 1 and b"[ets.cli.3] out of memory" in p.stderr and b"GiB this process may use" in p.stderr
      and not os.listdir(tmp), f"bench of 2.3 TiB: rc {p.returncode} {p.stderr!r} left {os.listdir(tmp)}")
# so are the weights asked for: bench before it builds anything, train before it reads any data (the folder named
# does not exist, so an error about it would mean the data was read first); ~73,000 GiB here. train refuses the
# network first as more than a model file holds (2^29 parameters, a usage error)
p = run("bench", "--no-peers", "--rounds", "1", "--windows", "1", "--hidden", "65536", "--layers", "64",
        env=dict(os.environ, TMPDIR=tmp))
check(p.returncode == 1 and b"[ets.cli.3] out of memory" in p.stderr and b"models" in p.stderr and not os.listdir(tmp),
      f"bench of 64 layers of H = 65536: rc {p.returncode} {p.stderr!r} left {os.listdir(tmp)}")
p = run("train", "--data", "no-such-data", "--out", "never.etsm", "--hidden", "65536", "--layers", "64")
check(p.returncode == 2 and b"more than the 536870912" in p.stderr and b"model file" in p.stderr
      and not os.path.exists("never.etsm"), f"train of 64 layers of H = 65536: rc {p.returncode} {p.stderr!r}")
# an address-space limit (ulimit -v) below the 3.2 GiB asked for is seen before anything is allocated, and named
with open(ets, "rb") as fh:
    asan = b"__asan_init" in fh.read()
if not asan:  # ASan reserves terabytes of address space: it cannot run under such a limit
    cap = 1 << 30
    p = subprocess.run([ets, "bench", "--no-peers", "--rounds", "1", "--hidden", "64", "--windows", "1000000"],
                       capture_output=True, timeout=120, env=dict(os.environ, TMPDIR=tmp),
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (cap, cap)))
    check(p.returncode == 1 and b"[ets.cli.3] out of memory" in p.stderr and b"need 3.2 GiB" in p.stderr
          and b"address-space limit" in p.stderr and not os.listdir(tmp),
          f"bench under a 1 GiB address-space limit: rc {p.returncode} {p.stderr!r} left {os.listdir(tmp)}")
    # the GEMM ceiling's matrices count too: at width 4096 they are 5 GiB of the need (the check left them out, so
    # the models and inputs were built and the GEMM then ran out of memory)
    p = subprocess.run([ets, "bench", "--no-peers", "--rounds", "1", "--hidden", "128", "--windows", "1", "--width",
                        "4096", "--sample-ms", "1"], capture_output=True, timeout=120, env=dict(os.environ, TMPDIR=tmp),
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (cap, cap)))
    check(p.returncode == 1 and b"GEMM ceiling) need 5.0 GiB" in p.stderr and not os.listdir(tmp),
          f"bench --width 4096 under a 1 GiB address-space limit: rc {p.returncode} {p.stderr!r}")
    # the forward pass's workspace counts too (rows × (8H + 2·2H + F) floats, kept at the largest case): 1.4 GiB
    # in all here, mostly the workspace, so the check passed and the forward pass's allocation failed; and
    # with peers, their copy of the inputs and their activations (3.3 GiB in all). Under the same 1 GiB limit as
    # above
    needs = {}
    for peers in (["--no-peers"], ["--python", sys.executable, "--peer-script", os.path.abspath("agreeing_peer.py")]):
        p = subprocess.run([ets, "bench", *peers, "--rounds", "1", "--hidden", "384", "--layers", "1", "--windows",
                            "8192", "--sample-ms", "1"], capture_output=True, timeout=120,
                           env=dict(os.environ, TMPDIR=tmp),
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (cap, cap)))
        err = p.stderr.decode(errors="replace")
        check(p.returncode == 1 and "forward pass's workspace" in err and "address-space limit" in err
              and not os.listdir(tmp), f"bench {peers[0]} of 1.4 GiB under a 1 GiB address-space "
              f"limit: rc {p.returncode} {err!r} left {os.listdir(tmp)}")
        needs[peers[0]] = err.split(" need ")[1].split(" GiB")[0] if " need " in err else None
    check(needs["--no-peers"] == "1.4" and needs["--python"] == "3.3" and "the peers' copies" in err,
          f"bench's needs without and with peers: {needs} {err!r}")
    # an allocation that fails all the same (here under a data-segment limit, ulimit -d, which the check does not
    # read) is reported with the same id, not "unexpected error: std::bad_alloc" (under ASan a failed allocation
    # aborts by design)
    p = subprocess.run([ets, "bench", "--no-peers", "--rounds", "1", "--hidden", "64", "--windows", "1000000"],
                       capture_output=True, timeout=120, env=dict(os.environ, TMPDIR=tmp),
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_DATA, (cap, cap)))
    check(p.returncode == 1 and b"[ets.cli.3] out of memory" in p.stderr and b"address-space" not in p.stderr
          and not os.listdir(tmp),
          f"bench under a 1 GiB data limit: rc {p.returncode} {p.stderr!r} left {os.listdir(tmp)}")

# an input tensor that cannot be written (here a file-size limit, ulimit -f, as a full TMPDIR) ends with an id, not
# "unexpected error", and leaves nothing in TMPDIR
p = subprocess.run([ets, "bench", "--no-peers", "--rounds", "1", "--hidden", "8", "--windows", "4096", "--layers", "1",
                    "--sample-ms", "1"], capture_output=True, timeout=120, env=dict(os.environ, TMPDIR=tmp),
                   preexec_fn=lambda: (signal.signal(signal.SIGXFSZ, signal.SIG_IGN),
                                       resource.setrlimit(resource.RLIMIT_FSIZE, (512 << 10, 512 << 10))))
check(p.returncode == 1 and b"[ets.cli.1] cannot write the benchmark's input tensor" in p.stderr
      and not os.listdir(tmp), f"bench with TMPDIR full: rc {p.returncode} {p.stderr!r} left {os.listdir(tmp)}")

# sizes beyond what a model file holds are usage errors (exit 2, before any work), as in `ets train`
for option, value in (("--layers", "65"), ("--width", "5000"), ("--hidden", "70000"), ("--hidden", "64,0")):
    p = run("bench", "--no-peers", "--rounds", "1", "--windows", "1", option, value)
    check(p.returncode == 2 and (option.encode() in p.stderr or value.encode() in p.stderr),
          f"bench {option} {value}: rc {p.returncode} {p.stderr!r}")
# a number beyond double's range is said to be one, not "needs a number"
for value in ("1e-320", "1e400"):
    p = run("train", "--data", work, "--out", "never.etsm", "--lr", value)
    check(p.returncode == 2 and b"beyond the range of a double" in p.stderr and not os.path.exists("never.etsm"),
          f"train --lr {value}: rc {p.returncode} {p.stderr!r}")

# ---- --batch-size is read exactly over the 64-bit range; what only looks like a number is refused
for value, stored in (("9007199254740993", 9007199254740993), ("9223372036854775807", 9223372036854775807),
                      ("+3", 3), ("1e5", 100000), ("0x10", None), (" 1", None), ("9223372036854775808", None),
                      ("-1", None), ("1.5", None)):
    p = run("label", trace, "-o", "bs.etst", "--batch-size", value, "--json")
    if stored is None:
        check(p.returncode == 2 and b"--batch-size" in p.stderr, f"--batch-size {value!r}: rc {p.returncode}")
        continue
    got_bs = None
    if p.returncode == 0:
        with open("bs.etst") as fh:
            got_bs = json.loads(fh.read().splitlines()[1])["trace"]["batch_size"]
    check(got_bs == stored, f"--batch-size {value!r}: stored {got_bs}, wanted {stored} (rc {p.returncode})")

# ---- the command's own standard output or error under another name (/dev/stdout, a link to /proc/self/fd/1)
# redirected to a file: replacing that file dropped what it held (a log) and the report; into a pipe, the report
# was mixed into the output (a trace with a summary line after its end)
os.symlink("/proc/self/fd/1", "fd1.etst")
os.symlink("/proc/self/fd/2", "fd2.etst")
# Where the report also goes to that stream the name is a usage error (2, refused before the work); elsewhere the
# writer refuses a name for an open descriptor of a regular file (ets.etst.1, 1).
for args, out_link, to, want_rc in ((["convert", trace, "--quiet"], "fd1.etst", "stdout", 1),
                                    (["convert", trace], "fd1.etst", "stdout", 2),
                                    (["label", trace], "fd2.etst", "stderr", 1)):
    with open("log.txt", "w") as fh:
        fh.write("previous line\n")
    with open("log.txt", "a") as fh:
        p = subprocess.run([ets, *args, "-o", out_link], stdout=fh if to == "stdout" else subprocess.PIPE,
                           stderr=fh if to == "stderr" else subprocess.PIPE, timeout=120)
    with open("log.txt") as fh:
        kept = fh.read().startswith("previous line\n")
    check(p.returncode == want_rc and kept and os.path.islink(out_link),
          f"{args[0]} -o a link to its {to}, redirected to a file: rc {p.returncode} (want {want_rc}), old content "
          f"kept {kept}")
p = subprocess.run([ets, "label", trace, "-o", "fd1.etst"], capture_output=True, timeout=120)  # stdout: a pipe
check(p.returncode == 2 and b"standard output" in p.stderr and p.stdout == b"",
      f"label -o its own stdout pipe: rc {p.returncode} {p.stderr!r}")
# a name longer than a folder holds is refused before any work, not after it (the temporary's name is cut to fit)
p = run("label", trace, "-o", "m" * 252 + ".etst")
check(p.returncode == 1 and b"File name too long" in p.stderr, f"label -o a 257-byte name: rc {p.returncode} {p.stderr!r}")
# a file name that is not UTF-8 (Latin-1) is converted; it is stored with U+FFFD
latin1 = os.path.join(work.encode(), b"k\xff" + os.path.basename(trace).encode())
shutil.copy(trace, latin1)
p = subprocess.run([ets.encode(), b"convert", latin1, b"-o", b"latin1.etst", b"--quiet"], capture_output=True, timeout=120)
stored = ""
if p.returncode == 0:
    with open("latin1.etst", encoding="utf-8") as fh:
        stored = json.loads(fh.read().splitlines()[1])["trace"]["source_path"]
check(p.returncode == 0 and "\ufffd" in stored, f"convert of a Latin-1 file name: rc {p.returncode} {p.stderr!r} {stored!r}")
# bench: an unusable TMPDIR is an error with an id; a sample of more than a minute is a usage error; a closed pipe
# ends it by SIGPIPE, as every other command
p = run("bench", "--no-peers", "--rounds", "1", "--hidden", "8", "--windows", "1", env=dict(os.environ, TMPDIR=os.path.join(work, "no-such-dir")))
check(p.returncode == 1 and b"[ets.cli.1]" in p.stderr, f"bench with TMPDIR missing: rc {p.returncode} {p.stderr!r}")
p = run("bench", "--no-peers", "--rounds", "1", "--hidden", "8", "--windows", "1", "--sample-ms", "1e300")
check(p.returncode == 2 and b"--sample-ms" in p.stderr, f"bench --sample-ms 1e300: rc {p.returncode} {p.stderr!r}")
closed = subprocess.Popen([ets, "bench", "--no-peers", "--rounds", "1", "--hidden", "8", "--windows", "1", "--sample-ms",
                           "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
closed.stdout.close()
closed.wait(timeout=120)
check(closed.returncode == -signal.SIGPIPE, f"bench into a closed pipe: rc {closed.returncode}")
closed.stderr.close()
# nothing may follow --help, --version or `help CMD`
for extra in (["--version", "--bogus"], ["--help", "x"], ["help", "predict", "extra"], ["help", "nosuch", "x"]):
    p = run(*extra)
    check(p.returncode == 2 and p.stdout == b"", f"ets {' '.join(extra)}: rc {p.returncode}")

# ---- --max-bytes: a trace larger once decompressed is refused (ets.io.6, with the option named), and the size is
# read exactly, in bytes or in units of 1024
with (gzip.open(trace, "rb") if trace.endswith(".gz") else open(trace, "rb")) as fh:
    size = len(fh.read())
kib = size // 1024
for cmd in (["inspect"], ["convert", "-o", "mb.etst", "--quiet"], ["label", "-o", "mb-label.etst"]):
    for limit, ok in ((str(size - 1), False), (str(size), True), (f"{kib}K", kib * 1024 >= size),
                      (f"{kib + 1}KiB", True), ("0", True)):
        for f in ("mb.etst", "mb-label.etst"):
            if os.path.exists(f):
                os.remove(f)
        p = run(*cmd, trace, "--max-bytes", limit)
        wrote = os.path.exists("mb.etst") or os.path.exists("mb-label.etst")
        if ok:
            check(p.returncode == 0 and wrote == (cmd[0] != "inspect"),
                  f"{cmd[0]} --max-bytes {limit} of a {size}-byte trace: rc {p.returncode} {p.stderr!r}")
        else:
            check(p.returncode == 1 and b"[ets.io.6]" in p.stderr and b"--max-bytes" in p.stderr and not wrote,
                  f"{cmd[0]} --max-bytes {limit} of a {size}-byte trace: rc {p.returncode} {p.stderr!r}")
for bad in ("1.5G", "-1", "1X", "1Kib", "", "9223372036854775808", "8388608T"):
    p = run("inspect", trace, "--max-bytes", bad)
    check(p.returncode == 2 and b"--max-bytes" in p.stderr, f"--max-bytes {bad!r}: rc {p.returncode} {p.stderr!r}")

# ---- bench works in a new folder of its own: "$TMPDIR/ets-bench-<pid>" reused one that was there (pids repeat across
# containers sharing a TMPDIR) and removed it, and what it held, at the end. Run as pid 1 of a new pid namespace
# (root and unshare needed), beside a folder named for that pid.
if os.geteuid() == 0 and shutil.which("unshare") and subprocess.run(["unshare", "-pf", "--mount-proc", "true"],
                                                                     capture_output=True).returncode == 0:
    shared_tmp = os.path.join(work, "shared-tmp")
    os.makedirs(os.path.join(shared_tmp, "ets-bench-1"), exist_ok=True)
    with open(os.path.join(shared_tmp, "ets-bench-1", "keep.txt"), "w") as fh:
        fh.write("precious")
    p = subprocess.run(["unshare", "-pf", "--mount-proc", ets, "bench", "--no-peers", "--rounds", "1", "--hidden", "8",
                        "--windows", "1", "--layers", "1", "--sample-ms", "1"], capture_output=True, timeout=300,
                       env=dict(os.environ, TMPDIR=shared_tmp))
    kept = os.path.exists(os.path.join(shared_tmp, "ets-bench-1", "keep.txt"))
    check(p.returncode == 0 and kept and sorted(os.listdir(shared_tmp)) == ["ets-bench-1"]
          and os.listdir(os.path.join(shared_tmp, "ets-bench-1")) == ["keep.txt"],
          f"bench beside another ets-bench-1: rc {p.returncode}, keep.txt kept {kept}, {os.listdir(shared_tmp)}")
else:
    print("skipped: bench's own temporary folder (needs root and unshare)")

# ---- a file-size limit (ulimit -f) makes the write that passes it fail: an error with the reason, the old file kept,
# no temporary left (SIGXFSZ ended the process at that write, leaving "<out>.part-<pid>-<n>" and nothing said)
os.makedirs("fsize", exist_ok=True)
with open(os.path.join("fsize", "o.etst"), "w") as fh:
    fh.write("old")
limit = max(1024, len(want) // 2)
p = subprocess.run([ets, "convert", trace, "-o", os.path.join("fsize", "o.etst"), "--quiet"], capture_output=True,
                   timeout=120, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
with open(os.path.join("fsize", "o.etst")) as fh:
    kept = fh.read()
check(p.returncode == 1 and b"ets.etst.1" in p.stderr and b"File too large" in p.stderr and kept == "old"
      and os.listdir("fsize") == ["o.etst"],
      f"convert past a file-size limit: rc {p.returncode} {p.stderr!r}, old file {kept[:10]!r}, {os.listdir('fsize')}")

finish("outputs: all checks passed")
