# Exports a torch 1.13 CPU profile as a Kineto-style Chrome trace that ETS's Kineto importer reads.
# Debian's torch has no Kineto backend and its export_chrome_trace drops all args, so we walk the event tree ourselves.
"""Kineto-style Chrome-trace export for torch 1.13 (no Kineto build).

Usage (importable; the dataset collector uses it)::

    from trace_export import export_kineto_json
    def ready(prof):
        export_kineto_json(prof, "out.json")
    with torch.profiler.profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True,
                                schedule=torch.profiler.schedule(wait=0, warmup=1, active=3),
                                on_trace_ready=ready) as prof:
        for _ in range(4):
            train_step(); prof.step()

With a schedule, call export_kineto_json from ``on_trace_ready`` (after the profiler stopped, the object no longer
holds the results). Without a schedule, call it after the ``with`` block and wrap each iteration in
``record_function("ProfilerStep#N")`` yourself.

Every TorchOp becomes ``{"ph": "X", "cat": "cpu_op" | "user_annotation", "name", "pid", "tid", "ts", "dur",
"args": {"External id", "Input Dims", "Input type", "Concrete Inputs", "Sequence number", "Fwd thread id", "flops"}}``
with ts/dur in microseconds (three decimals, i.e. ns resolution). ``ProfilerStep#N`` and other
``record_function`` scopes get cat "user_annotation", like Kineto writes them.
"""
from __future__ import annotations

import contextlib
import gzip
import json
import os
import platform
import sys
import warnings

try:
    from atomic_file import atomic_write, replacing  # tools/atomic_file.py, beside this module
except ImportError:  # imported as part of a package (tools.trace_export)
    from .atomic_file import atomic_write, replacing

__all__ = ["export_kineto_json", "events_from_profile", "skip_function_events", "record_list_args"]

# Input types whose "Concrete Inputs" value can be a scalar or int list; tensors only ever yield "".
_SCALARISH = frozenset(("", "Scalar", "ScalarList", "GenericList", "int", "bool", "float"))


@contextlib.contextmanager
def skip_function_events():
    """Inside this block, stopping a torch profiler skips building its Python FunctionEvent list.

    torch 1.13 turns every recorded op into a FunctionEvent (with memory-interval scans and a tree build) when a
    profile stops; that cost about as much as the export itself and the exporter does not need it (it reads the
    event tree, and the FLOPs straight from the Kineto results). ``prof.profiler.function_events`` is empty inside.
    """
    from torch.autograd import profiler as autograd_profiler

    cls = autograd_profiler.profile
    saved = cls.__dict__["_parse_kineto_results"]
    cls._parse_kineto_results = lambda self, result: []
    try:
        yield
    finally:
        cls._parse_kineto_results = saved


# torch.nn.functional pooling and convolution functions whose int-list arguments (kernel, stride, padding, dilation)
# torch 1.13's profiler does not keep, and the aten ops they call. A real Kineto build records them as "Concrete
# Inputs", and the importer reads them from there (docs/dataset.md, *Pooling and convolution arguments*).
_POOL_FUNCS = {
    "max_pool1d": ("max", 1), "max_pool2d": ("max", 2), "max_pool3d": ("max", 3),
    "max_pool1d_with_indices": ("max", 1), "max_pool2d_with_indices": ("max", 2),
    "max_pool3d_with_indices": ("max", 3),
    "avg_pool1d": ("avg", 1), "avg_pool2d": ("avg", 2), "avg_pool3d": ("avg", 3),
}
_CONV_FUNCS = {"conv1d": ("conv", 1), "conv2d": ("conv", 2), "conv3d": ("conv", 3)}
_POOL_OPS = {"aten::" + name: kind for name, kind in _POOL_FUNCS.items()}
_CONV_OPS = {"aten::" + name: kind for name, kind in _CONV_FUNCS.items()}
# An LSTM's hx is a list ([h0, c0]), which torch 1.13 records without a shape, so its hidden size is lost. nn.LSTM
# calls torch._VF.lstm (not torch.nn.functional), which the recorder wraps for it.
_RNN_OPS = {"aten::lstm": ("lstm", 0)}
# Which summary (and which one-for-one match) an op or a recorded call belongs to: pools, convolutions and LSTMs are
# matched separately, so a model that calls a convolution around torch.nn.functional still gets its pools filled.
_LIST_ARG_KINDS = (("pool_args", _POOL_OPS), ("conv_args", _CONV_OPS), ("rnn_args", _RNN_OPS))
_LIST_ARG_OPS = {op: key for key, ops in _LIST_ARG_KINDS for op in ops}


