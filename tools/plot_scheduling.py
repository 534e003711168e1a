#!/usr/bin/env python3
# Plots cluster_sim results (examples/cluster_sim): each predictor's schedule metrics relative to the oracle's, per
# policy. Usage: /usr/bin/python3 tools/plot_scheduling.py RESULTS.csv OUT.png
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = list(csv.DictReader(open(sys.argv[1])))
metrics = [("SJF", "avg_jct_h", "SJF avg JCT"), ("SRTF", "avg_jct_h", "SRTF avg JCT"),
           ("SRTF", "p99_jct_h", "SRTF p99 JCT"), ("EDF", "total_tardiness_h", "EDF total tardiness"),
           ("EDF", "deadline_misses", "EDF deadline misses")]
predictors = [p for p in dict.fromkeys(r["predictor"] for r in rows) if p != "oracle"]
fig, ax = plt.subplots(figsize=(9, 4))
width = 0.8 / max(1, len(predictors))
for k, pred in enumerate(predictors):
    ys, xs = [], [i + (k - (len(predictors) - 1) / 2) * width for i in range(len(metrics))]
    for i, (pol, col, _) in enumerate(metrics):
        oracle = next(float(r[col]) for r in rows if r["policy"] == pol and r["predictor"] == "oracle")
        v = next(float(r[col]) for r in rows if r["policy"] == pol and r["predictor"] == pred)
        if oracle:
            ys.append(100.0 * (v - oracle) / oracle)
        else:  # the oracle scored 0 (no deadline missed): no percentage exists, so say the value instead
            ys.append(float("nan"))
            ax.annotate(f"{v:g} vs 0", (xs[i], 0), rotation=90, ha="center", va="bottom", fontsize=7)
    ax.bar(xs, ys, width, label=pred)
ax.axhline(0, color="black", linewidth=0.8)
for y in (-10, 10):
    ax.axhline(y, color="grey", linewidth=0.6, linestyle="--")
ax.set_xticks(range(len(metrics)))
ax.set_xlim(-0.5, len(metrics) - 0.5)  # the "v vs 0" labels sit at 0 on the axis: keep every group in view
ax.set_xticklabels([m[2] for m in metrics], fontsize=8)
ax.set_ylabel("difference from oracle (%)")
ax.set_title("Schedules driven by predicted iteration times vs. oracle (Philly jobs)")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
print("wrote", sys.argv[2])
