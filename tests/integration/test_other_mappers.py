"""Requests that another module maps (a server-context RewriteRule, the
usual PHP front controller; ProxyPass) are counted, rejected at level 0,
degraded into the tree where a file below DocumentRoot results, and told
their level (QOSCTL_LEVEL, X-QosCtl-Level) so that an application can
degrade itself.

Before, such requests never reached the module's translate_name hook:
none was counted, degraded or rejected.
"""

import http.server
import os
import threading

import pytest

import qcharness

TREES = "QosCtl On\nQosCtlContentTrees /degraded /full\n"

SCRIPT = """#!/bin/sh
printf 'Content-Type: text/plain\\n\\n'
printf '%s level=[%s]\\n' {tree} "$QOSCTL_LEVEL"
"""

REWRITE = ("RewriteEngine On\n"
           "RewriteRule ^/app/ /front.cgi [L]\n"
           "RewriteRule ^/named/ /full/front.cgi [L]\n")


def write_script(path, tree):
    with open(path, "w") as f:
        f.write(SCRIPT.format(tree=tree))
    os.chmod(path, 0o755)


def rewrite_server(server_factory, level):
    s = server_factory("", modules=["rewrite", "cgid"])
    s.write_conf(TREES + "QosCtlFixedLevel %s\n" % level
                 + "AddHandler cgi-script .cgi\n"
                 + '<Directory "%s">\n  Options ExecCGI\n</Directory>\n'
                 % s.docroot + REWRITE + s.extra)
    for tree in ("degraded", "full"):
        write_script(os.path.join(s.docroot, tree, "front.cgi"), tree)
    return s.start()


def basic(s):
    return s.vhost()["classes"]["basic"]


def counted(s, key, n):
    """basic[key] once it reaches n (bounded): counts land after the
    response, in log_transaction."""
    return qcharness.wait_for(lambda: basic(s)[key] >= n) and basic(s)[key]


@pytest.mark.parametrize("level,tree", [("1", "degraded"), ("2", "full")])
def test_front_controller_runs_in_the_decided_tree(server_factory, level,
                                                   tree):
    s = rewrite_server(server_factory, level)
    st, _, body = s.get("/app/some/page?x=1")
    assert st == 200
    # QOSCTL_LEVEL only when degraded: unset is the top, at no cost.
    assert body.decode() == "%s level=[%s]\n" % (
        tree, "1/2" if level == "1" else "")
    # A rule that names the top tree is moved to the decided one too.
    st, _, body = s.get("/named/x")
    assert st == 200 and body.decode().startswith(tree + " ")
    assert counted(s, "arrived", 2) == 2
    assert counted(s, "responses", 2) == 2
    assert basic(s)["tree_responses"][int(level) - 1] == 2


def test_front_controller_is_rejected_at_level_0(server_factory):
    s = rewrite_server(server_factory, "0")
    st, _, _ = s.get("/app/x")
    assert st == 503
    assert counted(s, "rejected", 1) == 1


def test_client_cannot_choose_the_level_it_is_told(server_factory):
    s = rewrite_server(server_factory, "1")
    st, _, body = s.get("/app/x", headers={"X-QosCtl-Level": "2/2",
                                           "QOSCTL_LEVEL": "2/2"})
    assert st == 200
    assert body.decode() == "degraded level=[1/2]\n"


def test_rewrite_out_of_the_docroot_is_counted_not_moved(server_factory):
    """A rule to a file outside DocumentRoot has no tree to go to: it is
    served as mapped, and counted at the level it was told."""
    s = server_factory("", modules=["rewrite"])
    outside = os.path.join(s.root, "outside")
    assert not outside.startswith(s.docroot)
    os.makedirs(outside)
    with open(os.path.join(outside, "o.txt"), "w") as f:
        f.write("outside\n")
    s.write_conf(TREES + "QosCtlFixedLevel 1\nRewriteEngine On\n"
                 "RewriteRule ^/out$ %s/o.txt [L]\n"
                 '<Directory "%s">\n  Require all granted\n</Directory>\n'
                 % (outside, outside) + s.extra)
    s.start()
    st, _, body = s.get("/out")
    assert (st, body) == (200, b"outside\n")
    assert counted(s, "responses", 1) == 1
    assert basic(s)["tree_responses"] == [1, 0]


