#!/usr/bin/python3
"""Training throughput: `ets train` with each instruction-set build of its BPTT kernels beside PyTorch training the
same network (nn.LSTM, 4 layers, bidirectional, hidden = features, + nn.Linear; masked L1, Adam, batch 256, width 12)
on the same number of threads, timed in interleaved rounds so every method sees the same machine state.

  OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 tools/bench_train.py --ets build/ets --data data [--rounds 3]
      [--seconds 60] [--threads 2] [--isa avx512,avx2,generic] [--json]

ETS trains on the dataset's train split (no validation) with `--max-minutes seconds/60` and reports windows/s over
its training time (loading excluded). PyTorch trains on random windows of the same shape for the same seconds (the
values do not change the work). Printed: each method's median windows/s over the rounds and its ratio to PyTorch's.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def ets_round(ets, data, isa, seconds, threads):
    env = dict(os.environ, ETS_TRAIN_ISA=isa)
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
    os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
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
              "seconds": a.seconds, "torch": torch.__version__, "kernels": kernels,
              "windows_per_s": {k: [round(x, 1) for x in v] for k, v in runs.items()},
              "median_windows_per_s": {k: round(v, 1) for k, v in med.items()},
              "ratio_to_torch": {k: round(v / med["torch"], 3) for k, v in med.items() if k != "torch"}}
    if a.json:
        print(json.dumps(result))
        return
    print("network: %d features, hidden %d, %d layers, bidirectional; batch 256 x width 12; %d threads; torch %s"
          % (features, hidden, layers, a.threads, torch.__version__))
    print("%-14s %-10s %12s %10s" % ("method", "kernels", "windows/s", "vs torch"))
    for k, v in med.items():
        ratio = "" if k == "torch" else "%.2fx" % (v / med["torch"])
        print("%-14s %-10s %12.0f %10s" % (k, kernels.get(k, "-") or "-", v, ratio))


if __name__ == "__main__":
    main()
