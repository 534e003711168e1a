#!/usr/bin/env python3
# Predicted vs measured iteration time per method, from `ets eval --predictions OUT.csv` (one row per trace).
# Usage: /usr/bin/python3 tools/plot_eval.py PREDICTIONS.csv OUT.png [--title TEXT]
# Log-log scatter, one panel per method, the y = x line and ±10% band; each panel's title carries its MRE
# (|pred − true| / true, as ets eval computes it). As in ets eval, a row whose measured time is not positive (or is
# null) has no error and is left out; a labelled row whose prediction is null (non-finite: ets eval writes null for
# NaN and ±inf) counts, and makes the method's MRE non-finite, "n/a" here as in `ets eval --json`; such rows are
# listed on stderr and counted in the panel's title, never dropped silently.
import argparse
import math
import sys

from plot_common import die, number, pyplot, read_rows



def main() -> None:
    ap = argparse.ArgumentParser(description="Predicted vs measured iteration time per method, from "
                                 "`ets eval --predictions OUT.csv`. Run with /usr/bin/python3 (needs matplotlib).")
    ap.add_argument("csv")
    ap.add_argument("out")
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    plt = pyplot()
    rows = read_rows(a.csv)
    if not rows:
        die(f"{a.csv}: no rows")
    if "measured_us" not in rows[0] or "family" not in rows[0]:
        die(f"{a.csv} is not `ets eval --predictions` output (no measured_us / family column)")
    methods = [c[:-3] for c in rows[0] if c.endswith("_us") and c != "measured_us"]
    if not methods:
        die(f"{a.csv} has no METHOD_us prediction column")
    for i, r in enumerate(rows, start=2):
        for c in ["measured_us"] + [m + "_us" for m in methods]:
            try:
                number(r[c])
            except (TypeError, ValueError):
                die(f"{a.csv}:{i}: {c} is {r[c]!r}, not a number or null")
    families = sorted({r["family"] or "unknown" for r in rows})
    colours = {f: plt.cm.tab10(i % 10) for i, f in enumerate(families)}
    fig, axes = plt.subplots(1, len(methods), figsize=(4.2 * len(methods), 4.2), squeeze=False)
    # ets eval scores a row only when its truth is > 0 (a null, zero or negative one is unlabelled)
    truth_all = [t for t in (number(r["measured_us"]) / 1000 for r in rows) if t > 0]
    if not truth_all:
        die(f"{a.csv}: no row with a positive measured_us, nothing to plot")
    lo, hi = min(truth_all), max(truth_all)
    for ax, m in zip(axes[0], methods):
        errs, bad = [], []
        for f in families:
            xs, ys = [], []
            for r in rows:
                if (r["family"] or "unknown") != f:
                    continue
                t, p = number(r["measured_us"]) / 1000, number(r[m + "_us"]) / 1000
                if not t > 0:
                    continue
                if not math.isfinite(p):
                    bad.append(r.get("trace", "?"))
                    continue
                xs.append(t)
                ys.append(max(p, 1e-3))
                errs.append(abs(p - t) / t)
                lo, hi = min(lo, ys[-1]), max(hi, ys[-1])
            ax.scatter(xs, ys, s=9, alpha=0.7, color=colours[f], label=f)
        n = len(errs) + len(bad)
        if bad:
            print(f"plot_eval.py: {m}: {len(bad)} of {n} labelled rows have a non-finite (null) prediction, so its "
                  f"MRE is n/a as in ets eval: {', '.join(bad[:10])}{' ...' if len(bad) > 10 else ''}",
                  file=sys.stderr)
            ax.set_title(f"{m}: MRE n/a, {len(bad)} null prediction{'s' if len(bad) > 1 else ''} (n={n})",
                         fontsize=10)
        else:
            mre = 100 * sum(errs) / len(errs) if errs else float("nan")
            ax.set_title(f"{m}: MRE {mre:.1f}% (n={n})", fontsize=10)
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
    try:
        fig.savefig(a.out, dpi=110)
    except (OSError, ValueError) as e:  # ValueError: an extension matplotlib cannot write (out.xyz)
        die(f"cannot write {a.out}: {getattr(e, 'strerror', None) or e}")
    print(a.out)


if __name__ == "__main__":
    main()
