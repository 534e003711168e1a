#!/usr/bin/env python3
# tools/trace_export.py against the installed torch: a profile stopped inside skip_function_events() exports the
# same events (names, categories, shapes, FLOPs) as one stopped normally, torch's FunctionEvent list is really
# skipped there and restored after, and the exported JSON imports through `ets inspect`. The collector relies on
# all of it; a torch upgrade that broke the patch would otherwise lose FLOPs silently. The default export
# (nested="needed") leaves out nested ops the importer does not read: from the same profile it must give the same
# canonical trace (`ets convert`) as the complete export (nested="all").
# Usage: trace_export_test.py ETS WORK_DIR   (exit 77 = skipped: no torch)
import contextlib
import gzip
import json
import os
import subprocess
import sys

from checks import check, finish, forward_convs, forward_ops, forward_pools, torch_or_skip  # tests/cli/checks.py, beside this script

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
    with torch.profiler.record_function("ets_test_scope"):  # a user scope, exported as Kineto's user_annotation
        loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()


def profile(skip: bool, path: str):
    got = {}

    def ready(prof):
        got["events"] = trace_export.events_from_profile(prof)
        got["all"] = trace_export.events_from_profile(prof, nested="all")
        got["function_events"] = len(prof.profiler.function_events)
        meta = {"model": "tiny_cnn", "batch_size": 4, "optimizer": "sgd"}
        trace_export.export_kineto_json(prof, path, meta)
        # the complete export of the same profile, in a folder of its own under the same file name
        os.makedirs(os.path.join(os.path.dirname(path), "all"), exist_ok=True)
        trace_export.export_kineto_json(prof, os.path.join(os.path.dirname(path), "all", os.path.basename(path)),
                                        meta, nested="all")

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
# Kineto's categories: record_function scopes (the steps, the optimizer's and the test's own) are user
# annotations, every other op (aten ops, autograd nodes, AccumulateGrad's detach) a cpu_op. The exporter reads the
# scope only for ops outside aten::, so the non-aten cpu_ops are the case that could go wrong.
users = {e["name"] for e in fast["events"] if e["cat"] == "user_annotation"}
check({n for n in users if not n.startswith(("ProfilerStep#", "Optimizer."))} == {"ets_test_scope"} and
      any(n.startswith("ProfilerStep#") for n in users), f"user annotations {sorted(users)}")
check(all(e["cat"] == "cpu_op" for e in fast["events"] if e["name"] not in users), "every other op a cpu_op")
check(any(e["cat"] == "cpu_op" and not e["name"].startswith("aten::") for e in fast["events"]),
      "non-aten ops in the profile (autograd nodes), exported as cpu_op")
r = subprocess.run([ets, "inspect", os.path.join(work, "fast.json.gz")], capture_output=True, text=True)
check(r.returncode == 0 and "3 iteration(s)" in r.stdout, f"ets inspect: rc {r.returncode} {r.stdout[:300]} {r.stderr}")


# nested="needed" against nested="all" on the same profile. The needed events are a subset of all of them, fewer,
# and give the same canonical trace: every op's inputs, hyper-parameters, FLOPs (summed over nested ops), sequence
# number, time and gap.
def key(e):
    return json.dumps(e, sort_keys=True)


all_keys = {key(e) for e in fast["all"]}
check(shape(plain["all"]) == shape(fast["all"]), "complete exports: same events with and without the skip")
check(len(fast["events"]) < len(fast["all"]) and all(key(e) in all_keys for e in fast["events"]),
      f"needed events ({len(fast['events'])}) a strict subset of all ({len(fast['all'])})")


def canonical(trace):
    out = os.path.join(os.path.dirname(trace), "canonical.etst")
    r = subprocess.run([ets, "convert", trace, "-o", out, "--quiet"], capture_output=True, text=True)
    check(r.returncode == 0, f"ets convert {trace}: rc {r.returncode} {r.stderr[-300:]}")
    if r.returncode != 0:
        return None
    lines = []
    with open(out) as fh:
        for line in fh:
            rec = json.loads(line)
            (rec.get("trace") or {}).pop("source_path", None)  # the two files lie in different folders
            lines.append(rec)
    return lines


