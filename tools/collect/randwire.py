# RandWire-style randomly wired networks (Xie et al., ICCV 2019): each stage is a random DAG of conv nodes.
# Graphs come from our own seeded Watts–Strogatz / Erdős–Rényi generators so a config id always yields the same net.
"""Randomly wired conv networks.

A node sums its inputs with learned sigmoid weights, then ReLU → depthwise 3×3 → pointwise 1×1 → BatchNorm.
Nodes without predecessors read the stage input (stride 2); nodes without successors are averaged into the stage
output. Stages double the channels. Graph size knobs give ~50 to ~2,000 profiled ops per training iteration.
"""
from __future__ import annotations

import random

from .zoo import common_knobs, family, Workload


def watts_strogatz(n: int, k: int, p: float, rng: random.Random) -> list:
    """Undirected WS(n, k, p) edges (i < j); k even, neighbours on a ring, each edge rewired with probability p."""
    k = max(2, min(k - k % 2, n - 1 - (n - 1) % 2)) if n > 2 else 1
    edges = set()
    for i in range(n):
        for j in range(1, k // 2 + 1):
            edges.add((i, (i + j) % n))
    out = set()
    for (a, b) in sorted(edges):
        if rng.random() < p:
            choices = [c for c in range(n) if c != a and (a, c) not in out and (c, a) not in out]
            if choices:
                b = rng.choice(choices)
        out.add((a, b))
    return sorted({(min(a, b), max(a, b)) for a, b in out if a != b})


def erdos_renyi(n: int, p: float, rng: random.Random) -> list:
    return [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < p]


def stage_graph(kind: str, n: int, knobs: dict, seed: int) -> list:
    """Edges of one stage's DAG, oriented from the lower to the higher node index."""
    rng = random.Random(seed)
    if kind == "ws":
        return watts_strogatz(n, knobs["k"], knobs["p"], rng)
    return erdos_renyi(n, knobs["p"], rng)


def _gmac(k):
    tot, c, s = 0.0, k["channels"], k["image"] // 2
    for n in k["nodes"]:
        s = max(1, s // 2)
        tot += n * s * s * (9 * c + c * c)
        c *= 2
    return 3 * k["batch_size"] * tot / 1e9


def _sample(kind):
    def sample(rng):
        k = common_knobs(rng, [2, 4, 8, 16, 32])
        # log-uniform total node count (1..24) so small and large graphs are both well represented; measured
        # ~70 ops per node with Adam (fwd + bwd + per-parameter update), ~110 on the densest ER graphs
        total = int(round(2 ** rng.uniform(0.0, 4.6)))
        stages = min(total, rng.choice([1, 2, 3]))
        base, extra = divmod(total, stages)
        k["nodes"] = [base + (1 if i < extra else 0) for i in range(stages)]
        k["head_conv"] = rng.random() < 0.7
        k["channels"] = rng.choice([8, 16, 24, 32])
        k["image"] = rng.choice([32, 48, 64])
        k["classes"] = rng.choice([10, 100])
        if kind == "ws":
            k["k"] = rng.choice([2, 4, 6])
            k["p"] = rng.choice([0.25, 0.5, 0.75])
        else:
            k["p"] = rng.choice([0.1, 0.2, 0.3])
        k["graph_seed"] = rng.randrange(1 << 30)
        return k
    return sample


def _build(kind):
    def build(torch, k):
        nn = torch.nn

        class Node(nn.Module):
            def __init__(self, n_in, c_in, c_out, stride):
                super().__init__()
                self.w = nn.Parameter(torch.zeros(n_in)) if n_in > 1 else None
                self.dw = nn.Conv2d(c_in, c_in, 3, stride, 1, groups=c_in, bias=False)
                self.pw = nn.Conv2d(c_in, c_out, 1, bias=False)
                self.bn = nn.BatchNorm2d(c_out)

            def forward(self, xs):
                if self.w is None:
                    x = xs[0]
                else:
                    g = torch.sigmoid(self.w)
                    x = xs[0] * g[0]
                    for i in range(1, len(xs)):
                        x = x + xs[i] * g[i]
                return self.bn(self.pw(self.dw(torch.relu(x))))

        class Stage(nn.Module):
            def __init__(self, n, edges, c_in, c_out):
                super().__init__()
                self.preds = [[a for (a, b) in edges if b == j] for j in range(n)]
                has_succ = {a for (a, _) in edges}
                self.outputs = [j for j in range(n) if j not in has_succ]
                self.nodes = nn.ModuleList(
                    Node(max(1, len(self.preds[j])), c_in if not self.preds[j] else c_out, c_out,
                         2 if not self.preds[j] else 1) for j in range(n))

            def forward(self, x):
                vals = []
                for j, node in enumerate(self.nodes):
                    vals.append(node([x] if not self.preds[j] else [vals[a] for a in self.preds[j]]))
                y = vals[self.outputs[0]]
                for j in self.outputs[1:]:
                    y = y + vals[j]
                return y / len(self.outputs) if len(self.outputs) > 1 else y

        class RandWire(nn.Module):
            def __init__(self):
                super().__init__()
                c = k["channels"]
                self.stem = nn.Sequential(nn.Conv2d(3, c // 2, 3, 2, 1, bias=False), nn.BatchNorm2d(c // 2))
                stages, c_in = [], c // 2
                for i, n in enumerate(k["nodes"]):
                    edges = stage_graph(kind, n, k, k["graph_seed"] + 7919 * i)
                    stages.append(Stage(n, edges, c_in, c * 2 ** i))
                    c_in = c * 2 ** i
                self.stages = nn.Sequential(*stages)
                c_head = 4 * c_in if k["head_conv"] else c_in
                conv = [nn.Conv2d(c_in, c_head, 1, bias=False), nn.BatchNorm2d(c_head), nn.ReLU()] \
                    if k["head_conv"] else []
                self.head = nn.Sequential(nn.ReLU(), *conv, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                          nn.Linear(c_head, k["classes"]))

            def forward(self, x):
                return self.head(self.stages(self.stem(x)))

        n, s = k["batch_size"], k["image"]
        x = torch.randn(n, 3, s, s)
        y = torch.randint(0, k["classes"], (n,))
        return Workload(RandWire(), (x,), y, torch.nn.functional.cross_entropy)
    return build


for _kind in ("ws", "er"):
    family(f"randwire_{_kind}", "nas", _gmac)(type(f"RandWire{_kind.upper()}", (), {
        "sample": staticmethod(_sample(_kind)), "build": staticmethod(_build(_kind))}))
