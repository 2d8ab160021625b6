"""Fuzzing qosctl-replay: its options and everything it reads: access
logs (plain or gzip, a path or standard input) for split and mktree,
its own split logs (.requests and .timing) and the server's replies for
run, a run's requests.tsv for compare.  A loopback server answers each
request with the example's bytes.  tests/tools/fuzz runs TARGETS."""

import os

from hypothesis import given, strategies as st

import fuzzlib as F
from fuzz_plan import access_line

TOOL = F.load_tool("qosctl-replay")
SCRATCH = F.Scratch()
NUM = F.number_text()


class Reply:
    data = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"


SERVER = F.LineServer(lambda line: Reply.data)
URL = "http://127.0.0.1:%d" % SERVER.port


def run(argv, stdin=b""):
    code, out, err = F.call_main(TOOL, argv, stdin)
    F.check("qosctl-replay", code, out, err, argv)


def replay_line():
    """An access log line: Common or Combined, a trailing %D or %T of
    any size, odd request lines and targets."""
    tail = st.one_of(st.just(""), NUM.map(lambda v: " " + v),
                     st.integers(min_value=4290, max_value=4400).map(
                         lambda n: " " + "9" * n))
    request = st.one_of(
        st.sampled_from(["GET / HTTP/1.1", "GET /a b HTTP/1.0",
                         "GET http://x/ HTTP/1.1", "POST /%00 HTTP/1.1",
                         "GET /../x HTTP/1.1", "GET /.htx HTTP/1.1",
                         "GET /a\\\\b HTTP/1.1", "GET /\\x00 HTTP/1.1",
                         "GET /" + "a" * 300 + " HTTP/1.1", "x", "",
                         "GET /a/ HTTP/1.1", "GET /a HTTP/1.1",
                         "GET /a/b HTTP/1.1", "HEAD /%2e%2e/x HTTP/1.1"]),
        st.text(max_size=20).map(lambda t: "GET /%s HTTP/1.1" % t))
    size = st.one_of(st.sampled_from(["0", "-", "100", "70000"]),
                     NUM.filter(lambda v: v.isdigit()),
                     st.integers(min_value=4290, max_value=4400).map(
                         lambda n: "9" * n))
    good = st.tuples(st.sampled_from(["1.2.3.4", "::1", "h\\x00"]),
                     st.sampled_from(["10/Oct/2000:13:55:36 -0700",
                                      "10/Oct/2000:13:55:37 -0700",
                                      "29/Feb/2001:00:00:00 +0000",
                                      "01/Jan/1970:00:00:00 +1400",
                                      "31/Dec/9999:23:59:60 -1400"]),
                     request, st.sampled_from(["200", "404", "-"]), size,
                     st.sampled_from(["", ' "-" "agent"']), tail).map(
        lambda t: '%s - - [%s] "%s" %s %s%s%s' % t)
    return st.one_of(good, good, access_line())


def log_bytes():
    return st.tuples(F.lines_text(replay_line()), st.booleans()).map(
        lambda t: (t[0].encode("utf-8", "surrogateescape"), t[1]))


@given(log_bytes(), st.booleans(),
       st.sampled_from([[], ["--duration-field", "T"],
                        ["--duration-field", "none"]]))
def fuzz_replay_split(log, use_stdin, field):
    SCRATCH.fresh()
    data, gz = log
    if use_stdin:
        import gzip
        path, stdin = "-", gzip.compress(data, mtime=0) if gz else data
    else:
        path, stdin = SCRATCH.write("a.log", data, gz), b""
    run(["split", path, "--out", os.path.join(SCRATCH.root, "s")] + field,
        stdin)


@given(log_bytes(), st.booleans(), st.one_of(st.none(),
                                             st.text(max_size=6)))
def fuzz_replay_mktree(log, hashed, key):
    SCRATCH.fresh()
    path = SCRATCH.write("a.log", log[0], log[1])
    argv = ["mktree", path, "--out", os.path.join(SCRATCH.root, "t"),
            "--no-degrade", "--max-image", "0", "--max-file", "70000"]
    if hashed:
        argv.append("--hash-names")
        if key is not None:
            argv += ["--key", key]
    run(argv)


def split_logs():
    """(.timing, .requests) text: rows mostly well formed, the timing
    log mostly counting them right."""
    ascii_num = NUM.filter(lambda v: v.isascii() and "\n" not in v)
    row = st.tuples(st.sampled_from(["GET", "HEAD", "POST", "GET"]),
                    st.sampled_from(["/", "/a", "/a?b", "x", "/%00",
                                     "/" + "a" * 70]),
                    st.sampled_from(["200", "404", "0"]) | ascii_num,
                    st.sampled_from(["0", "10"]) | ascii_num,
                    st.sampled_from(["-", "5"]) | ascii_num,
                    st.sampled_from(["127.0.0.1", ""])).map("\t".join)
    rows = st.lists(st.one_of(row, row, row, row, row, row, st.text(
        st.characters(max_codepoint=127), max_size=10), st.text(
        max_size=3)), min_size=1, max_size=5)

    def timing(rows):
        exact = st.lists(st.sampled_from(["0", "1", "2", "1000"]),
                         min_size=len(rows), max_size=len(rows)).map(
            lambda offs: ["%s 1" % o for o in offs])
        odd = st.lists(st.tuples(ascii_num, ascii_num).map(" ".join)
                       | st.text(max_size=6), max_size=4)
        return st.one_of(exact, exact, odd).map(lambda t: (t, rows))
    start = st.sampled_from(["0", "1000", "-5"]) | ascii_num
    return st.tuples(start, rows.flatmap(timing)).map(lambda t: (
        "%s start=%s\n%s\n" % (TOOL.TIMING_MAGIC, t[0], "\n".join(t[1][0])),
        "%s\n# method\ttarget\tstatus\tbytes\tduration_us\tclient\n%s\n"
        % (TOOL.REQUESTS_MAGIC, "\n".join(t[1][1]))))