@pytest.mark.parametrize("level,want", [("0", 503), ("1", 200)])
def test_alias_is_counted_and_rejected(server_factory, level, want):
    """An Alias outside DocumentRoot (no tree to go to): served as mapped
    at any level above 0, refused at 0, and counted either way."""
    s = server_factory("", modules=["alias"])
    outside = os.path.join(s.root, "aliased")
    os.makedirs(outside)
    with open(os.path.join(outside, "a.txt"), "w") as f:
        f.write("aliased\n")
    s.write_conf(TREES + "QosCtlFixedLevel %s\nAlias /al %s\n"
                 '<Directory "%s">\n  Require all granted\n</Directory>\n'
                 % (level, outside, outside) + s.extra)
    s.start()
    st, _, body = s.get("/al/a.txt")
    assert st == want
    if want == 200:
        assert body == b"aliased\n"
        assert counted(s, "responses", 1) == 1
    else:
        assert counted(s, "rejected", 1) == 1
    assert counted(s, "arrived", 1) == 1


class _Echo(http.server.BaseHTTPRequestHandler):
    seen = []

    def do_GET(self):
        _Echo.seen.append(self.headers.get_all("X-QosCtl-Level"))
        body = ("level=[%s]\n" % self.headers.get("X-QosCtl-Level")).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def backend():
    httpd = http.server.HTTPServer(("127.0.0.1", 0), _Echo)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    _Echo.seen = []
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()
    t.join(10)


def proxy_server(server_factory, level, port):
    s = server_factory("", modules=["proxy", "proxy_http"])
    s.write_conf(TREES + "QosCtlFixedLevel %s\n" % level
                 + "ProxyPass /api/ http://127.0.0.1:%d/\n" % port + s.extra)
    return s.start()


@pytest.mark.parametrize("level", ["1", "2"])
def test_proxied_backend_is_told_its_level(server_factory, backend, level):
    s = proxy_server(server_factory, level, backend)
    st, _, body = s.get("/api/x", headers={"X-QosCtl-Level": "2/2"})
    assert st == 200
    assert body.decode() == "level=[%s/2]\n" % level
    assert _Echo.seen == [["%s/2" % level]]     # the client's is replaced
    assert counted(s, "responses", 1) == 1
    assert basic(s)["tree_responses"][int(level) - 1] == 1


def test_proxied_request_is_rejected_at_level_0(server_factory, backend):
    s = proxy_server(server_factory, "0", backend)
    st, _, _ = s.get("/api/x")
    assert st == 503
    assert counted(s, "rejected", 1) == 1
    assert _Echo.seen == []


PHP_FULL = ("<?php echo 'php level=', getenv('QOSCTL_LEVEL') ?: 'top', "
            "\"\\n\";\n")


@pytest.mark.parametrize("level,want", [("2", "php level=top\n"),
                                        ("1", "snapshot\n")])
def test_php_front_controller_on_php_fpm(server_factory, level, want):
    """The front controller of a PHP site (every path to /index.php) on
    a real php-fpm, as conf/examples/php-fpm.conf wires it: the full
    tree runs PHP, the degraded tree serves its static snapshot."""
    if not qcharness.php_fpm_binary():
        pytest.skip("php-fpm is not installed (apt-get install php8.2-fpm)")
    with qcharness.PhpFpm(children=1) as fpm:
        s = server_factory("", modules=["rewrite", "proxy", "proxy_fcgi"])
        s.write_conf(
            TREES + "QosCtlFixedLevel %s\n" % level
            + "RewriteEngine On\nRewriteRule ^/ /index.php [L]\n"
            + '<Directory "%s/full">\n  <FilesMatch "\\.php$">\n'
              '    SetHandler "proxy:unix:%s|fcgi://localhost"\n'
              '  </FilesMatch>\n</Directory>\n' % (s.docroot, fpm.socket)
            + '<Directory "%s/degraded">\n  <FilesMatch "\\.php$">\n'
              '    SetHandler None\n    ForceType text/plain\n'
              '  </FilesMatch>\n</Directory>\n' % s.docroot + s.extra)
        with open(os.path.join(s.docroot, "full", "index.php"), "w") as f:
            f.write(PHP_FULL)
        with open(os.path.join(s.docroot, "degraded", "index.php"),
                  "w") as f:
            f.write("snapshot\n")
        s.start()
        st, _, body = s.get("/blog/2026/some-post")
        assert (st, body.decode()) == (200, want)
