# Deterministic configuration generator: config id -> (family, knobs, seed, split), and the dataset manifest.
# The same id always yields the same model and knobs on any machine, so collections resume and re-collect exactly.
"""Config ids are ``<family>-<index:04d>``; ``config(cid)`` regenerates everything from the id alone.

Split (by architecture family; test families never appear in train or val):
  test  = vgg, shufflenet, squeezenet, gru_classifier, plus random nets with index % 10 == 0
  val   = mnasnet, inception, bert, plus random nets and generator draws with index % 10 == 1
  train = everything else (the generator families randcnn / randrnn never enter test)
"""
from __future__ import annotations

import hashlib
import json
import random

from .zoo import FAMILIES

TEST_FAMILIES = ("vgg", "shufflenet", "squeezenet", "gru_classifier")
VAL_FAMILIES = ("mnasnet", "inception", "bert")
RANDOM_FAMILIES = ("randwire_ws", "randwire_er")
# Training-only generators (randgen.py): random conv stacks and recurrent models that widen the op regimes of train;
# a tenth of their draws validate, none is tested, so the test split is the same with or without them.
GENERATOR_FAMILIES = ("randcnn", "randrnn")

PER_REAL_FAMILY = 70
PER_RANDOM_FAMILY = 300
PER_GENERATOR_FAMILY = 150
# Training multiply-add budget (GMAC) that keeps one iteration inside ~5 ms..1 s on one CPU thread;
# sampling is retried (deterministically) until a draw fits.
MAX_TRAIN_GMAC = 8.0
# Families whose ops run far below the GEMM rate on one CPU thread (depthwise convs, attention, small GEMMs):
# their multiply-adds count this many times against the budget (from single-iteration timings on the dev box).
SLOW_FAMILIES = {"efficientnet": 3.0, "mnasnet": 3.0, "mobilenet_v3": 3.0, "mobilenet_v2": 2.0, "shufflenet": 2.0,
                 "bert": 2.5, "vit": 2.5, "swin": 2.0, "transformer_lm": 1.5, "lstm_lm": 1.5}
MANIFEST_VERSION = 1


def config_id(fam: str, index: int) -> str:
    return f"{fam}-{index:04d}"


def parse_id(cid: str):
    fam, _, idx = cid.rpartition("-")
    if fam not in FAMILIES or not idx.isdigit():
        raise KeyError(f"unknown config id {cid!r}")
    return fam, int(idx)


def split_of(fam: str, index: int) -> str:
    if fam in RANDOM_FAMILIES:
        return {0: "test", 1: "val"}.get(index % 10, "train")
    if fam in GENERATOR_FAMILIES:
        return "val" if index % 10 == 1 else "train"
    if fam in TEST_FAMILIES:
        return "test"
    if fam in VAL_FAMILIES:
        return "val"
    return "train"


def seed_of(cid: str) -> int:
    return int.from_bytes(hashlib.sha256(cid.encode()).digest()[:4], "little")


def config(cid: str) -> dict:
    """Everything needed to rebuild a configuration, from its id alone."""
    fam, index = parse_id(cid)
    f = FAMILIES[fam]
    knobs = None
    for attempt in range(64):
        rng = random.Random(f"ets-dataset-v{MANIFEST_VERSION}:{cid}:{attempt}")
        k = f.sample(rng)
        if f.est_gmac(k) * SLOW_FAMILIES.get(fam, 1.0) <= MAX_TRAIN_GMAC:
            knobs = k
            break
        knobs = k
    return {"id": cid, "family": fam, "domain": f.domain, "index": index, "seed": seed_of(cid),
            "split": split_of(fam, index), "knobs": knobs, "est_gmac": round(f.est_gmac(knobs), 4)}


def all_ids(families=None) -> list:
    ids = []
    for fam in FAMILIES:
        if families and fam not in families:
            continue
        n = PER_RANDOM_FAMILY if fam in RANDOM_FAMILIES else \
            PER_GENERATOR_FAMILY if fam in GENERATOR_FAMILIES else PER_REAL_FAMILY
        ids += [config_id(fam, i) for i in range(n)]
    return ids


def model_name(cfg: dict) -> str:
    """Short human-readable model name stored in TraceMeta.model."""
    k = cfg["knobs"]
    return k.get("arch") and f"{cfg['family']}:{k['arch']}" or cfg["family"]


def manifest(families=None) -> dict:
    cfgs = [config(c) for c in all_ids(families)]
    counts = {}
    for c in cfgs:
        counts.setdefault(c["split"], 0)
        counts[c["split"]] += 1
    return {"version": MANIFEST_VERSION, "generator": "tools/collect/configs.py",
            "test_families": list(TEST_FAMILIES), "val_families": list(VAL_FAMILIES),
            "random_split_rule": "index % 10 == 0 -> test, == 1 -> val, else train",
            "generator_families": list(GENERATOR_FAMILIES),
            "generator_split_rule": "index % 10 == 1 -> val, else train",
            "counts": counts, "configs": cfgs}


def write_manifest(path: str, families=None) -> dict:
    m = manifest(families)
    head = {k: v for k, v in m.items() if k != "configs"}
    # one configuration per line: compact, and a regenerated manifest diffs line by line
    with open(path, "w") as fh:
        fh.write(json.dumps(head, sort_keys=True)[:-1] + ', "configs": [\n')
        fh.write(",\n".join(json.dumps(c, sort_keys=True) for c in m["configs"]))
        fh.write("\n]}\n")
    return m
