# One collection pass in one fresh process: builds each listed configuration, warms up, profiles, exports raw JSON.
# Run by collect.py (never imports torch before the environment is fixed); one failing config never stops the pass.
"""Usage: python -m tools.collect.worker --ids FILE --pass N --raw DIR [--device cpu|cuda] [--warmup W] [--iters I]
       [--tail-steps T]

Writes, per config, ``DIR/<id>/pass<N>.json.gz`` (Kineto-style trace) and ``DIR/<id>/pass<N>.status.json``
(``{"ok": bool, ...}``), both atomically. Before each config it writes ``DIR/.current-<pid>`` so that the parent can
blame a config that crashed the whole process. Prints ``DONE <id> <ok> <seconds>`` per config on stdout.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
TOOLS = os.path.join(ROOT, "tools")
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)

from tools.collect import env as envmod  # noqa: E402  (no torch import in env at module level)
from atomic_file import atomic_write, durable_replace  # noqa: E402  (tools/atomic_file.py)


def atomic_write_json(path: str, obj) -> None:
    atomic_write(path, json.dumps(obj, indent=1, sort_keys=True))


# The temporaries a killed worker can leave beside PATH: its own PATH.tmp<PID>.json[.gz] (the export's target; a CUDA
# export's plain PATH.tmp<PID>.json), the atomic writer's temporary of that, PATH.tmp<PID>.json.gz.tmp<PID>-<N>, which
# holds the export while it is written, and the atomic writer's temporary of PATH itself, PATH.tmp<PID>-<N>.
_STALE = r"\.tmp(\d+)(?:\.json(?:\.gz)?)?(?:\.tmp(\d+)-\d+)?|\.tmp(\d+)-\d+"


def _remove_stale_temps(path: str) -> None:
    """Removes the temporaries beside PATH (_STALE) left by a worker that was killed mid-export or mid-write (a
    crash, the collector's time cap, SIGKILL): they are never a pass, and a truncated 2 MB export only wastes space.
    A temporary of this process or of a live one is kept."""
    import glob
    import re
    for stale in glob.glob(glob.escape(path) + ".tmp*"):
        m = re.fullmatch(_STALE, stale[len(path):])
        if not m:
            continue
        pids = {int(g) for g in m.groups() if g is not None}
        if os.getpid() in pids or any(_alive(pid) for pid in pids):
            continue
        try:
            os.remove(stale)
        except OSError:
            pass


def _alive(pid: int) -> bool:
    """Whether pid may be a live process (one not ours to signal, or no process id at all, counts as live: its
    file is left)."""
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True


def _sync(torch, device):
    if device == "cuda":
        torch.cuda.synchronize()


def speed_probe(torch) -> dict:
    """A fixed ~30 ms workload timed right before and after a config's iterations: a 192³ GEMM loop (compute
    speed) and 2,000 tiny tensor ops (dispatcher / framework speed). Slow spells of the machine show in it, so the
    card can relate pass-to-pass label spread to machine speed (docs/dataset.md, timing hygiene)."""
    a, b, x = torch.randn(192, 192), torch.randn(192, 192), torch.zeros(8)
    for _ in range(3):
        a @ b
        x.add_(1.0)
    t = time.perf_counter()
    for _ in range(40):
        a @ b
    gemm = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(2000):
        x.add_(1.0)
    small = time.perf_counter() - t
    return {"gemm_ms": round(1e3 * gemm, 3), "small_ops_ms": round(1e3 * small, 3)}


def run_config(torch, cfg: dict, pass_no: int, raw_dir: str, args, env_rec: dict) -> dict:
    from tools.collect.zoo import FAMILIES, make_optimizer

    t0 = time.perf_counter()
    probe_before = speed_probe(torch)
    torch.manual_seed(cfg["seed"])
    fam = FAMILIES[cfg["family"]]
    w = fam.build(torch, cfg["knobs"])
    dev = args.device
    model = w.model.to(dev).train()
    inputs = tuple(x.to(dev) for x in w.inputs)
    target = tuple(t.to(dev) for t in w.target) if isinstance(w.target, tuple) else w.target.to(dev)
    opt = make_optimizer(torch, model.parameters(), cfg["knobs"])

    def step():
        # set_to_none: no per-parameter zero_ ops outside the optimizer scope, as in current PyTorch defaults
        opt.zero_grad(set_to_none=True)
        out = model(*inputs)
        loss = w.loss(out, target)
        loss.backward()
        opt.step()
        _sync(torch, dev)

    from trace_export import record_list_args
    warm = []
    list_calls = None  # pooling and convolution arguments and LSTM hx shapes, recorded in the first warm-up (the
    # profiler drops them, see trace_export)
    for i in range(args.warmup):
        t = time.perf_counter()
        if i == 0 and dev == "cpu":
            with record_list_args() as list_calls:
                step()
        else:
            step()
        warm.append(time.perf_counter() - t)
        if envmod.warmup_too_slow(warm, args.warmup, args.max_iter_s) is not None:
            break  # decided: too slow already (the rest need not run), or every warm-up done
    if envmod.warmup_too_slow(warm, args.warmup, args.max_iter_s):
        raise RuntimeError(f"too_slow: median warm-up iteration over --max-iter-s {args.max_iter_s} "
                           f"({', '.join(f'{w:.2f}' for w in warm)} s)")

    out_dir = os.path.join(raw_dir, cfg["id"])
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"pass{pass_no}.json.gz")
    tmp = path + f".tmp{os.getpid()}.json.gz"
    _remove_stale_temps(path)
    extra = {"config_id": cfg["id"], "family": cfg["family"], "pass": pass_no,
             "batch_size": cfg["knobs"]["batch_size"], "optimizer": cfg["knobs"]["optimizer"],
             "environment": env_rec["environment"], "device": env_rec["device_name"]}
    if args.tail_steps:
        # The last profiled step has no successor: its period would end at its ProfilerStep# span, short of the
        # time between steps (prof.step() and the loop: 80-134 us on a 1.4 ms iteration). The tail steps after it
        # are profiled only so that it ends where the others do; the importer drops them.
        extra["tail_steps"] = args.tail_steps
    if args.heap_mb:
        extra["heap_mb"] = args.heap_mb  # the pre-fault the pass ran with, in the raw trace beside its status
    exported = []

    def ready(prof):
        if dev == "cuda":
            # a CUDA build of torch has real Kineto: its own exporter keeps kernels, flows and args
            plain = tmp[:-3]
            prof.export_chrome_trace(plain)
            from trace_export import add_ets_metadata
            add_ets_metadata(plain, tmp, extra)  # gzipped, with the "ets" object the importer reads (tail_steps)
            os.remove(plain)
        else:
            from trace_export import export_kineto_json
            export_kineto_json(prof, tmp, extra, list_calls=list_calls, nested=args.export_nested)
        exported.append(tmp)

    # A cyclic-GC pass lands on a random op of a random iteration; it is noise, not a property of the model.
    import gc
    gc.collect()
    gc.disable()
    acts = [torch.profiler.ProfilerActivity.CPU]
    if dev == "cuda":
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    tp = time.perf_counter()
    faults0 = envmod.minor_faults()
    # The CPU exporter reads the event tree itself; skipping torch's FunctionEvent list halves a pass's wall time.
    from trace_export import skip_function_events
    try:
        with (skip_function_events() if dev == "cpu" else contextlib.nullcontext()), \
                torch.profiler.profile(activities=acts, record_shapes=True, with_flops=True,
                                       schedule=torch.profiler.schedule(wait=0, warmup=1,
                                                                                 active=args.iters + args.tail_steps),
                                       on_trace_ready=ready) as prof:
            for _ in range(1 + args.iters + args.tail_steps):
                step()
                prof.step()
    finally:
        gc.enable()
    # page faults while profiling: the heap grew past what was pre-faulted (--heap-mb), so the ops paid for it
    profile_minflt = envmod.minor_faults() - faults0
    if not exported:
        raise RuntimeError("profiler produced no trace (on_trace_ready never ran)")
    probe_after = speed_probe(torch)
    durable_replace(tmp, path)  # hours of collection rest on these files: on the disk before the status says ok
    return {"ok": True, "config": cfg["id"], "pass": pass_no, "pid": os.getpid(),
            "probe": {"before": probe_before, "after": probe_after},
            "finished_unix": time.time(), "wall_s": round(time.perf_counter() - t0, 3),
            "profile_s": round(time.perf_counter() - tp, 3), "profile_minflt": profile_minflt,
            "warmup_ms": [round(1e3 * x, 3) for x in warm], "trace": os.path.basename(path),
            "trace_bytes": os.path.getsize(path)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ids", required=True, help="file with one config id per line, run in that order")
    ap.add_argument("--pass", dest="pass_no", type=int, required=True)
    ap.add_argument("--raw", required=True)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=6)
    ap.add_argument("--tail-steps", type=int, default=1,
                    help="steps profiled after the --iters labelled ones and declared in the trace (\"ets\": "
                         "{\"tail_steps\": N}): the importer ends the last labelled iteration at the first tail "
                         "op, as every other one ends at its successor's, and drops the tail (0: none)")
    ap.add_argument("--max-iter-s", type=float, default=2.0)
    ap.add_argument("--export-nested", default="needed", choices=["needed", "all"],
                    help="ops nested in the outermost ops that the CPU export writes (tools/trace_export.py)")
    ap.add_argument("--env-out", default="", help="write the environment record (JSON) here")
    ap.add_argument("--isolated", action="store_true",
                    help="recorded in each status: the collector runs this process for one config only (--isolate)")
    ap.add_argument("--rt", action="store_true",
                    help="the collector runs this worker under SCHED_FIFO (chrt): recorded in the pass's settings")
    ap.add_argument("--heap-mb", type=int, default=0,
                    help="pre-fault this many MiB of heap before the first config (glibc settings HEAP_VARS; the "
                         "worker restarts itself with them when they are not set)")
    args = ap.parse_args(argv)
    if args.heap_mb < 0:
        ap.error("--heap-mb must be >= 0")
    if args.tail_steps < 0:
        ap.error("--tail-steps must be >= 0")
    if args.heap_mb and not envmod.heap_vars_set():
        # glibc reads its malloc settings once, at process start
        os.execve(sys.executable, [sys.executable, "-u", os.path.abspath(__file__), *(argv or sys.argv[1:])],
                  {**os.environ, **envmod.HEAP_VARS})

    envmod.prepare_process(args.device)
    import torch  # noqa: E402  (after prepare_process on purpose)
    envmod.configure_torch(args.device)
    from tools.collect.configs import config

    heap_s = envmod.prefault_heap(args.heap_mb) if args.heap_mb else 0.0
    env_rec = envmod.environment_record(args.device, gemm=True)
    env_rec["heap_mb"] = args.heap_mb
    env_rec["heap_vars"] = envmod.heap_vars_set()
    env_rec["heap_prefault_s"] = round(heap_s, 3)
    if args.env_out:
        atomic_write_json(args.env_out, env_rec)
    os.makedirs(args.raw, exist_ok=True)
    marker = os.path.join(args.raw, f".current-{os.getpid()}")
    with open(args.ids) as fh:
        ids = [ln.strip() for ln in fh if ln.strip()]
    for cid in ids:
        with open(marker, "w") as fh:
            fh.write(cid)
        t = time.perf_counter()
        try:
            cfg = config(cid)
            rec = run_config(torch, cfg, args.pass_no, args.raw, args, env_rec)
            rec["env"] = {k: env_rec.get(k) for k in ("environment", "threads", "blas_core", "gemm512_gflops",
                                                      "heap_mb")}
            # the settings the pass ran with: a resumed collection with other settings must not count it as done
            rec["settings"] = envmod.pass_settings(args.warmup, args.iters, args.isolated, args.heap_mb, args.rt,
                                                   args.tail_steps)
        except Exception as e:  # one failing config never stops a pass
            rec = {"ok": False, "config": cid, "pass": args.pass_no, "pid": os.getpid(),
                   "finished_unix": time.time(), "error": f"{type(e).__name__}: {e}",
                   "traceback": traceback.format_exc(limit=6)}
        d = os.path.join(args.raw, cid)
        os.makedirs(d, exist_ok=True)
        status_path = os.path.join(d, f"pass{args.pass_no}.status.json")
        _remove_stale_temps(status_path)
        atomic_write_json(status_path, rec)
        print(f"DONE {cid} {int(rec['ok'])} {time.perf_counter() - t:.3f}", flush=True)
        # release the model before the next build so peak memory stays one model
        import gc
        gc.collect()
    try:
        os.remove(marker)
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