def _call_signature(kind: str):
    import inspect

    P = inspect.Parameter
    if kind == "conv":
        names = ["input", "weight", "bias", "stride", "padding", "dilation", "groups"]
        defaults = [P.empty, P.empty, None, 1, 0, 1, 1]
    else:
        names = ["input", "kernel_size", "stride", "padding"]
        defaults = [P.empty, P.empty, None, 0]
    if kind == "max":
        names += ["dilation", "ceil_mode", "return_indices"]
        defaults += [1, False, False]
    elif kind == "avg":
        names += ["ceil_mode", "count_include_pad", "divisor_override"]
        defaults += [False, True, None]
    return inspect.Signature([P(n, P.POSITIONAL_OR_KEYWORD, default=d) for n, d in zip(names, defaults)])


def _ntuple(v, nd: int):
    if isinstance(v, (list, tuple)):
        v = list(v)
        return [int(x) for x in v] * nd if len(v) == 1 else [int(x) for x in v]
    return [int(v)] * nd


def _list_call(kind: str, nd: int, sig, args, kwargs) -> dict:
    """What one pooling or convolution call computes with, as the aten op receives it. Arguments that do not bind
    give "dims" None, which matches no op: the step keeps what the profiler recorded."""
    try:
        b = sig.bind(*args, **kwargs)
        b.apply_defaults()
        a = b.arguments
        call = {"kind": kind, "nd": nd, "dims": [int(d) for d in a["input"].shape]}
        if kind == "conv":
            call["stride"] = _ntuple(a["stride"], nd)
            # padding="same" / "valid" reaches aten::conv2d as a string, which Kineto records as such and the
            # importer does not read as numbers: it stays as the profiler wrote it
            call["padding"] = None if isinstance(a["padding"], str) else _ntuple(a["padding"], nd)
            call["dilation"] = _ntuple(a["dilation"], nd)
            return call
        kernel = _ntuple(a["kernel_size"], nd)
        # stride None (or []) means the kernel size, in torch.nn.functional and in aten alike
        call["kernel"] = kernel
        call["stride"] = (kernel if a["stride"] is None or a["stride"] == [] or a["stride"] == ()
                          else _ntuple(a["stride"], nd))
        call["padding"] = _ntuple(a["padding"], nd)
        if kind == "max":
            call["dilation"] = _ntuple(a["dilation"], nd)
        return call
    except Exception:
        return {"kind": kind, "nd": nd, "dims": None}


def _lstm_call(args) -> dict:
    """What one torch._VF.lstm call runs on: its input shape and its hx list's shapes, and where hx stands among
    the aten op's arguments: lstm.input(input, hx[], params[], ...) or lstm.data(data, batch_sizes, hx[], ...)."""
    try:
        at = 1 if isinstance(args[1], (list, tuple)) else 2
        return {"kind": "lstm", "nd": 0, "dims": [int(d) for d in args[0].shape], "hx_at": at,
                "hx": [[int(d) for d in t.shape] for t in args[at]]}
    except Exception:
        return {"kind": "lstm", "nd": 0, "dims": None}


