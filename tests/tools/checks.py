"""The one check of the scripted program tests (the CLI, the terminal, the
providers report): a failed check is printed at once and kept, so that a run
shows every failure, and the script's exit status comes from report()."""
import sys

failures = []
count = 0


def check(condition, what):
    """Counts a check; prints and keeps `what` when `condition` is false."""
    global count
    count += 1
    if not condition:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)
    return condition


def report():
    """Prints the tally; returns the exit status: 1 when any check failed."""
    print("%d checks, %d failed" % (count, len(failures)))
    return 1 if failures else 0
