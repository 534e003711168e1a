# Generates tests/data/et_pair_<kind>.{et,kineto}.json.gz: one small CPU training run captured twice, as a PyTorch
# Execution Trace (ExecutionGraphObserver, schema 1.0.1) and as a Kineto-style trace (tools/trace_export.py), for
# kinds "sgd" (momentum, loss.backward() then step()) and "lbfgs" (step(closure): forward and backward inside the
# optimizer's step). The tests read both and expect the same ops, phases and shapes from the two importers.
# Run with Debian's torch: /usr/bin/python3 tools/make_fixtures/et_pair.py [OUT_DIR]; the output is committed.
import argparse
import gzip
import json
import os
import sys

DEFAULT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data")


def minified_gzip(src: str, dst: str) -> None:
    with open(src, encoding="utf-8") as f:
        doc = json.load(f)
    data = json.dumps(doc, separators=(",", ":")).encode()
    with open(dst, "wb") as f:  # mtime 0: regenerating the same run gives the same bytes
        with gzip.GzipFile(fileobj=f, mode="wb", compresslevel=9, mtime=0, filename="") as g:
            g.write(data)


def out_dir_arg(description: str) -> tuple:
    """The fixtures' folder from the command line (default: tests/data), checked, and the parser for later errors."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("out_dir", nargs="?", default=DEFAULT_DIR, help="output folder (default: tests/data)")
    out_dir = ap.parse_args().out_dir
    if not os.path.isdir(out_dir):
        ap.error(f"{out_dir}: not a folder")
    return out_dir, ap


def main() -> None:
    out_dir, ap = out_dir_arg("Generates the ET / Kineto pair fixtures (tests/data/et_pair_*). "
                              "Run with /usr/bin/python3 (Debian's torch).")
    try:
        import torch
        import torch.nn as nn
        from torch.profiler import ExecutionGraphObserver, ProfilerActivity, profile, record_function, schedule
    except ImportError:
        ap.exit(2, f"et_pair.py: torch (with ExecutionGraphObserver, 1.13) is not available to {sys.executable}\n")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from trace_export import export_kineto_json

    torch.set_num_threads(1)
    for kind in ("sgd", "lbfgs"):
        # Each capture starts from the same state and runs the same steps before it: LBFGS's two-loop recursion
        # grows with its history, so both captures must hold steps 3 and 4 of one fresh run.
        def fresh_run():
            torch.manual_seed(0)
            model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 2))
            if kind == "sgd":
                opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            else:
                opt = torch.optim.LBFGS(model.parameters(), max_iter=2)
            x = torch.randn(2, 3, 8, 8)
            y = torch.randint(0, 2, (2,))

            def closure():
                opt.zero_grad()
                loss = nn.functional.cross_entropy(model(x), y)
                loss.backward()
                return loss

            def train_step():
                if kind == "sgd":
                    closure()
                    opt.step()
                else:
                    opt.step(closure)
            return train_step

        tmp = os.path.join(out_dir, f".et_pair_{kind}.tmp.json")
        train_step = fresh_run()
        for _ in range(2):  # steps 1 and 2; the Kineto capture runs them as its plain and its profiler warm-up step
            train_step()
        et = ExecutionGraphObserver()
        et.register_callback(tmp)
        et.start()
        for i in range(2):
            with record_function(f"ProfilerStep#{i}"):
                train_step()
        et.stop()
        et.unregister_callback()
        minified_gzip(tmp, os.path.join(out_dir, f"et_pair_{kind}.et.json.gz"))
        os.remove(tmp)

        def ready(prof):
            export_kineto_json(prof, tmp, {"model": f"et_pair_{kind}", "batch_size": 2, "optimizer": kind})

        train_step = fresh_run()
        train_step()
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True,
                     schedule=schedule(wait=0, warmup=1, active=2), on_trace_ready=ready) as prof:
            for _ in range(3):
                train_step()
                prof.step()
        minified_gzip(tmp, os.path.join(out_dir, f"et_pair_{kind}.kineto.json.gz"))
        os.remove(tmp)
        for suffix in ("et", "kineto"):
            path = os.path.join(out_dir, f"et_pair_{kind}.{suffix}.json.gz")
            print(path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
