# Generates tests/data/cpu_small_mlp.json.gz: a small CPU training trace (conv + MLP, SGD, 4 ProfilerSteps).
# Run with Debian's torch: /usr/bin/python3 tools/make_fixtures/cpu_trace.py [OUT]; the output is committed.
import argparse
import os
import sys

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data",
                           "cpu_small_mlp.json.gz")


def main() -> None:
    ap = argparse.ArgumentParser(description="Generates the small CPU training trace fixture "
                                 "(tests/data/cpu_small_mlp.json.gz). Run with /usr/bin/python3 (Debian's torch).")
    ap.add_argument("out", nargs="?", default=DEFAULT_OUT,
                    help="output file (default: tests/data/cpu_small_mlp.json.gz of this repository)")
    out = ap.parse_args().out
    if not os.path.isdir(os.path.dirname(os.path.abspath(out))):
        ap.error(f"{out}: folder {os.path.dirname(os.path.abspath(out))} does not exist")
    try:
        import torch
        import torch.nn as nn
        from torch.profiler import ProfilerActivity, profile, schedule
    except ImportError:
        ap.exit(2, f"cpu_trace.py: torch is not installed for {sys.executable}; run it with /usr/bin/python3\n")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from trace_export import export_kineto_json

    torch.manual_seed(0)
    torch.set_num_threads(1)
    # Small op count (small file) but real compute, so per-step bookkeeping offsets stay far below 0.5% of a step.
    model = nn.Sequential(nn.Conv2d(3, 32, 3), nn.ReLU(), nn.Flatten(), nn.Linear(32 * 30 * 30, 128), nn.ReLU(),
                          nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(128, 3, 32, 32)
    y = torch.randint(0, 10, (128,))

    def ready(prof):
        export_kineto_json(prof, out, {"model": "cpu_small_mlp", "batch_size": 128, "optimizer": "sgd"})

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True,
                 schedule=schedule(wait=0, warmup=1, active=4), on_trace_ready=ready) as prof:
        for _ in range(5):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            prof.step()
    print(out, os.path.getsize(out), "bytes")


if __name__ == "__main__":
    main()
