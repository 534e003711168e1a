#!/usr/bin/env python3
# Lists every public name of ETS's headers and reports those docs/api.md never mentions, so the reference stays complete.
# Used by the CTest test `api_docs`; runnable by hand (see --help). Standard library only.
"""Check that docs/api.md mentions every public name declared in ETS's public headers.

Scanned: include/ets/*.hpp (not *-inl.hpp, not detail/), include/ets/cuda/*.hpp and include/ets/ets.h.
Collected: namespace-level types, functions, constants, type aliases and macros; and of every class / struct the
public members (functions, data members, nested types, enumerators). Skipped: private / protected sections,
`namespace detail`, operators, destructors, friend declarations, include guards.

A name counts as documented when it appears as a word inside a code span or code block of the doc:
  * namespace-level names: anywhere;
  * members of class C (outermost enclosing class): in a section whose heading, or one of its parent headings,
    contains C as a word; or anywhere written qualified as `Owner::name`.
Exit status 1 lists the missing names as header:line: Owner::name (kind).
"""
import argparse
import glob
import os
import re
import sys

KEYWORDS = {
    "alignas", "alignof", "auto", "bool", "break", "case", "catch", "char", "class", "const", "constexpr", "const_cast",
    "continue", "decltype", "default", "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit", "extern",
    "false", "float", "for", "friend", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept",
    "nullptr", "operator", "override", "final", "private", "protected", "public", "register", "reinterpret_cast",
    "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template",
    "this", "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void",
    "volatile", "while", "ETS_INLINE", "size_t",
}
IGNORED_NAMES = {"Impl", "State"}  # pimpl forward declarations: public spelling, private meaning

TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.']*|::|->|<<=|>>=|<<|>>|[=!<>+\-*/%&|^]=|&&|\|\||\[\[|\]\]|\S")


class Decl:
    def __init__(self, name, kind, owners, path, line):
        self.name, self.kind, self.owners, self.path, self.line = name, kind, list(owners), path, line

    def qualified(self):
        return "::".join(self.owners + [self.name])


def strip_source(text):
    """Removes comments and string / char literals (kept as the token STR), keeps line structure.
    Returns (code lines, [(name, line) of #define macros with a body])."""
    out, macros = [], []
    i, n = 0, len(text)
    buf = []
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            buf.append("\n" * text.count("\n", i, j))
            i = j
        elif c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            buf.append(" STR ")
            i = j + 1
        else:
            buf.append(c)
            i += 1
    lines = "".join(buf).split("\n")
    k = 0
    while k < len(lines):
        s = lines[k].strip()
        if s.startswith("#"):
            start = k
            full = s
            while lines[k].rstrip().endswith("\\") and k + 1 < len(lines):
                lines[k] = ""
                k += 1
                full += " " + lines[k].strip()
            lines[k] = ""
            m = re.match(r"#\s*define\s+([A-Za-z_]\w*)(\(.*?\))?\s*(.*)$", full)
            if m and m.group(3).strip() and not m.group(1).endswith("_H"):
                macros.append((m.group(1), start + 1))
        out.append(lines[k])
        k += 1
    return out, macros


def tokenize(lines):
    toks = []
    for ln, line in enumerate(lines, 1):
        for m in TOKEN.finditer(line):
            toks.append((m.group(0), ln))
    return toks


