#!/usr/bin/env python3
# Compiles every C++ snippet in the docs against a built ETS, so documentation cannot drift from the API.
# Used by the CTest test `doc_snippets`; runnable by hand (see --help). Standard library only.
"""Extract ```cpp blocks from Markdown files and build them against ets::ets.

Conventions for ```cpp (or ```c++) fenced blocks:
  ```cpp nocompile          skipped (pseudo-code, fragments, output of other tools)
  first line `// snippet: standalone`
                            compiled as its own translation unit and linked into its own program (needs main())
  anything else             the body of a function `void ets_doc_snippet_N()` in a translation unit that includes
                            every public header (include/ets/*.hpp) and common standard headers; all such
                            snippets are linked into one program, so the symbols they use must exist.
Compiler errors point at the Markdown file and line (#line directives).
"""
import argparse
import glob
import os
import re
import subprocess
import sys

FENCE_OPEN = re.compile(r"^(\s*)(```+|~~~+)\s*(cpp|c\+\+)\b(.*)$")
STANDALONE_MARK = "// snippet: standalone"
STD_HEADERS = ["cmath", "cstdint", "cstdio", "cstdlib", "exception", "fstream", "iostream", "map", "memory",
               "optional", "sstream", "string", "string_view", "utility", "vector"]


class Snippet:
    def __init__(self, path, line, code, standalone):
        self.path, self.line, self.code, self.standalone = path, line, code, standalone


def extract(path):
    """Returns (snippets, skipped_count) for one Markdown file; line numbers are 1-based, of the first code line."""
    snippets, skipped = [], 0
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE_OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(4).split()
        start = i + 1
        j = start
        while j < len(lines) and not lines[j].strip().startswith(fence[0] * len(fence)):
            j += 1
        if j == len(lines):
            raise SystemExit(f"{path}:{i + 1}: unterminated code fence")
        body = [l[len(indent):] if l.startswith(indent) else l.lstrip() for l in lines[start:j]]
        i = j + 1
        if "nocompile" in info:
            skipped += 1
            continue
        standalone = bool(body) and body[0].strip() == STANDALONE_MARK
        snippets.append(Snippet(path, start + 1, "\n".join(body) + "\n", standalone))
    return snippets, skipped


def public_headers(source_dir):
    hdrs = sorted(glob.glob(os.path.join(source_dir, "include", "ets", "*.hpp")))
    return [os.path.basename(h) for h in hdrs if not h.endswith("-inl.hpp")]


def write_if_changed(path, text):
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def generate(snippets, source_dir, out_dir):
    """Writes the CMake project; returns {target name: snippet} for standalone programs."""
    src = os.path.join(out_dir, "src")
    os.makedirs(src, exist_ok=True)
    includes = "".join(f"#include <ets/{h}>\n" for h in public_headers(source_dir))
    includes += "".join(f"#include <{h}>\n" for h in STD_HEADERS)
    wrapped, standalone = [], {}
    for n, s in enumerate(snippets):
        rel = os.path.relpath(s.path, source_dir)
        line_dir = f'#line {s.line} "{rel}"\n'
        if s.standalone:
            name = f"snippet_{n}"
            write_if_changed(os.path.join(src, name + ".cpp"), line_dir + s.code)
            standalone[name] = s
        else:
            name = f"wrapped_{n}.cpp"
            text = (f"// From {rel}:{s.line}\n{includes}\nvoid ets_doc_snippet_{n}();\n"
                    f"void ets_doc_snippet_{n}() {{\n{line_dir}{s.code}}}\n")
            write_if_changed(os.path.join(src, name), text)
            wrapped.append(name)
    write_if_changed(os.path.join(src, "wrapped_main.cpp"),
                     "// Links the wrapped snippets; they are compiled and linked, never run.\nint main() { return 0; }\n")
    cm = ["cmake_minimum_required(VERSION 3.25)", "project(ets_doc_snippets LANGUAGES CXX)",
          "set(CMAKE_CXX_STANDARD 17)", "set(CMAKE_CXX_STANDARD_REQUIRED ON)",
          "find_package(ets CONFIG REQUIRED)",
          "add_executable(doc_snippets_wrapped src/wrapped_main.cpp "
          + " ".join(f"src/{w}" for w in wrapped) + ")",
          "target_link_libraries(doc_snippets_wrapped PRIVATE ets::ets)"]
    for name in standalone:
        cm += [f"add_executable({name} src/{name}.cpp)", f"target_link_libraries({name} PRIVATE ets::ets)"]
    write_if_changed(os.path.join(out_dir, "CMakeLists.txt"), "\n".join(cm) + "\n")
    return standalone


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source-dir", required=True, help="ETS source tree (for docs/ and include/ets/)")
    ap.add_argument("--ets-dir", required=True,
                    help="directory holding etsConfig.cmake: an ETS build tree or <prefix>/lib/cmake/ets")
    ap.add_argument("--work-dir", required=True, help="where the generated project and its build go")
    ap.add_argument("--generator", default=None)
    ap.add_argument("--config", default="Release")
    ap.add_argument("--jobs", default=os.environ.get("ETS_JOBS", "1"))
    ap.add_argument("--cmake-arg", action="append", default=[],
                    help="extra configure argument, e.g. -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address (repeatable)")
    ap.add_argument("files", nargs="*", help="Markdown files (default: docs/*.md and README.md)")
    a = ap.parse_args()

    src_dir = os.path.abspath(a.source_dir)
    files = a.files or sorted(glob.glob(os.path.join(src_dir, "docs", "*.md"))) + [os.path.join(src_dir, "README.md")]
    snippets, skipped = [], 0
    for f in files:
        if not os.path.exists(f) and os.path.exists(os.path.join(src_dir, f)):
            f = os.path.join(src_dir, f)  # relative to the source tree, as the defaults are
        if not os.path.exists(f):
            print(f"doc snippets: no such file '{f}'", file=sys.stderr)
            return 2
        s, k = extract(os.path.abspath(f))
        snippets += s
        skipped += k
    n_alone = sum(s.standalone for s in snippets)
    print(f"doc snippets: {len(snippets)} to build ({n_alone} standalone, {len(snippets) - n_alone} wrapped), "
          f"{skipped} nocompile, from {len(files)} file(s)")

    out = os.path.abspath(a.work_dir)
    os.makedirs(out, exist_ok=True)
    generate(snippets, src_dir, out)
    bdir = os.path.join(out, "build")
    cfg = ["cmake", "-S", out, "-B", bdir, f"-Dets_DIR={os.path.abspath(a.ets_dir)}", f"-DCMAKE_BUILD_TYPE={a.config}"]
    cfg += a.cmake_arg
    if a.generator and not os.path.exists(os.path.join(bdir, "CMakeCache.txt")):
        cfg += ["-G", a.generator]
    r = subprocess.run(cfg, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode:
        print(r.stdout)
        print("doc snippets: configuring the snippet project failed", file=sys.stderr)
        return 1
    r = subprocess.run(["cmake", "--build", bdir, "--config", a.config, "-j", str(a.jobs)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode:
        print(r.stdout)
        bad = sorted(set(re.findall(r"^([^\s:]+\.md):(\d+):\d+: error", r.stdout, re.M)))
        where = ", ".join(f"{p}:{l}" for p, l in bad) or "see the compiler output above"
        print(f"doc snippets: FAILED to compile: {where}", file=sys.stderr)
        return 1
    print("doc snippets: all compiled and linked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
