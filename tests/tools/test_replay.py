"""tools/qosctl-replay: splitting odd access logs, trees that never leave
their directory, the client against a loopback server, and one-line
refusals of bad input.  No wall-clock thresholds: timing is checked for
order and consistency only."""

import gzip
import http.server
import json
import os
import subprocess
import sys
import threading

import pytest

from tooltest import TOP, load_tool, tool_path

TOOL = tool_path("qosctl-replay")
R = load_tool("qosctl-replay")
ENV = dict(os.environ, QOSCTL_DEGRADE=os.path.join(
    TOP, "content-trees", "qosctl-degrade"))


def run(*args):
    return subprocess.run([sys.executable, TOOL] + [str(a) for a in args],
                          capture_output=True, timeout=120, env=ENV)


def line(t, target, status=200, size=100, client="127.0.0.1", tail=b""):
    return (b'%s - - [10/Oct/2000:13:55:%02d +0000] "GET %s HTTP/1.1" '
            b'%d %s%s\n' % (client.encode(), t, target, status,
                            str(size).encode(), tail))


ODD = b"".join([
    line(1, b"/b.html", size=200),
    # Logged when it ended: stamped earlier than the line above.
    line(0, b"/a.html", size=100, client="2001:db8::1"),
    b'::1 - frank [10/Oct/2000:13:55:01 +0000] "GET /img/x.jpg HTTP/1.1" '
    b'200 5000 "http://ref/" "agent \\"quoted\\" here" 1234\n',
    b'10.0.0.1 - - [31/Feb/2000:13:55:01 +0000] "GET /bad HTTP/1.1" '
    b'200 5\n',
    b'10.0.0.1 - - [10/Foo/2000:13:55:01 +0000] "GET /bad HTTP/1.1" '
    b'200 5\n',
    line(2, b'/q\\"uote.html', size=99),
    line(2, b"/huge.bin", size=int("9" * 30)),
    line(2, b"/caf\xe9\\xff.html", size=77),
    b'10.0.0.1 - - [10/Oct/2000:13:55:02 +0000] "-" 408 0\n',
    b"not a log line at all \xff\xfe\n",
    b"\n",
    line(3, b"/dir/", size=300),
    line(3, b"/gone.html", status=404, size=200),
])


def split_rows(prefix):
    with open(prefix + ".requests") as f:
        rows = [ln.rstrip("\n").split("\t") for ln in f
                if not ln.startswith("#")]
    with open(prefix + ".timing") as f:
        timing = [tuple(int(x) for x in ln.split()) for ln in f
                  if not ln.startswith("#")]
    return rows, timing


def test_split_odd_lines(tmp_path):
    log = tmp_path / "odd.log"
    log.write_bytes(ODD)
    out = run("split", log, "--out", tmp_path / "s")
    assert out.returncode == 0, out.stderr
    err = out.stderr.decode()
    # malformed lines counted by reason, never fatal
    assert "4 malformed lines skipped" in err
    assert "2 bad date" in err and "1 no request line" in err
    rows, timing = split_rows(str(tmp_path / "s"))
    targets = [r[1] for r in rows]
    # time order, the log's order within a second
    assert targets == ["/a.html", "/b.html", "/img/x.jpg", "/q%22uote.html",
                       "/huge.bin", "/caf%E9%FF.html", "/dir/",
                       "/gone.html"]
    assert rows[0][5] == "2001:db8::1" and rows[2][5] == "::1"
    assert rows[2][4] == "1234"                     # %D
    assert rows[4][3] == "9" * 30                   # a huge size, kept
    assert timing == [(0, 1), (1, 2), (2, 3), (3, 2)]
    assert sum(n for _, n in timing) == len(rows)
    # the split pair reads back as the same requests
    again = R.read_split(str(tmp_path / "s.requests"))
    assert [r[2] for r in again] == targets


def test_gzip_and_duration_fields(tmp_path):
    gz = tmp_path / "odd.log.1"               # no .gz: found by its bytes
    gz.write_bytes(gzip.compress(ODD))
    assert run("split", gz, "--out", tmp_path / "g").returncode == 0
    plain = tmp_path / "odd.log"
    plain.write_bytes(ODD)
    assert run("split", plain, "--out", tmp_path / "p").returncode == 0
    assert split_rows(str(tmp_path / "g")) == split_rows(str(tmp_path / "p"))
    t = tmp_path / "t.log"
    t.write_bytes(line(0, b"/x", tail=b" 3"))
    assert run("split", t, "--out", tmp_path / "t", "--duration-field",
               "T").returncode == 0
    assert split_rows(str(tmp_path / "t"))[0][0][4] == "3000000"


