#!/usr/bin/env python3
# Writes the tiny committed files of tests/bad_inputs/ (the generated cases are built by bad_inputs_test.cpp).
# Usage: tools/make_bad_inputs.py [OUT_DIR=tests/bad_inputs]; deterministic (gzip mtime 0).
import gzip
import os
import sys

if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1].startswith("-")):  # --help made a folder "--help"
    print("usage: tools/make_bad_inputs.py [OUT_DIR=tests/bad_inputs]", file=sys.stderr)
    sys.exit(2)
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "bad_inputs")
files = {
    "empty.json": b"",
    "truncated.json": b'{"schemaVersion":1,"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,"du',
    "other_tool.json": b'{"name": "my-package", "version": "1.0.0", "dependencies": {"left-pad": "^1.3.0"}, '
                       b'"scripts": {"test": "jest"}}\n',
    "chrome_trace_other_tool.json": b'{"traceEvents":[\n'
    b'{"name":"ThreadMain","ph":"B","pid":4,"tid":9,"ts":100,"cat":"toplevel"},\n'
    b'{"name":"ParseHTML","ph":"X","pid":4,"tid":9,"ts":110,"dur":30,"cat":"devtools.timeline"},\n'
    b'{"name":"ThreadMain","ph":"E","pid":4,"tid":9,"ts":200,"cat":"toplevel"}\n'
    b'],"displayTimeUnit":"ms"}\n',
    "not_a_database.sqlite": b"SQLite format 3\0this is not really a database page, only its magic",
    "model_magic_only.etsm": b"ETSMODEL",
}
full = gzip.compress(b'{"traceEvents":[' + b'{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,"dur":1},' * 20
                     + b"{}]}", mtime=0)
files["truncated.json.gz"] = full[: len(full) // 2]
files["corrupt.json.gz"] = full[:10] + b"\xff" * 40
os.makedirs(out, exist_ok=True)
for name, data in files.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
