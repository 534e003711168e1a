#!/usr/bin/python3
# Computes the dataset card's figures from data/ (labelled traces + manifest) and fills the tables in docs/dataset.md.
# Also estimates the noise floor: single-pass deviation from the labels, and test–retest MRE against a re-collection.
"""Dataset card figures.

    /usr/bin/python3 tools/collect/card.py                          # data/ -> data/card.json + docs/dataset.md tables
    /usr/bin/python3 tools/collect/card.py --retest data-retest     # adds the test–retest noise floor (kept in
                                                                    # data/retest.json for later runs)
    /usr/bin/python3 tools/collect/card.py --retest-ids 120 > ids   # which configs to re-collect for the retest

Reads the canonical .etst.gz files directly (JSON lines, docs/trace-format.md); no torch needed.
"""
from __future__ import annotations

import argparse
import glob
import gzip
import json
import math
import os
import re
import statistics
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if os.path.dirname(HERE) not in sys.path:
    sys.path.insert(0, os.path.dirname(HERE))
from atomic_file import atomic_write  # noqa: E402  (tools/atomic_file.py)

OP_BUCKETS = [0, 200, 400, 600, 800, 1000, 1200, 1600, 2000]


def read_label(path: str) -> dict:
    """Summary of one labelled file: meta, op count, phases, gap share, label, Σ labels, label.* extras."""
    meta, ops, t_sum, g_sum, phases = None, 0, 0.0, 0.0, [0, 0, 0]
    with gzip.open(path, "rt") as fh:
        for line in fh:
            o = json.loads(line)
            if "trace" in o:
                if meta is not None:
                    break  # a labelled file holds one iteration; ignore anything after it
                meta = o["trace"]
            elif "n" in o:
                ops += 1
                t_sum += o["t"]
                g_sum += o["g"]
                phases[o["p"]] += 1
    if meta is None:
        raise ValueError(f"{path}: no iteration")
    x = meta.get("extra", {})
    total = t_sum + g_sum
    return {"id": x.get("config_id") or os.path.basename(path).split(".")[0], "split": x.get("split", ""),
            "family": meta["family"], "model": meta["model"], "environment": meta["environment"],
            "device": meta["device"], "framework_version": meta["framework_version"],
            "batch_size": meta["batch_size"], "optimizer": meta["optimizer"], "ops": ops, "phases": phases,
            "measured_us": meta["measured_us"], "sum_us": total, "gap_share": g_sum / total if total else 0.0,
            "pass_median_us": [float(v) for v in x.get("label.pass_median_us", "").split(";") if v],
            "disagreement": float(x.get("label.disagreement", "nan")),
            "disagrees": x.get("label.disagrees") == "1",
            "sum_discrepancy": float(x.get("label.sum_discrepancy", "nan")),
            "single_pass_deviation": float(x.get("label.single_pass_deviation", "nan")),
            "tail_steps": int(x.get("tail_steps", "0")),
            # the worker's heap pre-fault (--heap-mb) where the label records it; None: not recorded (labels from
            # before it were taken without one)
            "heap_mb": int(x["heap_mb"]) if "heap_mb" in x else None}


def label_head(path: str) -> dict:
    """A label's iteration line (its "trace" object: environment, extra, ...) alone: cheap enough to ask of every
    label of a dataset."""
    with gzip.open(path, "rt") as fh:
        for line in fh:
            o = json.loads(line)
            if "trace" in o:
                return o["trace"]
    raise ValueError(f"{path}: no iteration")


def one_tail_setting(labels: dict, what: str) -> int:
    """The one --tail-steps of a set of labels (read_label records); ValueError naming two configurations when they
    differ: a label without a tail step ends its last iteration at its ProfilerStep# span, so the two kinds are
    not one dataset (docs/dataset.md, Labels)."""
    by = {}
    for cid, r in sorted(labels.items()):
        by.setdefault(r.get("tail_steps", 0), cid)
    if len(by) > 1:
        raise ValueError(f"{what} mixes labels collected with different --tail-steps: "
                         + ", ".join(f"{n} ({cid}, ...)" for n, cid in sorted(by.items())))
    return next(iter(by), 0)


def load_dir(data: str) -> dict:
    out = {}
    for p in label_files(data):
        try:
            r = read_label(p)
            r["bytes"] = os.path.getsize(p)
            out[r["id"]] = r
        except (OSError, ValueError, KeyError, EOFError, zlib.error, IndexError, TypeError) as e:
            # a gzip cut mid-write (EOFError) or corrupt (zlib.error), or a malformed line: one file, not the card
            print(f"card: skipping {p}: {type(e).__name__}: {e}", file=sys.stderr)
    return out


