#!/usr/bin/env python3
# Real Kineto traces and PyTorch Execution Traces with one structural character of their "traceEvents" / "nodes"
# deleted, doubled or replaced: where Python's json refuses the damaged text, `ets convert` must refuse it too, or
# convert it to exactly what the undamaged trace converts to (damage in a part the reader never reads, such as a flow
# event's fields). Anything else is a silent change: the Kineto reader took such damage for the end of the events
# and lost ops without a word (38 of 161 damaged shared traces before the fix; docs/CHANGELOG.md). Reads the
# committed JSON fixtures, and the shared ones under ../shared/data/kineto-gpu where present.
# Usage: damaged_json_test.py ETS FIXTURES_DIR SHARED_DIR WORK_DIR [DAMAGES_PER_FILE=12]
import glob
import gzip
import json
import os
import random
import subprocess
import sys

from checks import check, finish  # tests/cli/checks.py, beside this script

ets, fixtures, shared, work = sys.argv[1:5]
per_file = int(sys.argv[5]) if len(sys.argv) > 5 else 12
os.makedirs(work, exist_ok=True)
MAX_BYTES = 8_000_000  # larger traces add time, not cases


def json_files():
    found = glob.glob(os.path.join(fixtures, "*.json.gz"))
    found += [f for f in glob.glob(os.path.join(shared, "kineto-gpu", "**", "*.json*"), recursive=True)
              if not f.endswith(".tar.gz")]
    return sorted(set(found))


def convert(path):
    """(returncode, stderr tail, the converted lines without the source path, or None)."""
    out = os.path.join(work, "out.etst")
    if os.path.exists(out):
        os.remove(out)
    r = subprocess.run([ets, "convert", path, "-o", out, "--quiet", "--keep-incomplete"], capture_output=True,
                       text=True, timeout=300)
    if r.returncode != 0:
        return r.returncode, r.stderr[-300:], None
    with open(out, "rb") as fh:
        return 0, "", [line for line in fh.read().split(b"\n") if b"source_path" not in line]


rng = random.Random(20261206)
damaged = refused = unchanged = 0
kinds = set()
for path in json_files():
    with open(path, "rb") as fh:
        raw = fh.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if len(raw) > MAX_BYTES:
        continue
    try:
        text = raw.decode("utf-8")
        json.loads(text)
    except ValueError:
        continue  # not a JSON document to begin with
    key = next((k for k in ('"traceEvents"', '"nodes"') if k in text), None)
    if key is None:
        continue
    base = os.path.join(work, "base.json")
    with open(base, "w") as fh:
        fh.write(text)
    rc, err, want = convert(base)
    if rc != 0:
        continue  # a trace the reader refuses whole (none of the fixtures): nothing to compare with
    start = text.index(key)
    kinds.add(key)
    spots = [i for i in range(start, len(text)) if text[i] in ',:"{}[]']
    made = 0
    while made < per_file:
        i = rng.choice(spots)
        how = rng.choice(("delete", "double", "replace"))
        bad = (text[:i] + text[i + 1:] if how == "delete" else text[:i] + text[i] + text[i:] if how == "double"
               else text[:i] + rng.choice(",:") + text[i + 1:])
        try:
            json.loads(bad)
            continue  # still JSON (a doubled quote inside a string may be): not a case
        except ValueError:
            pass
        made += 1
        damaged += 1
        bad_path = os.path.join(work, "damaged.json")
        with open(bad_path, "w") as fh:
            fh.write(bad)
        rc, err, got = convert(bad_path)
        if rc != 0:
            check("[ets.kineto.1]" in err or "[ets." in err, f"{path}: damage refused without an error id: {err}")
            refused += 1
        else:
            unchanged += got == want
            check(got == want, f"{os.path.basename(path)}: {how} {text[i]!r} at byte {i} "
                               f"({text[max(0, i - 50):i + 50]!r}) was read, and changed the conversion")

check(damaged >= 20 and len(kinds) == 2, f"only {damaged} damaged traces of {sorted(kinds)} were made (fixtures missing?)")
finish(f"damaged JSON traces ({', '.join(sorted(kinds))}): {damaged}, refused {refused}, converted unchanged {unchanged}")
