#!/usr/bin/python3
"""Training throughput: `ets train` with each instruction-set build of its BPTT kernels beside PyTorch training the
same network (nn.LSTM, 4 layers, bidirectional, hidden = features, + nn.Linear; masked L1, Adam, batch 256, width 12)
on the same number of threads, timed in interleaved rounds so every method sees the same machine state.

  OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 tools/bench_train.py --ets build/ets --data data [--rounds 3]
      [--seconds 60] [--threads 2] [--isa avx512,avx2,generic] [--json]

ETS trains on the dataset's train split (no validation) with `--max-minutes seconds/60` and reports windows/s over
its training time (loading excluded). PyTorch trains on random windows of the same shape for the same seconds (the
values do not change the work). Printed: each method's median windows/s over the rounds and its ratio to PyTorch's.

torch's thread pools are pinned before it is imported: OMP_NUM_THREADS = --threads, OPENBLAS_NUM_THREADS = 1 and
OMP_WAIT_POLICY = PASSIVE (OpenBLAS's own pool and torch's spinning OpenMP threads otherwise compete for the cores).
The JSON's torch_settings records them and OPENBLAS_CORETYPE; ETS's runs get the caller's environment unchanged.
"""
import argparse
import json
import os
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


def ets_round(ets, data, isa, seconds, threads):
    env = dict(CALLER_ENV, ETS_TRAIN_ISA=isa)
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([ets, "train", "--data", data, "--out", os.path.join(tmp, "m.etsm"), "--val-split", "",
                              "--max-minutes", "%.4f" % (seconds / 60.0), "--threads", str(threads), "--quiet",
                              "--json"], env=env, check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    return {"windows_per_s": r["windows_per_s"], "kernels": r.get("kernels")}


def features_of(ets, data):
    """The network's input size: one short ETS run's model, read back through tools/export_etsm.py."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import export_etsm  # noqa: E402
    with tempfile.TemporaryDirectory() as tmp:
        m = os.path.join(tmp, "m.etsm")
        subprocess.run([ets, "train", "--data", data, "--out", m, "--val-split", "", "--max-windows", "256",
                        "--epochs", "1", "--quiet"], check=True, capture_output=True)
        meta = export_etsm.read_etsm(m)[0]
    return int(meta["lstm.input_size"]), int(meta["lstm.hidden"]), int(meta["lstm.layers"])


def torch_round(torch, features, hidden, layers, seconds, threads, batch=256, width=12):
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

    step()  # warm-up: allocations and BLAS threads
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step()
        n += 1
    return {"windows_per_s": n * batch / (time.perf_counter() - t0)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ets", default="build/ets")
    ap.add_argument("--data", default="data")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--isa", default="avx512,avx2,generic")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.rounds < 1 or a.seconds <= 0 or a.threads < 1:
        ap.error("--rounds, --seconds and --threads must be positive")
    torch_environment(a.threads)
    import torch  # noqa: E402  (after the thread variables)

    features, hidden, layers = features_of(a.ets, a.data)
    isas = [s for s in a.isa.split(",") if s]
    runs = {"torch": []}
    kernels = {}
    for isa in isas:
        runs["ets-" + isa] = []
    for r in range(a.rounds):
        for isa in isas:
            res = ets_round(a.ets, a.data, isa, a.seconds, a.threads)
            runs["ets-" + isa].append(res["windows_per_s"])
            kernels["ets-" + isa] = res["kernels"]
        runs["torch"].append(torch_round(torch, features, hidden, layers, a.seconds, a.threads)["windows_per_s"])
        if not a.json:
            print("round %d: " % (r + 1) + ", ".join("%s %.0f" % (k, v[-1]) for k, v in runs.items()),
                  file=sys.stderr, flush=True)
    med = {k: statistics.median(v) for k, v in runs.items()}
    result = {"features": features, "hidden": hidden, "layers": layers, "threads": a.threads, "rounds": a.rounds,
              "seconds": a.seconds, "torch": torch.__version__, "torch_settings": torch_settings(torch), "kernels": kernels,
              "windows_per_s": {k: [round(x, 1) for x in v] for k, v in runs.items()},
              "median_windows_per_s": {k: round(v, 1) for k, v in med.items()},
              "ratio_to_torch": {k: round(v / med["torch"], 3) for k, v in med.items() if k != "torch"}}
    if a.json:
        print(json.dumps(result))
        return
    print("network: %d features, hidden %d, %d layers, bidirectional; batch 256 x width 12; %d threads; torch %s"
          % (features, hidden, layers, a.threads, torch.__version__))
    print("torch: %s" % " ".join("%s=%s" % kv for kv in result["torch_settings"]["env"].items()))
    print("%-14s %-10s %12s %10s" % ("method", "kernels", "windows/s", "vs torch"))
    for k, v in med.items():
        ratio = "" if k == "torch" else "%.2fx" % (v / med["torch"])
        print("%-14s %-10s %12.0f %10s" % (k, kernels.get(k, "-") or "-", v, ratio))


if __name__ == "__main__":
    main()