def quantiles(v, qs=(0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)):
    """Quantile q of v by linear interpolation between the order statistics at position q·(n−1) (numpy's default,
    statistics.quantiles(method="inclusive")): 0 and 1 are the min and max, and 0.5 is the median, the mean of the
    two middle values for an even count."""
    s = sorted(v)
    if not s:
        return {}
    out = {}
    for q in qs:
        pos = q * (len(s) - 1)
        lo = min(len(s) - 1, int(math.floor(pos)))
        hi = min(len(s) - 1, lo + 1)
        frac = pos - lo
        out[q] = s[lo] if frac == 0 or s[hi] == s[lo] else s[lo] + (s[hi] - s[lo]) * frac
    return out


def histogram(values, edges):
    counts = [0] * len(edges)
    for v in values:
        i = max(k for k in range(len(edges)) if v >= edges[k]) if v >= edges[0] else 0
        counts[i] += 1
    labels = [f"{edges[i]}–{edges[i + 1]}" for i in range(len(edges) - 1)] + [f"{edges[-1]}+"]
    return list(zip(labels, counts))


def bar(n, total, width=30):
    return "█" * (round(width * n / total) if total else 0)


def pass_statuses(data: str, cid: str = "*"):
    """(path, status) of each readable DATA/raw/<cid>/pass<N>.status.json (collect.py's per-pass record), in path
    order; unreadable ones are skipped."""
    for path in sorted(glob.glob(os.path.join(data, "raw", cid, "pass[0-9].status.json"))):
        try:
            with open(path) as fh:
                st = json.load(fh)
        except (OSError, ValueError):
            continue
        yield path, st


def unprofiled_ms(status: dict):
    """A pass's unprofiled iteration (ms): the faster of warm-up iterations 2 and 3, since the first pays one-off
    costs; None with fewer than 3 warm-ups."""
    w = status.get("warmup_ms") or []
    return min(w[1:]) if len(w) >= 3 else None


