#!/usr/bin/python3
# Writes tests/data/adam_step.bin: a tiny BiLSTM + Linear, one masked-MAE batch, PyTorch's gradients and the
# weights after torch.optim Adam (L2 weight decay, global-norm clipping, two steps) and AdamW (one step).
# Run with Debian's torch: /usr/bin/python3 tools/make_fixtures/adam_step.py [OUT]  (default: the repository's
# tests/data/adam_step.bin, wherever it is run from)
import argparse
import os
import struct
import sys

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "adam_step.bin")
_ap = argparse.ArgumentParser(description="Writes the Adam / AdamW step fixture (tests/data/adam_step.bin) from "
                              "PyTorch. Run with /usr/bin/python3 (Debian's torch).")
_ap.add_argument("out", nargs="?", default=DEFAULT_OUT, help="output file (default: tests/data/adam_step.bin of "
                 "this repository)")
_args = _ap.parse_args()
if not os.path.isdir(os.path.dirname(os.path.abspath(_args.out))):
    _ap.error(f"{_args.out}: folder {os.path.dirname(os.path.abspath(_args.out))} does not exist")
try:
    import torch
except ImportError:
    _ap.exit(2, f"adam_step.py: torch is not installed for {sys.executable}; run it with /usr/bin/python3\n")

F, H, L, W, N = 4, 3, 2, 5, 3
SEED = 1234
LR, WD_L2, CLIP = 1e-2, 1e-2, 0.1
LR_W, WD_W = 5e-3, 0.1

out_path = os.path.normpath(_args.out)
torch.manual_seed(SEED)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(F, H, L, bidirectional=True, batch_first=True)
        self.head = torch.nn.Linear(2 * H, 2)

    def forward(self, x):
        return self.head(self.lstm(x)[0])


def masked_mae(pred, y, mask):
    m = mask.unsqueeze(-1).expand_as(pred)
    return ((pred - y).abs() * m).sum() / m.sum()


def flat(tensors):
    return torch.cat([t.detach().reshape(-1) for t in tensors]).float()


net = Net()
before = {k: v.detach().clone() for k, v in net.state_dict().items()}
x = torch.randn(N, W, F)
y = torch.randn(N, W, 2)
mask = torch.ones(N, W)
mask[2, 3:] = 0  # the last window ends in padding: zero features, labels that must not matter
x[2, 3:] = 0
y[2, 3:] = 100.0


def params(n):
    return list(n.lstm.parameters()) + list(n.head.parameters())


def run(optimizer_factory, steps, clip):
    n = Net()
    n.load_state_dict(before)
    opt = optimizer_factory(params(n))
    grads, losses = [], []
    for _ in range(steps):
        opt.zero_grad()
        loss = masked_mae(n(x), y, mask)
        loss.backward()
        grads.append(flat([p.grad for p in params(n)]))
        losses.append(loss.item())
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(params(n), clip)
        opt.step()
    return n, grads, losses


n_adam1, g1, l1 = run(lambda p: torch.optim.Adam(p, lr=LR, weight_decay=WD_L2), 1, CLIP)
n_adam2, _, _ = run(lambda p: torch.optim.Adam(p, lr=LR, weight_decay=WD_L2), 2, CLIP)
n_adamw, _, _ = run(lambda p: torch.optim.AdamW(p, lr=LR_W, weight_decay=WD_W), 1, 0)

net.load_state_dict(before)
records = [
    ("config", torch.tensor([F, H, L, W, N], dtype=torch.float32)),
    ("hyper", torch.tensor([LR, WD_L2, CLIP, LR_W, WD_W], dtype=torch.float32)),
    ("x", x.reshape(-1)),
    ("y", y.reshape(-1)),
    ("mask", mask.reshape(-1)),
    ("loss", torch.tensor([l1[0]], dtype=torch.float32)),
    ("params_before", flat(params(net))),
    ("grad", g1[0]),
    ("after_adam1", flat(params(n_adam1))),
    ("after_adam2", flat(params(n_adam2))),
    ("after_adamw1", flat(params(n_adamw))),
]
with open(out_path, "wb") as f:
    f.write(b"ETSFX1\0\0")
    for name, t in records:
        data = t.contiguous().float().numpy().astype("<f4").tobytes()
        f.write(struct.pack("<I", len(name)) + name.encode() + struct.pack("<I", t.numel()) + data)
print(f"wrote {out_path}: {sum(t.numel() for _, t in records)} floats, loss {l1[0]:.6f}")