def test_parse_stamp_against_calendar():
    import calendar
    for stamp, tup, off in [(b"10/Oct/2000:13:55:36 -0700",
                             (2000, 10, 10, 13, 55, 36), -7 * 3600),
                            (b"29/Feb/2024:00:00:00 +0530",
                             (2024, 2, 29, 0, 0, 0), 5 * 3600 + 1800),
                            (b"01/Jan/1970:00:00:00 +0000",
                             (1970, 1, 1, 0, 0, 0), 0)]:
        assert R.parse_stamp(stamp) == calendar.timegm(tup) - off
    for bad in (b"29/Feb/2023:00:00:00 +0000", b"10/Oct/2000:24:00:00 +0000",
                b"10/Oct/2000:13:55:36 +0099", b"10/oct/2000:13:55:36 +0000"):
        assert R.parse_stamp(bad) is None


ESCAPES = b"".join([
    line(0, b"/ok/file.txt", size=10),
    line(0, b"/../../etc/passwd"),
    line(0, b"/a/%2e%2e/%2e%2e/x"),
    line(0, b"/nul%00name"),
    line(0, b"/back%5cslash"),
    line(0, b"http://evil.example/../../x"),
    line(0, b"/.htaccess"),
    line(0, b"//double//slash.txt", size=7),
])


def test_mktree_never_leaves_the_tree(tmp_path):
    log = tmp_path / "esc.log"
    log.write_bytes(ESCAPES)
    out = tmp_path / "t"
    r = run("mktree", log, "--out", out, "--no-degrade")
    assert r.returncode == 0, r.stderr
    err = r.stderr.decode()
    assert "'..' in path" in err and "NUL in path" in err
    assert "backslash in path" in err and "reserved" in err
    files = sorted(os.path.relpath(os.path.join(d, f), out / "full")
                   for d, _, fs in os.walk(out / "full") for f in fs)
    assert files == ["double/slash.txt", "ok/file.txt"]
    assert os.path.getsize(out / "full" / "ok" / "file.txt") == 10
    # nothing was written beside the output directory
    assert sorted(os.listdir(tmp_path)) == ["esc.log", "t"]