@contextlib.contextmanager
def record_list_args():
    """Inside this block every max / avg pooling call and every convolution (conv1d / 2d / 3d) through
    torch.nn.functional (nn.MaxPool2d, nn.Conv2d and friends go through it), and every LSTM through torch._VF
    (nn.LSTM's way), is appended, in call order, to the yielded list: its kind, input shape, and its kernel (pools),
    stride, padding and dilation, or its hx shapes (LSTMs). Run one unprofiled training step inside it and pass the
    list to export_kineto_json: torch 1.13's profiler drops int-list arguments and list shapes, so without it the
    trace has no pooling kernel, no pooling or convolution stride and no LSTM hidden size. It swaps module
    attributes of torch.nn.functional and torch._VF for the block: not for use while other threads run models."""
    import torch
    import torch.nn.functional as F

    calls = []
    saved = {}

    def wrap(fn, kind, nd):
        sig = _call_signature(kind)

        def recorded(*args, **kwargs):
            calls.append(_list_call(kind, nd, sig, args, kwargs))
            return fn(*args, **kwargs)
        return recorded

    for name, (kind, nd) in {**_POOL_FUNCS, **_CONV_FUNCS}.items():
        fn = getattr(F, name, None)
        if fn is not None:
            saved[name] = fn
            setattr(F, name, wrap(fn, kind, nd))
    vf = torch._VF
    vf_lstm = getattr(vf, "lstm", None)

    def lstm_recorded(*args, **kwargs):
        calls.append(_lstm_call(args))
        return vf_lstm(*args, **kwargs)

    if vf_lstm is not None:
        vf.lstm = lstm_recorded  # an instance attribute over the module's __getattr__, removed again below
    try:
        yield calls
    finally:
        for name, fn in saved.items():
            setattr(F, name, fn)
        if vf_lstm is not None and vf.__dict__.get("lstm") is lstm_recorded:
            del vf.lstm


def _kineto_list(values) -> str:
    # how Kineto writes a list argument in "Concrete Inputs", and what the importer's parse_ints reads
    return "[" + ", ".join(str(x) for x in values) + "]"


def _list_concrete(call: dict, existing) -> list:
    # Positions follow the aten schemas: max_poolNd[_with_indices](self, kernel_size, stride, padding, dilation,
    # ceil_mode); avg_poolNd(self, kernel_size, stride, padding, ceil_mode, ...); convNd(input, weight, bias, stride,
    # padding, dilation, groups). Values the profiler kept (ceil_mode, groups) stay.
    conc = list(existing or [])
    if call["kind"] == "conv":
        want = {3: call["stride"], 4: call["padding"], 5: call["dilation"]}
    else:
        want = {1: call["kernel"], 2: call["stride"], 3: call["padding"]}
        if call["kind"] == "max":
            want[4] = call["dilation"]
    want = {i: v for i, v in want.items() if v is not None}
    conc += [""] * (max(want) + 1 - len(conc))
    for i, v in want.items():
        if not conc[i]:
            conc[i] = _kineto_list(v)
    return conc


def _fill_list_args(steps: dict, calls: list) -> dict:
    """Gives each profiled step's outermost pooling ops, and separately its outermost convolution ops and its LSTMs,
    in order, the recorded calls' arguments (a pooling op's nested pooling ops too: they share its schema; an LSTM
    gets its hx list's shapes in "Input Dims"). A step's pools (convolutions, LSTMs) are filled only when they match
    the recorded pooling (convolution, LSTM) calls one for one (kind, dimensionality and input shape); otherwise
    they keep what the profiler recorded. Returns the summary for each
    ("pool_args", "conv_args", "rnn_args"): calls recorded, profiled steps holding such ops, steps filled."""
    summary = {}
    for key, ops_table in _LIST_ARG_KINDS:
        kinds = set(ops_table.values())
        group_calls = [c for c in calls if (c["kind"], c["nd"]) in kinds]
        group_steps = {step: ops for (k, step), ops in steps.items() if k == key}
        filled = 0
        for ops in group_steps.values():
            ok = len(ops) == len(group_calls) and all(
                c["dims"] is not None and ops_table[ev["name"]] == (c["kind"], c["nd"]) and
                (ev["args"].get("Input Dims") or [None])[0] == c["dims"]
                for (ev, _), c in zip(ops, group_calls))
            if not ok:
                continue
            filled += 1
            for (ev, inner), c in zip(ops, group_calls):
                for e in [ev] + [i for i in inner if i["name"] in ops_table]:
                    if c["kind"] == "lstm":  # the hx list's shapes, as a Kineto build writes a list's
                        dims = list(e["args"].get("Input Dims") or [])
                        if c["hx_at"] < len(dims) and not dims[c["hx_at"]]:
                            dims[c["hx_at"]] = c["hx"]
                            e["args"]["Input Dims"] = dims
                        continue
                    e["args"]["Concrete Inputs"] = _list_concrete(c, e["args"].get("Concrete Inputs"))
        summary[key] = {"calls": len(group_calls), "steps": len(group_steps), "filled_steps": filled}
    return summary


