#!/usr/bin/python3
# Re-collects a few named configurations from scratch and compares their new labels with the committed ones.
# The dataset's reproducibility check: the mean relative deviation must stay within the measured noise floor.
"""Reproduce dataset labels.

    /usr/bin/python3 tools/collect/reproduce.py                       # the 3 default configs, 3 passes each
    /usr/bin/python3 tools/collect/reproduce.py --configs mlp-0007,vit-0008 --floor 0.05

Runs tools/collect/collect.py into a scratch folder (fresh processes, same environment settings, the labels' own
--tail-steps and --heap-mb), then prints, per
config, the committed label, the new label and their relative deviation. Exit status 0 when the mean relative
deviation is ≤ the noise floor: --floor, else the test–retest MRE in DATA/card.json, else 2× its single-pass
deviation (a stand-in until the retest exists; printed as such).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tools.collect import configs as C  # noqa: E402
from tools.collect.card import read_label  # noqa: E402

DEFAULT = "resnet-0048,transformer_lm-0002,randwire_er-0159"  # each labelled in data/


def label_path(data: str, cid: str) -> str:
    return os.path.join(data, "traces", C.config(cid)["split"], cid + ".etst.gz")


def floor_of(data: str, given: float):
    if given > 0:
        return given, "--floor"
    try:
        with open(os.path.join(data, "card.json")) as fh:
            card = json.load(fh)
    except (OSError, ValueError):
        return None, "no card.json"
    rt = card.get("retest")
    if rt and rt.get("n", 0) > 0:
        return float(rt["mre"]), f"test–retest MRE over {rt['n']} configs"
    spd = card.get("single_pass_mrd")
    if spd is not None:
        return 2 * float(spd), "2 × single-pass deviation (no retest yet)"
    return None, "card.json has no noise figure"


def tail_steps_of(labels: list):
    """The --tail-steps the committed labels were collected with (their extra "tail_steps"; none before it
    existed), so that the scratch collection closes its last iterations the same way; None when they disagree."""
    found = {lab.get("tail_steps", 0) for lab in labels}
    return found.pop() if len(found) == 1 else None


def recorded_settings(data: str, cid: str) -> list:
    """The settings of the passes DATA/raw records for cid (local only: none in a fresh clone)."""
    from tools.collect.card import pass_statuses
    return [st["settings"] for _, st in pass_statuses(data, cid)
            if isinstance(st, dict) and st.get("ok") and isinstance(st.get("settings"), dict)]


def heap_mb_of(labels: list, settings: list | None = None):
    """The --heap-mb the labels were collected with, so that the scratch collection pre-faults (or not) as they did:
    a label's own record ("heap_mb" in its extra), else its recorded passes' settings (`settings`, one list per
    label), else 0 (the committed labels predate the pre-fault and record none); None when the labels disagree."""
    found = set()
    for k, lab in enumerate(labels):
        own = settings[k] if settings and k < len(settings) else []
        if lab.get("heap_mb") is not None:
            found.add(int(lab["heap_mb"]))
        elif own:
            found.update(int(s.get("heap_mb", 0)) for s in own)
        else:
            found.add(0)
    return found.pop() if len(found) == 1 else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", default=DEFAULT, help=f"comma-separated config ids (default {DEFAULT})")
    ap.add_argument("--data", default=os.path.join(ROOT, "data"), help="dataset holding the committed labels")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--floor", type=float, default=0.0, help="noise floor (relative), overrides card.json")
    ap.add_argument("--work", default="", help="scratch folder (default: a temporary one, removed afterwards)")
    ap.add_argument("--rt", action="store_true", help="pass --rt to the collector")
    ap.add_argument("--speed-ref", default="", metavar="GEMM_MS,SMALL_OPS_MS",
                    help="the labels' collection speed (drift.py --data FIRST prints it), passed to the collector: "
                         "without it the scratch collection gates against its own first pass")
    ap.add_argument("--ets", default="")
    a = ap.parse_args(argv)
    ids = [c.strip() for c in a.configs.split(",") if c.strip()]
    if not ids:
        ap.error("--configs names no configuration")
    bad = []
    for cid in ids:
        try:
            C.parse_id(cid)
        except KeyError:
            bad.append(cid)
    if bad:
        ap.error(f"--configs: {', '.join(bad)} name{'s' if len(bad) == 1 else ''} no configuration; an id is "
                 f"FAMILY-NNNN with FAMILY one of {', '.join(C.FAMILIES)}")
    if a.passes < 1:
        ap.error("--passes must be ≥ 1")
    missing = [c for c in ids if not os.path.exists(label_path(a.data, c))]
    if missing:
        print(f"reproduce: no committed label for {', '.join(missing)} under {a.data}/traces", file=sys.stderr)
        return 2
    tail = tail_steps_of([read_label(label_path(a.data, c)) for c in ids])
    if tail is None:
        print("reproduce: the labels named were collected with different --tail-steps; reproduce them apart",
              file=sys.stderr)
        return 2
    heap = heap_mb_of([read_label(label_path(a.data, c)) for c in ids], [recorded_settings(a.data, c) for c in ids])
    if heap is None:
        print("reproduce: the labels named were collected with different --heap-mb; reproduce them apart",
              file=sys.stderr)
        return 2
    tmp = None if a.work else tempfile.TemporaryDirectory(prefix="ets-reproduce-")
    work = a.work or tmp.name
    ids_file = os.path.join(work, "ids.txt")
    os.makedirs(work, exist_ok=True)
    with open(ids_file, "w") as fh:
        fh.write("\n".join(ids) + "\n")
    cmd = [sys.executable, os.path.join(HERE, "collect.py"), "--out", work, "--configs", ids_file,
           "--passes", str(a.passes), "--block", str(len(ids)), "--tail-steps", str(tail), "--heap-mb", str(heap)]
    if a.rt:
        cmd.append("--rt")
    if a.speed_ref:
        cmd += ["--speed-ref", a.speed_ref]
    if a.ets:
        cmd += ["--ets", a.ets]
    rc = subprocess.call(cmd)
    if rc != 0:
        print(f"reproduce: collector failed (rc {rc})", file=sys.stderr)
        return 1
    rows, devs = [], []
    for cid in ids:
        old = read_label(label_path(a.data, cid))
        newp = label_path(work, cid)
        if not os.path.exists(newp):
            rows.append((cid, old["measured_us"], None, None))
            continue
        new = read_label(newp)
        d = (new["measured_us"] - old["measured_us"]) / old["measured_us"]
        devs.append(abs(d))
        rows.append((cid, old["measured_us"], new["measured_us"], d))
    print(f"{'config':24s} {'label ms':>10s} {'again ms':>10s} {'deviation':>10s}")
    for cid, o, n, d in rows:
        print(f"{cid:24s} {o / 1e3:10.2f} " + (f"{n / 1e3:10.2f} {100 * d:+9.2f}%" if n else "    FAILED"))
    floor, why = floor_of(a.data, a.floor)
    if tmp:
        tmp.cleanup()
    if len(devs) != len(ids):
        print("reproduce: some configurations could not be re-collected")
        return 1
    mean = sum(devs) / len(devs)
    if floor is None:
        print(f"reproduce: mean |deviation| {100 * mean:.2f}%; no noise floor known ({why})")
        return 1
    ok = mean <= floor
    print(f"reproduce: mean |deviation| {100 * mean:.2f}% vs noise floor {100 * floor:.2f}% ({why}): "
          f"{'within' if ok else 'OUTSIDE'} the floor")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
