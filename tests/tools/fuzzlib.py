"""What the tools' fuzz targets share (tests/tools/fuzz_*.py, run by
tests/tools/fuzz): calling a tool's main() in-process as its
`sys.exit(main())` would run, the rule every answer must keep, loopback
servers that answer what an example says, and strategies for the text
the tools read.

The rule: exit 0 with sane output, or a non-zero exit with one line on
stderr naming the tool; never an exception out of main() (the user's
traceback), never an "internal error", never a hang."""

import atexit
import gzip
import http.server
import io
import json
import math
import os
import re
import shutil
import signal
import socket
import socketserver
import sys
import tempfile
import threading
import traceback

from hypothesis import strategies as st

from tooltest import load_tool, TOP      # noqa: F401 (re-exported)

CALLS = 0                   # main() calls made, for the runner's report
HANG_SECONDS = float(os.environ.get("QOSCTL_FUZZ_HANG", "30"))


class Broken(AssertionError):
    """The rule is broken: Hypothesis shrinks the example and reports
    it."""


class _Hang(BaseException):
    """Raised by the alarm: a BaseException, so that no `except
    Exception` in a tool can swallow it."""


def _alarm(signum, frame):
    raise _Hang()


def _empty(directory):
    """Everything in `directory` removed."""
    for name in os.listdir(directory):
        p = os.path.join(directory, name)
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p, ignore_errors=True)
        else:
            os.unlink(p)


def call_main(tool, argv, stdin=b"", timeout=HANG_SECONDS):
    """(exit status, stdout, stderr) of tool.main(argv), standard input
    `stdin` (bytes), in an empty working directory (relative paths an
    example names land there).  An exception out of main() or no return
    within `timeout` seconds breaks the rule."""
    _empty(WORK)
    home = os.getcwd()
    os.chdir(WORK)
    try:
        return _call_main(tool, argv, stdin, timeout)
    finally:
        os.chdir(home)


def _call_main(tool, argv, stdin, timeout):
    saved = sys.stdin, sys.stdout, sys.stderr
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT,
                                                 signal.SIGTERM)}
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    # execve's strings end at a NUL: no argument holds one
    argv = [a.split("\0")[0] for a in argv]
    failure = None
    global CALLS
    CALLS += 1
    try:
        code = tool.main(list(argv))
    except SystemExit as e:
        code = e.code
    except _Hang:
        failure = "no answer within %g s" % timeout
    except BaseException:
        failure = "traceback:\n" + traceback.format_exc(limit=-8)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        out, err = sys.stdout.getvalue(), sys.stderr.getvalue()
        sys.stdin, sys.stdout, sys.stderr = saved
        for s, h in handlers.items():
            signal.signal(s, h)
    if failure:
        raise Broken("%s\nargv %s\nstderr %r" % (failure, shown(argv),
                                                  err[:2000]))
    if code is None:
        code = 0
    elif not isinstance(code, int):
        err += "%s\n" % code        # what the interpreter would print
        code = 1
    return code, out, err


def shown(argv):
    """The arguments for a report, long ones cut."""
    return "[%s]" % ", ".join(repr(a) if len(a) < 80 else
                              "%r...(%d chars)" % (a[:40], len(a))
                              for a in argv)


def check(prog, code, out, err, argv, sane=None, many_lines_on=()):
    """The rule on one answer.  `sane(out)` checks a success's output;
    exit statuses in `many_lines_on` may say one line per problem, each
    naming the tool."""
    where = "\nargv %s\nexit %r\nstdout %r\nstderr %r" % (
        shown(argv), code, out[:1000], err[:2000])
    if "Traceback" in err or "internal error" in err:
        raise Broken("a traceback or internal error" + where)
    if code == 0:
        if sane is not None:
            why = sane(out)
            if why:
                raise Broken("exit 0 but %s%s" % (why, where))
        return
    lines = err[:-1].split("\n")       # a line ends at LF alone
    if not err.strip() or not err.endswith("\n"):
        raise Broken("non-zero exit without an error line" + where)
    if len(lines) > 1 and code not in many_lines_on:
        raise Broken("more than one line on stderr" + where)
    for line in lines:
        if not line.startswith(prog + ": "):
            raise Broken("stderr line not `%s: ...`%s" % (prog, where))


NONFINITE = re.compile(r"(?<![A-Za-z_])(nan|-?inf(inity)?)(?![A-Za-z_])",
                       re.IGNORECASE)


def no_nonfinite(out):
    """A sane figure is finite: nan or inf printed is not an answer."""
    m = NONFINITE.search(out)
    return "a non-finite figure %r printed" % m.group(0) if m else None


def strict_json_lines(out):
    """Each line one JSON value, with no NaN or Infinity in it."""
    def refuse(name):
        raise ValueError(name)
    for line in out.splitlines():
        try:
            json.loads(line, parse_constant=refuse)
        except ValueError as e:
            return "not strict JSON (%s): %r" % (e, line[:200])
    return None


# -- scratch space ---------------------------------------------------------

def _scratch_dir():
    """A new directory under QOSCTL_FUZZ_TMP (else the system's), removed
    at exit."""
    base = os.environ.get("QOSCTL_FUZZ_TMP") or None
    if base:
        os.makedirs(base, exist_ok=True)
    path = tempfile.mkdtemp(prefix="qosctl-fuzz-", dir=base)
    atexit.register(shutil.rmtree, path, True)
    return path


