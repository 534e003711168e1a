# Random plain / residual conv stacks and random recurrent sequence models: training-only generators that cover op
# regimes the hand-written train families leave thin (unstrided convolutions at full resolution, pooling of every
# kind, GRUs and LSTMs of many shapes). Each draw is a new architecture; no draw is a torchvision definition.
"""Random conv stacks (``randcnn``) and random recurrent models (``randrnn``).

randcnn: stem conv (kernel 3/5/7, stride 1/2, optional 3×3 max-pool), then 2–5 stages of 1–4 convolutions (kernel
1/3/5, optional BatchNorm, one of five activations, optional residual), stages joined by a max-pool, an avg-pool
(kernel 2/3, floor or ceil mode) or a strided conv, and a global-pool head with 0 or 1 hidden layers.

randrnn: token (embedding) or feature input (optionally through a Conv1d front end), a GRU or LSTM of 1–3 layers,
one or two directions, and a head that tags every step or classifies the sequence from its last step or its
maximum over time.

Both families only enter the train and val splits (configs.split_of): the test families stay unseen.
"""
from __future__ import annotations

from .zoo import common_knobs, family, Workload, _rnn_gmac, _tokens

_ACTS = ("relu", "relu6", "silu", "gelu", "leaky_relu")


def _conv_out(s: int, k: int, stride: int, pad: int) -> int:
    return max(1, (s + 2 * pad - k) // stride + 1)


def _pool_out(s: int, k: int, ceil: bool) -> int:
    # stride 2, no padding (the builder's pools); ceil mode keeps a last partial window that starts inside the input
    if s < k:
        return 1
    out = -(-(s - k) // 2) + 1 if ceil else (s - k) // 2 + 1
    return max(1, out)


def _stem_out(k) -> int:
    """Spatial size after a randcnn draw's stem conv (and its max-pool, if any)."""
    st = k["stem"]
    s = _conv_out(k["image"], st["kernel"], st["stride"], st["kernel"] // 2)
    return _conv_out(s, 3, 2, 1) if st["pool"] else s


def _down_out(s: int, stage: dict) -> int:
    """Spatial size after a stage's downsampling (strided 3×3 conv, pool, or none)."""
    if stage["down"] == "conv":
        return _conv_out(s, 3, 2, 1)
    return s if stage["down"] == "none" else _pool_out(s, stage["pool_kernel"], stage["ceil"])


def _cnn_plan(k):
    """The convolutions of a randcnn draw, walking its spatial size: [(c_in, c_out, kernel, output size)]."""
    st, c = k["stem"], k["channels"][0]
    convs = [(3, c, st["kernel"], _conv_out(k["image"], st["kernel"], st["stride"], st["kernel"] // 2))]
    s = _stem_out(k)
    for i, stage in enumerate(k["stages"]):
        c_out = k["channels"][i]
        s = _down_out(s, stage)
        if stage["down"] == "conv":
            convs.append((c, c_out, 3, s))
            c = c_out
        for _ in range(stage["convs"]):
            convs.append((c, c_out, stage["kernel"], s))
            c = c_out
    return convs


def _cnn_gmac(k):
    macs = sum(ci * co * kk * kk * s * s for ci, co, kk, s in _cnn_plan(k))
    return 3 * k["batch_size"] * macs / 1e9


@family("randcnn", "nas", _cnn_gmac)
class RandCnnFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [2, 4, 8, 16, 32])
        k["image"] = rng.choice([32, 48, 64, 96])
        k["stem"] = {"kernel": rng.choice([3, 5, 7]), "stride": rng.choice([1, 2]), "pool": rng.random() < 0.4}
        n = rng.choice([2, 3, 4, 5])
        c0 = rng.choice([8, 16, 24, 32, 48, 64])
        growth = rng.choice([1.5, 2.0])
        k["channels"] = [min(512, int(round(c0 * growth ** i))) for i in range(n)]
        k["stages"] = []
        s = _stem_out(k)
        for i in range(n):
            stage = {"convs": rng.choice([1, 2, 3, 4]), "kernel": rng.choice([1, 3, 3, 3, 5]),
                     "residual": rng.random() < 0.4, "down": rng.choice(["max", "max", "avg", "conv"]),
                     "pool_kernel": rng.choice([2, 3]), "ceil": rng.random() < 0.5}
            if i == 0 or s < 4:  # the first stage keeps the stem's size; below 4 px there is nothing to pool
                stage["down"] = "none"
            s = _down_out(s, stage)
            k["stages"].append(stage)
        k["batch_norm"] = rng.random() < 0.6
        k["activation"] = rng.choice(_ACTS)
        k["hidden"] = rng.choice([0, 0, 256, 512])
        k["classes"] = rng.choice([10, 100])
        return k

    @staticmethod
    def build(torch, k):
        nn = torch.nn
        act = {"relu": nn.ReLU, "relu6": nn.ReLU6, "silu": nn.SiLU, "gelu": nn.GELU, "leaky_relu": nn.LeakyReLU}

        def unit(c_in, c_out, kernel, stride=1):
            layers = [nn.Conv2d(c_in, c_out, kernel, stride, kernel // 2, bias=not k["batch_norm"])]
            if k["batch_norm"]:
                layers.append(nn.BatchNorm2d(c_out))
            layers.append(act[k["activation"]]())
            return nn.Sequential(*layers)

        class Stage(nn.Module):
            def __init__(self, i, c_in):
                super().__init__()
                st, c_out = k["stages"][i], k["channels"][i]
                pre = []
                if st["down"] != "none":
                    if st["down"] == "conv":
                        pre.append(unit(c_in, c_out, 3, 2))
                        c_in = c_out
                    elif st["down"] == "max":
                        pre.append(nn.MaxPool2d(st["pool_kernel"], 2, ceil_mode=st["ceil"]))
                    else:
                        pre.append(nn.AvgPool2d(st["pool_kernel"], 2, ceil_mode=st["ceil"]))
                self.pre = nn.Sequential(*pre)
                self.body = nn.ModuleList()
                for _ in range(st["convs"]):
                    self.body.append(unit(c_in, c_out, st["kernel"]))
                    c_in = c_out
                self.residual = st["residual"]

            def forward(self, x):
                x = self.pre(x)
                for u in self.body:
                    y = u(x)
                    # a skip only where shapes agree: every conv but a channel-changing first one
                    x = x + y if self.residual and y.shape == x.shape else y
                return x

        class RandCnn(nn.Module):
            def __init__(self):
                super().__init__()
                st, c = k["stem"], k["channels"][0]
                stem = [unit(3, c, st["kernel"], st["stride"])]
                if st["pool"]:
                    stem.append(nn.MaxPool2d(3, 2, 1))
                self.stem = nn.Sequential(*stem)
                stages, c_in = [], c
                for i in range(len(k["stages"])):
                    stages.append(Stage(i, c_in))
                    c_in = k["channels"][i]
                self.stages = nn.Sequential(*stages)
                h = k["hidden"]
                head = [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
                head += [nn.Linear(c_in, h), nn.ReLU(True), nn.Dropout(0.3), nn.Linear(h, k["classes"])] if h \
                    else [nn.Linear(c_in, k["classes"])]
                self.head = nn.Sequential(*head)

            def forward(self, x):
                return self.head(self.stages(self.stem(x)))

        n, s = k["batch_size"], k["image"]
        x = torch.randn(n, 3, s, s)
        y = torch.randint(0, k["classes"], (n,))
        return Workload(RandCnn(), (x,), y, torch.nn.functional.cross_entropy)


def _rnn_input(k):
    if k["input"] == "tokens":
        return k["emb"]
    return k["front_channels"] if k["front"] else k["features"]


def _rnn_family_gmac(k):
    gates = 3 if k["cell"] == "gru" else 4
    tag = k["classes"] if k["head"] == "tagger" else 0
    front = k["batch_size"] * k["seq"] * k["features"] * k["front_channels"] * k["front_kernel"] \
        if k["input"] == "features" and k["front"] else 0
    return _rnn_gmac(k, gates, _rnn_input(k), tag) + 3 * front / 1e9


@family("randrnn", "nas", _rnn_family_gmac)
class RandRnnFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [4, 8, 16, 32, 64])
        k["input"] = rng.choice(["tokens", "features"])
        k["vocab"] = rng.choice([1000, 5000, 20000])
        k["emb"] = rng.choice([32, 64, 128, 256])
        k["features"] = rng.choice([16, 32, 64, 128])
        k["front"] = rng.random() < 0.4
        k["front_channels"] = rng.choice([64, 128])
        k["front_kernel"] = rng.choice([3, 5])
        k["cell"] = rng.choice(["gru", "lstm"])
        k["hidden"] = rng.choice([32, 64, 128, 256, 512])
        k["layers"] = rng.choice([1, 2, 3])
        k["bidirectional"] = rng.random() < 0.5
        k["seq"] = rng.choice([16, 32, 64, 128, 256])
        k["head"] = rng.choice(["tagger", "last", "max"])
        k["classes"] = rng.choice([2, 5, 10, 50])
        k["dropout"] = rng.choice([0.0, 0.2])
        return k

    @staticmethod
    def build(torch, k):
        nn = torch.nn

        class RandRnn(nn.Module):
            def __init__(self):
                super().__init__()
                if k["input"] == "tokens":
                    self.inp = nn.Embedding(k["vocab"], k["emb"])
                elif k["front"]:
                    self.inp = nn.Sequential(nn.Conv1d(k["features"], k["front_channels"], k["front_kernel"],
                                                       padding=k["front_kernel"] // 2), nn.ReLU())
                else:
                    self.inp = nn.Identity()
                rnn = nn.GRU if k["cell"] == "gru" else nn.LSTM
                self.rnn = rnn(_rnn_input(k), k["hidden"], k["layers"], batch_first=True,
                               bidirectional=k["bidirectional"], dropout=k["dropout"] if k["layers"] > 1 else 0.0)
                self.out = nn.Linear(k["hidden"] * (2 if k["bidirectional"] else 1), k["classes"])

            def forward(self, x):
                if k["input"] == "features" and k["front"]:
                    x = self.inp(x.transpose(1, 2)).transpose(1, 2)  # Conv1d wants (N, C, T)
                else:
                    x = self.inp(x)
                h, _ = self.rnn(x)
                if k["head"] == "last":
                    h = h[:, -1]
                elif k["head"] == "max":
                    h = h.max(1).values
                return self.out(h)

        n, t = k["batch_size"], k["seq"]
        x = _tokens(torch, k) if k["input"] == "tokens" else torch.randn(n, t, k["features"])
        if k["head"] == "tagger":
            y = torch.randint(0, k["classes"], (n, t))
            loss = lambda out, yy: torch.nn.functional.cross_entropy(out.reshape(-1, k["classes"]),  # noqa: E731
                                                                     yy.reshape(-1))
        else:
            y = torch.randint(0, k["classes"], (n,))
            loss = torch.nn.functional.cross_entropy
        return Workload(RandRnn(), (x,), y, loss)
