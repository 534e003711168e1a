#!/usr/bin/python3
"""Training throughput: `ets train` with each instruction-set build of its BPTT kernels beside PyTorch training the
same network (nn.LSTM, 4 layers, bidirectional, hidden = features, + nn.Linear; masked L1, Adam, batch 256, width 12)
on the same number of threads, timed in interleaved rounds so every method sees the same machine state.

  OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 tools/bench_train.py --ets build/ets --data data [--rounds 3]
      [--seconds 60] [--threads 2] [--torch-threads 1,2] [--isa avx512,avx2,generic] [--min-steps 20] [--json]

ETS trains on the dataset's train split (no validation) and reports windows/s over its training time, its first
step included. `--max-minutes` budgets the whole command (loading, and 5 s kept for saving), so each run's budget is
--seconds plus what the previous run spent outside training: ETS trains for about --seconds. PyTorch trains on
random windows of the same shape for --seconds, its first step included likewise (the values do not change the
work). A run of fewer than --min-steps steps (default 20) is flagged: a warning and exit status 1, its figure being
mostly its first step. Printed: each method's median windows/s over the rounds and its ratio to PyTorch's (to the
fastest of the --torch-threads counts when several are given).

torch's thread pools are pinned before it is imported: OMP_NUM_THREADS = --threads (or the largest --torch-threads), OPENBLAS_NUM_THREADS = 1 and
OMP_WAIT_POLICY = PASSIVE (OpenBLAS's own pool and torch's spinning OpenMP threads otherwise compete for the cores).
The JSON's torch_settings records them and OPENBLAS_CORETYPE; ETS's runs get the caller's environment unchanged.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


# the environment as the caller gave it: ETS's runs get it unchanged (the settings below are for torch's OpenMP and
# OpenBLAS, which must be in place before torch is imported)
CALLER_ENV = dict(os.environ)


def torch_environment(threads):
    """Pins torch's thread pools before torch is imported. torch runs its intra-op work on an OpenMP pool of
    `threads`; OpenBLAS, which torch 1.13 on Debian calls for every GEMM, keeps a pool of its own (one thread per core
    by default). On 2 cores the two pools' spinning threads competed: torch trained 20-60x slower at 2 threads than at
    1. OpenBLAS is therefore kept to the calling thread and idle OpenMP threads sleep instead of spinning."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"


def torch_settings(torch):
    """What the JSON records of torch's threads and BLAS, so that a figure can be read against them."""
    env = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                          "OMP_WAIT_POLICY", "OPENBLAS_CORETYPE")}
    return {"env": env, "torch_threads": torch.get_num_threads()}


# `ets train --max-minutes` is a budget for the whole command: loading and encoding the data come out of it first, and
# it keeps 5 s for saving the model (kSaveReserve in apps/ets/cmd_train.cpp). The budget each run is given is
# therefore --seconds plus what the latest run spent outside training, so that ETS trains for about --seconds.
SAVE_RESERVE_S = 5.0


def run_ets(cmd, **kw):
    """`ets ...`'s standard output; a failure ends the benchmark with ets's own message (it was captured, and a
    CalledProcessError traceback hid it)."""
    try:
        return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout
    except subprocess.CalledProcessError as e:
        last = (e.stderr or "").strip().splitlines()[-1:] or ["(no message)"]
        sys.exit("bench_train: %s failed (exit %d): %s" % (" ".join(cmd[:2]), e.returncode, last[0]))
    except OSError as e:
        sys.exit("bench_train: cannot run %s: %s" % (cmd[0], e.strerror or e))


def ets_round(ets, data, isa, budget_s, threads):
    env = dict(CALLER_ENV, ETS_TRAIN_ISA=isa)
    with tempfile.TemporaryDirectory() as tmp:
        out = run_ets([ets, "train", "--data", data, "--out", os.path.join(tmp, "m.etsm"), "--val-split", "",
                       "--max-minutes", "%.4f" % (budget_s / 60.0), "--threads", str(threads), "--quiet", "--json"],
                      env=env)
    r = json.loads(out)
    return {"windows_per_s": r["windows_per_s"], "kernels": r.get("kernels"), "steps": r.get("steps"),
            "train_seconds": r.get("seconds"), "wall_seconds": r.get("wall_seconds"), "budget_s": round(budget_s, 1),
            "out_of_time": r.get("out_of_time")}


def features_of(ets, data):
    """The network's input size: one short ETS run's model, read back through tools/export_etsm.py; and the seconds
    that run spent outside training (loading the data, saving the model)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import export_etsm  # noqa: E402
    with tempfile.TemporaryDirectory() as tmp:
        m = os.path.join(tmp, "m.etsm")
        out = run_ets([ets, "train", "--data", data, "--out", m, "--val-split", "", "--max-windows", "256",
                       "--epochs", "1", "--quiet", "--json"])
        meta = export_etsm.read_etsm(m)[0]
    r = json.loads(out)
    overhead = max(0.0, float(r.get("wall_seconds", 0)) - float(r.get("seconds", 0)))
    return int(meta["lstm.input_size"]), int(meta["lstm.hidden"]), int(meta["lstm.layers"]), overhead


def torch_round(torch, features, hidden, layers, seconds, threads, batch=256, width=12):
    """torch's windows/s over `seconds`, its first step included as ETS's windows/s includes its own first step."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(features, hidden, layers, bidirectional=True, batch_first=True)
    head = torch.nn.Linear(2 * hidden, 2)
    opt = torch.optim.Adam(list(lstm.parameters()) + list(head.parameters()), lr=2e-3)
    x = torch.randn(batch, width, features)
    y = torch.randn(batch, width, 2)
    mask = (torch.rand(batch, width, 1) > 0.05).float()

    def step():
        opt.zero_grad()
        out, _ = lstm(x)
        loss = ((head(out) - y).abs() * mask).sum() / (mask.sum() * 2)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(lstm.parameters()) + list(head.parameters()), 1.0)
        opt.step()

    n, t0 = 0, time.perf_counter()
    while n == 0 or time.perf_counter() - t0 < seconds:
        step()
        n += 1
    dt = time.perf_counter() - t0
    return {"windows_per_s": n * batch / dt, "steps": n, "train_seconds": round(dt, 1)}


