# Fixes and records the timing environment of a collection process (threads, BLAS core type, denormals).
# Must run before torch is imported: OpenBLAS and OpenMP read their thread counts once, at load time.
"""Timing environment for the collector.

``prepare_process(device)`` must be called before ``import torch``; ``configure_torch()`` after it.
``environment_record()`` returns what the dataset card and every labelled trace record about the machine.
"""
from __future__ import annotations

import ctypes
import functools
import os
import platform
import re
import resource
import time

_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@functools.lru_cache(maxsize=1)
def _cpuinfo() -> dict:
    """The first value of each /proc/cpuinfo key ('model name', 'flags', 'cpu family', ...); {} where unreadable.
    Read once per process: one environment record asks for the model, flags and signature several times. Callers
    must not modify the returned dict."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                key, sep, value = line.partition(":")
                if sep:
                    fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def cpu_flags() -> set:
    return set(_cpuinfo().get("flags", "").split())


def cpu_model() -> str:
    return _cpuinfo().get("model name") or platform.processor() or platform.machine()


def cpu_signature() -> str:
    """The CPUID family and model as 'f26m2'; '' where /proc/cpuinfo does not give both (not x86 Linux)."""
    info = _cpuinfo()
    family, model = info.get("cpu family", ""), info.get("model", "")
    return f"f{family}m{model}" if family.isdigit() and model.isdigit() else ""


def cpu_slug(model: str | None = None, signature: str | None = None) -> str:
    """'AMD EPYC 7B13 64-Core' -> 'amd-epyc-7b13-64-core' (used in the environment id).

    A name without any number (a VM's masked 'AMD EPYC') names no CPU generation: then the CPUID family and model
    are added ('amd-epyc-f26m2'). Two cloud hosts that both said 'AMD EPYC' (2026-11-29 without AVX-512, 2026-11-30
    a family-26 part with it) ran the same configurations 2.4x apart; one id for both would mix their timings.
    `signature` defaults to this host's for its own name and to none for a given name (a GPU's)."""
    s = re.sub(r"\(r\)|\(tm\)|cpu|@.*$|processor", "", (model or cpu_model()).lower())
    s = re.sub(r"[^a-z0-9]+", "-", s).strip("-") or "unknown"
    if signature is None:
        signature = cpu_signature() if model is None else ""
    if signature and not re.search(r"[0-9]", s):
        s = f"{s}-{signature}"
    return s


def prepare_process(device: str = "cpu") -> None:
    """Sets thread and BLAS variables; a no-op for variables the user already set explicitly."""
    if device == "cpu":
        for v in _THREAD_VARS:
            os.environ.setdefault(v, "1")
    # OpenBLAS picks its kernels by CPUID; on AVX-512 hosts the DYNAMIC_ARCH build may fall back to Haswell
    # kernels under some hypervisors, so pin SkylakeX there. Elsewhere auto-detection is right (checked by gemm).
    if "avx512f" in cpu_flags():
        os.environ.setdefault("OPENBLAS_CORETYPE", "SkylakeX")


# glibc malloc settings for a pre-faulted heap: a fixed mmap threshold (no dynamic adjustment, so allocations up to
# 32 MiB come from the heap however the process freed memory before) and no trimming, so freed memory stays mapped.
HEAP_VARS = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 46)}


def heap_vars_set() -> bool:
    return all(os.environ.get(k) == v for k, v in HEAP_VARS.items())


def prefault_heap(mib: int) -> float:
    """Touches and frees MIB MiB of heap (with HEAP_VARS in effect it stays mapped); returns the seconds it took.
    The profiler's event buffers grow by up to ~100 KB per op and iteration; in a fresh process every new page is
    a page fault, which lands in the profiled ops' times (up to 3.7x a warm process's iteration, measured on a
    3,858-op GRU). A pre-faulted heap makes a pass's timings independent of what the process did before."""
    t = time.perf_counter()
    chunks = [bytearray(1 << 20) for _ in range(mib)]
    del chunks
    return time.perf_counter() - t


SPEED_PROBES = ("gemm_ms", "small_ops_ms")  # worker.speed_probe's figures, recorded in every pass status


def pass_probe(status: dict, when: str = "before"):
    """{probe: ms} timed `when` ("before" or "after") a successful pass's configuration (status: a
    pass<N>.status.json), or None when the pass failed or carries no complete probe there."""
    got = ((status or {}).get("probe") or {}).get(when) or {}
    if not (status or {}).get("ok") or not all(isinstance(got.get(k), (int, float)) for k in SPEED_PROBES):
        return None
    return {k: float(got[k]) for k in SPEED_PROBES}


def pass_slowness(status: dict, ref: dict):
    """How much slower than ref ({probe: ms}) the worst of a successful pass's probes ran, taken before and after
    its configuration (0.2: 20% slower; negative when every probe ran faster), or None without a complete probe.
    A slow spell that starts or ends during the configuration shows in one of the two."""
    if not all(isinstance(ref.get(k), (int, float)) and ref[k] > 0 for k in SPEED_PROBES):
        return None
    taken = [w for w in ("before", "after") if isinstance(((status or {}).get("probe") or {}).get(w), dict)]
    probes = [pass_probe(status, w) for w in taken]
    if not probes or None in probes:
        return None
    return max(got[k] / float(ref[k]) - 1.0 for got in probes for k in SPEED_PROBES)