needed_c = canonical(os.path.join(work, "fast.json.gz"))
all_c = canonical(os.path.join(work, "all", "fast.json.gz"))
ops = [r for r in needed_c or [] if "n" in r]
check(needed_c is not None and needed_c == all_c and len(ops) > 0, "same canonical trace from needed and all")
check(any((r.get("f") or 0) > 0 and r["p"] == 1 for r in ops) and
      any(r.get("q") is not None and r["q"] >= 0 and r["p"] == 1 for r in ops),
      "backward ops with FLOPs and sequence numbers, which only their nested ops carry")
for sub in ("", "all"):
    with gzip.open(os.path.join(work, sub, "fast.json.gz"), "rt") as fh:
        check(json.load(fh)["ets"].get("nested") == (sub or "needed"), f"ets.nested recorded ({sub or 'needed'})")

# The sequence-number rule on its own: in the models above every outermost op that lacks a sequence number also
# lacks tensor inputs, so the op kept for its inputs brings the number too. A synthetic profile tree (fake nodes
# read through the same attributes) has an op with tensor inputs and no number whose nested op carries one.
from torch._C import _profiler as P  # noqa: E402


class Node:
    def __init__(self, name, ts, dur, ex, children=(), corr=0):
        self.name, self.start_time_ns, self.duration_time_ns, self.extra_fields = name, ts, dur, ex
        self.children, self.correlation_id, self.start_tid = list(children), corr, 1


class Inputs:
    def __init__(self, shapes, dtypes):
        self.shapes, self.dtypes, self.ivalues = shapes, dtypes, [None] * len(shapes)


class Fields:  # stands in for torch's _ExtraFields_TorchOp
    def __init__(self, seq=-1, inputs=None, user=False):
        self.sequence_number, self.forward_tid = seq, 1
        self.inputs = inputs or Inputs([], [])
        self.scope = P.RecordScope.USER_SCOPE if user else P.RecordScope.FUNCTION


class FakeProfile:
    def __init__(self, roots):
        results = type("R", (), {"events": lambda self: [], "experimental_event_tree": lambda self: roots})()
        self.profiler = type("Prof", (), {"kineto_results": results})()


us = 1000
tree = [Node("ProfilerStep#1", 0, 100 * us, Fields(user=True), [
    Node("aten::custom_op", 10 * us, 50 * us, Fields(inputs=Inputs([[2, 3]], ["float"])), [
        Node("aten::helper", 12 * us, 5 * us, Fields(seq=41), corr=3),
        Node("aten::helper", 20 * us, 5 * us, Fields(seq=42), corr=4)], corr=2),
    Node("aten::relu", 70 * us, 10 * us, Fields(seq=43, inputs=Inputs([[2, 3]], ["float"])), corr=5)], corr=1)]
saved = getattr(P, "_ExtraFields_TorchOp", None)
P._ExtraFields_TorchOp = Fields
try:
    fake = {m: trace_export.events_from_profile(FakeProfile(tree), nested=m) for m in ("all", "needed")}
finally:
    if saved is None:
        del P._ExtraFields_TorchOp
    else:
        P._ExtraFields_TorchOp = saved
check([e["name"] for e in fake["needed"]] == ["ProfilerStep#1", "aten::custom_op", "aten::helper", "aten::relu"] and
      fake["needed"][2]["args"].get("Sequence number") == 41, f"synthetic tree, needed: {fake['needed']}")
seqs = []
for m in ("all", "needed"):
    os.makedirs(os.path.join(work, "synthetic", m), exist_ok=True)
    path = os.path.join(work, "synthetic", m, "t.json")
    with open(path, "w") as fh:
        json.dump({"traceEvents": fake[m]}, fh)
    c = canonical(path)
    seqs.append([(r["n"], r.get("q")) for r in c or [] if "n" in r])
check(seqs[0] == seqs[1] == [("custom_op", 41), ("relu", 43)], f"synthetic tree: sequence numbers {seqs}")

try:
    trace_export.events_from_profile(None, nested="some")
    check(False, "an unknown nested mode is refused")
except ValueError:
    pass


# Pooling and convolution arguments. torch 1.13's profiler keeps no int lists, so a pool's kernel and stride and a
# convolution's stride, padding and dilation are lost unless record_list_args() notes them during an unprofiled step
# and the export fills them in ("Concrete Inputs", where a real Kineto build puts them). Module and functional calls,
# a default stride, ceil mode and padding; a strided convolution and one with padding="same", dilation and groups.
F = torch.nn.functional


class PoolNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)           # 32 -> 16
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding="same", dilation=2, groups=2)
        self.maxp = torch.nn.MaxPool2d(3, 2, ceil_mode=True)                # 16 -> 8
        self.avgp = torch.nn.AvgPool2d(2, stride=1, padding=1)              # 4 -> 5
        self.fc = torch.nn.Linear(8 * 5 * 5, 10)

    def forward(self, x):
        x = self.maxp(self.conv2(self.conv(x))).relu()
        x = F.max_pool2d(x, 2)                                              # 8 -> 4, stride = kernel
        return self.fc(self.avgp(x).flatten(1))


pnet = PoolNet()
popt = torch.optim.SGD(pnet.parameters(), lr=0.01)
px, py = torch.randn(4, 3, 32, 32), torch.randint(0, 10, (4,))


def pool_step():
    popt.zero_grad(set_to_none=True)
    F.cross_entropy(pnet(px), py).backward()
    popt.step()


original = (F.max_pool2d, F.avg_pool2d, F.conv2d)
with trace_export.record_list_args() as calls:
    pool_step()
check((F.max_pool2d, F.avg_pool2d, F.conv2d) == original, "record_list_args restores torch.nn.functional")
check([(c["kind"], c["kernel"], c["stride"], c["padding"]) for c in calls if c["kind"] != "conv"] ==
      [("max", [3, 3], [2, 2], [0, 0]), ("max", [2, 2], [2, 2], [0, 0]), ("avg", [2, 2], [1, 1], [1, 1])],
      f"recorded pooling calls: {calls}")
check([(c["dims"], c["stride"], c["padding"], c["dilation"]) for c in calls if c["kind"] == "conv"] ==
      [([4, 3, 32, 32], [2, 2], [1, 1], [1, 1]), ([4, 8, 16, 16], [1, 1], None, [2, 2])],
      f"recorded convolution calls (a string padding is not a list): {calls}")


