#!/usr/bin/env python3
# The collector's configuration generator (tools/collect/configs.py, zoo.py, randgen.py):
#  * every configuration of the committed manifest (data/manifest.json) regenerates exactly from its id, so adding a
#    family never changes a configuration that was collected;
#  * the training-only generators (randcnn, randrnn) never enter test, validate a tenth of their draws, stay inside
#    the iteration budget and draw different architectures;
#  * with torch installed: a spread of generator draws builds and trains one step, and randcnn's size walk (behind
#    its cost estimate) matches the feature map the built net produces.
# Usage: zoo_test.py MANIFEST
import json
import math
import os
import sys

from checks import check, finish, torch_or_none  # tests/cli/checks.py, beside this script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
from tools.collect import configs as C  # noqa: E402
from tools.collect import randgen as G  # noqa: E402

with open(sys.argv[1]) as fh:
    committed = json.load(fh)
changed = [c["id"] for c in committed["configs"] if C.config(c["id"]) != c]
check(len(committed["configs"]) >= 2000, f"committed manifest lists {len(committed['configs'])} configurations")
check(not changed, f"{len(changed)} committed configurations regenerate differently: {changed[:5]}")
committed_ids = {c["id"] for c in committed["configs"]}

for fam in C.GENERATOR_FAMILIES:
    ids = C.all_ids([fam])
    check(len(ids) == C.PER_GENERATOR_FAMILY, f"{fam}: {len(ids)} ids")
    # a manifest lists a generator family whole or not at all (the committed one predates them; the next has them)
    listed = committed_ids & set(ids)
    check(not listed or listed == set(ids), f"{fam}: the committed manifest lists {len(listed)} of its {len(ids)} ids")
    cfgs = [C.config(i) for i in ids]
    splits = {c["split"] for c in cfgs}
    check(splits == {"train", "val"}, f"{fam}: splits {splits}")
    wrong = [c["id"] for c in cfgs if (c["split"] == "val") != (c["index"] % 10 == 1)]
    check(not wrong, f"{fam}: val is not index % 10 == 1: {wrong[:5]}")
    over = [c["id"] for c in cfgs if not 0 < c["est_gmac"] <= C.MAX_TRAIN_GMAC]
    check(not over, f"{fam}: outside the iteration budget: {over[:5]}")
    distinct = {json.dumps({k: v for k, v in c["knobs"].items() if k not in ("optimizer", "lr", "weight_decay")},
                           sort_keys=True) for c in cfgs}
    check(len(distinct) >= 0.95 * len(cfgs), f"{fam}: only {len(distinct)} distinct architectures of {len(cfgs)}")

m = C.manifest()
check(m["counts"]["test"] == committed["counts"]["test"], f"test split changed: {m['counts']} vs {committed['counts']}")
check(m["generator_families"] == list(C.GENERATOR_FAMILIES), "manifest names the generator families")

# randcnn draws cover what the hand-written train families leave thin
cnn = [C.config(i)["knobs"] for i in C.all_ids(["randcnn"])]
downs = {st["down"] for k in cnn for st in k["stages"]}
check({"max", "avg", "conv", "none"} <= downs, f"randcnn downsampling kinds {downs}")
check(any(st["ceil"] and st["down"] in ("max", "avg") for k in cnn for st in k["stages"]), "randcnn ceil-mode pools")
rnn = [C.config(i)["knobs"] for i in C.all_ids(["randrnn"])]
check({k["cell"] for k in rnn} == {"gru", "lstm"} and {k["head"] for k in rnn} == {"tagger", "last", "max"},
      "randrnn cells and heads")

torch = torch_or_none()  # reruns under /usr/bin/python3 when the found python has no torch
if torch is None:
    print("zoo: torch is not installed; the build checks are skipped")
if torch is not None:
    from tools.collect.zoo import FAMILIES, make_optimizer
    torch.set_num_threads(1)
    for fam in C.GENERATOR_FAMILIES:
        # the six cheapest draws and every twentieth one: small and large shapes, seconds in all
        cfgs = sorted((C.config(i) for i in C.all_ids([fam])), key=lambda c: c["est_gmac"])
        for c in cfgs[:6] + cfgs[6::20]:
            k = c["knobs"]
            torch.manual_seed(c["seed"])
            w = FAMILIES[fam].build(torch, k)
            feat = []
            if fam == "randcnn":
                w.model.stages.register_forward_hook(lambda mod, inp, out: feat.append(tuple(out.shape)))
            opt = make_optimizer(torch, w.model.parameters(), k)
            loss = w.loss(w.model(*w.inputs), w.target)
            loss.backward()
            opt.step()
            check(math.isfinite(float(loss)), f"{c['id']}: loss {float(loss)}")
            if fam == "randcnn":
                plan = G._cnn_plan(k)
                want = (k["batch_size"], plan[-1][1], plan[-1][3], plan[-1][3])
                # every stage pools before its convolutions, so the last one's output is the head's input
                check(feat and feat[0] == want, f"{c['id']}: feature map {feat} vs the size walk {want}")
finish("zoo: ok")
