#!/usr/bin/env python3
# Predicted vs measured iteration time per method, from `ets eval --predictions OUT.csv` (one row per trace).
# Usage: /usr/bin/python3 tools/plot_eval.py PREDICTIONS.csv OUT.png [--title TEXT]
# Log-log scatter, one panel per method, the y = x line and ±10% band; each panel's title carries its MRE
# (|pred − true| / true, as ets eval computes it).
import argparse
import csv
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("out")
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    with open(a.csv) as fh:
        rows = list(csv.DictReader(fh))
    if not rows:
        raise SystemExit(f"{a.csv}: no rows")
    methods = [c[:-3] for c in rows[0] if c.endswith("_us") and c != "measured_us"]
    families = sorted({r["family"] or "unknown" for r in rows})
    colours = {f: plt.cm.tab10(i % 10) for i, f in enumerate(families)}
    fig, axes = plt.subplots(1, len(methods), figsize=(4.2 * len(methods), 4.2), squeeze=False)
    truth_all = [float(r["measured_us"]) / 1000 for r in rows]
    lo, hi = min(truth_all), max(truth_all)
    for ax, m in zip(axes[0], methods):
        errs = []
        for f in families:
            xs, ys = [], []
            for r in rows:
                if (r["family"] or "unknown") != f:
                    continue
                t, p = float(r["measured_us"]) / 1000, float(r[m + "_us"]) / 1000
                if not (math.isfinite(t) and math.isfinite(p)) or t <= 0:
                    continue
                xs.append(t)
                ys.append(max(p, 1e-3))
                errs.append(abs(p - t) / t)
                lo, hi = min(lo, ys[-1]), max(hi, ys[-1])
            ax.scatter(xs, ys, s=9, alpha=0.7, color=colours[f], label=f)
        mre = 100 * sum(errs) / len(errs) if errs else float("nan")
        ax.set_title(f"{m}: MRE {mre:.1f}% (n={len(errs)})", fontsize=10)
    for ax in axes[0]:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.plot([lo, hi], [lo, hi], color="black", linewidth=0.8)
        ax.fill_between([lo, hi], [0.9 * lo, 0.9 * hi], [1.1 * lo, 1.1 * hi], color="grey", alpha=0.2, linewidth=0)
        ax.set_xlabel("measured iteration time (ms)")
        ax.grid(True, which="both", linewidth=0.3)
    axes[0][0].set_ylabel("predicted iteration time (ms)")
    axes[0][-1].legend(fontsize=7, loc="upper left", markerscale=1.5)
    if a.title:
        fig.suptitle(a.title, fontsize=11)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print(a.out)


if __name__ == "__main__":
    main()