def _concrete(ivalues, dtypes):
    # Kineto's "Concrete Inputs": "" for tensors, the scalar / int-list value otherwise (what hyper-parameters need).
    # Tensors and int lists come back as None, so most ops have no concrete input: checked once, in C.
    if not ivalues or ivalues.count(None) == len(ivalues):
        return []
    out = []
    for i, v in enumerate(ivalues):
        dt = dtypes[i] if i < len(dtypes) else ""
        if v is None or dt not in _SCALARISH:
            out.append("")
            continue
        if isinstance(v, (list, tuple)):
            if all(isinstance(x, (int, float, bool)) for x in v):
                out.append(_kineto_list(v))
            else:
                out.append("")
        elif isinstance(v, bool):
            out.append("True" if v else "False")
        elif isinstance(v, (int, float)):
            out.append(str(v))
        else:
            out.append("")
    return out


# Tensor dtypes as torch writes them in "Input type": an op with one of them has inputs for the importer for sure.
_TENSOR_DTYPES = frozenset(("float", "double", "c10::Half", "c10::BFloat16", "long int", "int", "short int",
                            "signed char", "unsigned char", "bool"))
NESTED_MODES = ("needed", "all")


def events_from_profile(prof, list_calls: list | None = None, nested: str = "needed") -> list:
    """Returns the Kineto-style event list (dicts) of a stopped torch.profiler.profile. With `list_calls` (the list
    record_list_args() filled during an unprofiled step) each profiled step's pooling ops get their kernel, stride,
    padding and dilation, and its convolutions their stride, padding and dilation, as "Concrete Inputs", and its
    LSTMs their hx shapes in "Input Dims", where the op sequence matches.

    `nested`: "all" exports every op. "needed" (the default) exports every op outside the outermost ops (the ops ETS
    predicts: what its importer calls top ops), every outermost op, and of the ops nested in one only those the
    importer reads: each that carries FLOPs (summed into the outermost op), and, where the outermost op has none,
    the first that carries a sequence number and the ones up to the first with tensor inputs. ETS imports the same
    canonical trace from both (tests/cli/trace_export_test.py; docs/dataset.md); "needed" is several times faster to
    export and smaller, but it is not a complete profile for other tools."""
    return _events(prof, list_calls, nested)[0]


