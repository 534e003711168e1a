#!/usr/bin/env python3
# Plots cluster_sim results (examples/cluster_sim): each predictor's schedule metrics relative to the oracle's, per
# policy. Usage: /usr/bin/python3 tools/plot_scheduling.py RESULTS.csv OUT.png
import argparse

from plot_common import die, pyplot, read_rows

METRICS = [("SJF", "avg_jct_h", "SJF avg JCT"), ("SRTF", "avg_jct_h", "SRTF avg JCT"),
           ("SRTF", "p99_jct_h", "SRTF p99 JCT"), ("EDF", "total_tardiness_h", "EDF total tardiness"),
           ("EDF", "deadline_misses", "EDF deadline misses")]




def main() -> None:
    ap = argparse.ArgumentParser(description="Each predictor's cluster_sim schedule metrics relative to the oracle's, "
                                 "per policy. Run with /usr/bin/python3 (needs matplotlib).")
    ap.add_argument("csv", help="results.csv written by examples/cluster_sim")
    ap.add_argument("out", help="image to write (PNG)")
    a = ap.parse_args()
    plt = pyplot()
    rows = read_rows(a.csv)
    need = {"policy", "predictor"} | {col for _, col, _ in METRICS}
    missing = sorted(need - set(rows[0])) if rows else sorted(need)
    if missing:
        die(f"{a.csv} is not cluster_sim results: no rows, or no column {', '.join(missing)}")

    def value(pol, pred, col):
        for r in rows:
            if r["policy"] == pol and r["predictor"] == pred:
                try:
                    return float(r[col])
                except (TypeError, ValueError):
                    die(f"{a.csv}: {pol} / {pred}: {col} is {r[col]!r}, not a number")
        die(f"{a.csv}: no {pol} row for predictor {pred}")

    predictors = [p for p in dict.fromkeys(r["predictor"] for r in rows) if p != "oracle"]
    if not predictors:  # an empty chart, "wrote" and exit 0 hid it
        die(f"{a.csv}: no predictor other than oracle to compare")
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / max(1, len(predictors))
    for k, pred in enumerate(predictors):
        ys, xs = [], [i + (k - (len(predictors) - 1) / 2) * width for i in range(len(METRICS))]
        for i, (pol, col, _) in enumerate(METRICS):
            oracle = value(pol, "oracle", col)
            v = value(pol, pred, col)
            if oracle:
                ys.append(100.0 * (v - oracle) / oracle)
            else:  # the oracle scored 0 (no deadline missed): no percentage exists, so say the value instead
                ys.append(float("nan"))
                ax.annotate(f"{v:g} vs 0", (xs[i], 0), rotation=90, ha="center", va="bottom", fontsize=7)
        ax.bar(xs, ys, width, label=pred)
    ax.axhline(0, color="black", linewidth=0.8)
    for y in (-10, 10):
        ax.axhline(y, color="grey", linewidth=0.6, linestyle="--")
    ax.set_xticks(range(len(METRICS)))
    ax.set_xlim(-0.5, len(METRICS) - 0.5)  # the "v vs 0" labels sit at 0 on the axis: keep every group in view
    ax.set_xticklabels([m[2] for m in METRICS], fontsize=8)
    ax.set_ylabel("difference from oracle (%)")
    ax.set_title("Schedules driven by predicted iteration times vs. oracle (Philly jobs)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    try:
        fig.savefig(a.out, dpi=110)
    except (OSError, ValueError) as e:  # ValueError: an extension matplotlib cannot write (out.xyz)
        die(f"cannot write {a.out}: {getattr(e, 'strerror', None) or e}")
    print("wrote", a.out)


if __name__ == "__main__":
    main()
