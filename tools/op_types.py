#!/usr/bin/env python3
# Where a family's error comes from, from `ets eval --op-types OUT.csv` (one row per family, op type and phase):
# per family, the error of Σ time and of Σ gap as a share of the family's summed measured time, then the op types
# whose Σ(time + gap) is furthest from their labels. Sums over configurations, so the large ones weigh most: this
# says which ops carry the error, not the per-configuration MRE that `ets eval` reports.
# Usage: python3 tools/op_types.py OP_TYPES.csv [--top N] [--family F] [--json]
import argparse
import json
import math
import sys

from plot_common import die, number, read_rows

COLUMNS = ("family", "type", "phase", "ops", "measured_time_us", "measured_gap_us", "predicted_time_us",
           "predicted_gap_us", "family_measured_us")


def summarise(rows: list, top: int) -> dict:
    """{family: {measured_us, time_error, gap_error, gap_share, rows: [...top by |error|]}}; shares of the family's
    summed measured time."""
    out = {}
    for r in rows:
        f = out.setdefault(r["family"], {"measured_us": number(r["family_measured_us"]), "all": []})
        mt, mg = number(r["measured_time_us"]), number(r["measured_gap_us"])
        pt, pg = number(r["predicted_time_us"]), number(r["predicted_gap_us"])
        f["all"].append({"type": r["type"], "phase": r["phase"], "ops": int(r["ops"]), "measured": mt + mg,
                         "predicted": pt + pg, "time_error": pt - mt, "gap_error": pg - mg, "gap": mg})
    for f in out.values():
        tot = f.pop("measured_us")
        rs = f.pop("all")
        f["family_measured_us"] = tot
        f["time_error"] = sum(r["time_error"] for r in rs) / tot
        f["gap_error"] = sum(r["gap_error"] for r in rs) / tot
        f["gap_share"] = sum(r["gap"] for r in rs) / tot
        # an op type with a non-finite prediction sorts first: it is the one to look at
        rs.sort(key=lambda r: -abs(r["predicted"] - r["measured"]) if math.isfinite(r["predicted"]) else -math.inf)
        f["rows"] = [{"type": r["type"], "phase": r["phase"], "ops": r["ops"], "measured_share": r["measured"] / tot,
                      "predicted_share": r["predicted"] / tot, "time_error": r["time_error"] / tot,
                      "gap_error": r["gap_error"] / tot} for r in rs[:top]]
    return out


def finite_or_null(v):
    """v with every non-finite number (a null cell of the CSV, and what it spreads to) as None."""
    if isinstance(v, dict):
        return {k: finite_or_null(x) for k, x in v.items()}
    if isinstance(v, list):
        return [finite_or_null(x) for x in v]
    return None if isinstance(v, float) and not math.isfinite(v) else v


def main() -> None:
    ap = argparse.ArgumentParser(description="Which op types carry each family's error, from `ets eval --op-types`.")
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=5, help="op types listed per family (default 5)")
    ap.add_argument("--family", default="", help="only this family")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    a = ap.parse_args()
    if a.top < 0:
        die("--top must be >= 0")
    rows = read_rows(a.csv)
    if not rows:
        die(f"{a.csv}: no rows")
    missing = [c for c in COLUMNS if c not in rows[0]]
    if missing:
        die(f"{a.csv} is not `ets eval --op-types` output (no {', '.join(missing)} column)")
    if a.family:
        rows = [r for r in rows if r["family"] == a.family]
        if not rows:
            die(f"{a.csv} has no family '{a.family}'")
    try:
        s = summarise(rows, a.top)
    except (ValueError, TypeError, ZeroDivisionError) as e:  # TypeError: a short row's missing cells are None
        die(f"{a.csv}: unreadable row ({e})")
    if a.json:
        print(json.dumps(finite_or_null(s), sort_keys=True, allow_nan=False))  # NaN is not JSON: null, as `ets` does
        return
    pct = lambda x: f"{100 * x:+6.1f}%"  # noqa: E731
    for fam, f in sorted(s.items()):
        print(f"{fam}: Σ time {pct(f['time_error'])}, Σ gap {pct(f['gap_error'])} of the measured "
              f"{f['family_measured_us'] / 1e3:.1f} ms (gaps {100 * f['gap_share']:.1f}% of it)")
        for r in f["rows"]:
            print(f"  {r['type']:>24} {r['phase']:<8} {r['ops']:>7} ops  measured {100 * r['measured_share']:5.1f}%  "
                  f"predicted {100 * r['predicted_share']:5.1f}%  time {pct(r['time_error'])}  gap {pct(r['gap_error'])}")


if __name__ == "__main__":
    sys.exit(main())
