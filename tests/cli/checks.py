# Shared by the CLI tests: collect every failed expectation, report them all at the end (not only the first).
import sys

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def finish(ok_message=""):
    """Print the failures and exit 1, or print ok_message and exit 0."""
    for f in failures:
        print("FAIL:", f)
    if not failures and ok_message:
        print(ok_message)
    sys.exit(1 if failures else 0)