def http_reply():
    """What a server may answer: a status line, headers (lengths of any
    kind, chunked), a body; or any bytes."""
    head = st.tuples(
        st.sampled_from(["HTTP/1.1 200 OK", "HTTP/1.0 200 OK",
                         "HTTP/1.1 204 No", "HTTP/1.1 100 Continue",
                         "HTTP/1.1 abc", "HTTP/1.1 -12 x", "HTTP/1.1"]),
        st.lists(st.one_of(
            NUM.map(lambda v: "Content-Length: " + v),
            st.sampled_from(["Transfer-Encoding: chunked",
                             "Connection: close", "Content-Length: 5",
                             "Content-Length:", "Content-Length: -5"])),
            max_size=3))
    body = st.one_of(st.binary(max_size=20), st.lists(st.one_of(
        st.sampled_from(["5\r\nhello\r\n", "0\r\n\r\n", "zz\r\n",
                         "f" * 40 + "\r\n", "-1\r\n", "3;x\r\nabc\r\n"]),
        NUM.map(lambda v: v + "\r\n")), max_size=4).map(
        lambda parts: "".join(parts).encode("utf-8", "surrogateescape")))
    reply = st.tuples(head, body).map(lambda t: (
        "\r\n".join([t[0][0]] + t[0][1]) + "\r\n\r\n").encode(
        "utf-8", "surrogateescape") + t[1])
    return st.one_of(reply, reply, st.binary(max_size=60))


RUN_OPTIONS = {
    "--speedup": NUM, "--max-conns": NUM, "--no-keepalive": None,
    "--duration": NUM, "--max-requests": NUM, "--burst": None,
    "--timeout": NUM, "--forwarded-for": None, "--power-model":
    st.tuples(NUM, NUM).map(",".join) | NUM,
    "--duration-field": st.sampled_from(["D", "T", "none", "x"]),
}


@given(split_logs(), http_reply(),
       F.argv_of(RUN_OPTIONS, max_size=2, stray=False))
def fuzz_replay_run(logs, reply, more):
    """A split pair replayed against a server answering `reply`; kept
    short: at most 4 requests, 1 s each, 1000 times as fast."""
    SCRATCH.fresh()
    Reply.data = reply
    SCRATCH.write("r.timing", logs[0])
    path = SCRATCH.write("r.requests", logs[1])
    run(["run", path, "--server", URL, "--out",
         os.path.join(SCRATCH.root, "out"), "--no-plot", "-q"] + more
        + ["--speedup", "1000", "--timeout", "1", "--max-requests", "4"])


def tsv():
    row = st.lists(st.one_of(st.sampled_from(["0.1", "0.2", "200", "0",
                                              "1", "/"]), NUM),
                   min_size=3, max_size=9).map("\t".join)
    return st.lists(st.one_of(row, st.text(max_size=10)), max_size=5).map(
        lambda rows: "# scheduled\tissued\n" + "\n".join(rows) + "\n")


@given(tsv(), tsv(), st.booleans())
def fuzz_replay_compare(a, b, json_out):
    """Two runs' requests.tsv; gnuplot kept out of PATH (the plot is
    gnuplot's reading, not the tool's)."""
    SCRATCH.fresh()
    SCRATCH.write("a/requests.tsv", a)
    SCRATCH.write("b/requests.tsv", b)
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = "/nonexistent"
    try:
        run(["compare", os.path.join(SCRATCH.root, "a"),
             os.path.join(SCRATCH.root, "b"), "--out",
             os.path.join(SCRATCH.root, "c.png")]
            + (["--json"] if json_out else []))
    finally:
        os.environ["PATH"] = path


OPTIONS = dict(RUN_OPTIONS, **{
    # relative: in call_main's empty working directory, under tmp
    "--out": st.sampled_from(["missing/x", "a\0b", ""]),
    "--server": st.sampled_from(["http://127.0.0.1:99999", "ftp://x",
                                 "http://[::1", "http://:80", URL,
                                 "http://127.0.0.1:-5", "http://a\0b/"]),
    "--hash-names": None, "--key": st.text(max_size=4),
    "--max-file": NUM, "--max-image": NUM, "--no-degrade": None,
    "--json": None, "--": None,
})


@given(st.sampled_from(["split", "mktree", "run", "compare", "x", ""]),
       F.argv_of(OPTIONS, extra=st.sampled_from(["missing", "-",
                                                 "a\0b"]), max_size=8))
def fuzz_replay_argv(cmd, argv):
    SCRATCH.fresh()
    run([cmd] + argv + ["--no-plot", "--max-requests", "2", "--timeout",
                        "1"] if cmd == "run" else [cmd] + argv)


TARGETS = [fuzz_replay_split, fuzz_replay_mktree, fuzz_replay_run,
           fuzz_replay_compare, fuzz_replay_argv]
