#!/usr/bin/env python3
# Synthesises a large Kineto JSON (default ~1 GB) for tools/bench_big_import.sh by repeating a real trace's
# ProfilerSteps back to back: timestamps shifted by the steps' span, step numbers, correlation / external / flow
# ids shifted so every copy stays distinct. Written to /tmp (never committed). Standard library only.
import argparse
import gzip
import json
import re

SHIFT_ARGS = ("correlation", "External id", "external id")
MARK = re.compile(r'"@@(TS|ID|STEP|A\d)@@"')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source", help="Kineto JSON(.gz) with ProfilerStep# markers")
    ap.add_argument("out")
    ap.add_argument("--gb", type=float, default=1.0, help="target size in GB (10^9 bytes)")
    a = ap.parse_args()
    with open(a.source, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw)
    events = doc.pop("traceEvents")
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X"]
    if not steps:
        raise SystemExit("source has no ProfilerStep# markers")
    t0 = min(int(e["ts"]) for e in steps)
    t1 = max(int(e["ts"]) + int(e["dur"]) + 1 for e in steps)
    period = t1 - t0
    nsteps = len(steps)
    inside = [e for e in events if "ts" in e and t0 <= float(e["ts"]) < t1]
    outside = [e for e in events if not ("ts" in e and t0 <= float(e["ts"]) < t1)]
    max_id = 0
    for e in inside:
        for k in SHIFT_ARGS:
            v = e.get("args", {}).get(k)
            if isinstance(v, int):
                max_id = max(max_id, v)
        if isinstance(e.get("id"), int):
            max_id = max(max_id, e["id"])
    id_step = max_id + 1

    # Each event becomes a template: the shifted fields are markers, filled per copy.
    templates = []
    for e in inside:
        e = json.loads(json.dumps(e))
        vals = {"TS": e["ts"]}
        e["ts"] = "@@TS@@"
        if isinstance(e.get("id"), int):
            vals["ID"] = e["id"]
            e["id"] = "@@ID@@"
        name = str(e.get("name", ""))
        if name.startswith("ProfilerStep#"):
            vals["STEP"] = int(name[13:])
            e["name"] = "@@STEP@@"
        args = e.get("args", {})
        for i, k in enumerate(SHIFT_ARGS):
            if isinstance(args.get(k), int):
                vals["A%d" % i] = args[k]
                args[k] = "@@A%d@@" % i
        parts = MARK.split(json.dumps(e, separators=(",", ":")))
        templates.append((parts, vals))

    target = int(a.gb * 1e9)
    written = 0
    copies = 0
    with open(a.out, "w") as f:
        head = json.dumps(doc, separators=(",", ":"))[:-1]
        f.write(head + (',' if len(doc) else '') + '"traceEvents":[\n')
        first = True
        for e in outside:
            f.write(("" if first else ",\n") + json.dumps(e, separators=(",", ":")))
            first = False
        while written < target:
            dt, di, ds = copies * period, copies * id_step, copies * nsteps
            out = []
            for parts, vals in templates:
                s = [parts[0]]
                for j in range(1, len(parts), 2):
                    k = parts[j]
                    v = vals[k]
                    if k == "TS":
                        s.append(repr(v + dt) if isinstance(v, float) else str(v + dt))
                    elif k == "STEP":
                        s.append('"ProfilerStep#%d"' % (v + ds))
                    else:
                        s.append(str(v + di))
                    s.append(parts[j + 1])
                out.append("".join(s))
            chunk = ("" if first else ",\n") + ",\n".join(out)
            first = False
            f.write(chunk)
            written += len(chunk)
            copies += 1
        f.write("\n]}\n")
    print(f"{a.out}: {copies} copies of {nsteps} steps ({len(inside)} events each), {written / 1e9:.2f} GB")


if __name__ == "__main__":
    main()
