#!/usr/bin/env python3
# tools/collect/worker.py records pooling arguments (kernel, stride, padding, dilation) and convolution arguments
# (stride, padding, dilation) in its first warm-up and the exporter fills them into the profiled steps' pooling ops
# and convolutions, which torch 1.13's profiler leaves without them (docs/dataset.md, *Pooling and convolution
# arguments*). Real zoo configurations, one warm-up and five profiled iterations each: every profiled step is filled,
# and the canonical trace (`ets convert`) carries every forward max / avg pool's kernel and stride and every forward
# convolution's stride, padding, dilation and groups, with the values the model was built with. The worker profiles one tail step after the five
# (--tail-steps, default 1) and declares it: the canonical trace holds the five, and each of them, the last one
# too, lasts past its ProfilerStep# span to the next step's first op (before the tail step the last one ended at
# its span's end, short of the time between steps).
# Usage: worker_pools_test.py ETS WORK_DIR   (exit 77 = skipped: no torch)
import gzip
import json
import os
import shutil
import subprocess
import sys

from checks import check, finish, forward_convs, forward_pools, torch_or_skip  # tests/cli/checks.py, beside this script

torch = torch_or_skip("worker_pools")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER = os.path.join(ROOT, "tools", "collect", "worker.py")
sys.path.insert(0, ROOT)
from tools.collect import configs as C  # noqa: E402
from tools.collect.zoo import FAMILIES  # noqa: E402

ets, work = sys.argv[1], os.path.abspath(sys.argv[2])
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
CONFIGS = ["squeezenet-0005", "randcnn-0006"]  # three max pools in ceil mode; max 3×3 and avg 2×2 / 3×3


def expected_pools(cid):
    # what the built model's pooling modules say, in module order (these nets call each pool once, in that order)
    cfg = C.config(cid)
    torch.manual_seed(cfg["seed"])
    model = FAMILIES[cfg["family"]].build(torch, cfg["knobs"]).model
    def pair(v):
        return v if isinstance(v, int) else v[0]

    out = []
    for m in model.modules():
        if isinstance(m, (torch.nn.MaxPool2d, torch.nn.AvgPool2d)):
            out.append(("max_pool2d" if isinstance(m, torch.nn.MaxPool2d) else "avg_pool2d", pair(m.kernel_size),
                        pair(m.stride if m.stride is not None else m.kernel_size)))
    return out


def expected_convs(cid):
    # the built model's 2-d convolutions as (stride_h, pad_h, dilation_h, groups), in module order (their call order
    # in these nets); a string padding ("same") is no number in the trace
    cfg = C.config(cid)
    torch.manual_seed(cfg["seed"])
    model = FAMILIES[cfg["family"]].build(torch, cfg["knobs"]).model
    return [("conv2d", m.stride[0], None if isinstance(m.padding, str) else m.padding[0], m.dilation[0], m.groups)
            for m in model.modules() if isinstance(m, torch.nn.Conv2d)]


ids = os.path.join(work, "ids.txt")
with open(ids, "w") as fh:
    fh.write("\n".join(CONFIGS) + "\n")
raw = os.path.join(work, "raw")
r = subprocess.run([sys.executable, WORKER, "--ids", ids, "--pass", "1", "--raw", raw, "--warmup", "1",
                    "--iters", "5"], capture_output=True, text=True, timeout=600)
check(r.returncode == 0, f"worker: rc {r.returncode} {r.stdout[-300:]} {r.stderr[-800:]}")
filled = filled_convs = 0
for cid in CONFIGS:
    path = os.path.join(raw, cid, "pass1.json.gz")
    if not os.path.exists(path):
        check(False, f"{cid}: no raw trace")
        continue
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    summary = doc["ets"].get("pool_args")
    check(summary is not None and summary["calls"] > 0 and summary["filled_steps"] == summary["steps"] == 5 + 1,
          f"{cid}: every profiled step filled (five and the tail step): {summary}")
    conv_summary = doc["ets"].get("conv_args")
    check(conv_summary is not None and conv_summary["calls"] > 0 and
          conv_summary["filled_steps"] == conv_summary["steps"] == 5 + 1,
          f"{cid}: every profiled step's convolutions filled: {conv_summary}")
    etst = os.path.join(work, cid + ".etst")
    pools = [p[:3] for p in forward_pools(ets, path, etst)]
    convs = forward_convs(ets, path, etst)
    want_convs = expected_convs(cid)
    check(convs and len(convs) == 5 * len(want_convs) and convs == want_convs * 5,
          f"{cid}: convolution strides, padding, dilation and groups in the trace {convs[:6]} match the model's "
          f"{want_convs[:6]}")
    filled_convs += len(convs)
    # the importer counts times from the first timed event in the file (src/import/kineto_json.cpp)
    origin = next(e["ts"] for e in doc["traceEvents"] if "ts" in e and len(e.get("ph", "")) == 1)
    step_end = {int(e["name"].split("#")[1]): e["ts"] + e["dur"] - origin for e in doc["traceEvents"]
                if e.get("name", "").startswith("ProfilerStep#")}
    iterations = []
    with open(etst) as fh:
        for line in fh:
            rec = json.loads(line)
            if "trace" in rec:
                iterations.append([rec["trace"]["iteration"], rec["trace"]["start_us"], 0.0])
            elif "n" in rec:
                iterations[-1][2] += rec["t"] + rec["g"]
    check(doc["ets"].get("tail_steps") == 1 and len(step_end) == 6 and len(iterations) == 5 and
          [it[0] for it in iterations] == sorted(step_end)[:5],
          f"{cid}: six steps profiled, the tail declared, five iterations read: {sorted(step_end)} "
          f"{[it[0] for it in iterations]}")
    past = [round(start + period - step_end[n], 3) for n, start, period in iterations]
    check(all(p > 0.001 for p in past), f"{cid}: every iteration, the last too, ends past its step's span "
          f"by the time between steps (µs): {past}")
    want = expected_pools(cid)
    check(pools and len(pools) % len(want) == 0 and pools == want * (len(pools) // len(want)),
          f"{cid}: pool kernels and strides in the trace {pools[:8]} match the model's {want}")
    filled += len(pools)
finish(f"worker pools: {len(CONFIGS)} configurations, {filled} forward pools with kernel and stride, {filled_convs} "
       f"forward convolutions with stride, padding and dilation")