def test_mktree_does_not_follow_symlinks(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    out = tmp_path / "t"
    (out / "full").mkdir(parents=True)
    (out / ".htqosctl-replay").write_text("")
    os.symlink(outside, out / "full" / "ok")
    log = tmp_path / "l.log"
    log.write_bytes(line(0, b"/ok/file.txt", size=10))
    r = run("mktree", log, "--out", out, "--no-degrade")
    assert r.returncode == 0
    assert "unwritable" in r.stderr.decode()
    assert os.listdir(outside) == []


def test_mktree_refuses_a_foreign_directory(tmp_path):
    (tmp_path / "t" / "full").mkdir(parents=True)
    (tmp_path / "t" / "full" / "precious").write_text("x")
    log = tmp_path / "l.log"
    log.write_bytes(line(0, b"/a"))
    r = run("mktree", log, "--out", tmp_path / "t")
    assert r.returncode == 2 and r.stderr.count(b"\n") == 1


def test_mktree_sizes_images_and_degraded(tmp_path):
    log = tmp_path / "l.log"
    log.write_bytes(ODD + line(4, b"/img/big.jpg", size=70000)
                    + line(4, b"/img/x.jpg", size=6000))
    out = tmp_path / "t"
    r = run("mktree", log, "--out", out)
    assert r.returncode == 0, r.stderr
    full = out / "full"
    # every path served with 200 at its largest size, exactly
    assert os.path.getsize(full / "a.html") == 100
    assert os.path.getsize(full / "dir" / "index.html") == 300
    assert os.path.getsize(full / 'q"uote.html') == 99
    assert os.path.getsize(full / b"caf\xe9\xff.html".decode(
        "utf-8", "surrogateescape")) == 77
    assert os.path.getsize(full / "img" / "x.jpg") == 6000
    assert os.path.getsize(full / "img" / "big.jpg") == 70000
    assert (full / "img" / "big.jpg").read_bytes()[:3] == b"\xff\xd8\xff"
    assert not (full / "huge.bin").exists()       # over --max-file
    assert not (full / "gone.html").exists()      # only ever a 404
    # qosctl-degrade's rules made the degraded images: smaller
    deg = out / "degraded" / "img"
    assert 0 < os.path.getsize(deg / "big.jpg") < 70000
    assert 0 < os.path.getsize(deg / "x.jpg") < 6000
    assert not (out / "degraded" / "a.html").exists()   # not made smaller
    rows, _ = split_rows(str(out / "replay"))
    assert [r[1] for r in rows][:2] == ["/a.html", "/b.html"]


def test_mktree_hash_names_keep_nothing_of_the_log(tmp_path):
    log = tmp_path / "l.log"
    log.write_bytes(ODD + ESCAPES)
    out = tmp_path / "t"
    r = run("mktree", log, "--out", out, "--hash-names", "--key", "k",
            "--no-degrade")
    assert r.returncode == 0, r.stderr
    names = []
    for d, ds, fs in os.walk(out):
        names += ds + fs
    blob = (out / "replay.requests").read_bytes() + b" ".join(
        os.fsencode(n) for n in names)
    for secret in (b"a.html", b"uote", b"caf", b"passwd", b"evil",
                   b"2001:db8", b"127.0.0.1", b"img", b"dir"):
        assert secret not in blob
    assert b".jpg" in blob                 # the extension is kept
    # the same key gives the same names
    r2 = run("mktree", log, "--out", tmp_path / "t2", "--hash-names",
             "--key", "k", "--no-degrade")
    assert r2.returncode == 0
    assert (tmp_path / "t2" / "replay.requests").read_bytes() == \
        (out / "replay.requests").read_bytes()


@pytest.mark.parametrize("args", [
    [],
    ["nosuch"],
    ["split"],
    ["split", "/nonexistent.log", "--out", "x"],
    ["run", "LOG", "--server", "https://127.0.0.1:1", "--out", "o"],
    ["run", "LOG", "--server", "http://127.0.0.1:1", "--out", "o",
     "--speedup", "0"],
    ["run", "LOG", "--server", "http://127.0.0.1:1", "--out", "o",
     "--max-conns", "-3"],
    ["run", "LOG", "--server", "http://127.0.0.1:1", "--out", "o",
     "--power-model", "200,100"],
    ["run", "LOG", "--server", "http://127.0.0.1:1", "--out", "o",
     "--duration", "0.000001"],
    ["mktree", "LOG", "--out", "t", "--key", "k"],
    ["split", "EMPTY", "--out", "x"],
    ["compare", "/nonexistent1", "/nonexistent2", "--out", "p.png"],
])
def test_bad_input_one_line(tmp_path, args):
    log = tmp_path / "l.log"
    log.write_bytes(line(0, b"/a") + line(5, b"/b"))
    (tmp_path / "empty").write_bytes(b"junk\n")
    args = [str(log) if a == "LOG" else str(tmp_path / "empty")
            if a == "EMPTY" else a for a in args]
    r = subprocess.run([sys.executable, TOOL] + args, capture_output=True,
                       timeout=60, cwd=tmp_path, env=ENV)
    assert r.returncode == 2, r.stderr
    err = r.stderr.decode()
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("qosctl-replay: ")


# -- the client against a loopback server ------------------------------

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen = []

    def do_GET(self):
        Handler.seen.append(self.path)
        if self.path.startswith("/chunked"):
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"abc", b"x" * 5000, b"z"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
            return
        if self.path.startswith("/missing"):
            body = b"no"
            self.send_response(404)
        else:
            body = b"y" * int(self.path.rsplit("/", 1)[1] or 0)
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        if self.path.startswith("/close"):
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def server():
    Handler.seen = []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield "http://127.0.0.1:%d" % srv.server_port
    srv.shutdown()
    srv.server_close()


CLIENT_LOG = b"".join(
    [line(0, b"/f/%d" % (i * 100), size=i * 100) for i in range(5)]
    + [line(1, b"/chunked", size=5004), line(1, b"/missing", 404, 2),
       line(1, b"/close/7", size=7), line(2, b"/f/70000", size=70000)])


@pytest.mark.parametrize("keepalive", ["--keepalive", "--no-keepalive"])
def test_run_records_every_request(tmp_path, server, keepalive):
    log = tmp_path / "c.log"
    log.write_bytes(CLIENT_LOG)
    out = tmp_path / "run"
    r = run("run", log, "--server", server, "--out", out, "--speedup", 20,
            "--max-conns", 2, keepalive, "--power-model", "50,150")
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["requests"] == 9 and s["errors"] == 0
    assert s["status"] == {"200": 8, "404": 1}
    assert s["bytes_differ_from_log"] == 0
    for k in ("issue_lag_ms", "ttfb_ms", "completion_ms"):
        assert set(s[k]) >= {"p50", "p90", "p99"}
    assert s["throughput"]["requests_per_s"] > 0
    assert s["energy"]["source"] == "model"
    assert s["energy"]["joules_per_request"] > 0
    assert sorted(Handler.seen) == sorted(
        ["/f/%d" % (i * 100) for i in range(5)]
        + ["/chunked", "/missing", "/close/7", "/f/70000"])
    rows = [ln.split("\t") for ln in (out / "requests.tsv").read_text()
            .splitlines() if not ln.startswith("#")]
    assert len(rows) == 9
    for sch, iss, first, done, status, nbytes, capped, target in rows:
        assert float(sch) <= float(iss) <= float(first) <= float(done)
    assert [int(x[5]) for x in rows] == [0, 100, 200, 300, 400, 5004, 2,
                                          7, 70000]
    if keepalive == "--keepalive":
        assert s["connections_opened"] < 9
    else:
        assert s["connections_opened"] == 9
    if os.path.exists("/usr/bin/gnuplot"):
        assert (out / "cdf.png").stat().st_size > 0
    # the same run compared with itself: distance 0
    c = run("compare", out, out, "--out", tmp_path / "c.png", "--json")
    assert c.returncode == 0, c.stderr
    assert json.loads(c.stdout)["ks_completion"] == 0


def test_connection_cap_is_recorded(tmp_path, server):
    log = tmp_path / "c.log"
    # 40 requests due at once on one connection: all but the first wait
    log.write_bytes(b"".join(line(0, b"/f/10", size=10) for _ in range(40)))
    out = tmp_path / "run"
    r = run("run", log, "--server", server, "--out", out, "--max-conns",
            1, "--burst", "--no-plot")
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["capped"] == 39 and s["connections_opened"] == 1


def test_unreachable_server_counts_errors(tmp_path):
    import socket
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]          # bound, never listening
        log = tmp_path / "c.log"
        log.write_bytes(line(0, b"/a") + line(0, b"/b"))
        out = tmp_path / "run"
        r = run("run", log, "--server", "http://127.0.0.1:%d" % port,
                "--out", out, "--no-plot", "--speedup", 100)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["errors"] == 2 and s["requests"] == 2


