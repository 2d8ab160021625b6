"""bench/lib/qcclients.py and qchttp.py without a testbed: the reports
of wrk (qcwrk.lua's line) and h2load read and normalized, the browser's
plan, and qchttp.py's retry and browser clients against a small HTTP
server on loopback."""

import http.server
import json
import os
import subprocess
import sys
import threading

import pytest

LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                   "bench", "lib")
sys.path.insert(0, LIB)
import qcclients  # noqa: E402

H2LOAD = """starting benchmark...
Application protocol: h2c

finished in 3.01s, 174.00 req/s, 11.41MB/s
requests: 522 total, 600 started, 522 done, 500 succeeded, 22 failed, \
3 errored, 2 timeout
status codes: 500 2xx, 0 3xx, 0 4xx, 74 5xx
traffic: 34.23MB (35888978) total, 30.02KB (30736) headers
                     min         max         mean         sd        +/- sd
time for request:    12.53ms       1.34s    481.56ms    282.57ms    58.62%
"""

WRK = """Running 3s test @ http://10.213.0.1:39905/bench/64k.jpg
  536 requests in 3.00s, 34.40MB read
QC s1xx 0 s2xx 500 s3xx 0 s4xx 0 s5xx 36 requests 536 connect 2 read 3 \
write 1 status 36 timeout 4 p50_us 218278 p95_us 282464 duration_us 3002030
"""


def classes(m):
    return sum(m[k] for k in ("s1xx", "s2xx", "s3xx", "s4xx", "s5xx"))


def test_h2load_report_is_read_and_normalized():
    raw = qcclients.parse_h2load(H2LOAD)
    assert raw["protocol"] == "h2c"
    assert raw["started"] == 600 and raw["s5xx"] == 74
    assert raw["mean_ms"] == pytest.approx(481.56)
    m = qcclients.normalize("h2", raw)
    assert m["replies"] == classes(m) == 574
    assert m["errors"] == 5 and m["connreset"] == 3
    assert m["client_timo"] == 2
    assert m["sent"] == m["offered"] == 600
    assert m["cut"] == 600 - 574 - 5
    assert m["good"] == 500


def test_wrk_line_is_read_and_normalized():
    m = qcclients.normalize("keepalive", qcclients.parse_wrk(WRK))
    assert m["replies"] == classes(m) == 536
    assert m["s5xx"] == 36 and m["good"] == 500
    assert m["connrefused"] == 2 and m["connreset"] == 4
    assert m["errors"] == 2 + 3 + 1 + 4
    assert m["sent"] == 536 + 2 + 3 + 1


def test_wrk_without_the_script_line_is_an_error():
    with pytest.raises(RuntimeError):
        qcclients.parse_wrk("Running 3s test\n")


def test_retry_figures_add_up_over_segments():
    a = qcclients.normalize("retry", {
        "jobs": 10, "jobs_ok": 7, "attempts": 16, "s2xx": 7, "s5xx": 8,
        "s503": 8, "timeouts": 1, "jobs_gave_up": 2, "jobs_error": 1})
    b = qcclients.normalize("retry", {"jobs": 5, "jobs_ok": 5,
                                      "attempts": 5, "s2xx": 5})
    m = qcclients.sum_metrics([a, b])
    assert m["model"] == "retry"
    assert m["jobs"] == m["offered"] == 15
    assert m["attempts"] == m["replies"] + m["errors"] == 21
    assert m["jobs_failed"] == 3 and m["good"] == 12
    d = qcclients.derived(m, 3.0)
    assert d["goodput"] == 4.0
    assert d["fail_share"] == pytest.approx(0.2)


def test_keepalive_thinks_at_most_think_max():
    for rate in (1, 18.8, 564, 5000):
        for conns in qcclients.CONNS:
            n, think = qcclients.keepalive_plan(rate, conns)
            assert 1 <= n <= conns
            assert think <= qcclients.THINK_MAX * 1e3 + 1e-6
            assert n / (think / 1e3) == pytest.approx(rate)


def pages():
    return {"page": "/p", "objects": ["/o%d" % i for i in range(3)],
            "sizes": {"/p": [100, 40], "/o0": [1000, 100],
                      "/o1": [2000, 200], "/o2": [3000, 300]}}


def test_browser_plan_is_seeded_and_at_the_rate():
    plan = qcclients.browser_plan(pages(), 6.0, 10, addresses=["a", "b"],
                                  pages_per_session=3)
    again = qcclients.browser_plan(pages(), 6.0, 10, addresses=["a", "b"],
                                   pages_per_session=3)
    assert plan == again
    assert len(plan["sessions"]) == 20
    assert [s[0] for s in plan["sessions"][:3]] == [0.0, 0.5, 1.0]
    assert all(len(s[2]) == 2 and s[1] in ("a", "b")
               for s in plan["sessions"])
    other = qcclients.browser_plan(pages(), 6.0, 10, seed=7)
    assert other["sessions"] != plan["sessions"]
    fixed = qcclients.browser_plan(pages(), 6.0, 10, browsers=4)
    assert len(fixed["sessions"]) == 4
    assert all(sum(s[2]) > 10 for s in fixed["sessions"])


class Handler(http.server.BaseHTTPRequestHandler):
    """/busy: 503; /chunked: a chunked 200; /<name>: a 200 whose body is
    as long as pages()'s full size, or its degraded size for ?d."""
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        path, _, query = self.path.partition("?")
        if path == "/busy":
            return self.reply(503, b"busy")
        if path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"5\r\nhello\r\n0\r\n\r\n")
            return
        full, deg = pages()["sizes"].get(path, [10, 1])
        self.reply(200, b"x" * (deg if query == "d" else full))

    def reply(self, status, body):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def qchttp(*args):
    p = subprocess.run([sys.executable, os.path.join(LIB, "qchttp.py")]
                       + [str(a) for a in args], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_retry_client_retries_each_503_on_a_new_connection(server):
    ok = qchttp("retry", "127.0.0.1", server, "/o0", 20, 1, 5, 3)
    assert ok["jobs"] == ok["jobs_ok"] == ok["attempts"] == 20
    no = qchttp("retry", "127.0.0.1", server, "/busy", 20, 1, 5, 3)
    assert no["jobs"] == no["jobs_gave_up"] == 20
    assert no["attempts"] == no["s503"] == no["s5xx"] == 80
    assert "jobs_ok" not in no


def test_retry_client_counts_what_never_answered():
    import socket
    with socket.socket() as s:          # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    m = qchttp("retry", "127.0.0.1", port, "/", 10, 1, 2, 3)
    assert m["jobs"] == m["jobs_error"] == m["attempts"] == m["refused"] \
        == 10


def test_browser_client_tells_the_tree_of_each_reply(server, tmp_path):
    plan = qcclients.browser_plan(pages(), 10.0, 1, pages_per_session=2)
    plan["objects"][1] += "?d"          # one object degraded
    plan["sizes"]["/o1?d"] = plan["sizes"]["/o1"]
    plan["objects"].append("/chunked")
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    m = qchttp("browser", "127.0.0.1", server, path, 5)
    n = m["pages"]
    assert n >= len(plan["sessions"])
    assert m["requests"] == m["s2xx"] == n * 5
    assert m["pages_ok"] == m["pages_mixed"] == n
    assert m["tree_degraded"] == n
    assert m["tree_full"] == 3 * n and m["tree_unknown"] == n
    assert m["connections"] == m["sessions"]
    assert len(m["page_ms"]) == n
