"""Run the tools' fuzz targets for a time each (tests/tools/fuzz).

  python3 fuzzrun.py SECONDS_PER_TOOL DB_DIR [TOOL...]

TOOL is predict, plan, balance, replay or degrade (default: all).  Each
tool's targets (TARGETS in fuzz_TOOL.py) take turns, a round of
Hypothesis examples each, until its time is up; a round starts by
replaying the examples that broke the rule before (the database in
DB_DIR).  One line per tool; a broken rule prints Hypothesis's shrunk
example and its report.  Exit status 0 nothing found, 1 found."""

import importlib
import os
import sys
import time
import traceback

from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = ("predict", "plan", "balance", "replay", "degrade")
ROUND = int(os.environ.get("QOSCTL_FUZZ_ROUND", "100"))


def fuzz(tool, seconds, db):
    module = importlib.import_module("fuzz_" + tool)
    conf = settings(max_examples=ROUND, deadline=None, database=db,
                    suppress_health_check=list(HealthCheck),
                    phases=[Phase.reuse, Phase.generate, Phase.shrink],
                    print_blob=True)
    end = time.monotonic() + seconds
    rounds = {t.__name__: 0 for t in module.TARGETS}
    targets = [(t.__name__, conf(t)) for t in module.TARGETS]
    started = time.monotonic()
    calls = fuzzlib.CALLS
    while True:
        for name, target in targets:
            if time.monotonic() >= end and all(rounds.values()):
                took = time.monotonic() - started
                print("fuzz %s: %d runs in %.0f s (rounds: %s), nothing "
                      "found" % (tool, fuzzlib.CALLS - calls, took,
                         ", ".join("%s %d" % kv for kv in rounds.items())),
                      flush=True)
                return True
            if rounds[name] and time.monotonic() >= end:
                continue
            try:
                target()
            except Exception:
                print("fuzz %s: FOUND by %s:" % (tool, name),
                      flush=True)
                traceback.print_exc(limit=1, file=sys.stdout)
                return False
            rounds[name] += 1


def main(argv):
    if len(argv) < 2 or not argv[0].isdigit():
        sys.stderr.write(__doc__)
        return 2
    seconds, dbdir = int(argv[0]), argv[1]
    tools = argv[2:] or TOOLS
    for t in tools:
        if t not in TOOLS:
            sys.stderr.write("fuzz: no tool %r (%s)\n" % (t, " ".join(TOOLS)))
            return 2
    sys.path.insert(0, HERE)
    global fuzzlib
    import fuzzlib
    db = DirectoryBasedExampleDatabase(dbdir)
    ok = True
    for t in tools:
        ok = fuzz(t, seconds, db) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
