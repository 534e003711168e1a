# The model zoo: one knob space per architecture family (HPO style) and a builder turning knobs into a workload.
# Knob ranges are sized so one training iteration takes ~5 ms to ~1 s on one CPU thread (small inputs, small batches).
"""Model zoo for the collector.

Each family has ``sample(rng) -> knobs`` (knobs: a JSON-able dict incl. batch_size and optimizer) and
``build(knobs) -> Workload``. ``est_gmac(knobs)`` is a rough training cost (forward+backward multiply-adds) used only
to keep sampled configurations inside the iteration-time window; it never enters the dataset.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Dict

OPTIMIZERS = ("sgd", "adam", "adamw")


@dataclass
class Workload:
    model: Any
    inputs: tuple          # positional args of model(...)
    target: Any
    loss: Callable         # loss(output, target) -> scalar tensor


@dataclass
class Family:
    name: str
    domain: str            # vision | nlp | speech | tabular | nas
    sample: Callable
    build: Callable
    est_gmac: Callable


FAMILIES: Dict[str, Family] = {}


def family(name: str, domain: str, est: Callable):
    def deco(cls):
        FAMILIES[name] = Family(name, domain, cls.sample, cls.build, est)
        return cls
    return deco


def make_optimizer(torch, params, knobs):
    opt, lr = knobs["optimizer"], knobs.get("lr", 1e-3)
    if opt == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=knobs.get("weight_decay", 0.0))
    if opt == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=knobs.get("weight_decay", 0.0))
    if opt == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=knobs.get("weight_decay", 0.01))
    raise ValueError(f"unknown optimizer {opt}")


def common_knobs(rng, batches):
    opt = rng.choice(OPTIMIZERS)
    k = {"batch_size": rng.choice(batches), "optimizer": opt}
    k["lr"] = {"sgd": 0.05, "adam": 1e-3, "adamw": 1e-3}[opt]
    if opt == "sgd":
        k["weight_decay"] = rng.choice([0.0, 5e-4])
    return k


def _image_workload(torch, model, knobs, channels=3):
    n, s = knobs["batch_size"], knobs["image"]
    x = torch.randn(n, channels, s, s)
    y = torch.randint(0, knobs.get("classes", 10), (n,))
    return Workload(model, (x,), y, torch.nn.functional.cross_entropy)


def _scale(knobs, base_gmac_224, width=1.0):
    # multiply-adds of one forward at 224 px scale with pixels and width²; training ≈ 3× forward.
    return 3.0 * base_gmac_224 * (knobs["image"] / 224.0) ** 2 * width ** 2 * knobs["batch_size"]


# ---------------------------------------------------------------- vision (torchvision)
_RESNETS = {"resnet10": ("basic", [1, 1, 1, 1], 0.9), "resnet18": ("basic", [2, 2, 2, 2], 1.8),
            "resnet26": ("bottleneck", [2, 2, 2, 2], 2.4), "resnet34": ("basic", [3, 4, 6, 3], 3.6),
            "resnet50": ("bottleneck", [3, 4, 6, 3], 4.1)}


@family("resnet", "vision", lambda k: _scale(k, _RESNETS[k["arch"]][2], k["width_per_group"] / 64 * k["groups"] ** 0.5))
class ResNetFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [2, 4, 8, 16, 32])
        k["arch"] = rng.choice(list(_RESNETS))
        k["image"] = rng.choice([32, 48, 64, 96])
        k["groups"] = rng.choice([1, 1, 4]) if _RESNETS[k["arch"]][0] == "bottleneck" else 1
        if _RESNETS[k["arch"]][0] == "basic":
            k["width_per_group"] = 64  # torchvision's BasicBlock supports only width 64
        else:
            k["width_per_group"] = rng.choice([16, 32, 64]) if k["groups"] == 1 else 16
        k["classes"] = rng.choice([10, 100])
        return k

    @staticmethod
    def build(torch, k):
        from torchvision.models import resnet as R
        block, layers, _ = _RESNETS[k["arch"]]
        block = R.BasicBlock if block == "basic" else R.Bottleneck
        m = R.ResNet(block, layers, num_classes=k["classes"], groups=k["groups"],
                     width_per_group=k["width_per_group"])
        return _image_workload(torch, m, k)


def _vgg_cfg(depth, width):
    base = {11: [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
            13: [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
            16: [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]}[depth]
    return [v if v == "M" else max(8, int(v * width)) for v in base]


@family("vgg", "vision", lambda k: _scale(k, {11: 7.6, 13: 11.3, 16: 15.5}[k["depth"]], k["width"]))
class VggFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [2, 4, 8, 16])
        k["depth"] = rng.choice([11, 13, 16])
        k["width"] = rng.choice([0.125, 0.25, 0.5])
        k["batch_norm"] = rng.random() < 0.5
        k["image"] = rng.choice([32, 48, 64])
        k["hidden"] = rng.choice([256, 512, 1024])
        k["classes"] = rng.choice([10, 100])
        return k

    @staticmethod
    def build(torch, k):
        from torchvision.models import vgg as V
        nn = torch.nn
        m = V.VGG(V.make_layers(_vgg_cfg(k["depth"], k["width"]), batch_norm=k["batch_norm"]),
                  num_classes=k["classes"])
        c = max(8, int(512 * k["width"]))
        # The ImageNet head (25088→4096→4096) would dwarf the convolutions at 32–64 px; use a CIFAR-style head.
        m.avgpool = nn.AdaptiveAvgPool2d(1)
        m.classifier = nn.Sequential(nn.Linear(c, k["hidden"]), nn.ReLU(True), nn.Dropout(),
                                     nn.Linear(k["hidden"], k["hidden"]), nn.ReLU(True), nn.Dropout(),
                                     nn.Linear(k["hidden"], k["classes"]))
        return _image_workload(torch, m, k)


_DENSE = {"densenet_s": (6, 6, 6, 6), "densenet121": (6, 12, 24, 16), "densenet_m": (4, 8, 12, 8)}


@family("densenet", "vision", lambda k: _scale(k, 2.9 * sum(_DENSE[k["arch"]]) / 58, k["growth_rate"] / 32))
class DenseNetFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [2, 4, 8, 16])
        k["arch"] = rng.choice(list(_DENSE))
        k["growth_rate"] = rng.choice([8, 12, 16, 24, 32])
        k["image"] = rng.choice([32, 48, 64])
        k["classes"] = rng.choice([10, 100])
        return k

    @staticmethod
    def build(torch, k):
        from torchvision.models.densenet import DenseNet
        m = DenseNet(growth_rate=k["growth_rate"], block_config=_DENSE[k["arch"]],
                     num_init_features=2 * k["growth_rate"], num_classes=k["classes"])
        return _image_workload(torch, m, k)


@family("mobilenet_v2", "vision", lambda k: _scale(k, 0.3, k["width"]))
class MobileNetV2Family:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [4, 8, 16, 32, 64])
        k["width"] = rng.choice([0.35, 0.5, 0.75, 1.0, 1.4])
        k["image"] = rng.choice([32, 64, 96])
        k["classes"] = rng.choice([10, 100])
        return k

    @staticmethod
    def build(torch, k):
        from torchvision.models import MobileNetV2
        return _image_workload(torch, MobileNetV2(num_classes=k["classes"], width_mult=k["width"]), k)


@family("mobilenet_v3", "vision", lambda k: _scale(k, 0.22 if k["arch"] == "large" else 0.06, k["width"]))
class MobileNetV3Family:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [4, 8, 16, 32, 64])
        k["arch"] = rng.choice(["small", "large"])
        k["width"] = rng.choice([0.5, 0.75, 1.0, 1.25])
        k["image"] = rng.choice([32, 64, 96])
        k["classes"] = rng.choice([10, 100])
        return k

    @staticmethod
    def build(torch, k):
        from torchvision.models import mobilenetv3 as M
        setting, last = M._mobilenet_v3_conf("mobilenet_v3_" + k["arch"], width_mult=k["width"])
        return _image_workload(torch, M.MobileNetV3(setting, last, num_classes=k["classes"]), k)


@family("efficientnet", "vision", lambda k: _scale(k, 0.39 * k["depth"], k["width"]))
class EfficientNetFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [2, 4, 8, 16, 32])
        k["width"] = rng.choice([0.5, 0.75, 1.0, 1.1])
        k["depth"] = rng.choice([0.5, 0.75, 1.0, 1.2])
        k["image"] = rng.choice([32, 64, 96])
        k["classes"] = rng.choice([10, 100])
        return k

    @staticmethod
    def build(torch, k):
        from torchvision.models import efficientnet as E
        setting, last = E._efficientnet_conf("efficientnet_b0", width_mult=k["width"], depth_mult=k["depth"])
        m = E.EfficientNet(setting, dropout=0.2, num_classes=k["classes"], last_channel=last)
        return _image_workload(torch, m, k)


@family("googlenet", "vision", lambda k: _scale(k, 1.5))
class GoogLeNetFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [2, 4, 8, 16, 32])
        k["image"] = rng.choice([32, 48, 64, 96])
        k["classes"] = rng.choice([10, 100])
        return k

    @staticmethod
    def build(torch, k):
        from torchvision.models.googlenet import GoogLeNet
        m = GoogLeNet(num_classes=k["classes"], aux_logits=False, init_weights=False)
        return _image_workload(torch, m, k)


@family("inception", "vision", lambda k: _scale(k, 5.7 * (224 / 299) ** 2))
class InceptionFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [2, 4, 8])  # BatchNorm on 1×1 maps needs ≥ 2 samples
        k["image"] = rng.choice([80, 96, 128])  # Inception v3's stem needs ≥ 75 px
        k["aux_logits"] = False  # the auxiliary head's 5×5 pooling needs ≥ ~140 px inputs
        k["classes"] = rng.choice([10, 100])
        return k

    @staticmethod
    def build(torch, k):
        from torchvision.models.inception import Inception3
        m = Inception3(num_classes=k["classes"], aux_logits=k["aux_logits"], init_weights=False)
        w = _image_workload(torch, m, k)
        if k["aux_logits"]:
            ce = torch.nn.functional.cross_entropy
            w.loss = lambda out, y: ce(out[0], y) + 0.4 * ce(out[1], y)
        return w


_SHUFFLE = {0.5: [24, 48, 96, 192, 1024], 1.0: [24, 116, 232, 464, 1024], 1.5: [24, 176, 352, 704, 1024],
            2.0: [24, 244, 488, 976, 2048]}


@family("shufflenet", "vision", lambda k: _scale(k, {0.5: 0.04, 1.0: 0.14, 1.5: 0.3, 2.0: 0.59}[k["width"]]))
class ShuffleNetFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [4, 8, 16, 32, 64])
        k["width"] = rng.choice(list(_SHUFFLE))
        k["repeats"] = rng.choice([[4, 8, 4], [2, 4, 2], [3, 6, 3]])
        k["image"] = rng.choice([32, 64, 96])
        k["classes"] = rng.choice([10, 100])
        return k

    @staticmethod
    def build(torch, k):
        from torchvision.models.shufflenetv2 import ShuffleNetV2
        m = ShuffleNetV2(k["repeats"], _SHUFFLE[k["width"]], num_classes=k["classes"])
        return _image_workload(torch, m, k)


@family("squeezenet", "vision", lambda k: _scale(k, 0.82 if k["version"] == "1_0" else 0.35))
class SqueezeNetFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [4, 8, 16, 32, 64])
        k["version"] = rng.choice(["1_0", "1_1"])
        k["image"] = rng.choice([48, 64, 96])
        k["classes"] = rng.choice([10, 100])
        return k

    @staticmethod
    def build(torch, k):
        from torchvision.models.squeezenet import SqueezeNet
        return _image_workload(torch, SqueezeNet(version=k["version"], num_classes=k["classes"]), k)


@family("regnet", "vision", lambda k: _scale(k, 0.4 * k["depth"] / 16 * (k["w_0"] / 24)))
class RegNetFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [4, 8, 16, 32])
        k["depth"] = rng.choice([10, 13, 16, 22])
        k["w_0"] = rng.choice([16, 24, 32, 48])
        k["w_a"] = rng.choice([12.0, 24.5, 36.4])
        k["w_m"] = rng.choice([2.25, 2.5, 2.9])
        k["group_width"] = rng.choice([8, 16])
        k["se"] = rng.random() < 0.5
        k["image"] = rng.choice([32, 64, 96])
        k["classes"] = rng.choice([10, 100])
        return k

    @staticmethod
    def build(torch, k):
        from torchvision.models.regnet import BlockParams, RegNet
        bp = BlockParams.from_init_params(depth=k["depth"], w_0=k["w_0"], w_a=k["w_a"], w_m=k["w_m"],
                                          group_width=k["group_width"], se_ratio=0.25 if k["se"] else None)
        return _image_workload(torch, RegNet(bp, num_classes=k["classes"]), k)


@family("mnasnet", "vision", lambda k: _scale(k, 0.31, k["alpha"]))
class MnasNetFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [4, 8, 16, 32, 64])
        k["alpha"] = rng.choice([0.5, 0.75, 1.0, 1.3])
        k["image"] = rng.choice([32, 64, 96])
        k["classes"] = rng.choice([10, 100])
        return k

    @staticmethod
    def build(torch, k):
        from torchvision.models.mnasnet import MNASNet
        return _image_workload(torch, MNASNet(k["alpha"], num_classes=k["classes"]), k)


@family("convnext", "vision", lambda k: 3 * k["batch_size"] * (k["image"] / 4) ** 2 * k["dim"] ** 2 * 8.5e-9
        * sum(d * 4 ** -i * 2 ** i for i, d in enumerate(k["depths"])))
class ConvNeXtFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [2, 4, 8, 16])
        k["dim"] = rng.choice([24, 32, 48, 64, 96])
        k["depths"] = rng.choice([[1, 1, 3, 1], [2, 2, 6, 2], [3, 3, 9, 3], [1, 2, 4, 1]])
        k["image"] = rng.choice([32, 64, 96])
        k["classes"] = rng.choice([10, 100])
        return k

    @staticmethod
    def build(torch, k):
        from torchvision.models.convnext import CNBlockConfig, ConvNeXt
        d, c = k["depths"], k["dim"]
        cfg = [CNBlockConfig(c, 2 * c, d[0]), CNBlockConfig(2 * c, 4 * c, d[1]),
               CNBlockConfig(4 * c, 8 * c, d[2]), CNBlockConfig(8 * c, None, d[3])]
        return _image_workload(torch, ConvNeXt(cfg, stochastic_depth_prob=0.0, num_classes=k["classes"]), k)


def _vit_gmac(k):
    t = (k["image"] // k["patch"]) ** 2 + 1
    d = k["hidden"]
    return 3 * k["batch_size"] * k["layers"] * t * (4 * d * d + 2 * d * k["mlp_ratio"] * d + 2 * t * d) / 1e9


@family("vit", "vision", _vit_gmac)
class ViTFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [4, 8, 16, 32])
        k["image"] = rng.choice([32, 48, 64])
        k["patch"] = rng.choice([4, 8, 16])
        k["layers"] = rng.choice([2, 4, 6, 8])
        k["heads"] = rng.choice([2, 4, 8])
        k["hidden"] = k["heads"] * rng.choice([16, 32, 48])
        k["mlp_ratio"] = rng.choice([2, 4])
        k["classes"] = rng.choice([10, 100])
        return k

    @staticmethod
    def build(torch, k):
        from torchvision.models.vision_transformer import VisionTransformer
        m = VisionTransformer(image_size=k["image"], patch_size=k["patch"], num_layers=k["layers"],
                              num_heads=k["heads"], hidden_dim=k["hidden"],
                              mlp_dim=k["hidden"] * k["mlp_ratio"], num_classes=k["classes"])
        return _image_workload(torch, m, k)


def _swin_gmac(k):
    t = (k["image"] // 2) ** 2
    d = k["dim"]
    tot = 0.0
    for i, n in enumerate(k["depths"]):
        tot += n * (t / 4 ** i) * 12 * (d * 2 ** i) ** 2
    return 3 * k["batch_size"] * tot / 1e9


@family("swin", "vision", _swin_gmac)
class SwinFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [2, 4, 8, 16])
        k["image"] = rng.choice([32, 64])
        k["heads0"] = rng.choice([1, 2, 3])
        k["dim"] = k["heads0"] * rng.choice([16, 24, 32])  # embed dim must divide into the heads
        k["depths"] = rng.choice([[2, 2, 2], [2, 2, 6], [1, 1, 3], [2, 2, 6, 2]])
        k["window"] = rng.choice([2, 4])
        k["classes"] = rng.choice([10, 100])
        return k

    @staticmethod
    def build(torch, k):
        from torchvision.models.swin_transformer import SwinTransformer
        heads = [k["heads0"] * 2 ** i for i in range(len(k["depths"]))]
        m = SwinTransformer(patch_size=[2, 2], embed_dim=k["dim"], depths=k["depths"], num_heads=heads,
                            window_size=[k["window"]] * 2, stochastic_depth_prob=0.0, num_classes=k["classes"])
        return _image_workload(torch, m, k)


@family("alexnet", "vision", lambda k: _scale(k, 0.71) + 3 * k["batch_size"] * (9216 * k["hidden"]
        + k["hidden"] ** 2) / 1e9)
class AlexNetFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [4, 8, 16, 32, 64])
        k["image"] = rng.choice([64, 96, 128])  # the stem and three max-pools need ≥ 63 px
        k["hidden"] = rng.choice([512, 1024, 2048, 4096])
        k["classes"] = rng.choice([10, 100])
        return k

    @staticmethod
    def build(torch, k):
        from torchvision.models.alexnet import AlexNet
        nn = torch.nn
        m = AlexNet(num_classes=k["classes"])
        h = k["hidden"]
        m.classifier = nn.Sequential(nn.Dropout(0.5), nn.Linear(256 * 6 * 6, h), nn.ReLU(True), nn.Dropout(0.5),
                                     nn.Linear(h, h), nn.ReLU(True), nn.Linear(h, k["classes"]))
        return _image_workload(torch, m, k)


# ---------------------------------------------------------------- NLP and sequence models (own modules)
def _tokens(torch, k):
    return torch.randint(0, k["vocab"], (k["batch_size"], k["seq"]))


def _lm_loss(torch):
    ce = torch.nn.functional.cross_entropy
    return lambda out, y: ce(out.reshape(-1, out.shape[-1]), y.reshape(-1))


def _tf_gmac(k):
    d, s, n = k["d_model"], k["seq"], k["batch_size"] * k["seq"]
    return 3 * (n * k["layers"] * (4 * d * d + 2 * d * k["ffn"] + 2 * s * d) + n * d * k["vocab"]) / 1e9


@family("transformer_lm", "nlp", _tf_gmac)
class TransformerLMFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [4, 8, 16, 32])
        k["vocab"] = rng.choice([1000, 4000, 8000])
        k["d_model"] = rng.choice([64, 128, 256])
        k["heads"] = rng.choice([2, 4, 8])
        k["layers"] = rng.choice([1, 2, 3, 4, 6])
        k["ffn"] = k["d_model"] * rng.choice([2, 4])
        k["seq"] = rng.choice([32, 64, 128])
        k["norm_first"] = rng.random() < 0.5
        return k

    @staticmethod
    def build(torch, k):
        nn = torch.nn

        class TransformerLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(k["vocab"], k["d_model"])
                self.pos = nn.Parameter(torch.zeros(1, k["seq"], k["d_model"]))
                layer = nn.TransformerEncoderLayer(k["d_model"], k["heads"], k["ffn"], dropout=0.1,
                                                   batch_first=True, norm_first=k["norm_first"])
                self.enc = nn.TransformerEncoder(layer, k["layers"], enable_nested_tensor=False)
                self.head = nn.Linear(k["d_model"], k["vocab"])
                self.register_buffer("mask", torch.triu(torch.full((k["seq"], k["seq"]), float("-inf")), 1))

            def forward(self, x):
                return self.head(self.enc(self.emb(x) + self.pos, mask=self.mask))

        x = _tokens(torch, k)
        return Workload(TransformerLM(), (x,), torch.roll(x, -1, 1), _lm_loss(torch))


@family("bert", "nlp", lambda k: _tf_gmac({**k, "d_model": k["hidden"], "ffn": 4 * k["hidden"]}))
class BertFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [4, 8, 16, 32])
        k["vocab"] = rng.choice([2000, 8000, 16000])
        k["hidden"] = rng.choice([64, 128, 256])
        k["heads"] = rng.choice([2, 4])
        k["layers"] = rng.choice([2, 4, 6])
        k["seq"] = rng.choice([32, 64, 128])
        return k

    @staticmethod
    def build(torch, k):
        nn = torch.nn
        F = nn.functional
        h = k["hidden"]

        class BertMLM(nn.Module):
            """BERT-style encoder: token+position+segment embeddings, post-LN GELU encoder, tied MLM head."""

            def __init__(self):
                super().__init__()
                self.tok = nn.Embedding(k["vocab"], h)
                self.pos = nn.Embedding(k["seq"], h)
                self.seg = nn.Embedding(2, h)
                self.ln = nn.LayerNorm(h)
                self.drop = nn.Dropout(0.1)
                layer = nn.TransformerEncoderLayer(h, k["heads"], 4 * h, dropout=0.1, activation="gelu",
                                                   batch_first=True)
                self.enc = nn.TransformerEncoder(layer, k["layers"], enable_nested_tensor=False)
                self.transform = nn.Linear(h, h)
                self.mlm_ln = nn.LayerNorm(h)
                self.bias = nn.Parameter(torch.zeros(k["vocab"]))
                self.register_buffer("positions", torch.arange(k["seq"]).unsqueeze(0))

            def forward(self, x, segments, pad_mask):
                e = self.tok(x) + self.pos(self.positions) + self.seg(segments)
                hs = self.enc(self.drop(self.ln(e)), src_key_padding_mask=pad_mask)
                t = self.mlm_ln(F.gelu(self.transform(hs)))
                return F.linear(t, self.tok.weight, self.bias)

        x = _tokens(torch, k)
        seg = (torch.arange(k["seq"]) >= k["seq"] // 2).long().expand(k["batch_size"], -1).contiguous()
        pad = torch.zeros(k["batch_size"], k["seq"], dtype=torch.bool)
        pad[:, k["seq"] - k["seq"] // 8:] = True
        y = torch.where(torch.rand(x.shape) < 0.15, x, torch.full_like(x, -100))
        return Workload(BertMLM(), (x, seg, pad), y, _lm_loss(torch))


def _rnn_gmac(k, gates, inp, classes_per_step):
    h, n = k["hidden"], k["batch_size"] * k["seq"]
    dirs = 2 if k.get("bidirectional") else 1
    rnn = sum(gates * h * ((inp if i == 0 else h * dirs) + h) * dirs for i in range(k["layers"]))
    return 3 * n * (rnn + h * dirs * classes_per_step) / 1e9


@family("lstm_lm", "nlp", lambda k: _rnn_gmac(k, 4, k["emb"], k["vocab"]))
class LstmLMFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [4, 8, 16, 32, 64])
        k["vocab"] = rng.choice([1000, 4000, 10000])
        k["emb"] = rng.choice([64, 128, 256])
        k["hidden"] = rng.choice([128, 256, 512])
        k["layers"] = rng.choice([1, 2, 3])
        k["seq"] = rng.choice([16, 32, 64])
        k["tied"] = k["emb"] == k["hidden"] and rng.random() < 0.5
        return k

    @staticmethod
    def build(torch, k):
        nn = torch.nn

        class LstmLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(k["vocab"], k["emb"])
                self.drop = nn.Dropout(0.2)
                self.rnn = nn.LSTM(k["emb"], k["hidden"], k["layers"], batch_first=True,
                                   dropout=0.2 if k["layers"] > 1 else 0.0)
                self.head = nn.Linear(k["hidden"], k["vocab"])
                if k["tied"]:
                    self.head.weight = self.emb.weight

            def forward(self, x):
                out, _ = self.rnn(self.drop(self.emb(x)))
                return self.head(self.drop(out))

        x = _tokens(torch, k)
        return Workload(LstmLM(), (x,), torch.roll(x, -1, 1), _lm_loss(torch))


@family("gru_classifier", "nlp", lambda k: _rnn_gmac(k, 3, k["emb"], 0))
class GruClassifierFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [8, 16, 32, 64])
        k["vocab"] = rng.choice([2000, 10000, 20000])
        k["emb"] = rng.choice([32, 64, 128])
        k["hidden"] = rng.choice([64, 128, 256])
        k["layers"] = rng.choice([1, 2])
        k["bidirectional"] = rng.random() < 0.5
        k["seq"] = rng.choice([32, 64, 128])
        k["classes"] = rng.choice([2, 5, 20])
        return k

    @staticmethod
    def build(torch, k):
        nn = torch.nn

        class GruClassifier(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(k["vocab"], k["emb"])
                self.rnn = nn.GRU(k["emb"], k["hidden"], k["layers"], batch_first=True,
                                  bidirectional=k["bidirectional"])
                d = 2 if k["bidirectional"] else 1
                self.head = nn.Sequential(nn.Dropout(0.3), nn.Linear(k["hidden"] * d, k["classes"]))

            def forward(self, x):
                out, _ = self.rnn(self.emb(x))
                return self.head(out.mean(1))

        x = _tokens(torch, k)
        y = torch.randint(0, k["classes"], (k["batch_size"],))
        return Workload(GruClassifier(), (x,), y, torch.nn.functional.cross_entropy)


def _speech_gmac(k):
    t = k["frames"]
    conv = 0.0
    c_in = k["mels"]
    for i in range(k["convs"]):
        t = t // 2 if i == 0 else t
        conv += k["batch_size"] * t * c_in * k["channels"] * k["kernel"]
        c_in = k["channels"]
    kk = dict(k, seq=t)
    return 3 * conv / 1e9 + _rnn_gmac(kk, 4 if k["rnn"] == "lstm" else 3, k["channels"], 29)


@family("speech", "speech", _speech_gmac)
class SpeechFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [2, 4, 8, 16])
        k["mels"] = rng.choice([40, 80])
        k["frames"] = rng.choice([100, 200, 400])
        k["convs"] = rng.choice([1, 2, 3])
        k["channels"] = rng.choice([64, 128, 256])
        k["kernel"] = rng.choice([5, 11])
        k["rnn"] = rng.choice(["lstm", "gru"])
        k["hidden"] = rng.choice([128, 256])
        k["layers"] = rng.choice([1, 2, 3])
        k["bidirectional"] = rng.random() < 0.7
        return k

    @staticmethod
    def build(torch, k):
        nn = torch.nn

        class SpeechModel(nn.Module):
            """DeepSpeech-style acoustic model: Conv1d front end (first conv strides 2), RNN, per-frame CTC head."""

            def __init__(self):
                super().__init__()
                layers, c = [], k["mels"]
                for i in range(k["convs"]):
                    layers += [nn.Conv1d(c, k["channels"], k["kernel"], stride=2 if i == 0 else 1,
                                         padding=k["kernel"] // 2), nn.BatchNorm1d(k["channels"]), nn.Hardtanh(0, 20)]
                    c = k["channels"]
                self.front = nn.Sequential(*layers)
                rnn = nn.LSTM if k["rnn"] == "lstm" else nn.GRU
                self.rnn = rnn(c, k["hidden"], k["layers"], batch_first=True, bidirectional=k["bidirectional"])
                self.head = nn.Linear(k["hidden"] * (2 if k["bidirectional"] else 1), 29)

            def forward(self, x):
                h, _ = self.rnn(self.front(x).transpose(1, 2))
                return self.head(h).log_softmax(-1)

        n = k["batch_size"]
        x = torch.randn(n, k["mels"], k["frames"])
        t_out = (k["frames"] + 1) // 2 if k["frames"] % 2 else k["frames"] // 2
        target_len = max(4, t_out // 4)
        y = (torch.randint(1, 29, (n, target_len)), torch.full((n,), t_out, dtype=torch.long),
             torch.full((n,), target_len, dtype=torch.long))
        ctc = torch.nn.functional.ctc_loss
        loss = lambda out, yy: ctc(out.transpose(0, 1), yy[0], yy[1], yy[2])  # noqa: E731
        return Workload(SpeechModel(), (x,), y, loss)


@family("mlp", "tabular", lambda k: 3 * k["batch_size"] * (k["inputs"] * k["hidden"] + (k["depth"] - 1)
        * k["hidden"] ** 2 + k["hidden"] * k["classes"]) / 1e9)
class MlpFamily:
    @staticmethod
    def sample(rng):
        k = common_knobs(rng, [16, 32, 64, 128, 256])
        k["inputs"] = rng.choice([64, 256, 784, 3072])
        k["hidden"] = rng.choice([128, 256, 512, 1024, 2048])
        k["depth"] = rng.choice([2, 3, 4, 6, 8])
        k["activation"] = rng.choice(["relu", "gelu", "tanh"])
        k["batch_norm"] = rng.random() < 0.3
        k["dropout"] = rng.choice([0.0, 0.1])
        k["classes"] = rng.choice([10, 100])
        return k

    @staticmethod
    def build(torch, k):
        nn = torch.nn
        act = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh}[k["activation"]]
        layers, d = [], k["inputs"]
        for _ in range(k["depth"]):
            layers.append(nn.Linear(d, k["hidden"]))
            if k["batch_norm"]:
                layers.append(nn.BatchNorm1d(k["hidden"]))
            layers.append(act())
            if k["dropout"]:
                layers.append(nn.Dropout(k["dropout"]))
            d = k["hidden"]
        layers.append(nn.Linear(d, k["classes"]))
        x = torch.randn(k["batch_size"], k["inputs"])
        y = torch.randint(0, k["classes"], (k["batch_size"],))
        return Workload(nn.Sequential(*layers), (x,), y, torch.nn.functional.cross_entropy)


# Random networks live in randwire.py and randgen.py; importing them registers the randwire_ws / randwire_er and
# randcnn / randrnn families (imported for that effect alone, at the end: both use this module's registry).
importlib.import_module(".randwire", __package__)
importlib.import_module(".randgen", __package__)