class Parser:
    def __init__(self, path):
        self.path = path
        self.decls = []

    def add(self, name, kind, owners, line, hidden):
        if hidden or name in IGNORED_NAMES or name in KEYWORDS:
            return
        self.decls.append(Decl(name, kind, owners, self.path, line))

    def parse(self, toks):
        self.t = toks
        self.i = 0
        self.scope_body([], hidden=False, is_class=False, access_public=True)

    def peek(self, k=0):
        j = self.i + k
        return self.t[j][0] if j < len(self.t) else None

    def skip_balanced(self, open_tok, close_tok):
        """self.i at open_tok; moves past the matching close_tok."""
        depth = 0
        while self.i < len(self.t):
            tok = self.t[self.i][0]
            if tok == open_tok:
                depth += 1
            elif tok == close_tok:
                depth -= 1
                if depth == 0:
                    self.i += 1
                    return
            self.i += 1

    def scope_body(self, owners, hidden, is_class, access_public):
        """Parses declarations until the closing '}' of this scope (consumed) or end of input."""
        public = access_public
        while self.i < len(self.t):
            tok, line = self.t[self.i]
            if tok == "}":
                self.i += 1
                return
            if tok == ";":
                self.i += 1
                continue
            if tok in ("public", "private", "protected") and self.peek(1) == ":":
                public = tok == "public"
                self.i += 2
                continue
            if tok == "namespace":
                self.i += 1
                names = []
                while self.peek() not in ("{", None):
                    if self.peek() != "::":
                        names.append(self.peek())
                    self.i += 1
                self.i += 1
                self.scope_body(owners, hidden or "detail" in names, False, True)
                continue
            if tok == "extern" and self.peek(1) == "STR" and self.peek(2) == "{":
                self.i += 3
                self.scope_body(owners, hidden, False, True)
                continue
            self.statement(owners, hidden or not public, is_class)

    def statement(self, owners, hidden, is_class):
        start_tok, start_line = self.t[self.i]
        if start_tok == "template":
            self.i += 1
            if self.peek() == "<":
                self.skip_angles()
            return
        if start_tok == "friend":
            self.skip_to_semicolon()
            return
        if start_tok == "typedef":
            self.i += 1
            if self.peek() in ("struct", "enum", "class", "union"):
                kw = self.peek()
                self.i += 1
                name = self.peek() if self.peek() not in ("{",) else None
                if name:
                    self.i += 1
                if self.peek() == "{":
                    self.i += 1
                    self.add(name, kw, owners, start_line, hidden)
                    if kw == "enum":
                        self.enum_body(owners + [name], hidden)
                    else:
                        self.scope_body(owners + [name], hidden, True, True)
                alias = None
                while self.peek() not in (";", None):
                    alias = self.peek()
                    self.i += 1
                self.i += 1
                if alias and alias != name:
                    self.add(alias, "typedef", owners, start_line, hidden)
                elif name and not any(d.name == name and d.owners == owners for d in self.decls):
                    self.add(name, "typedef", owners, start_line, hidden)
            else:
                alias = None
                while self.peek() not in (";", None):
                    alias = self.peek()
                    self.i += 1
                self.i += 1
                self.add(alias, "typedef", owners, start_line, hidden)
            return
        if start_tok == "using":
            name = self.peek(1)
            if self.peek(2) == "=":
                self.add(name, "alias", owners, start_line, hidden)
            self.skip_to_semicolon()
            return
        if start_tok in ("class", "struct", "union") or (start_tok == "enum"):
            kw = start_tok
            self.i += 1
            if kw == "enum" and self.peek() in ("class", "struct"):
                self.i += 1
            name, name_line = self.t[self.i]
            self.i += 1
            # skip final / base clause / underlying type up to '{' or ';'
            while self.peek() not in ("{", ";", None):
                self.i += 1
            self.add(name, "enum" if kw == "enum" else kw, owners, name_line, hidden)
            if self.peek() == ";":
                self.i += 1
                return
            self.i += 1
            if kw == "enum":
                self.enum_body(owners + [name], hidden)
            else:
                self.scope_body(owners + [name], hidden, True, kw != "class")
            # trailing declarators (`} name;`) are rare in these headers; skip to ';'
            self.skip_to_semicolon()
            return
        self.declaration(owners, hidden, is_class, start_line)

    def skip_angles(self):
        depth = 0
        while self.i < len(self.t):
            tok = self.t[self.i][0]
            if tok == "<":
                depth += 1
            elif tok == ">":
                depth -= 1
            elif tok == ">>":
                depth -= 2
            elif tok in ("(",):
                self.skip_balanced("(", ")")
                continue
            self.i += 1
            if depth <= 0:
                return

    def skip_to_semicolon(self):
        while self.i < len(self.t) and self.t[self.i][0] != ";":
            if self.t[self.i][0] == "{":
                self.skip_balanced("{", "}")
                continue
            if self.t[self.i][0] == "(":
                self.skip_balanced("(", ")")
                continue
            self.i += 1
        self.i += 1

    def enum_body(self, owners, hidden):
        expect_name = True
        while self.i < len(self.t):
            tok, line = self.t[self.i]
            if tok == "}":
                self.i += 1
                return
            if tok == ",":
                expect_name = True
            elif expect_name and re.match(r"[A-Za-z_]\w*$", tok):
                self.add(tok, "enumerator", owners, line, hidden)
                expect_name = False
            elif tok == "(":
                self.skip_balanced("(", ")")
                continue
            self.i += 1

    def declaration(self, owners, hidden, is_class, line):
        """A function or variable declaration (ends with ';' or a function body)."""
        angle = 0
        prev = None
        prev_line = line
        after_eq = False
        while self.i < len(self.t):
            tok, ln = self.t[self.i]
            if tok == ";":
                if prev and not after_eq and re.match(r"[A-Za-z_]\w*$", prev):
                    self.add(prev, "variable", owners, prev_line, hidden)
                self.i += 1
                return
            if after_eq:
                if tok == "}":
                    return
                if tok == "," and angle == 0:
                    after_eq = False
                    prev = None
                elif tok in ("(", "{", "["):
                    self.skip_balanced(tok, {"(": ")", "{": "}", "[": "]"}[tok])
                    continue
                self.i += 1
                continue
            if tok == "operator":  # operators are documented with their type, not by name
                self.i += 2 if self.peek(1) == "(" else 1
                while self.i < len(self.t) and self.t[self.i][0] != "(":
                    self.i += 1
                self.finish_function()
                return
            if tok == "}":  # malformed / unexpected: leave the scope's brace to the caller
                return
            if tok == "<":
                angle += 1
            elif tok == ">" and angle > 0:
                angle -= 1
            elif tok == ">>" and angle > 0:
                angle = max(0, angle - 2)
            elif angle == 0 and tok == "(":
                if prev and re.match(r"[A-Za-z_]\w*$", prev) and prev not in KEYWORDS:
                    is_dtor = self.i >= 2 and self.t[self.i - 2][0] == "~"
                    if not is_dtor:
                        self.add(prev, "function", owners, prev_line, hidden)
                    self.finish_function()
                    return
                self.skip_balanced("(", ")")
                continue
            elif angle == 0 and tok in ("=", ",", "{", "["):
                if prev and re.match(r"[A-Za-z_]\w*$", prev) and prev not in KEYWORDS:
                    self.add(prev, "variable", owners, prev_line, hidden)
                if tok == "{":
                    self.skip_balanced("{", "}")
                    prev = None
                    continue
                if tok == "[":
                    self.skip_balanced("[", "]")
                    prev = None
                    continue
                after_eq = tok == "="
                prev = None
                self.i += 1
                continue
            prev, prev_line = tok, ln
            self.i += 1
        return

    def finish_function(self):
        """self.i at the '(' of the parameter list: skips to the end of the declaration or definition."""
        self.skip_balanced("(", ")")
        while self.i < len(self.t):
            tok = self.t[self.i][0]
            if tok == ";":
                self.i += 1
                return
            if tok == "{":
                self.skip_balanced("{", "}")
                return
            if tok == "(":
                self.skip_balanced("(", ")")
                continue
            if tok == "=":  # = default / = delete / = 0
                self.skip_to_semicolon()
                return
            self.i += 1


