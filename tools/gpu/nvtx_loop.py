#!/usr/bin/env python3
# Captures a small PyTorch CUDA training loop, annotated with NVTX (emit_nvtx + ProfilerStep# ranges), with ETS's
# CUPTI tracer (through build/cuda/libets_cupti_capi.so) and prints the assembled iterations as JSON (issue #11).
"""Usage: NVTX_INJECTION64_PATH=/usr/local/cuda/lib64/libcupti.so nvtx_loop.py --lib LIB [--steps 6] [--out F]

NVTX reports to CUPTI only when NVTX_INJECTION64_PATH names libcupti before the process's first NVTX call.
Exit status 0 when at least steps-1 iterations came back with ops, kernels and Σ(time+gap) > 0.
"""
import argparse
import ctypes
import json
import sys

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        text = json.dumps({"skipped": "no CUDA device", "torch": torch.__version__})
        print(text)
        if a.out:
            with open(a.out, "w") as fh:
                fh.write(text + "\n")
        return 0
    lib = ctypes.CDLL(a.lib)
    lib.ets_cupti_start.argtypes = [ctypes.c_int]
    lib.ets_cupti_stop.restype = ctypes.c_char_p
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(16 * 32 * 32, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 3, 32, 32, device=dev), torch.randint(0, 10, (32,), device=dev)
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(2):  # warm-up outside the capture (cuDNN autotuning, allocator)
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    torch.cuda.synchronize()
    if lib.ets_cupti_start(0) != 0:
        print(lib.ets_cupti_stop().decode())
        return 1
    with torch.autograd.profiler.emit_nvtx(record_shapes=True):
        for i in range(a.steps):
            torch.cuda.nvtx.range_push(f"ProfilerStep#{i}")
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
            torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    res = json.loads(lib.ets_cupti_stop().decode())
    res["torch"] = torch.__version__
    text = json.dumps(res)
    print(text)
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text + "\n")
    its = res.get("iterations", [])
    good = [i for i in its if i["ops"] > 0 and i["kernels"] > 0 and i["sum_us"] > 0]
    return 0 if "error" not in res and len(good) >= a.steps - 1 else 1


if __name__ == "__main__":
    sys.exit(main())