def profiled_export(path, step, list_calls, nested="all", extra=None):
    """Three profiled steps (after one warm-up) exported to `path` with `list_calls`; returns the JSON."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                on_trace_ready=lambda p: trace_export.export_kineto_json(p, path, extra or {},
                                                                                        list_calls=list_calls,
                                                                                        nested=nested),
                                schedule=torch.profiler.schedule(wait=0, warmup=1, active=3)) as prof:
        for _ in range(4):
            step()
            prof.step()
    with open(path) as fh:
        return json.load(fh)


def pool_profile(path, list_calls, nested="all"):
    return profiled_export(path, pool_step, list_calls, nested)


def pool_args(doc):
    return [(e["name"], (e["args"].get("Concrete Inputs") or [""] * 5)[1:4]) for e in doc["traceEvents"]
            if e["name"] in ("aten::max_pool2d", "aten::avg_pool2d")]


def conv_args(doc):
    # (stride, padding, dilation, groups) of each aten::conv2d, as "Concrete Inputs" holds them
    return [tuple((e["args"].get("Concrete Inputs") or [""] * 7)[3:7]) for e in doc["traceEvents"]
            if e["name"] == "aten::conv2d"]


ALL_FILLED = {"calls": 3, "steps": 3, "filled_steps": 3}
CONV_FILLED = {"calls": 2, "steps": 3, "filled_steps": 3}
doc = pool_profile(os.path.join(work, "pools.json"), calls)
check(doc["ets"].get("pool_args") == ALL_FILLED and doc["ets"].get("conv_args") == CONV_FILLED,
      f"pool_args / conv_args {doc['ets']}")
check(pool_args(doc) == [("aten::max_pool2d", ["[3, 3]", "[2, 2]", "[0, 0]"]),
                         ("aten::max_pool2d", ["[2, 2]", "[2, 2]", "[0, 0]"]),
                         ("aten::avg_pool2d", ["[2, 2]", "[1, 1]", "[1, 1]"])] * 3, f"pool args {pool_args(doc)}")
# groups, which the profiler keeps, stays; the string padding stays empty, as the profiler left it
check(conv_args(doc) == [("[2, 2]", "[1, 1]", "[1, 1]", "1"), ("[1, 1]", "", "[2, 2]", "2")] * 3,
      f"conv args {conv_args(doc)}")
inner = [e for e in doc["traceEvents"] if e["name"] == "aten::max_pool2d_with_indices"]
check(len(inner) == 6 and all(e["args"]["Concrete Inputs"][1] in ("[3, 3]", "[2, 2]") for e in inner),
      "the nested max_pool2d_with_indices get the same arguments")
# the ceil_mode the profiler kept stays where it was
check(all(e["args"]["Concrete Inputs"][5] == "True" for e in doc["traceEvents"] if e["name"] == "aten::max_pool2d"
          and e["args"]["Concrete Inputs"][1] == "[3, 3]"), "ceil_mode kept")

# Through the importer: the forward pools carry kernel and stride, the convolutions stride, padding and dilation.
hyper = forward_pools(ets, os.path.join(work, "pools.json"), os.path.join(work, "pools.etst"))
check(hyper == [("max_pool2d", 3, 2, 0), ("max_pool2d", 2, 2, 0), ("avg_pool2d", 2, 1, 1)] * 3,
      f"imported pool hyper-parameters {hyper}")
conv_hyper = forward_convs(ets, os.path.join(work, "pools.json"), os.path.join(work, "pools.etst"))
check(conv_hyper == [("conv2d", 2, 1, 1, 1), ("conv2d", 1, None, 2, 2)] * 3,
      f"imported convolution hyper-parameters {conv_hyper}")
# The default export drops the nested max_pool2d_with_indices (its max_pool2d has inputs and a sequence number)
# and imports the same pooling and convolution arguments.
doc = pool_profile(os.path.join(work, "pools-needed.json"), calls, nested="needed")
check(doc["ets"].get("pool_args") == ALL_FILLED and doc["ets"].get("conv_args") == CONV_FILLED and
      not any(e["name"] == "aten::max_pool2d_with_indices" for e in doc["traceEvents"]),
      f"needed: pool_args {doc['ets'].get('pool_args')}, no nested pooling op")
needed_etst = os.path.join(work, "pools-needed.etst")
check(forward_pools(ets, os.path.join(work, "pools-needed.json"), needed_etst) == hyper and
      forward_convs(ets, os.path.join(work, "pools-needed.json"), needed_etst) == conv_hyper,
      "needed: the same imported pool and convolution hyper-parameters")

# A step whose pools do not match the recorded calls (here: another input shape) is left as the profiler wrote it.
wrong = [dict(c, dims=[1] + c["dims"][1:]) for c in calls]
doc = pool_profile(os.path.join(work, "pools-unmatched.json"), wrong)
check(doc["ets"].get("pool_args", {}).get("filled_steps") == 0 and
      doc["ets"].get("conv_args", {}).get("filled_steps") == 0 and
      all(a == ["", "", ""] for _, a in pool_args(doc)) and all(a[:3] == ("", "", "") for a in conv_args(doc)),
      f"unmatched calls fill nothing: {pool_args(doc)[:3]} {conv_args(doc)[:2]}")
# Pools and convolutions are matched apart: convolutions called around torch.nn.functional (none recorded) leave
# the pools filled.
doc = pool_profile(os.path.join(work, "pools-no-convs.json"), [c for c in calls if c["kind"] != "conv"])
check(doc["ets"].get("pool_args") == ALL_FILLED and
      doc["ets"].get("conv_args") == {"calls": 0, "steps": 3, "filled_steps": 0} and
      all(a[:3] == ("", "", "") for a in conv_args(doc)), f"no recorded convolution: {doc['ets']}")

# LSTMs: torch 1.13 records an LSTM's hx list without a shape, so the hidden size is lost unless record_list_args()
# notes hx at torch._VF.lstm (nn.LSTM's way in) and the export writes the list's shapes into "Input Dims" as a Kineto
# build does. Both overloads: lstm.input, and lstm.data for a packed sequence (hx one argument later).
class RnnNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(6, 10, num_layers=2, bidirectional=True)
        self.packed = torch.nn.LSTM(6, 7)
        self.gru = torch.nn.GRU(6, 5)

    def forward(self, x):
        y, _ = self.lstm(x)
        p = torch.nn.utils.rnn.pack_padded_sequence(x, [5, 3, 2])
        z, _ = self.packed(p)
        w, _ = self.gru(x)
        return y.sum() + z.data.sum() + w.sum()


rnet = RnnNet()
ropt = torch.optim.SGD(rnet.parameters(), lr=0.01)
rx = torch.randn(5, 3, 6)


def rnn_step():
    ropt.zero_grad(set_to_none=True)
    rnet(rx).backward()
    ropt.step()


vf_before = dict(torch._VF.__dict__)
with trace_export.record_list_args() as rcalls:
    rnn_step()
check(dict(torch._VF.__dict__) == vf_before, "record_list_args restores torch._VF")
check([(c["kind"], c["dims"], c["hx_at"], c["hx"]) for c in rcalls] ==
      [("lstm", [5, 3, 6], 1, [[4, 3, 10], [4, 3, 10]]), ("lstm", [10, 6], 2, [[1, 3, 7], [1, 3, 7]])],
      f"recorded LSTM calls: {rcalls}")
rnn_json = os.path.join(work, "rnn.json")
doc = profiled_export(rnn_json, rnn_step, rcalls, nested="needed", extra={"batch_size": 3})
check(doc["ets"].get("rnn_args") == {"calls": 2, "steps": 3, "filled_steps": 3}, f"rnn_args {doc['ets']}")
rnn_hyper = forward_ops(ets, rnn_json, os.path.join(work, "rnn.etst"), ("lstm", "gru"),
                        ("in_channels", "hidden", "layers"))
check(rnn_hyper == [("lstm", 6, 10, 2), ("lstm", 6, 7, 1), ("gru", 6, 5, 1)] * 3,
      f"imported recurrent hyper-parameters {rnn_hyper}")
# without the recorded calls the LSTMs keep what torch 1.13 wrote: no hidden size (a GRU's hx is a tensor)
plain_json = os.path.join(work, "rnn-plain.json")
profiled_export(plain_json, rnn_step, None, nested="needed", extra={"batch_size": 3})
plain = forward_ops(ets, plain_json, os.path.join(work, "rnn-plain.etst"), ("lstm", "gru"),
                    ("in_channels", "hidden", "layers"))
check(plain == [("lstm", 6, None, 2), ("lstm", 6, None, 1), ("gru", 6, 5, 1)] * 3,
      f"recurrent hyper-parameters without recorded calls {plain}")

# ---- what the exporter refuses or warns about, and how it writes
import resource  # noqa: E402
import signal  # noqa: E402
import warnings  # noqa: E402


def profiled(steps, ready, record_shapes=True, fail_in=None, fail_first=False):
    """Runs `steps` profiled steps (1 warm-up, then active), calling ready(prof) when the profiler stops; with
    fail_in=k the k-th active step (1-based) raises after its forward pass (with fail_first, before any op)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=record_shapes,
                                on_trace_ready=ready,
                                schedule=torch.profiler.schedule(wait=0, warmup=1, active=steps - 1)) as prof:
        for i in range(steps):
            if fail_in is not None and i == fail_in:
                if not fail_first:
                    model(x)
                raise RuntimeError("the training step failed")
            step()
            prof.step()