WORK = _scratch_dir()       # the examples' working directory


class Scratch:
    """A directory emptied before each example."""

    def __init__(self):
        self.root = _scratch_dir()

    def fresh(self):
        _empty(self.root)
        return self.root

    def write(self, name, data, gz=False):
        path = os.path.join(self.root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        with open(path, "wb") as f:
            f.write(gzip.compress(data, mtime=0) if gz else data)
        return path


# -- loopback servers whose answers an example sets ------------------------

class _Threaded(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


class HttpBody:
    """An HTTP server on 127.0.0.1 answering every GET with `status` and
    `body` (bytes), as set before the example runs."""

    def __init__(self):
        self.body, self.status = b"{}", 200
        me = self

        class Page(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(me.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(me.body)))
                self.end_headers()
                self.wfile.write(me.body)

            def log_message(self, *args):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
        self.srv.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()


class LineServer:
    """A TCP server on 127.0.0.1: reads one line (or nothing, within a
    moment; nothing at all unless `read`), then sends answer(line)
    (bytes) and closes."""

    def __init__(self, answer, read=True):
        self.answer = answer
        me = self

        class One(socketserver.BaseRequestHandler):
            def handle(self):
                self.request.settimeout(0.2)
                data = b""
                try:
                    while read and b"\n" not in data and len(data) < 65536:
                        chunk = self.request.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                except OSError:
                    pass
                try:
                    self.request.sendall(me.answer(data))
                except OSError:
                    pass

        self.srv = _Threaded(("127.0.0.1", 0), One)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()


# -- strategies ------------------------------------------------------------

EDGE_NUMBERS = ["0", "-0", "1", "-1", "0.5", "1e300", "-1e300", "1e-300",
                "5e-324", "-1e12", "1e308", "1.8e308", "1e309", "inf",
                "-inf", "nan", "NaN", "Infinity", "1e20", "99999", "-5",
                "65535", "65536", "256", "257", "0x10", "1_000", " 7",
                "7 ", "", "+1", "1e", "--1", "١٢", "4294967296",
                "9223372036854775808"]


def number_text(ints=True):
    """Text that a number option or field may be given: edge values,
    floats of every kind, whole numbers of any size, digits past
    Python's 4300-digit limit, and anything."""
    parts = [st.sampled_from(EDGE_NUMBERS),
             st.tuples(st.sampled_from(["1", "-1", "2.5", "9.99", "4"]),
                       st.integers(min_value=-330, max_value=330)).map(
                 lambda t: "%se%d" % t),
             st.floats(allow_nan=True, allow_infinity=True).map(repr),
             st.floats(min_value=-1e6, max_value=1e6).map(lambda v: "%g"
                                                          % v),
             st.integers(min_value=4290, max_value=4400).map(
                 lambda n: "9" * n),
             st.text(max_size=8)]
    if ints:
        parts.insert(1, st.integers(min_value=-2 ** 70,
                                    max_value=2 ** 70).map(str))
    return st.one_of(*parts)


def valid_or_not(valid):
    """Mostly a value the option takes (`valid`, a strategy of
    numbers), else any number text: deep paths need valid values."""
    return st.one_of(valid.map(repr), valid.map(repr), number_text())


POSITIVE = st.floats(min_value=5e-324, max_value=1.7976931348623157e308)
FRACTION = st.floats(min_value=5e-324, max_value=1.0, exclude_max=True)


def field_text():
    """A field in a line: numbers, or words with separators, NUL and
    non-ASCII among them."""
    return st.one_of(number_text(),
                     st.text(alphabet=st.characters(
                         codec="utf-8", exclude_characters="\n"),
                         max_size=12),
                     st.sampled_from(["-", "\0", "a\0b", "\t", " ", "é"]))


def argv_of(options, extra=st.nothing(), max_size=8, stray=True):
    """An argument list: options (name -> strategy of its value text, or
    None for a flag) in any order, repeated or not, with stray words
    (`extra` ones, or any)."""
    names = sorted(options)

    def one(name):
        v = options[name]
        if v is None:
            return st.just([name])
        return v.map(lambda text: [name, text])

    item = st.one_of(st.sampled_from(names).flatmap(one),
                     extra.map(lambda w: [w]),
                     st.text(max_size=6).map(lambda w: [w]) if stray
                     else st.nothing())
    return st.lists(item, max_size=max_size).map(
        lambda parts: [w for p in parts for w in p])


def json_value(depth=2):
    """Any JSON value, numbers of every kind (NaN and Infinity as
    Python's json writes them) among them."""
    leaf = st.one_of(st.none(), st.booleans(),
                     st.floats(allow_nan=True, allow_infinity=True),
                     st.integers(min_value=-2 ** 70, max_value=2 ** 70),
                     st.text(max_size=8), number_text())
    return st.recursive(leaf, lambda kids: st.one_of(
        st.lists(kids, max_size=3),
        st.dictionaries(st.text(max_size=6), kids, max_size=3)),
        max_leaves=6)


def lines_text(line, max_size=8):
    """Lines joined by LF (or CRLF), perhaps without a last newline."""
    return st.tuples(st.lists(line, max_size=max_size),
                     st.sampled_from(["\n", "\r\n"]), st.booleans()).map(
        lambda t: t[1].join(t[0]) + (t[1] if t[2] else ""))


def finite(v):
    return isinstance(v, float) and math.isfinite(v)