def compute(data: str, retest: str = "", previous: dict | None = None, notes: list | None = None,
            labels: dict | None = None) -> dict:
    """The card's figures. The profiler-overhead ratio and the environment record come from DATA/raw/ and
    DATA/collect/, which are not committed: when those sources are absent (a fresh clone), the figures of `previous`
    (the card.json being replaced) are kept, and a line saying so is appended to `notes`."""
    previous = previous or {}
    notes = notes if notes is not None else []
    labels = load_dir(data) if labels is None else labels
    manifest = {}
    mpath = os.path.join(data, "manifest.json")
    if os.path.exists(mpath):
        with open(mpath) as fh:
            manifest = {c["id"]: c for c in json.load(fh)["configs"]}
    fams = {}
    for cid, c in manifest.items():
        f = fams.setdefault(c["family"], {"domain": c["domain"], "split": set(), "manifest": 0, "labelled": 0})
        f["manifest"] += 1
        f["split"].add(c["split"])
    for r in labels.values():
        f = fams.setdefault(r["family"], {"domain": "?", "split": set(), "manifest": 0, "labelled": 0})
        f["labelled"] += 1
        if r["split"]:
            f["split"].add(r["split"])
    per_split = {}
    for r in labels.values():
        per_split[r["split"] or "?"] = per_split.get(r["split"] or "?", 0) + 1

    vals = list(labels.values())
    card = {
        "labelled": len(vals), "manifest": len(manifest), "per_split": per_split,
        "families": {k: {**v, "split": "/".join(sorted(v["split"]))} for k, v in sorted(fams.items())},
        "random_nets": sum(1 for r in vals if r["family"].startswith("randwire")),
        "environment": sorted({r["environment"] for r in vals}),
        "framework_version": sorted({r["framework_version"] for r in vals}),
        "bytes": sum(r["bytes"] for r in vals),
        "ops_hist": histogram([r["ops"] for r in vals], OP_BUCKETS),
        "ops_q": quantiles([r["ops"] for r in vals]),
        "iter_ms_q": quantiles([r["measured_us"] / 1e3 for r in vals]),
        "gap_hist": histogram([100 * r["gap_share"] for r in vals], [0, 10, 20, 30, 40, 50, 60, 70, 80]),
        "gap_q": quantiles([r["gap_share"] for r in vals]),
        "max_abs_sum_discrepancy": max((abs(r["sum_discrepancy"]) for r in vals), default=float("nan")),
        "mean_abs_sum_discrepancy": statistics.fmean([abs(r["sum_discrepancy"]) for r in vals]) if vals else math.nan,
        "flagged": sum(1 for r in vals if r["disagrees"]),
        "single_pass_mrd": statistics.fmean([r["single_pass_deviation"] for r in vals]) if vals else math.nan,
        "pass_disagreement_median": statistics.median([r["disagreement"] for r in vals]) if vals else math.nan,
        "pass_disagreement_q": quantiles([r["disagreement"] for r in vals if not math.isnan(r["disagreement"])]),
        # the collector flags at --disagree (10%); on this machine most configs exceed it, so wider cuts too
        "disagreement_over": {t: sum(1 for r in vals if r["disagreement"] > t) for t in (0.10, 0.25, 0.50, 1.00)},
    }
    # Profiler overhead: the label is a profiled iteration; the warm-up iterations before it ran unprofiled.
    # Unprofiled period per pass: unprofiled_ms.
    ratios = []
    for cid, r in labels.items():
        unprof = [u * 1e3 for _, st in pass_statuses(data, cid) if (u := unprofiled_ms(st)) is not None]
        if unprof and r["measured_us"] > 0:
            ratios.append(r["measured_us"] / statistics.median(unprof))
    if ratios:
        card["profiled_over_unprofiled_q"] = quantiles(ratios)
        card["profiled_over_unprofiled_n"] = len(ratios)
    # Figures whose sources are local-only (raw/, collect/) are carried over from the previous card only when it
    # describes these labels: the same labelled count and the same environments.
    same_labels = (previous.get("labelled") == card["labelled"]
                   and previous.get("environment") == card["environment"])
    if not ratios and "profiled_over_unprofiled_q" in previous and not same_labels:
        notes.append("no warm-up timings, and the previous card.json describes other labels: the profiled / "
                     "unprofiled figures are left out")
    elif "profiled_over_unprofiled_q" in previous and not ratios:
        # card.json keeps the quantiles under string keys ("0.5"); tables() looks them up by number
        card["profiled_over_unprofiled_q"] = {float(q): v for q, v in previous["profiled_over_unprofiled_q"].items()}
        card["profiled_over_unprofiled_n"] = previous.get("profiled_over_unprofiled_n", 0)
        notes.append(f"no warm-up timings under {os.path.join(data, 'raw')} (pass*.status.json): kept the previous "
                     f"card.json's profiled / unprofiled figures ({card['profiled_over_unprofiled_n']} configs)")
    env_rec, env_seen = env_record(data, card["environment"])
    if env_rec:
        card["env_record"] = env_rec
    elif env_seen and "env_record" in previous and same_labels:
        card["env_record"] = previous["env_record"]
        notes.append(f"no environment record of {', '.join(card['environment']) or '?'} in "
                     f"{os.path.join(data, 'collect')} (those there describe other hosts): kept the previous "
                     "card.json's env_record (the env table)")
    elif env_seen:
        notes.append(f"no environment record of {', '.join(card['environment']) or '?'} in "
                     f"{os.path.join(data, 'collect')} (those there describe other hosts): the env table is left out")
    elif "env_record" in previous and not same_labels:
        notes.append("no environment record, and the previous card.json describes other labels: the env table is "
                     "left out")
    elif "env_record" in previous:
        card["env_record"] = previous["env_record"]
        notes.append(f"no {os.path.join(data, 'collect', 'env-*.json')}: kept the previous card.json's "
                     f"env_record (the env table)")
    tail = one_tail_setting(labels, f"--data {data}")
    again = retest_labels(data, retest, tail, {cid: r["environment"] for cid, r in labels.items()})
    if again and again.get("tail_steps", 0) != tail:  # a retest.json kept from before
        raise ValueError(f"{os.path.join(data, RETEST_FILE)} holds labels collected with --tail-steps "
                         f"{again.get('tail_steps', 0)}, the dataset's with {tail}: re-collect the retest with "
                         f"--tail-steps {tail}")
    other_env = sorted(set(again.get("environment") or []) - set(card["environment"])) if again else []
    if other_env:  # a retest.json kept from before, of labels taken on another host (files before it name none)
        raise ValueError(f"{os.path.join(data, RETEST_FILE)} holds labels collected in {', '.join(other_env)}, the "
                         f"dataset's in {', '.join(card['environment'])}: re-collect the retest on a host of the "
                         "dataset's environment")
    if again:
        card["retest"] = {"source": again["source"], "collected": again["collected"],
                          **retest_figures(labels, again["labels"])}
    return card