meta4 = {"model": "tiny_cnn", "batch_size": 4, "optimizer": "sgd"}


def cut_short(name, fail_first=False):
    """Exports a 4-step profile whose third active step raises (before any op with fail_first); returns the file's
    "ets" object, `ets inspect`'s result, the ops per imported iteration and the warnings said."""
    path = os.path.join(work, name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            profiled(4, lambda p: trace_export.export_kineto_json(p, path, meta4), fail_in=3, fail_first=fail_first)
        except RuntimeError:
            pass
    with open(path) as fh:
        ets_obj = json.load(fh)["ets"]
    r = subprocess.run([ets, "inspect", path, "--json"], capture_output=True, text=True)
    got = json.loads(r.stdout) if r.returncode == 0 else {}
    return ets_obj, r, [i["ops"] for i in got.get("iterations", [])], [str(w.message) for w in caught]


# A step cut short by an exception: torch still calls on_trace_ready. The cut step only closes the one before it
# (tail_steps), so it is never an iteration of its own (it was exported and predicted as one, 8 ops of 24).
cut_ets, _, ops, said = cut_short("cut.json")
check(cut_ets.get("tail_steps") == 1 and len(ops) == 2 and len(set(ops)) == 1 and any("exception" in w for w in said),
      f"a step cut short closes the one before and is no iteration: tail_steps {cut_ets.get('tail_steps')}, "
      f"ops per iteration {ops}, warnings {said}")
# cut short before it ran any operator (an exception from the data loader, say): that step cannot close the one
# before (the importer refused the file, ets.import.7), so it is dropped, and the two complete steps stay
cut0_ets, r, ops0, said = cut_short("cut-before-ops.json", fail_first=True)
check(r.returncode == 0 and not cut0_ets.get("tail_steps") and ops0 == ops and
      any("before its last step ran an operator" in w for w in said),
      f"a step cut short before any operator is dropped: rc {r.returncode} {r.stderr.strip()!r}, tail_steps "
      f"{cut0_ets.get('tail_steps')}, ops per iteration {ops0} (want {ops}), warnings {said}")
# cut short in the first active step (after or before its first operator): no complete step to export
for first in (False, True):
    try:
        profiled(4, lambda p: trace_export.export_kineto_json(p, os.path.join(work, "cut1.json"), meta4), fail_in=1,
                 fail_first=first)
        check(False, f"a loop that failed in its first profiled step exported something (before any op: {first})")
    except ValueError as e:
        check("before one step completed" in str(e), f"first step cut short (before any op: {first}): {e}")
    except RuntimeError as e:
        check(False, f"first step cut short (before any op: {first}): the exporter did not refuse ({e})")
# nothing profiled (exported after the with block, where the profiler no longer holds the events)
holder = {}
profiled(3, lambda p: holder.setdefault("prof", p))
try:
    trace_export.export_kineto_json(holder["prof"], os.path.join(work, "late.json"), meta4)
    check(False, "an export of a profile without events wrote a file")
except ValueError as e:
    check("no events" in str(e), f"empty profile: {e}")
# exported after the with block once the schedule began a new cycle (wait 0, warm-up 1, active 2: the fourth step is
# the next cycle's warm-up): what is left holds no operator, and used to be written as a trace of 0-op iterations
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                            on_trace_ready=lambda p: None,
                            schedule=torch.profiler.schedule(wait=0, warmup=1, active=2)) as late_prof:
    for _ in range(4):
        step()
        late_prof.step()