def pass_settings(warmup: int, iters: int, isolated: bool, heap_mb: int, rt: bool = False,
                  tail_steps: int = 0) -> dict:
    """The settings a pass records in its status and a collection compares before it counts the pass as done; the
    worker writes and the collector expects the same dict, so both build it here. --rt (SCHED_FIFO, throttled) is
    one of them: a smoke run's passes must not count for a collection without it. So is --tail-steps: a pass
    without a tail step ends its last iteration at its ProfilerStep# span (short of the time between steps), and
    a label must not mix the two."""
    rec = {"warmup": warmup, "iters": iters}
    if tail_steps:
        rec["tail_steps"] = tail_steps
    if isolated:
        rec["isolated"] = True
    if heap_mb:
        rec["heap_mb"] = heap_mb
    if rt:
        rec["rt"] = True
    return rec


def warmup_too_slow(times: list, planned: int, limit_s: float):
    """The skip rule for a configuration too slow to collect: its median warm-up iteration (of `planned`) is over
    `limit_s`. Returns True once that is certain (enough warm-ups over the limit: the rest need not run), False once
    every warm-up ran and the median is within it, None while undecided. Judging by the first slow warm-up alone
    dropped configurations whose first iteration paid one-off costs (2.3, 1.7, 1.7 s: median 1.7)."""
    if planned <= 0:
        return False  # no warm-up planned: nothing to judge by
    over = sum(1 for t in times if t > limit_s)
    if over >= planned - planned // 2:  # the sorted median (index planned // 2) is then over the limit
        return True
    if len(times) < planned:
        return None
    return sorted(times)[len(times) // 2] > limit_s


def minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _openblas():
    for name in ("libopenblas.so.0", "libopenblasp-r0.3.21.so", "libblas.so.3"):
        try:
            lib = ctypes.CDLL(name)
            lib.openblas_get_config.restype = ctypes.c_char_p
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return lib
        except (OSError, AttributeError):
            continue
    return None


def configure_torch(device: str = "cpu"):
    """Applies the fixed settings to an imported torch; returns the torch module."""
    import torch

    if device == "cpu":
        torch.set_num_threads(1)
        if _interop_unset(torch):
            torch.set_num_interop_threads(1)
        lib = _openblas()
        if lib is not None:
            # torch.set_num_threads does not reach OpenBLAS's own pthread pool: a 1-thread torch would
            # otherwise run GEMMs on every core (measured: 154 vs 78 GFLOP/s on the 2-core dev box).
            try:
                lib.openblas_set_num_threads(1)
            except AttributeError:
                pass
    torch.set_flush_denormal(True)
    return torch


def _interop_unset(torch) -> bool:
    # set_num_interop_threads raises once any inter-op work ran; only call it in a fresh process.
    try:
        return torch.get_num_interop_threads() != 1
    except Exception:
        return False


def gemm_gflops(n: int = 512, reps: int = 20, device: str = "cpu") -> float:
    """fp32 n×n matmul throughput (GFLOP/s): a cheap check that the BLAS and thread settings took effect."""
    import torch

    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    for _ in range(3):
        a @ b
    if device != "cpu":
        torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(reps):
            a @ b
        if device != "cpu":
            torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t) / reps)
    return 2.0 * n ** 3 / best / 1e9


def environment_record(device: str = "cpu", gemm: bool = True) -> dict:
    """What the card and each label record: CPU/GPU, torch and BLAS versions, threads, denormals, GEMM check."""
    import torch

    rec = {
        "host_cpu": cpu_model(),
        "cpu_signature": cpu_signature(),
        "cpu_flags_avx512": "avx512f" in cpu_flags(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "flush_denormal": True,
        "device": device,
        "openblas_coretype_env": os.environ.get("OPENBLAS_CORETYPE", ""),
    }
    try:
        import torchvision

        rec["torchvision"] = torchvision.__version__
    except Exception:
        rec["torchvision"] = ""
    lib = _openblas()
    if lib is not None:
        rec["blas"] = lib.openblas_get_config().decode()
        rec["blas_core"] = lib.openblas_get_corename().decode()
        try:
            rec["blas_threads"] = int(lib.openblas_get_num_threads())
        except AttributeError:
            pass
    else:
        rec["blas"] = "unknown"
    if device == "cpu":
        rec["environment"] = f"cpu-{cpu_slug()}-{torch.get_num_threads()}t"
        rec["device_name"] = cpu_model()
    else:
        name = torch.cuda.get_device_name(0)
        rec["environment"] = "gpu-" + cpu_slug(name)
        rec["device_name"] = name
        rec["cuda"] = torch.version.cuda or ""
        rec["cudnn"] = str(torch.backends.cudnn.version() or "")
    if gemm:
        rec["gemm512_gflops"] = round(gemm_gflops(device=device), 1)
    return rec
