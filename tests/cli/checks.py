# Shared by the CLI tests: collect every failed expectation, report them all at the end (not only the first).
import sys

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def finish(ok_message=""):
    """Print the failures and exit 1, or print ok_message and exit 0."""
    for f in failures:
        print("FAIL:", f)
    if not failures and ok_message:
        print(ok_message)
    sys.exit(1 if failures else 0)


def torch_or_none():
    """The installed torch, or None where there is none. The project's torch tooling runs on Debian's
    /usr/bin/python3 (README); CMake may have found another python, so this reruns the script there once first."""
    import os
    try:
        import torch
        return torch
    except ImportError:
        flag = "ETS_TORCH_TEST_REEXEC"
        if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != "/usr/bin/python3" \
                and not os.environ.get(flag):
            os.environ[flag] = "1"
            os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
        return None


def torch_or_skip(test_name):
    """The installed torch (torch_or_none), or exit 77 (ctest's SKIP_RETURN_CODE) where there is none."""
    torch = torch_or_none()
    if torch is None:
        print(f"{test_name}: torch is not installed; skipped")
        sys.exit(77)
    return torch


def read_etst(path):
    """A canonical ETS trace file (.etst, or .etst.gz: docs/trace-format.md) as (header, iterations), each iteration
    (its "trace" record, [its op records]). Parsed line by line, not by member order, so a test reads what the
    format says rather than what the writer happens to print first."""
    import gzip
    import json
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as fh:
        lines = [json.loads(line) for line in fh if line.strip()]
    iterations = []
    for x in lines[1:]:
        if "trace" in x:
            iterations.append((x["trace"], []))
        elif "n" in x and iterations:
            iterations[-1][1].append(x)
    return (lines[0] if lines else {}), iterations


def forward_ops(ets, trace, etst, names, keys):
    """`ets convert` TRACE to ETST and return its forward ops named in `names` as (name, *their hyper-parameters
    `keys`), in order (None where one is absent); a failed conversion is a failed check and gives []."""
    import subprocess
    r = subprocess.run([ets, "convert", trace, "-o", etst, "--quiet"], capture_output=True, text=True)
    check(r.returncode == 0, f"ets convert {trace}: rc {r.returncode} {r.stderr[-300:]}")
    if r.returncode != 0:
        return []
    ops = [o for _, its_ops in read_etst(etst)[1] for o in its_ops]
    return [(o["n"],) + tuple(o["h"].get(k) for k in keys) for o in ops if o["n"] in names and o["p"] == 0]


def forward_pools(ets, trace, etst):
    """The forward max / avg pools of TRACE as (name, kernel_h, stride_h, pad_h), in order (forward_ops)."""
    return forward_ops(ets, trace, etst, ("max_pool2d", "avg_pool2d"), ("kernel_h", "stride_h", "pad_h"))


def forward_convs(ets, trace, etst):
    """The forward 2-d convolutions of TRACE as (name, stride_h, pad_h, dilation_h, groups), in order (forward_ops)."""
    return forward_ops(ets, trace, etst, ("conv2d",), ("stride_h", "pad_h", "dilation_h", "groups"))


def smallest_traces(src, dst, per_split):
    """A dataset folder dst with the per_split[split] smallest traces (by file size, then name; None: all of them) of
    each split of the dataset folder src, and its environment.json. For tests of tools whose bookkeeping, not the
    training, is under test: the whole pilot set costs minutes under the sanitizers. Returns dst."""
    import os
    import shutil
    shutil.rmtree(dst, ignore_errors=True)
    for split, n in per_split.items():
        d = os.path.join(src, "traces", split)
        names = sorted(os.listdir(d), key=lambda f: (os.path.getsize(os.path.join(d, f)), f))[:n]  # [:None]: all
        os.makedirs(os.path.join(dst, "traces", split))
        for f in names:
            shutil.copy(os.path.join(d, f), os.path.join(dst, "traces", split, f))
    shutil.copy(os.path.join(src, "environment.json"), dst)
    return dst
