"""Snapshots of dynamic URLs, fetched from a server on 127.0.0.1 only."""

import http.server
import os
import stat
import threading

import pytest

from content_helpers import output_files, run_tool, tree_state, write


class Dynamic(http.server.BaseHTTPRequestHandler):
    body = b"<html><body>report 1</body></html>\n"

    def do_GET(self):
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/dyn/report.cgi")
            self.end_headers()
            return
        if not self.path.startswith("/dyn/"):
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(self.server.body)))
        self.end_headers()
        self.wfile.write(self.server.body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Dynamic)
    httpd.body = Dynamic.body
    httpd.url = "http://127.0.0.1:%d" % httpd.server_port
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def full(tmp_path):
    write(tmp_path / "full" / "dyn" / "report.cgi", "#!/bin/sh\necho\n")
    return tmp_path / "full"


def test_snapshot_is_stored_at_the_url_path_in_every_level(
        server, full, tmp_path):
    out = tmp_path / "out"
    result = run_tool("--levels", "2", "--snapshot", "/dyn/report.cgi?x=1",
                      "--server", server.url, full, out)
    assert result.rc == 0, result
    for level in ("1", "2"):
        snap = out / level / "dyn" / "report.cgi"
        assert snap.read_bytes() == server.body
        # never run as CGI
        assert stat.S_IMODE(snap.stat().st_mode) & 0o111 == 0
    assert any(line.startswith("snapshot") for line in result.out.splitlines())


def test_snapshot_rewritten_only_when_the_page_changes(server, full, tmp_path):
    out = tmp_path / "out"
    args = ["--snapshot", "/dyn/report.cgi", "--server", server.url, full, out]
    assert run_tool(*args).rc == 0
    first = tree_state(out)[b"dyn/report.cgi"]
    assert run_tool(*args).rc == 0
    assert tree_state(out)[b"dyn/report.cgi"] == first
    server.body = b"<html>report 2</html>\n"
    assert run_tool(*args).rc == 0
    assert (out / "dyn" / "report.cgi").read_bytes() == server.body


def test_snapshot_list_file_and_dropped_snapshots(server, full, tmp_path):
    listing = tmp_path / "urls"
    write(listing, "# dynamic pages\n/dyn/a.cgi\n\n/dyn/dir/\n")
    out = tmp_path / "out"
    assert run_tool("--snapshot-list", listing, "--server", server.url,
                    full, out).rc == 0
    assert output_files(out) == {b"dyn/a.cgi", b"dyn/dir/index.html"}
    assert run_tool("--snapshot", "/dyn/a.cgi", "--server", server.url,
                    full, out).rc == 0
    assert output_files(out) == {b"dyn/a.cgi"}


def test_failed_fetch_keeps_the_old_copy(server, full, tmp_path):
    out = tmp_path / "out"
    args = ["--snapshot", "/dyn/report.cgi", full, out]
    assert run_tool("--server", server.url, *args).rc == 0
    url = server.url
    server.shutdown()
    server.server_close()
    result = run_tool("--server", url, *args)
    assert "/dyn/report.cgi: snapshot: cannot fetch" in result.err, result
    assert (out / "dyn" / "report.cgi").read_bytes() == server.body


def test_redirects_are_not_followed(server, tmp_path):
    os.makedirs(tmp_path / "empty")
    result = run_tool("--snapshot", "/redirect", "--server", server.url,
                      tmp_path / "empty", tmp_path / "out")
    assert result.rc == 1 and "server answered 302" in result.err, result
    assert output_files(tmp_path / "out") == set()


@pytest.mark.parametrize("args, message", [
    (["--snapshot", "http://192.0.2.1/dyn/x",
      "--server", "http://127.0.0.1:9"],
     "not on --server"),
    (["--snapshot", "/dyn/x", "--server", "ftp://127.0.0.1/"],
     "--server must be"),
    (["--snapshot", "/dyn/x"], "--server must be"),
    (["--snapshot", "/../etc/passwd", "--server", "http://127.0.0.1:9"],
     "does not map"),
    (["--snapshot", "dyn/x", "--server", "http://127.0.0.1:9"],
     "must start with '/'"),
    (["--snapshot", "/a", "--snapshot", "/a?b",
      "--server", "http://127.0.0.1:9"],
     "both map to"),
])
def test_bad_snapshot_arguments_are_refused_before_any_fetch(
        full, tmp_path, args, message):
    result = run_tool(*args, full, tmp_path / "out")
    assert result.rc == 2 and message in result.err, result
    assert not (tmp_path / "out").exists()
