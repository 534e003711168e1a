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

__all__ = ["export_kineto_json", "events_from_profile", "skip_function_events"]

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


def _concrete(ivalues, dtypes):
    # Kineto's "Concrete Inputs": "" for tensors, the scalar / int-list value otherwise (what hyper-parameters need).
    out = []
    for i, v in enumerate(ivalues or []):
        dt = dtypes[i] if i < len(dtypes) else ""
        if v is None or dt not in _SCALARISH:
            out.append("")
            continue
        if isinstance(v, (list, tuple)):
            if all(isinstance(x, (int, float, bool)) for x in v):
                out.append("[" + ", ".join(str(x) for x in v) + "]")
            else:
                out.append("")
        elif isinstance(v, bool):
            out.append("True" if v else "False")
        elif isinstance(v, (int, float)):
            out.append(str(v))
        else:
            out.append("")
    return out


def events_from_profile(prof) -> list:
    """Returns the Kineto-style event list (dicts) of a stopped torch.profiler.profile."""
    from torch._C._profiler import RecordScope, _EventType  # torch >= 1.13

    results = prof.profiler.kineto_results
    flops = {}
    try:  # the Kineto results carry the FLOPs that FunctionEvent.flops would copy (same correlation ids)
        for ke in results.events():
            f = ke.flops()
            if f:
                flops[ke.correlation_id()] = f
    except Exception:  # flops are optional; the importer derives them analytically
        pass
    torch_op, user_scope = _EventType.TorchOp, RecordScope.USER_SCOPE
    pid = os.getpid()
    events = []
    stack = list(reversed(results.experimental_event_tree()))
    while stack:
        e = stack.pop()
        stack.extend(reversed(e.children))
        if e.tag != torch_op:
            continue
        ex = e.extra_fields
        args = {"External id": int(e.correlation_id)}
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
        if seq is not None and seq >= 0:
            args["Sequence number"] = int(seq)
            args["Fwd thread id"] = int(getattr(ex, "forward_tid", 0) or 0)
        f = flops.get(e.correlation_id)
        if f:
            args["flops"] = int(f)
        start_ns = int(e.start_time_ns)
        dur_ns = max(0, int(e.duration_time_ns))
        events.append({
            "ph": "X",
            "cat": "user_annotation" if getattr(ex, "scope", None) == user_scope else "cpu_op",
            "name": e.name,
            "pid": pid,
            "tid": int(e.start_tid),
            "ts": start_ns,
            "dur": round(dur_ns / 1000.0, 3),
            "args": args,
        })
    # Epoch-µs floats (~1.8e15) cannot hold ns: rounding put children 0.25 µs outside their parents and broke
    # nesting. Timestamps are therefore µs since a whole second before the first event (exact to the ns).
    base_ns = min((ev["ts"] for ev in events), default=0) // 1_000_000_000 * 1_000_000_000
    for ev in events:
        ev["ts"] = round((ev["ts"] - base_ns) / 1000.0, 3)
    events.sort(key=lambda ev: (ev["ts"], -ev["dur"]))
    return events


def export_kineto_json(prof, path: str, extra: dict | None = None) -> str:
    """Writes the profile as Kineto-style Chrome JSON to `path` (gzip when it ends in .gz); returns path."""
    import torch

    doc = {
        "schemaVersion": 1,
        "deviceProperties": [],
        "displayTimeUnit": "ms",
        "traceEvents": events_from_profile(prof),
        "traceName": os.path.basename(path),
        "ets": {
            "exporter": "tools/trace_export.py",
            "framework_version": torch.__version__,
            "device": platform.processor() or platform.machine(),
            "threads": torch.get_num_threads(),
        },
    }
    if extra:
        doc["ets"].update(extra)
    text = json.dumps(doc, separators=(",", ":"))
    if path.endswith(".gz"):
        with gzip.open(path, "wt", compresslevel=6) as fh:  # level 9 took 2x the time for ~3% smaller files
            fh.write(text)
    else:
        with open(path, "w") as fh:
            fh.write(text)
    return path