def env_record(data: str, environments: list) -> tuple:
    """(the environment record of the labels' environment, whether DATA/collect holds any record). collect.py keeps
    one per environment (collect/env-<environment>.json); collections before it wrote collect/env-pass<N>.json,
    each pass over the last, which are read too but only where they name one of the labels' environments."""
    paths = sorted(glob.glob(os.path.join(data, "collect", "env-*.json")),
                   key=lambda q: (os.path.basename(q).startswith("env-pass"), q))
    seen = False
    for path in paths:
        try:
            with open(path) as fh:
                rec = json.load(fh)
        except (OSError, ValueError):
            continue
        seen = True
        if isinstance(rec, dict) and rec.get("environment") in environments:
            return rec, True
    return None, seen


def retest_figures(first: dict, second: dict) -> dict:
    """Test–retest figures of two label sets ({config: {"measured_us": ...}}) over their common configurations:
    n, mre (mean |R - L| / L), predictor_bound, mean_log_ratio (mean log R / L), median_re and p90_re; NaN when
    they share none."""
    common = sorted(set(first) & set(second))
    pairs = [(first[c]["measured_us"], second[c]["measured_us"]) for c in common]  # (L, R)
    rel = [abs(r - l) / l for l, r in pairs]
    # Half the mean |L - R| / max(L, R): no predictor of the configuration alone averages below it if the two
    # runs are alike, since |L - R| <= |P - L| + |P - R| (docs/dataset.md, Noise floor).
    gap = [abs(r - l) / max(l, r) for l, r in pairs]
    shift = [math.log(r / l) for l, r in pairs]
    return {"n": len(common),
            "mre": statistics.fmean(rel) if rel else math.nan,
            "predictor_bound": 0.5 * statistics.fmean(gap) if gap else math.nan,
            "mean_log_ratio": statistics.fmean(shift) if shift else math.nan,
            "median_re": statistics.median(rel) if rel else math.nan,
            "p90_re": quantiles(rel, (0.9,)).get(0.9, math.nan) if rel else math.nan}


RETEST_FILE = "retest.json"


def label_files(data: str) -> list:
    return sorted(glob.glob(os.path.join(data, "traces", "**", "*.etst.gz"), recursive=True))


