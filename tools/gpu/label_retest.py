#!/usr/bin/env python3
"""Compares the labels of two collection runs of the same configurations (tools/gpu/label_retest.sh).

    label_retest.py RUN_A RUN_B

Prints the retest MRE (b) = mean |B - A| / A, the bound (c) = mean |B - A| / (2 max(A, B)) below which no prediction
can average against one run's labels when the other's are as likely, the mean log shift B / A, each run's single
pass deviation (a) and median pass disagreement, and one line per configuration. Exit status 1 when no
configuration is labelled in both runs.
"""
import math
import os
import statistics as st
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "collect"))
from card import load_dir  # noqa: E402


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    A, B = load_dir(argv[1]), load_dir(argv[2])
    ids = sorted(set(A) & set(B))
    print(f"labelled: A {len(A)}, B {len(B)}, both {len(ids)}")
    if not ids:
        return 1
    a = {i: A[i]["measured_us"] for i in ids}
    b = {i: B[i]["measured_us"] for i in ids}
    rel = [abs(b[i] - a[i]) / a[i] for i in ids]
    bound = 0.5 * st.mean(abs(b[i] - a[i]) / max(a[i], b[i]) for i in ids)
    shift = math.expm1(st.mean(math.log(b[i] / a[i]) for i in ids))
    print(f"retest MRE (b) {st.mean(rel):.4f}, bound (c) {bound:.4f}, shift B/A {shift:+.4f}, max {max(rel):.4f}")
    for name, d in (("A", A), ("B", B)):
        print(f"{name}: single pass (a) {st.mean(d[i]['single_pass_deviation'] for i in ids):.4f}, "
              f"median disagreement {st.median(d[i]['disagreement'] for i in ids):.4f}")
    for i in ids:
        print(f"  {i}: A {a[i] / 1e3:.3f} ms, B {b[i] / 1e3:.3f} ms, {100 * (b[i] / a[i] - 1):+.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