def header_files(src):
    inc = os.path.join(src, "include", "ets")
    files = sorted(glob.glob(os.path.join(inc, "*.hpp"))) + sorted(glob.glob(os.path.join(inc, "cuda", "*.hpp")))
    files = [f for f in files if not f.endswith("-inl.hpp")]
    files.append(os.path.join(inc, "ets.h"))
    return [f for f in files if os.path.exists(f)]


def collect(src):
    decls = []
    for f in header_files(src):
        with open(f, encoding="utf-8") as fh:
            lines, macros = strip_source(fh.read())
        rel = os.path.relpath(f, src)
        p = Parser(rel)
        p.parse(tokenize(lines))
        decls += p.decls
        decls += [Decl(name, "macro", [], rel, ln) for name, ln in macros]
    seen, unique = set(), []
    for d in decls:
        key = (d.qualified(), d.kind == "macro")
        if key not in seen:
            seen.add(key)
            unique.append(d)
    return unique


WORD = re.compile(r"[A-Za-z_]\w*(?:::[A-Za-z_~]\w*)*")


def doc_sections(path):
    """[(heading path words (set), code text)] per section; code = inline code spans (which may wrap across lines
    within a paragraph) and fenced blocks."""
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    sections = []
    stack = []  # (level, heading text)
    code, prose = [], []
    in_fence = None

    def flush():
        heading = " ".join(h for _, h in stack)
        spans = re.findall(r"(`+)(.+?)\1", "\n".join(prose), re.S)
        sections.append((set(re.findall(r"[A-Za-z_]\w*", heading)), "\n".join(code + [s for _, s in spans])))

    for line in lines:
        if in_fence:
            if line.strip().startswith(in_fence):
                in_fence = None
            else:
                code.append(line)
            continue
        m = re.match(r"^\s*(```+|~~~+)", line)
        if m:
            in_fence = m.group(1)
            prose.append("")
            continue
        h = re.match(r"^(#{1,6})\s+(.*)$", line)
        if h:
            flush()
            code, prose = [], [h.group(2), ""]
            level = len(h.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, h.group(2)))
            continue
        prose.append(line)
    flush()
    return sections