def _events(prof, list_calls, nested="needed"):
    from torch._C import _profiler as P  # torch >= 1.13

    if nested not in NESTED_MODES:
        raise ValueError(f"nested must be one of {NESTED_MODES}, not {nested!r}")
    results = prof.profiler.kineto_results
    flops = {}
    try:  # the Kineto results carry the FLOPs that FunctionEvent.flops would copy (same correlation ids)
        for ke in results.events():
            f = ke.flops()
            if f:
                flops[ke.correlation_id()] = f
    except Exception:  # flops are optional; the importer derives them analytically
        pass
    torch_op, user_scope = P._EventType.TorchOp, P.RecordScope.USER_SCOPE
    # A large model's profile holds ~10^5 ops per step, and every attribute of a tree node is a pybind call that
    # builds a fresh Python object, so each is read once. An op's extra fields are a TorchOp's exactly when its
    # tag is TorchOp: the class check replaces the (dearer) tag read where the class is exposed.
    op_fields = getattr(P, "_ExtraFields_TorchOp", None)

    def is_op(e, ex):
        return ex.__class__ is op_fields if op_fields is not None else e.tag == torch_op

    prune = nested == "needed"
    pid = os.getpid()
    events = []
    append = events.append
    flops_get = flops.get
    # ("pool_args" or "conv_args", ProfilerStep#N) -> [(outermost pooling / convolution event, [such events nested
    # in it])] in call order
    steps = {}
    # (node, its ProfilerStep# name or None, the outermost pooling / convolution entry it is nested in or None, and
    # inside an outermost op the list [still lacks tensor inputs, still lacks a sequence number] shared by its
    # subtree, else None). The stack pops in pre-order, the (thread, start) order in which the importer looks for
    # them. The importer nests by time, this walk by the tree: they agree because torch ends a child inside its
    # parent's span (none of 578k nested ops of 7 large configurations ended after its outermost op).
    stack = [(e, None, None, None) for e in reversed(results.experimental_event_tree())]
    pop, extend = stack.pop, stack.extend
    while stack:
        e, step, pool, lack = pop()
        if prune and lack is not None:
            # Inside an outermost op, most ops carry nothing the importer reads: skip them after two reads.
            keep = bool(flops_get(e.correlation_id))
            if not keep and (lack[0] or lack[1]):
                ex = e.extra_fields
                if is_op(e, ex):
                    if lack[1]:
                        seq = getattr(ex, "sequence_number", -1)
                        keep = seq is not None and seq >= 0
                    if not keep and lack[0]:
                        inputs = getattr(ex, "inputs", None)
                        keep = inputs is not None and bool(inputs.dtypes or inputs.shapes)
            if not keep:
                children = e.children
                if children:
                    extend((c, step, pool, lack) for c in reversed(children))
                continue
        ex = e.extra_fields
        if not is_op(e, ex):
            extend((c, step, pool, lack) for c in reversed(e.children))
            continue
        corr = e.correlation_id
        args = {"External id": int(corr)}
        dtypes = ()
        inputs = getattr(ex, "inputs", None)
        if inputs is not None:
            shapes = inputs.shapes or []  # fresh lists of lists on each access: no copy needed
            dtypes = inputs.dtypes or []
            if shapes or dtypes:
                args["Input Dims"] = shapes
                args["Input type"] = dtypes
            try:
                conc = _concrete(inputs.ivalues, dtypes)
                if any(conc):
                    args["Concrete Inputs"] = conc
            except Exception:
                pass
        seq = getattr(ex, "sequence_number", -1)
        has_seq = seq is not None and seq >= 0
        if has_seq:
            args["Sequence number"] = int(seq)
            args["Fwd thread id"] = int(getattr(ex, "forward_tid", 0) or 0)
        f = flops_get(corr)
        if f:
            args["flops"] = int(f)
        name = e.name
        # ops the dispatcher records ("aten::...") are never record_function scopes; only the others need the scope
        user = not name.startswith("aten::") and getattr(ex, "scope", None) == user_scope
        ev = {
            "ph": "X",
            "cat": "user_annotation" if user else "cpu_op",
            "name": name,
            "pid": pid,
            "tid": int(e.start_tid),
            "ts": int(e.start_time_ns),
            "dur": round(max(0, int(e.duration_time_ns)) / 1000.0, 3),
            "args": args,
        }
        append(ev)
        tensors = any(dt in _TENSOR_DTYPES for dt in dtypes)
        if lack is None:
            # the importer's outermost ops: not a scope, a "::" in the name, not a step (src/import/gpu_assembly.cpp)
            if not user and "::" in name and not name.startswith("ProfilerStep#"):
                lack = [not tensors, not has_seq]
        else:
            if tensors:
                lack[0] = False
            if has_seq:
                lack[1] = False
        if name.startswith("ProfilerStep#"):
            step = name
        if list_calls is not None and name in _LIST_ARG_OPS and step is not None:
            if pool is None:
                pool = (ev, [])
                steps.setdefault((_LIST_ARG_OPS[name], step), []).append(pool)
            else:
                pool[1].append(ev)
        children = e.children
        if children:
            extend((c, step, pool, lack) for c in reversed(children))
    # Epoch-µs floats (~1.8e15) cannot hold ns: rounding put children 0.25 µs outside their parents and broke
    # nesting. Timestamps are therefore µs since a whole second before the first event (exact to the ns).
    base_ns = min((ev["ts"] for ev in events), default=0) // 1_000_000_000 * 1_000_000_000
    for ev in events:
        ev["ts"] = round((ev["ts"] - base_ns) / 1000.0, 3)
    events.sort(key=lambda ev: (ev["ts"], -ev["dur"]))
    summary = _fill_list_args(steps, list_calls) if list_calls is not None else None
    return events, summary