def retest_labels(data: str, retest_dir: str = "", expect_tail: int | None = None,
                  expect_env: dict | None = None) -> dict:
    """The test–retest re-collection's iteration labels. From `retest_dir` when given (then kept in
    DATA/retest.json, a few KB, so later card runs keep the figure without the re-collected traces; not when its
    labels were collected with other --tail-steps than `expect_tail`, the dataset's, nor when a configuration's
    was collected in another environment than its label in `expect_env` ({config: environment}): the figure would
    then measure two hosts, not the labels' noise; ValueError), else from DATA/retest.json; {} when neither
    exists."""
    path = os.path.join(data, RETEST_FILE)
    if retest_dir:
        again = load_dir(retest_dir)
        if not again:
            raise ValueError(f"--retest {retest_dir}: none of its traces/**/*.etst.gz could be read")
        stamps = [os.path.getmtime(p) for p in label_files(retest_dir)]
        tail = one_tail_setting(again, f"--retest {retest_dir}")
        if expect_tail is not None and tail != expect_tail:
            raise ValueError(f"--retest {retest_dir} was collected with --tail-steps {tail}, the dataset's labels with "
                             f"{expect_tail}: re-collect the retest with --tail-steps {expect_tail}")
        other = [(cid, r["environment"], expect_env[cid]) for cid, r in sorted(again.items())
                 if expect_env and cid in expect_env and r["environment"] != expect_env[cid]]
        if other:
            cid, got, want = other[0]
            raise ValueError(f"--retest {retest_dir}: {len(other)} label(s) were collected in another environment "
                             f"than the dataset's (e.g. {cid}: {got}, the dataset's label in {want}); a test–retest "
                             "across two hosts measures the hosts: re-collect the retest on a host of the dataset's "
                             "environment")
        doc = {"source": os.path.relpath(os.path.abspath(retest_dir), ROOT),
               "collected": time.strftime("%Y-%m-%d", time.gmtime(max(stamps))) if stamps else "",
               "labels": {cid: {"measured_us": r["measured_us"], "pass_median_us": r["pass_median_us"]}
                          for cid, r in sorted(again.items())}}
        if tail:
            doc["tail_steps"] = tail  # absent: 0, as in retest files from before the tail step
        doc["environment"] = sorted({r["environment"] for r in again.values()})
        # `ets eval` reads this file (DATA/retest.json): never leave a half-written one behind
        atomic_write(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")
        return doc
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {}


def _fmt(x, spec=".1f"):
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def _count(x):
    """A count, or a quantile of counts (the median of an even number of them can end in .5)."""
    if x is None:
        return "n/a"
    return str(int(x)) if float(x).is_integer() else format(x, ".1f")


def tables(card: dict) -> dict:
    """Markdown for each <!-- card:NAME --> block of docs/dataset.md."""
    t = {}
    rows = ["| family | domain | split | manifest | labelled |", "|---|---|---|---:|---:|"]
    for k, v in card["families"].items():
        rows.append(f"| {k} | {v['domain']} | {v['split']} | {v['manifest']} | {v['labelled']} |")
    rows.append(f"| **total** | | {', '.join(f'{s} {n}' for s, n in sorted(card['per_split'].items()))} | "
                f"{card['manifest']} | {card['labelled']} |")
    t["counts"] = "\n".join(rows)
    n = max(1, card["labelled"])
    t["ops"] = "\n".join(["| ops per iteration | configs | |", "|---|---:|---|"] +
                         [f"| {lab} | {c} | {bar(c, n)} |" for lab, c in card["ops_hist"]])
    t["gap"] = "\n".join(["| gap share (%) | configs | |", "|---|---:|---|"] +
                         [f"| {lab} | {c} | {bar(c, n)} |" for lab, c in card["gap_hist"]])
    q = card["iter_ms_q"]
    gq = card["gap_q"]
    oq = card["ops_q"]
    t["summary"] = "\n".join([
        "| figure | value |", "|---|---|",
        f"| labelled configurations | {card['labelled']} (random nets {card['random_nets']}) |",
        f"| environment | {', '.join(card['environment']) or 'n/a'} |",
        f"| framework | PyTorch {', '.join(card['framework_version']) or 'n/a'} |",
        f"| size on disk (labelled traces) | {card['bytes'] / 1e6:.1f} MB |",
        f"| iteration time ms (min / median / max) | {_fmt(q.get(0.0), '.2f')} / {_fmt(q.get(0.5), '.2f')} / "
        f"{_fmt(q.get(1.0), '.2f')} |",
        f"| ops per iteration (min / median / max) | {_count(oq.get(0.0))} / {_count(oq.get(0.5))} / "
        f"{_count(oq.get(1.0))} |",
        f"| gap share (10% / median / 90%) | {_fmt(100 * gq.get(0.1, math.nan))}% / "
        f"{_fmt(100 * gq.get(0.5, math.nan))}% / {_fmt(100 * gq.get(0.9, math.nan))}% |",
        f"| Σ(time+gap) of labels vs label: mean / max abs. deviation | "
        f"{_fmt(100 * card['mean_abs_sum_discrepancy'], '.2f')}% / "
        f"{_fmt(100 * card['max_abs_sum_discrepancy'], '.2f')}% |",
    ])
    pq = card.get("profiled_over_unprofiled_q")
    if pq:
        t["summary"] += ("\n" + f"| profiled / unprofiled iteration time (10% / median / 90% / max; "
                         f"{card['profiled_over_unprofiled_n']} configs) | {_fmt(pq.get(0.1), '.2f')} / "
                         f"{_fmt(pq.get(0.5), '.2f')} / {_fmt(pq.get(0.9), '.2f')} / {_fmt(pq.get(1.0), '.2f')} |")
    rt = card.get("retest")
    t["noise"] = "\n".join([
        "| noise figure | value |", "|---|---|",
        f"| (a) single pass vs label: mean relative deviation | {_fmt(100 * card['single_pass_mrd'], '.2f')}% |",
        f"| pass disagreement max/min−1 (median over configs) | {_fmt(100 * card['pass_disagreement_median'], '.2f')}% |",
        f"| configs flagged (disagreement > threshold) | {card['flagged']} of {card['labelled']} |",
        "| pass disagreement 10% / 90% / max | " + " / ".join(
            _fmt(100 * card.get("pass_disagreement_q", {}).get(q, math.nan), ".1f") + "%" for q in (0.1, 0.9, 1.0))
        + " |",
        "| configs whose passes disagree by more than 10% / 25% / 50% / 100% | " + " / ".join(
            str(card.get("disagreement_over", {}).get(t, "n/a")) for t in (0.10, 0.25, 0.50, 1.00)) + " |",
        "| (b) test–retest MRE of the label | " + (f"{_fmt(100 * rt['mre'], '.2f')}% over {rt['n']} configs "
                                                   f"(median {_fmt(100 * rt['median_re'], '.2f')}%, "
                                                   f"p90 {_fmt(100 * rt['p90_re'], '.2f')}%; re-collected "
                                                   f"{rt.get('collected') or '?'})" if rt else
                                                   "not measured yet") + " |",
    ] + ([f"| (c) MRE no predictor can average below: ½ · mean of abs(L₂ − L₁) / max(L₁, L₂) | "
          f"{_fmt(100 * rt['predictor_bound'], '.2f')}% |",
          f"| retest vs first run: exp(mean log(L₂ / L₁)) − 1 | {_fmt(100 * math.expm1(rt['mean_log_ratio']), '+.1f')}% |"]
         if rt and "predictor_bound" in rt else []))
    env = card.get("env_record")
    if env:
        t["env"] = "\n".join(["| setting | value |", "|---|---|"] +
                             [f"| {k} | {v} |" for k, v in sorted(env.items())])
    return t


def fill(doc_path: str, blocks: dict) -> None:
    with open(doc_path) as fh:
        text = fh.read()
    for name, body in blocks.items():
        pat = re.compile(rf"(<!-- card:{name} -->\n).*?(<!-- /card:{name} -->)", re.S)
        text = pat.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)
    atomic_write(doc_path, text)


