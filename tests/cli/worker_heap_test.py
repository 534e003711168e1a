#!/usr/bin/env python3
# tools/collect/worker.py's heap pre-fault against the installed torch: with --heap-mb the worker restarts itself
# with glibc's malloc settings (env.py HEAP_VARS) when they are not set, pre-faults the heap, and records the
# setting in its environment record and in every status (so the collector never mixes passes of two settings),
# with the page faults taken while profiling; without it none of that happens. One tiny configuration (mlp-0038,
# 41 ops, ~1.4 ms an iteration), one warm-up and five profiled iterations a run.
# With the ets tool, `ets label` keeps the passes' heap_mb in the label and refuses to mix passes of two settings.
# Usage: worker_heap_test.py WORK_DIR [ETS]   (exit 77 = skipped: no torch)
import json
import os
import shutil
import subprocess
import sys

from checks import check, finish, read_etst, torch_or_skip  # tests/cli/checks.py, beside this script

torch_or_skip("worker_heap")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER = os.path.join(ROOT, "tools", "collect", "worker.py")
sys.path.insert(0, ROOT)
from tools.collect import env as E  # noqa: E402

work = os.path.abspath(sys.argv[1])
ets = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] else ""
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
ids = os.path.join(work, "ids.txt")
with open(ids, "w") as fh:
    fh.write("mlp-0038\n")
clean_env = {k: v for k, v in os.environ.items() if k not in E.HEAP_VARS}


def run(tag, extra):
    raw, env_out = os.path.join(work, tag), os.path.join(work, f"env-{tag}.json")
    r = subprocess.run([sys.executable, WORKER, "--ids", ids, "--pass", "1", "--raw", raw, "--warmup", "1",
                        "--iters", "5", "--env-out", env_out, *extra], capture_output=True, text=True, env=clean_env,
                       timeout=300)
    check(r.returncode == 0 and "DONE mlp-0038 1" in r.stdout, f"{tag}: rc {r.returncode} {r.stdout[-300:]} "
          f"{r.stderr[-800:]}")
    try:
        with open(env_out) as fh:
            env_rec = json.load(fh)
        with open(os.path.join(raw, "mlp-0038", "pass1.status.json")) as fh:
            status = json.load(fh)
    except (OSError, ValueError) as e:
        check(False, f"{tag}: no environment record or status: {e}")
        return {}, {}
    return env_rec, status


env_rec, st = run("heap", ["--heap-mb", "64"])
check(env_rec.get("heap_vars") is True and env_rec.get("heap_mb") == 64 and env_rec.get("heap_prefault_s", 0) > 0,
      f"--heap-mb 64 restarts the worker with the malloc settings and pre-faults: {env_rec}")
check(st.get("ok") and st.get("settings") == {"warmup": 1, "iters": 5, "heap_mb": 64, "tail_steps": 1} and
      (st.get("env") or {}).get("heap_mb") == 64, f"the status records the setting: {st}")
check(isinstance(st.get("profile_minflt"), int) and st["profile_minflt"] >= 0,
      f"page faults while profiling recorded: {st.get('profile_minflt')}")

env_rec, st = run("plain", [])
check(env_rec.get("heap_vars") is False and env_rec.get("heap_mb") == 0 and env_rec.get("heap_prefault_s") == 0,
      f"without --heap-mb: no restart, no pre-fault: {env_rec}")
check(st.get("ok") and st.get("settings") == {"warmup": 1, "iters": 5, "tail_steps": 1}, f"and nothing in the settings: {st}")

if ets:  # a label of the heap passes says so (reproduce.py pre-faults as they did); one of both settings is refused
    heap_pass, plain_pass = (os.path.join(work, t, "mlp-0038", "pass1.json.gz") for t in ("heap", "plain"))
    out = os.path.join(work, "label.etst.gz")
    r = subprocess.run([ets, "label", heap_pass, "-o", out], capture_output=True, text=True)
    extra = read_etst(out)[1][0][0].get("extra", {}) if r.returncode == 0 else {}
    check(r.returncode == 0 and extra.get("heap_mb") == "64", f"ets label of --heap-mb 64 passes: rc {r.returncode} "
          f"{r.stderr} extra {extra}")
    r = subprocess.run([ets, "label", plain_pass, "-o", out + ".plain.etst.gz"], capture_output=True, text=True)
    extra = read_etst(out + ".plain.etst.gz")[1][0][0].get("extra", {}) if r.returncode == 0 else {"heap_mb": "?"}
    check("heap_mb" not in extra, f"a label of passes without a pre-fault records none: {r.stderr} {extra}")
    r = subprocess.run([ets, "label", heap_pass, plain_pass, "-o", out + ".mixed.etst.gz"], capture_output=True, text=True)
    check(r.returncode == 1 and "[ets.label.2]" in r.stderr and "heap" in r.stderr,
          f"passes of two heap settings are not one label: rc {r.returncode} {r.stderr}")

r = subprocess.run([sys.executable, WORKER, "--ids", ids, "--pass", "1", "--raw", os.path.join(work, "bad"),
                    "--heap-mb", "-5"], capture_output=True, text=True, env=clean_env, timeout=120)
check(r.returncode == 2 and "--heap-mb" in r.stderr and not os.path.exists(os.path.join(work, "bad")),
      f"--heap-mb -5 is refused before anything runs: rc {r.returncode} {r.stderr[-300:]}")

finish("worker heap pre-fault: restart with the malloc settings, pre-fault and records hold")
