# Generates tests/data/gan_two_adams_<kind>.kineto.json.gz: three iterations of a DCGAN-style CPU training loop whose
# discriminator and generator each have their own Adam, profiled without prof.step(), so that no ProfilerStep#
# span says where an iteration ends (tools/trace_export.py). Kinds: "optimizer" (optimizer.zero_grad(): the trace
# holds Optimizer.zero_grad# and Optimizer.step# spans) and "module" (module.zero_grad(), as PyTorch's DCGAN
# example does: step spans only). The profile starts with the loop, so the first steps also create Adam's state.
# The tests expect one iteration per loop iteration, each holding both optimizers' steps (kineto_import_test).
# Run with Debian's torch: /usr/bin/python3 tools/make_fixtures/gan_loop.py [OUT_DIR]; the output is committed.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from et_pair import minified_gzip, out_dir_arg  # noqa: E402


def main() -> None:
    out_dir, ap = out_dir_arg("Generates the two-Adam GAN loop fixtures (tests/data/gan_two_adams_*). "
                              "Run with /usr/bin/python3 (Debian's torch).")
    try:
        import torch
        import torch.nn as nn
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        ap.exit(2, f"gan_loop.py: torch is not available to {sys.executable}\n")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from trace_export import export_kineto_json

    torch.set_num_threads(1)
    for kind in ("optimizer", "module"):
        torch.manual_seed(0)
        nz, batch = 16, 8
        gen = nn.Sequential(nn.Linear(nz, 64), nn.ReLU(), nn.Linear(64, 32), nn.Tanh())
        disc = nn.Sequential(nn.Linear(32, 48), nn.LeakyReLU(0.2), nn.Linear(48, 1))
        opt_d = torch.optim.Adam(disc.parameters(), lr=2e-4, betas=(0.5, 0.999))
        opt_g = torch.optim.Adam(gen.parameters(), lr=2e-4, betas=(0.5, 0.999))
        loss_fn = nn.BCEWithLogitsLoss()
        ones, zeros = torch.ones(batch, 1), torch.zeros(batch, 1)

        def train_step():
            real = torch.randn(batch, 32)
            (opt_d if kind == "optimizer" else disc).zero_grad()
            fake = gen(torch.randn(batch, nz))
            loss_d = loss_fn(disc(real), ones) + loss_fn(disc(fake.detach()), zeros)
            loss_d.backward()
            opt_d.step()
            (opt_g if kind == "optimizer" else gen).zero_grad()
            loss_g = loss_fn(disc(fake), ones)
            loss_g.backward()
            opt_g.step()

        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            for _ in range(3):
                train_step()
        tmp = os.path.join(out_dir, f".gan_two_adams_{kind}.tmp.json")
        export_kineto_json(prof, tmp, {"model": f"gan_two_adams_{kind}", "batch_size": batch})
        path = os.path.join(out_dir, f"gan_two_adams_{kind}.kineto.json.gz")
        minified_gzip(tmp, path)
        os.remove(tmp)
        print(path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