try:
    trace_export.export_kineto_json(late_prof, os.path.join(work, "late-cycle.json"), meta4)
    r = subprocess.run([ets, "inspect", os.path.join(work, "late-cycle.json"), "--json"], capture_output=True, text=True)
    check(False, f"an export holding no operator wrote a file: inspect rc {r.returncode} {r.stdout.strip()[:200]}")
except ValueError as e:
    check("no profiled step holds an operator" in str(e) or "no events" in str(e), f"late export: {e}")
# no shapes, no batch size: a prediction from the file is poor or moves, so each is said
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    profiled(3, lambda p: trace_export.export_kineto_json(p, os.path.join(work, "noshapes.json"), {"model": "m"}),
             record_shapes=False)
said = " | ".join(str(w.message) for w in caught)
check("record_shapes" in said and "batch_size" in said, f"warnings without shapes and batch size: {said}")
# no prof.step(): no ProfilerStep# span says where an iteration ends, which is said
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as no_steps:
        for _ in range(3):
            step()
    trace_export.export_kineto_json(no_steps, os.path.join(work, "nosteps.json"), meta4)
said = " | ".join(str(w.message) for w in caught)
check("prof.step()" in said, f"a warning without ProfilerStep# spans: {said!r}")
# a write that fails (a full disk, here a file-size limit) leaves the earlier file as it was, not a truncated one
keep = os.path.join(work, "keep.json")
with open(keep, "w") as fh:
    fh.write('{"traceEvents": []}')
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
previous_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
failed = None
try:
    def ready_limited(p):
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))
        try:
            trace_export.export_kineto_json(p, keep, meta4)
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    profiled(3, ready_limited)
except OSError as e:
    failed = e
finally:
    signal.signal(signal.SIGXFSZ, previous_handler)
with open(keep) as fh:
    kept = fh.read()
check(failed is not None and kept == '{"traceEvents": []}' and
      not [n for n in os.listdir(work) if n.startswith("keep.json.")],
      f"a failed write keeps the earlier file: error {failed!r}, content {kept[:60]!r}")

finish(f"trace_export: {len(fast['events'])} events, {len(with_flops)} with FLOPs, identical with the skip; "
       f"pooling arguments filled in {len(hyper)} pool ops, convolution arguments in {len(conv_hyper)} convolutions")
