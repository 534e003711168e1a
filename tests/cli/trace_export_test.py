#!/usr/bin/env python3
# tools/trace_export.py against the installed torch: a profile stopped inside skip_function_events() exports the
# same events (names, categories, shapes, FLOPs) as one stopped normally, torch's FunctionEvent list is really
# skipped there and restored after, and the exported JSON imports through `ets inspect`. The collector relies on
# all of it; a torch upgrade that broke the patch would otherwise lose FLOPs silently.
# Usage: trace_export_test.py ETS WORK_DIR   (exit 77 = skipped: no torch)
import contextlib
import os
import subprocess
import sys

from checks import check, finish, torch_or_skip  # tests/cli/checks.py, beside this script

torch = torch_or_skip("trace_export")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import trace_export  # noqa: E402

ets, work = sys.argv[1], os.path.abspath(sys.argv[2])
os.makedirs(work, exist_ok=True)
torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2), torch.nn.ReLU(), torch.nn.Flatten(),
                            torch.nn.Linear(8 * 7 * 7, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x, y = torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))


def step():
    opt.zero_grad(set_to_none=True)
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()


def profile(skip: bool, path: str):
    got = {}

    def ready(prof):
        got["events"] = trace_export.events_from_profile(prof)
        got["function_events"] = len(prof.profiler.function_events)
        trace_export.export_kineto_json(prof, path, {"model": "tiny_cnn", "batch_size": 4, "optimizer": "sgd"})

    ctx = trace_export.skip_function_events() if skip else contextlib.nullcontext()
    with ctx, torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                     with_flops=True, on_trace_ready=ready,
                                     schedule=torch.profiler.schedule(wait=0, warmup=1, active=3)) as prof:
        for _ in range(4):
            step()
            prof.step()
    return got


step()
parse_before = torch.autograd.profiler.profile.__dict__["_parse_kineto_results"]
plain = profile(False, os.path.join(work, "plain.json"))
fast = profile(True, os.path.join(work, "fast.json.gz"))
check(torch.autograd.profiler.profile.__dict__["_parse_kineto_results"] is parse_before,
      "skip_function_events restores torch's parser")
check(plain["function_events"] > 0 and fast["function_events"] == 0,
      f"FunctionEvents built {plain['function_events']} / skipped {fast['function_events']}")


def shape(events):
    # timings differ between two profiles; what is recorded about each op must not
    return [(e["name"], e["cat"], repr(e["args"].get("Input Dims")), e["args"].get("flops")) for e in events]


check(shape(plain["events"]) == shape(fast["events"]), "same events, shapes and FLOPs with and without the skip")
with_flops = [e for e in fast["events"] if e["args"].get("flops")]
check(any(e["name"] in ("aten::addmm", "aten::mm", "aten::linear") for e in with_flops) and
      any(e["name"].startswith("aten::conv") for e in with_flops), "FLOPs on the linear and conv ops")
check(sum(e["name"].startswith("ProfilerStep#") for e in fast["events"]) >= 3, "a ProfilerStep span per active step")
r = subprocess.run([ets, "inspect", os.path.join(work, "fast.json.gz")], capture_output=True, text=True)
check(r.returncode == 0 and "3 iteration(s)" in r.stdout, f"ets inspect: rc {r.returncode} {r.stdout[:300]} {r.stderr}")

finish(f"trace_export: {len(fast['events'])} events, {len(with_flops)} with FLOPs, identical with the skip")
