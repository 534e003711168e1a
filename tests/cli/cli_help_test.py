#!/usr/bin/env python3
# `ets <command> --help` documents every option: for each command `ets --help` lists, the help has an aligned
# "options:" block with a one-line meaning per option; every option of the usage line is described there, and every
# described option is accepted, as a flag or with a value as its spelling says, and a value option given twice is
# refused unless its meaning says it repeats. `ets help CMD` prints CMD's help. No command is ever run: each probe
# ends with an unknown option, so the parser stops with a usage error before the command starts.
# Nothing is hard-coded: the commands, the options and their kinds are read from the help itself.
# Usage: cli_help_test.py ETS
import re
import subprocess
import sys

from checks import check, failures, finish  # tests/cli/checks.py, beside this script

ets = sys.argv[1]
PROBE = "--zzz-not-an-option"  # parse() reads left to right: this ends it before the command runs
MAX_MEANING = 100


def run(*args):
    return subprocess.run([ets, *args], capture_output=True, text=True, timeout=60)


# An option name: "-o" or "--some-name", not the "-median" inside "pass-median" nor a "-1" inside a default.
NAME = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def stopped_at_probe(p):
    """True when the parser accepted everything before the probe and stopped at it."""
    return p.returncode == 2 and f"unknown option '{PROBE}'" in p.stderr


top = run("--help")
check(top.returncode == 0, f"ets --help: rc {top.returncode}")
commands = []
in_commands = False
for line in top.stdout.splitlines():
    if line == "commands:":
        in_commands = True
    elif in_commands:
        m = re.match(r"^  (\S+)\s+\S", line)
        if not m:
            break
        commands.append(m.group(1))
check(len(commands) >= 5, f"ets --help lists the commands: {commands}")

for cmd in commands:
    p = run(cmd, "--help")
    lines = p.stdout.splitlines()
    if p.returncode != 0 or not lines or not lines[0].startswith(f"usage: ets {cmd}"):
        failures.append(f"ets {cmd} --help: rc {p.returncode}, output {p.stdout[:200]!r}")
        continue
    usage = lines[0]
    h = run("help", cmd)  # `ets help CMD` is `ets CMD --help`, as in git and cargo
    check(h.returncode == 0 and h.stdout == p.stdout, f"ets help {cmd}: rc {h.returncode}, {h.stdout[:80]!r}")
    usage_names = set(NAME.findall(usage[len(f"usage: ets {cmd}"):]))
    if "options:" not in lines:
        failures.append(f"ets {cmd} --help has no options: block (usage names {sorted(usage_names)})")
        continue
    block = [l for l in lines[lines.index("options:") + 1:] if l.strip()]
    described = {}  # name -> (takes a value, spelling)
    described_meaning = {}  # name -> its meaning
    columns = set()
    for line in block:
        m = re.match(r"^  (-\S.*?)  +(\S.*)$", line)
        if not m:
            failures.append(f"ets {cmd} --help: option line without a meaning: {line!r}")
            continue
        spelling, meaning = m.group(1), m.group(2)
        columns.add(m.start(2))
        check(meaning != "(undocumented)", f"ets {cmd}: {spelling} is accepted but not described")
        check(len(meaning) <= MAX_MEANING, f"ets {cmd} {spelling}: meaning over {MAX_MEANING} characters: {meaning!r}")
        names = NAME.findall(spelling)
        # a placeholder after the names ("--rank N", "-o, --output OUT") means the option takes a value
        rest = NAME.sub("", spelling).replace(",", " ").strip()
        check(bool(names), f"ets {cmd}: option line names no option: {line!r}")
        for n in names:
            check(n not in described, f"ets {cmd}: {n} described twice")
            described[n] = (bool(rest), spelling)
            described_meaning[n] = meaning
    check(len(columns) <= 1, f"ets {cmd} --help: meanings not aligned (columns {sorted(columns)})")

    for n in sorted(usage_names - set(described)):
        failures.append(f"ets {cmd}: usage line's {n} has no line in the options block")

    for n, (takes_value, spelling) in sorted(described.items()):
        if takes_value:
            q = run(cmd, n, "x", PROBE, PROBE)
            check(stopped_at_probe(q), f"ets {cmd} {n} x: not accepted as an option with a value "
                                       f"(rc {q.returncode}, {q.stderr.strip()!r})")
            if n.startswith("--"):
                q = run(cmd, f"{n}=x", PROBE)
                check(stopped_at_probe(q), f"ets {cmd} {n}=x: not accepted (rc {q.returncode}, {q.stderr.strip()!r})")
            # given twice (or with an alias of its line): a usage error, unless its help says it repeats; a second
            # value that silently replaced the first would drop what the user asked for
            for again in NAME.findall(spelling):
                q = run(cmd, n, "x", again, "y", PROBE)
                if "repeat" in described_meaning[n]:
                    check(stopped_at_probe(q), f"ets {cmd} {n} x {again} y: repeatable, yet refused ({q.stderr.strip()!r})")
                else:
                    check(q.returncode == 2 and "given twice" in q.stderr,
                          f"ets {cmd} {n} x {again} y: not refused as given twice (rc {q.returncode}, "
                          f"{q.stderr.strip()!r})")
        else:
            q = run(cmd, n, PROBE, PROBE)  # a second probe, in case the "flag" swallows the first as its value
            check(stopped_at_probe(q), f"ets {cmd} {n}: not accepted as a flag (rc {q.returncode}, {q.stderr.strip()!r})")
            q = run(cmd, f"{n}=x", PROBE)  # a flag takes no value: '--flag=x' is not an option of the command
            check(q.returncode == 2 and f"unknown option '{n}=x'" in q.stderr,
                  f"ets {cmd} {n}=x: described as a flag ({spelling!r}) but takes a value (rc {q.returncode}, "
                  f"{q.stderr.strip()!r})")

# Commands that take no positional argument refuse one (a stray "val" in `ets eval ... val` evaluated the test
# split and exited 0); nothing runs before the usage error.
for cmd in ("eval", "train", "bench"):
    q = run(cmd, "stray-word")
    check(q.returncode == 2 and "unexpected argument 'stray-word'" in q.stderr,
          f"ets {cmd} stray-word: rc {q.returncode}, {q.stderr.strip()[:200]!r}")

h = run("help", "no-such-command")
check(h.returncode == 2 and "unknown command 'no-such-command'" in h.stderr, f"ets help no-such-command: {h.stderr!r}")

finish(f"cli_help_options: all checks passed ({len(commands)} commands)")
