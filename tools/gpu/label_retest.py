#!/usr/bin/env python3
"""Compares the labels of two collection runs of the same configurations (tools/gpu/label_retest.sh).

    label_retest.py RUN_A RUN_B

Prints the dataset card's test–retest figures for run B against run A (card.py's retest_figures: the retest MRE (b),
the predictor bound (c), the mean shift B / A, the median and 90th-percentile relative change), each run's single
pass deviation (a) and median pass disagreement, and one line per configuration. Exit status 1 when no
configuration is labelled in both runs.
"""
import math
import os
import statistics as st
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "collect"))
from card import load_dir, retest_figures  # noqa: E402


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    A, B = load_dir(argv[1]), load_dir(argv[2])
    ids = sorted(set(A) & set(B))
    print(f"labelled: A {len(A)}, B {len(B)}, both {len(ids)}")
    if not ids:
        return 1
    f = retest_figures(A, B)
    print(f"retest MRE (b) {f['mre']:.4f}, bound (c) {f['predictor_bound']:.4f}, "
          f"shift B/A {math.expm1(f['mean_log_ratio']):+.4f}, median {f['median_re']:.4f}, p90 {f['p90_re']:.4f}")
    for name, d in (("A", A), ("B", B)):
        print(f"{name}: single pass (a) {st.mean(d[i]['single_pass_deviation'] for i in ids):.4f}, "
              f"median disagreement {st.median(d[i]['disagreement'] for i in ids):.4f}")
    for i in ids:
        a, b = A[i]["measured_us"], B[i]["measured_us"]
        print(f"  {i}: A {a / 1e3:.3f} ms, B {b / 1e3:.3f} ms, {100 * (b / a - 1):+.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