def test_schedule_and_statistics():
    reqs = [(10, "GET", "/", 200, 0, None, "")] * 4 + \
        [(12, "GET", "/", 200, 0, None, "")]
    assert list(R.schedule(reqs, 2.0, False)) == [0, 0.125, 0.25, 0.375,
                                                   1.0]
    assert list(R.schedule(reqs, 1.0, True)) == [0, 0, 0, 0, 2.0]
    assert R.ks_distance([1, 2, 3], [1, 2, 3]) == 0
    assert R.ks_distance([1, 2], [3, 4]) == 1
    assert R.ks_distance([1, 2, 3, 4], [3, 4, 5, 6]) == 0.5
    assert R.percentile([1, 2, 3, 4, 5], 50) == 3
    assert R.percentile([0, 10], 90) == 9


def test_energy_sources(tmp_path):
    zone = tmp_path / "intel-rapl:0"
    zone.mkdir()
    (zone / "name").write_text("package-0\n")
    (zone / "energy_uj").write_text("999000000\n")
    (zone / "max_energy_range_uj").write_text("1000000000\n")
    e = R.Energy(None, str(tmp_path))
    assert e.source == "rapl"
    e.begin()
    (zone / "energy_uj").write_text("1000000\n")     # wrapped: +2 J
    got = e.end(4)
    assert got["joules"] == pytest.approx(2.0)
    assert got["joules_per_request"] == pytest.approx(0.5)
    none = R.Energy(None, str(tmp_path / "nothing"))
    none.begin()
    got = none.end(4)
    assert got["source"] is None and "no RAPL" in got["why"]
    assert got["joules_per_request"] is None