def _write_json(doc: dict, path: str) -> str:
    """Writes the whole file or nothing: a failed write (a full disk) leaves the earlier file at path as it was."""
    text = json.dumps(doc, separators=(",", ":"))
    # level 9 took 2x the time for ~3% smaller files
    # mtime 0: one profile gives the same bytes whenever it is exported
    atomic_write(path, gzip.compress(text.encode(), compresslevel=6, mtime=0) if path.endswith(".gz") else text)
    return path


def _append_ets_object(opener, src: str, out, tail: bytes, chunk: int, compress: bool) -> None:
    seen_events, opened = False, False
    # mtime 0 and no file name in the gzip header: the same trace gives the same bytes, whatever the temporary's name
    with opener(src, "rb") as fin, (gzip.GzipFile(filename="", fileobj=out, mode="wb", compresslevel=6, mtime=0)
                                    if compress else contextlib.nullcontext(out)) as fout:
        buf = b""  # read, not yet written: the last 64 bytes before any trailing blanks stay back for the closing '}'
        while True:
            data = fin.read(chunk)
            if not data:
                break
            buf += data
            if not opened and buf.strip():
                if not buf.lstrip().startswith(b"{"):
                    raise ValueError(f"{src}: not a Chrome JSON trace (no top-level object)")
                opened = True
            seen_events = seen_events or b'"traceEvents"' in buf  # buf keeps 64 bytes: a key cut by a read is seen
            cut = len(buf.rstrip()) - 64
            if cut > 0:
                fout.write(buf[:cut])
                buf = buf[cut:]
        body = buf.rstrip()
        if not opened or not seen_events or not body.endswith(b"}"):
            raise ValueError(f"{src}: not a Chrome JSON trace (no top-level traceEvents, or not closed by a brace)")
        fout.write(body[:-1] + b"," + tail)


def add_ets_metadata(src: str, dst: str, extra: dict, chunk: int = 1 << 20) -> str:
    """Copies a Chrome JSON trace (e.g. real Kineto's export_chrome_trace) from `src` to `dst` (gzip when it ends
    in .gz) with an "ets" object holding `extra` added as the last top-level key, the metadata ETS's importer reads
    (model, family, batch_size, tail_steps, ...; docs/trace-format.md). The trace's bytes are copied as they are,
    streamed: parsing them in Python would round Kineto's epoch-µs timestamps with ns decimals
    (1712195495519689.047) to ~0.25 µs and hold a GPU trace of hundreds of MB as objects. An "ets" key already in
    the file stays; the importer reads both, the later (this one) winning where they overlap. Returns dst."""
    opener = gzip.open if src.endswith(".gz") else open
    tail = json.dumps({"ets": extra}, separators=(",", ":"))[1:].encode()  # b'"ets":{...}}'
    with replacing(dst) as out:  # written whole, then renamed over dst: a failure leaves dst as it was
        _append_ets_object(opener, src, out, tail, chunk, compress=dst.endswith(".gz"))
    return dst


def _steps_holding_operators(events: list, steps: list) -> list:
    """For each ProfilerStep# span, whether it holds an operator ETS's importer keeps: an outermost cpu_op on the
    step's thread (nesting decided by start time, as the importer does) other than record_function's own
    aten::zeros / aten::empty, which it drops as bookkeeping (docs/trace-format.md)."""
    import bisect
    ops = sorted((ev for ev in events if ev.get("cat") == "cpu_op" and "::" in ev.get("name", "")),
                 key=lambda ev: (str(ev.get("tid")), ev["ts"], -ev["dur"]))
    starts = {}  # tid -> sorted start times of the outermost ops that count
    tid, open_until = None, float("-inf")
    for ev in ops:
        if str(ev.get("tid")) != tid:
            tid, open_until = str(ev.get("tid")), float("-inf")
        if ev["ts"] >= open_until:  # outermost
            open_until = ev["ts"] + ev["dur"]
            if ev["name"] not in ("aten::zeros", "aten::empty"):
                starts.setdefault(tid, []).append(ev["ts"])
    held = []
    for st in steps:
        t = starts.get(str(st.get("tid")), [])
        i = bisect.bisect_left(t, st["ts"])
        held.append(i < len(t) and t[i] < st["ts"] + st["dur"])
    return held