def retest_ids(data: str, n: int) -> list:
    """A deterministic, family-stratified sample of labelled configs to re-collect for the test–retest figure."""
    from tools.collect.configs import seed_of  # noqa: E402

    labels = load_dir(data)
    by_fam = {}
    for cid, r in sorted(labels.items(), key=lambda kv: seed_of("retest:" + kv[0])):
        by_fam.setdefault(r["family"], []).append(cid)
    out, i = [], 0
    while len(out) < min(n, len(labels)):
        for fam in sorted(by_fam):
            if i < len(by_fam[fam]) and len(out) < n:
                out.append(by_fam[fam][i])
        i += 1
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.path.join(ROOT, "data"))
    ap.add_argument("--retest", default="", help="a re-collection of some configs (same layout) for test–retest")
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "dataset.md"))
    ap.add_argument("--no-doc", action="store_true", help="print the figures, do not touch docs/dataset.md")
    ap.add_argument("--retest-ids", type=int, default=0, help="print N config ids to re-collect and exit")
    a = ap.parse_args(argv)
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    # A wrong --data (or --retest) would otherwise overwrite the card with zeros: refuse before writing anything.
    for what, folder in (("--data", a.data), ("--retest", a.retest)):
        if folder and not label_files(folder):
            print(f"card.py: {what} {folder}: no labelled traces (traces/**/*.etst.gz) there; nothing written",
                  file=sys.stderr)
            return 2
    if a.retest_ids:
        print("\n".join(retest_ids(a.data, a.retest_ids)))
        return 0
    if not a.no_doc and not os.path.isfile(a.doc):
        print(f"card.py: --doc {a.doc} does not exist; nothing written", file=sys.stderr)
        return 2
    card_path = os.path.join(a.data, "card.json")
    try:
        with open(card_path) as fh:
            previous = json.load(fh)
    except (OSError, ValueError):
        previous = {}
    labels = load_dir(a.data)
    if not labels:
        print(f"card.py: --data {a.data}: none of its traces/**/*.etst.gz could be read; nothing written",
              file=sys.stderr)
        return 2
    notes = []
    try:
        card = compute(a.data, a.retest, previous, notes, labels)
    except ValueError as e:
        print(f"card.py: {e}; nothing written", file=sys.stderr)
        return 2
    for n in notes:
        print(f"card: note: {n}", file=sys.stderr)
    blocks = tables(card)
    atomic_write(card_path, json.dumps(card, indent=1, sort_keys=True, default=str) + "\n")
    if a.no_doc:
        for k, v in blocks.items():
            print(f"## {k}\n{v}\n")
    else:
        fill(a.doc, blocks)
        print(f"card: {card['labelled']} labelled configs; tables written to {os.path.relpath(a.doc, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
