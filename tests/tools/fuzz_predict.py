"""Fuzzing qosctl-predict: its options and the status page it reads
(--from-status).  tests/tools/fuzz runs TARGETS."""

import json

from hypothesis import given, strategies as st

import fuzzlib as F

TOOL = F.load_tool("qosctl-predict")
PAGE = F.HttpBody()
SCRATCH = F.Scratch()

NUM = F.number_text()


def figures(row):
    """What every prediction must be: finite, a load strictly between 0
    and 1, response times no shorter than the delay."""
    u = row["utilization"]
    if not 0 < u < 1:
        return "utilization %r" % u
    for k in ("mean_response", "p95_response"):
        if not row[k] >= row["delay"]:
            return "%s %r below the delay" % (k, row[k])
    return None


def sane(argv):
    def ok(out):
        if "--json" not in argv:
            return F.no_nonfinite(out)
        why = F.strict_json_lines(out)
        for line in out.splitlines():
            if why:
                break
            got = json.loads(line)
            for row in got if isinstance(got, list) else [got]:
                why = figures(row)
        return why
    return ok


def run(argv):
    code, out, err = F.call_main(TOOL, argv)
    F.check("qosctl-predict", code, out, err, argv, sane(argv))


OPTIONS = {
    "--servers": NUM, "-n": NUM, "--service-rate": NUM,
    "--from-status": st.just(PAGE.url + "/qosctl-status"),
    "--arrival-rate": NUM, "--load": NUM,
    "--range": st.tuples(NUM, NUM, NUM).map(":".join) | NUM,
    "--delay": NUM, "--json": None,
}


def status_page():
    """mod_qosctl's status JSON with any values where the tool looks,
    or any JSON, or bytes."""
    page = st.fixed_dictionaries({}, optional={
        "capacity": st.fixed_dictionaries({}, optional={
            "lower_bound": F.json_value(0), "full_quality": F.json_value(0),
            "requests_per_second": F.json_value(0)}) | F.json_value(),
        "model": st.fixed_dictionaries({}, optional={
            "a": F.json_value(0)}) | F.json_value()})
    return st.one_of(page.map(lambda d: json.dumps(d).encode()),
                     F.json_value().map(lambda d: json.dumps(d).encode()),
                     st.binary(max_size=64))


SERVERS = F.valid_or_not(st.integers(min_value=1, max_value=100000))
RATE = F.valid_or_not(F.POSITIVE)
DEEP = {"--service-rate": RATE, "--from-status": OPTIONS["--from-status"],
        "--arrival-rate": RATE, "--load": F.valid_or_not(F.FRACTION),
        "--range": st.tuples(RATE, RATE, RATE).map(":".join) | NUM}


def one_of_options(*names):
    return st.sampled_from(names).flatmap(
        lambda o: DEEP[o].map(lambda v: [o, v]))


@given(st.sampled_from(["-n", "--servers"]).flatmap(
    lambda o: SERVERS.map(lambda v: [o, v])),
    one_of_options("--service-rate", "--from-status"),
    one_of_options("--arrival-rate", "--load", "--range"),
    F.argv_of(OPTIONS, max_size=3), st.booleans(), status_page())
def fuzz_predict_options(n, mu, lam, more, json_out, page):
    """Every required option present: the figures are computed."""
    PAGE.body = page
    run(n + mu + lam + more + (["--json"] if json_out else []))


@given(F.argv_of(OPTIONS, max_size=10), status_page())
def fuzz_predict_any_argv(argv, page):
    PAGE.body = page
    run(argv)


@given(NUM, NUM, NUM, st.booleans())
def fuzz_predict_plot(first, last, step, json_out):
    """--plot with a range: gnuplot is run (a slower target)."""
    png = SCRATCH.fresh() + "/p.png"
    run(["-n", "2", "--service-rate", "10", "--range",
         "%s:%s:%s" % (first, last, step), "--plot", png]
        + (["--json"] if json_out else []))


TARGETS = [fuzz_predict_options, fuzz_predict_any_argv, fuzz_predict_plot]