def export_kineto_json(prof, path: str, extra: dict | None = None, list_calls: list | None = None,
                       nested: str = "needed") -> str:
    """Writes the profile as Kineto-style Chrome JSON to `path` (gzip when it ends in .gz); returns path.
    `list_calls`, `nested`: as for events_from_profile; how many steps the recorded calls filled is recorded under
    "ets"/"pool_args" (pooling ops), "ets"/"conv_args" (convolutions) and "ets"/"rnn_args" (LSTMs), and `nested`
    under "ets"/"nested"."""
    import torch

    events, list_summary = _events(prof, list_calls, nested)
    if not events:
        raise ValueError("the profile holds no events: with a schedule, call export_kineto_json from on_trace_ready "
                         "(after the with block the profiler no longer holds them), and profile at least one step")
    if getattr(prof, "record_shapes", True) is False:
        warnings.warn("the profile was taken without record_shapes=True: its ops have no input shapes, ETS's main "
                      "features, so predictions from it are poor", stacklevel=2)
    if not (extra or {}).get("batch_size"):
        warnings.warn("no batch_size in extra: the batch size is a feature, and predictions without it move",
                      stacklevel=2)
    # Called while an exception unwinds the profiled loop (torch runs on_trace_ready from the profiler's __exit__):
    # the last step was cut short. It still closes the step before it, so it is declared a tail step, never an
    # iteration of its own; with no complete step before it there is nothing to export. A tail step closes the one
    # before at its first operator, so one cut short before it ran any (the exception came from the data loader,
    # say) cannot: it is dropped, and the step before ends at its own ProfilerStep# span, as without a tail.
    steps = sorted((ev for ev in events if ev.get("name", "").startswith("ProfilerStep#")), key=lambda ev: ev["ts"])
    held = _steps_holding_operators(events, steps)
    cut_short = sys.exc_info()[0] is not None
    if cut_short:
        if len(steps) < 2 or not any(held[:-1]):
            raise ValueError("the profiled loop ended in an exception before one step completed: nothing to export")
        last = steps[-1]
        if held[-1]:
            warnings.warn("the profiled loop ended in an exception: its last, cut-short step only closes the one "
                          "before (tail_steps)", stacklevel=2)
        else:
            events = [ev for ev in events if ev is not last]
            cut_short = False  # no tail step to declare
            warnings.warn("the profiled loop ended in an exception before its last step ran an operator: that step "
                          "is dropped, and the one before ends at its ProfilerStep# span (short by the loop's time "
                          "between two steps)", stacklevel=2)
    elif not steps:
        warnings.warn("the profile holds no ProfilerStep# spans (no prof.step() in the profiled loop): ETS then takes "
                      "iterations from the optimizer's zero_grad / step spans, a guess where several optimizers take "
                      "turns; call prof.step() once per iteration", stacklevel=2)
    elif not any(held):
        # e.g. called after the with block once the schedule had begun a new cycle: only its warm-up is left
        raise ValueError("no profiled step holds an operator: with a schedule, call export_kineto_json from "
                         "on_trace_ready (after the with block the profiler holds only what it recorded since its "
                         "last cycle)")
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [],
        "displayTimeUnit": "ms",
        "traceEvents": events,
        "traceName": os.path.basename(path),
        "ets": {
            "exporter": "tools/trace_export.py",
            "framework_version": torch.__version__,
            "device": platform.processor() or platform.machine(),
            "threads": torch.get_num_threads(),
            "nested": nested,
        },
    }
    if list_summary is not None:
        doc["ets"].update(list_summary)
    if extra:
        doc["ets"].update(extra)
    if cut_short:
        doc["ets"]["tail_steps"] = max(int(doc["ets"].get("tail_steps", 0) or 0), 1)
    return _write_json(doc, path)
