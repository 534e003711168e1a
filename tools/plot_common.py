# Shared by the scripts that read `ets` CSV output (tools/plot_eval.py, tools/plot_scheduling.py, tools/op_types.py): a
# clear exit instead of a traceback when matplotlib is missing or the CSV cannot be read, and its number cells.
import csv
import math
import os
import sys


def die(msg: str) -> None:
    print(f"{os.path.basename(sys.argv[0])}: {msg}", file=sys.stderr)
    sys.exit(2)


def pyplot():
    """matplotlib.pyplot on the Agg backend (files only, no display)."""
    try:
        import matplotlib
    except ImportError:
        die(f"matplotlib is not installed for {sys.executable}; run it with /usr/bin/python3 "
            "(Debian's python3-matplotlib: apt-get install python3-matplotlib)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def number(text) -> float:
    """A CSV cell of `ets eval` output: a number, or "" / null (non-finite) -> NaN."""
    text = (text or "").strip()
    return math.nan if text in ("", "null") else float(text)


def read_rows(path: str) -> list:
    """The CSV's rows as dicts."""
    try:
        with open(path, newline="") as fh:
            return list(csv.DictReader(fh))
    except OSError as e:
        die(f"cannot read {path}: {e.strerror}")
