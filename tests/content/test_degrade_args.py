"""Bad arguments: one line on stderr and a non-zero exit, never a traceback."""

import http.server
import threading

import pytest

from content_helpers import run_tool, write


class Anything(http.server.BaseHTTPRequestHandler):
    """Answers 200 to every path, so a bad path reaches the writing."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<p>page</p>\n")

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Anything)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:%d" % httpd.server_port
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def full(tmp_path):
    write(tmp_path / "full" / "index.html", "<p>hi</p>\n")
    return tmp_path / "full"


def refused(result):
    lines = result.err.strip().splitlines()
    return (result.rc == 2 and len(lines) == 1
            and "Traceback" not in result.err
            and lines[0].startswith("qosctl-degrade: "))


@pytest.mark.parametrize("path", [
    "/dyn/a%00b.cgi",            # NUL once unescaped
    "/dyn/a%0Ab.cgi",            # a newline
    "/dyn/a\udcffb.cgi",         # not UTF-8 (an argv byte 0xff)
    "/dyn/\x01.cgi",
    "http://[::1/a",
])
def test_bad_snapshot_path(server, full, tmp_path, path):
    result = run_tool("--snapshot", path, "--server", server, full,
                      tmp_path / "out")
    assert refused(result), result
    assert not (tmp_path / "out" / "dyn").exists()


@pytest.mark.parametrize("content", [b"/x\x00y\n", b"/caf\xe9\n"])
def test_bad_snapshot_list(server, full, tmp_path, content):
    write(tmp_path / "list", content)
    result = run_tool("--snapshot-list", tmp_path / "list", "--server", server,
                      full, tmp_path / "out")
    assert refused(result), result


@pytest.mark.parametrize("args", [
    ["--server", "http://[::1"], ["--server", "http://127.0.0.1:99999"],
    ["--server", "http://127.0.0.1:8080 /x"], ["--timeout", "inf"],
    ["--timeout", "nan"], ["--strip-below", "inf"], ["--target", "*=inf"],
    ["--target", "*=1/nan"], ["--levels", "100"], ["--no-such-option"],
])
def test_bad_option_values(full, tmp_path, args):
    if "--server" in args:
        args = ["--snapshot", "/a"] + args
    result = run_tool(*args, full, tmp_path / "out")
    assert refused(result), result


def test_missing_arguments_are_one_line():
    result = run_tool()
    assert refused(result), result
