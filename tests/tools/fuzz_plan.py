"""Fuzzing qosctl-plan: its options, the files it reads (QosCtlLog and
access logs, plain or gzip, from a path or standard input) and the status
page (--from-status).  tests/tools/fuzz runs TARGETS."""

import json

from hypothesis import given, strategies as st

import fuzzlib as F
from fuzz_predict import status_page

TOOL = F.load_tool("qosctl-plan")
PAGE = F.HttpBody()
SCRATCH = F.Scratch()
NUM = F.number_text()

HEADERS = ["time\tvserver\tclass\tR\tR_rej",
           "time\tvserver\tclass\tR\tR_rej\tcapacity",
           "time\tvserver\tclass\tR\tR_rej\tlevel\tcapacity\tu",
           "time\tvserver\tclass\tR\tR_rej\tcapacity\tcapacity"]


def qosctl_log():
    """A QosCtlLog: a header the tool knows, rows of any fields (most
    as wide as the header)."""
    def rows(header):
        width = len(header.split("\t"))
        row = st.lists(F.field_text(), min_size=width - 1,
                       max_size=width + 1).map("\t".join)
        return F.lines_text(row).map(lambda body: header + "\n" + body)
    return st.sampled_from(HEADERS).flatmap(rows)


MONTHS = ["Jan", "Feb", "Mar", "Oct", "Dec", "jan", "Foo"]


def access_line():
    stamp = st.tuples(
        st.sampled_from(["01", "10", "29", "31", "00", "99"]),
        st.sampled_from(MONTHS),
        st.sampled_from(["1970", "2000", "2024", "0001", "9999", "1969"]),
        st.sampled_from(["00", "13", "23", "24", "99"]),
        st.sampled_from(["00", "55", "59", "60", "99"]),
        st.sampled_from(["00", "36", "60", "61"]),
        st.sampled_from(["+", "-"]),
        st.sampled_from(["00", "07", "14", "99"]),
        st.sampled_from(["00", "30", "59", "60", "99"])).map(
        lambda t: "%s/%s/%s:%s:%s:%s %s%s%s" % t)
    good = st.tuples(stamp, st.sampled_from(["GET / HTTP/1.1", "x", "",
                                             'a \\" b']),
                     st.sampled_from(["200", "-", "999"]),
                     st.sampled_from(["0", "-", "9" * 4400])).map(
        lambda t: '1.2.3.4 - - [%s] "%s" %s %s' % t)
    return st.one_of(good, good.map(lambda s: s + ' "ref" "agent" 12'),
                     st.text(max_size=60))


def profile():
    """(file bytes, gzip it)."""
    return st.tuples(st.one_of(qosctl_log(), F.lines_text(access_line()),
                               st.binary(max_size=80).map(
                                   lambda b: b.decode("latin-1"))),
                     st.booleans())


SERVERS = F.valid_or_not(st.integers(min_value=1, max_value=100000))
RATE = F.valid_or_not(F.POSITIVE)
OPTIONS = {
    "--synthetic-day": RATE, "--servers": SERVERS, "-n": SERVERS,
    "--capacity": RATE, "--from-status": st.just(PAGE.url + "/s"),
    "--degraded": None, "--level": F.valid_or_not(F.FRACTION),
    "--min-on": SERVERS, "--interval": RATE,
    "--power": st.tuples(RATE, RATE).map(",".join) | NUM,
    "--off-watts": RATE, "--json": None,
}


def sane(argv):
    def ok(out):
        if "--json" not in argv:
            return F.no_nonfinite(out)
        why = F.strict_json_lines(out)
        if why is None:
            got = json.loads(out)
            if not got["capacity"] > 0 or not got["intervals"]:
                why = "capacity %r, %d intervals" % (
                    got["capacity"], len(got["intervals"]))
        return why
    return ok


def run(argv, stdin=b""):
    code, out, err = F.call_main(TOOL, argv, stdin)
    F.check("qosctl-plan", code, out, err, argv, sane(argv))


def file_and_argv(data, gz, use_stdin):
    SCRATCH.fresh()
    raw = data.encode("utf-8", "surrogateescape")
    if use_stdin:
        import gzip
        return "-", gzip.compress(raw, mtime=0) if gz else raw
    return SCRATCH.write("profile.log", raw, gz), b""


@given(profile(), st.booleans(), SERVERS, F.argv_of(OPTIONS, max_size=5),
       status_page(), st.booleans())
def fuzz_plan_file(prof, use_stdin, servers, more, page, json_out):
    """A profile file with the options (a capacity from the file, an
    option or the status page)."""
    PAGE.body = page
    path, stdin = file_and_argv(prof[0], prof[1], use_stdin)
    run(["-n", servers, path] + more + (["--json"] if json_out else []),
        stdin)


@given(RATE, RATE, NUM, st.one_of(st.just([]), RATE.map(
    lambda v: ["--interval", v])), st.booleans())
def fuzz_plan_capacity_sources(cap, rate, t, interval, json_out):
    """One QosCtlLog row, its capacity also given by --capacity or
    --from-status: the same value from each source."""
    SCRATCH.fresh()
    path = SCRATCH.write("q.log", "%s\n%s\tv\tc\t%s\t0\t%s\n" % (
        HEADERS[1], t, rate, cap))
    try:
        PAGE.body = json.dumps({"capacity": {
            "full_quality": float(cap), "lower_bound": False}}).encode()
    except ValueError:
        PAGE.body = json.dumps({"capacity": {"full_quality": cap}}).encode()
    tail = interval + (["--json"] if json_out else [])
    run(["-n", "3", path] + tail)
    run(["-n", "3", "--capacity", cap, path] + tail)
    run(["-n", "3", "--from-status", PAGE.url, path] + tail)


@given(F.argv_of(OPTIONS, extra=st.just("-"), max_size=10), status_page())
def fuzz_plan_any_argv(argv, page):
    PAGE.body = page
    run(argv)


TARGETS = [fuzz_plan_file, fuzz_plan_capacity_sources, fuzz_plan_any_argv]
