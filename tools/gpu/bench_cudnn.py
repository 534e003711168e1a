#!/usr/bin/python3
# cuDNN BiLSTM inference: ETS cuDNN vs ETS CPU vs PyTorch (cuDNN on a GPU, else CPU) on the same weights and inputs.
# Writes weights/inputs/PyTorch outputs for bench/cudnn_bench, runs it, merges both into one JSON (issue #11).
"""Usage: bench_cudnn.py --bench BUILD/bench/cudnn_bench --out DIR [--windows 1,64,256,1024] [--hidden 64]
                        [--features 32] [--layers 4] [--width 12] [--reps 20] [--cpu-max-windows 256]

PyTorch runs with TF32 disabled (torch.backends.cudnn.allow_tf32 = False), the same fp32 math ETS's cuDNN backend
asks for, so its outputs are a parity reference (max abs error columns) as well as a speed peer.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch


def timed_ms(fn, reps, sync):
    fn()
    sync()
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        sync()
        out.append((time.perf_counter() - t) * 1e3)
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True, help="path of the cudnn_bench executable")
    ap.add_argument("--out", required=True)
    ap.add_argument("--windows", default="1,64,256,1024")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--features", type=int, default=32)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--width", type=int, default=12)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--cpu-max-windows", type=int, default=1 << 30)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    windows = [int(w) for w in a.windows.split(",")]

    torch.manual_seed(0)
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if dev.type == "cuda":
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_num_threads(1)
    lstm = torch.nn.LSTM(a.features, a.hidden, a.layers, batch_first=True, bidirectional=True).eval()
    head = torch.nn.Linear(2 * a.hidden, 2).eval()

    # Flat float32 in the order cudnn_bench reads: per layer, per direction w_ih, w_hh, b_ih, b_hh; head W, b.
    parts = []
    for l in range(a.layers):
        for sfx in ("", "_reverse"):
            for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                parts.append(getattr(lstm, f"{n}_l{l}{sfx}").detach().reshape(-1))
    parts += [head.weight.detach().reshape(-1), head.bias.detach().reshape(-1)]
    torch.cat(parts).float().numpy().astype("<f4").tofile(os.path.join(a.out, "weights.bin"))

    lstm, head = lstm.to(dev), head.to(dev)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    torch_ms = {}
    with torch.no_grad():
        for n in windows:
            x = torch.randn(n, a.width, a.features)
            x.numpy().astype("<f4").tofile(os.path.join(a.out, f"x_{n}.bin"))
            xd = x.to(dev)

            def fwd():
                return head(lstm(xd)[0])

            y = fwd()
            y.float().cpu().numpy().astype("<f4").tofile(os.path.join(a.out, f"y_{n}.bin"))
            # Host → device → host included, as ETS's forward() includes its copies.
            torch_ms[n] = timed_ms(lambda: head(lstm(x.to(dev))[0]).cpu(), a.reps, sync)

    cmd = [a.bench, "--features", str(a.features), "--hidden", str(a.hidden), "--layers", str(a.layers),
           "--width", str(a.width), "--windows", a.windows, "--reps", str(a.reps),
           "--cpu-max-windows", str(a.cpu_max_windows),
           "--weights", os.path.join(a.out, "weights.bin"), "--inputs", a.out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stderr)
        sys.exit(f"bench_cudnn: {' '.join(cmd)} failed with {r.returncode}")
    res = json.loads(r.stdout)
    res["torch"] = {"version": torch.__version__, "device": str(dev),
                    "cudnn": torch.backends.cudnn.version() if dev.type == "cuda" else None}
    for c in res["cases"]:
        c["torch_ms"] = torch_ms.get(c["windows"])
        for k in ("cpu_ms", "cudnn_ms"):
            if c.get(k) and c["torch_ms"]:
                c[f"speedup_{k[:-3]}_vs_torch"] = c["torch_ms"] / c[k]
    with open(os.path.join(a.out, "bench.json"), "w") as fh:
        json.dump(res, fh, indent=1)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