def thread_list(text, ap):
    try:
        out = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        out = []
    if not out or min(out) < 1:
        ap.error("--torch-threads takes thread counts >= 1, comma-separated, not %r" % text)
    return sorted(set(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ets", default="build/ets")
    ap.add_argument("--data", default="data")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=60.0, help="training seconds of each run (default 60)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--torch-threads", default=None,
                    help="thread counts PyTorch is timed at, comma-separated (default: --threads); the ratios are "
                         "to the fastest of them")
    ap.add_argument("--isa", default="avx512,avx2,generic")
    ap.add_argument("--min-steps", type=int, default=20,
                    help="fewer training steps in a run are flagged: a warning, and exit status 1 (default 20)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.rounds < 1 or a.seconds <= 0 or a.threads < 1 or a.min_steps < 1:
        ap.error("--rounds, --seconds, --threads and --min-steps must be positive")
    if not shutil.which(a.ets):
        ap.error(f"--ets {a.ets}: not an executable (build the ets_cli target or pass --ets)")
    if not os.path.isdir(a.data):
        ap.error(f"--data {a.data}: no such folder")
    torch_threads = thread_list(a.torch_threads, ap) if a.torch_threads else [a.threads]
    torch_environment(max(torch_threads))
    import torch  # noqa: E402  (after the thread variables)

    features, hidden, layers, overhead = features_of(a.ets, a.data)
    extra = overhead + SAVE_RESERVE_S  # the budget ETS spends outside training, re-measured by every timed-out run
    isas = [s for s in a.isa.split(",") if s]
    torch_names = {t: ("torch" if len(torch_threads) == 1 else "torch-%dt" % t) for t in torch_threads}
    runs, details = {}, {}
    kernels = {}
    for name in ["ets-" + isa for isa in isas] + list(torch_names.values()):
        runs[name], details[name] = [], []
    warnings = []
    for r in range(a.rounds):
        for isa in isas:
            res = ets_round(a.ets, a.data, isa, a.seconds + extra, a.threads)
            if res["out_of_time"] and res["train_seconds"] is not None:
                extra = max(0.0, res["budget_s"] - res["train_seconds"])
            runs["ets-" + isa].append(res["windows_per_s"])
            details["ets-" + isa].append({k: res[k] for k in ("steps", "train_seconds", "budget_s")})
            kernels["ets-" + isa] = res["kernels"]
        for t, name in torch_names.items():
            res = torch_round(torch, features, hidden, layers, a.seconds, t)
            runs[name].append(res["windows_per_s"])
            details[name].append({k: res[k] for k in ("steps", "train_seconds")})
        for name, d in details.items():
            steps = d[-1]["steps"]
            if steps is None or steps < a.min_steps:
                warnings.append("round %d: %s trained %s steps (fewer than --min-steps %d): its windows/s is "
                                "dominated by its first step and is not a steady-state figure; raise --seconds"
                                % (r + 1, name, steps, a.min_steps))
                print("bench_train: warning: " + warnings[-1], file=sys.stderr, flush=True)
        if not a.json:
            print("round %d: " % (r + 1) + ", ".join("%s %.0f" % (k, v[-1]) for k, v in runs.items()),
                  file=sys.stderr, flush=True)
    med = {k: statistics.median(v) for k, v in runs.items()}
    baseline = max(torch_names.values(), key=lambda k: med[k])
    result = {"features": features, "hidden": hidden, "layers": layers, "threads": a.threads,
              "torch_threads": torch_threads, "torch_baseline": baseline, "rounds": a.rounds,
              "seconds": a.seconds, "min_steps": a.min_steps, "torch": torch.__version__,
              "torch_settings": torch_settings(torch), "kernels": kernels,
              "windows_per_s": {k: [round(x, 1) for x in v] for k, v in runs.items()},
              "runs": details,
              "median_windows_per_s": {k: round(v, 1) for k, v in med.items()},
              "ratio_to_torch": {k: round(v / med[baseline], 3) for k, v in med.items() if k != baseline},
              "warnings": warnings}
    if a.json:
        print(json.dumps(result))
        return 1 if warnings else 0
    print("network: %d features, hidden %d, %d layers, bidirectional; batch 256 x width 12; %d threads; torch %s"
          % (features, hidden, layers, a.threads, torch.__version__))
    print("torch: %s" % " ".join("%s=%s" % kv for kv in result["torch_settings"]["env"].items()))
    print("%-14s %-10s %12s %10s" % ("method", "kernels", "windows/s", "vs " + baseline))
    for k, v in med.items():
        ratio = "" if k == baseline else "%.2fx" % (v / med[baseline])
        print("%-14s %-10s %12.0f %10s" % (k, kernels.get(k, "-") or "-", v, ratio))
    for w in warnings:
        print("warning: " + w)
    return 1 if warnings else 0


if __name__ == "__main__":
    sys.exit(main())