def words(text):
    out = set()
    for w in WORD.findall(text):
        parts = w.split("::")
        out.update(parts)
        for k in range(len(parts) - 1):  # every "A::b" suffix pair, for qualified member mentions
            out.add(parts[k] + "::" + parts[k + 1])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--doc", action="append", help="Markdown file(s) to check (default: docs/api.md)")
    ap.add_argument("--list", action="store_true", help="print every collected public name and exit")
    ap.add_argument("--only", default="",
                    help="comma-separated qualified names (e.g. Tracer::step): check just these (the checker's tests)")
    a = ap.parse_args()
    src = os.path.abspath(a.source_dir)
    decls = collect(src)
    if not decls:  # a wrong --source-dir passed with "0 public names, 0 not documented"
        print(f"api docs: no public headers under {src}/include/ets", file=sys.stderr)
        return 2
    if a.only:
        wanted = set(a.only.split(","))
        decls = [d for d in decls if d.qualified() in wanted]
        unknown = wanted - {d.qualified() for d in decls}
        if unknown:
            print(f"api docs: no public name {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
    if a.list:
        for d in decls:
            print(f"{d.path}:{d.line}: {d.qualified()} ({d.kind})")
        print(f"{len(decls)} public names", file=sys.stderr)
        return 0
    docs = a.doc or [os.path.join(src, "docs", "api.md")]
    sections = []
    for p in docs:
        if not os.path.exists(p):
            print(f"api docs: {p} does not exist", file=sys.stderr)
            return 1
        sections += doc_sections(p)
    all_words = set()
    sec_words = []
    for heading, code in sections:
        w = words(code)
        all_words |= w
        sec_words.append((heading, w))
    missing = []
    for d in decls:
        if not d.owners:
            ok = d.name in all_words
        else:
            top, owner = d.owners[0], d.owners[-1]
            ok = f"{owner}::{d.name}" in all_words or any(
                top in heading and d.name in w for heading, w in sec_words)
        if not ok:
            missing.append(d)
    for d in missing:
        print(f"{d.path}:{d.line}: {d.qualified()} ({d.kind})")
    print(f"api docs: {len(decls)} public names, {len(missing)} not documented in "
          f"{', '.join(os.path.relpath(p, src) for p in docs)}", file=sys.stderr if missing else sys.stdout)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
