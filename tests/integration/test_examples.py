"""conf/examples/cpu-bound.conf and php-fpm.conf, as shipped, on a real
Apache with this build's module (and, for PHP, a real php-fpm); the
premium rule of hosting.conf, as written.

Each test includes the example file itself; only the Defines the example
leaves open (QOSCTL_SITE, QOSCTL_VHOST, QOSCTL_SNAPSHOT_PORT,
QOSCTL_PHP_SOCKET, QOSCTL_FIXED_LEVEL) point it at a private site, port
and php-fpm, and pin the site's level.  The
site's pages come from content-trees/make-sample-site, the snapshots from
qosctl-degrade run as the example's comments say.  A live page prints the
request's query string; its snapshot, taken without one, cannot.
"""

import importlib.machinery
import os
import shutil
import subprocess
import sys
import tempfile
import types

import pytest

import qcharness

EXAMPLES = os.path.join(qcharness.TOP_SRCDIR, "conf", "examples")
TOOL = os.path.join(qcharness.TOP_SRCDIR, "content-trees", "qosctl-degrade")
GENERATOR = os.path.join(qcharness.TOP_SRCDIR, "content-trees",
                         "make-sample-site")
NO_PHP = "php-fpm not installed (CI: apt-get install php8.2-fpm php8.2-cli)"

# What Debian's apache2.conf says about the file system: nothing is served
# outside /var/www and /usr/share unless a configuration grants it.
DEBIAN_APACHE2_CONF = r"""
<Directory />
    Options FollowSymLinks
    AllowOverride None
    Require all denied
</Directory>
<FilesMatch "^\.ht">
    Require all denied
</FilesMatch>
"""

# What `a2enconf php8.2-fpm` adds on Debian: a handler chosen by file name
# for the whole server (/etc/apache2/conf-available/php8.2-fpm.conf).
DEBIAN_PHP_CONF = r"""
<FilesMatch ".+\.ph(?:ar|p|tml)$">
    SetHandler "proxy:unix:/run/php/php8.2-fpm.sock|fcgi://localhost"
</FilesMatch>
"""


def load_generator():
    sys.dont_write_bytecode = True
    loader = importlib.machinery.SourceFileLoader("make_sample_site",
                                                  GENERATOR)
    module = types.ModuleType(loader.name)
    module.__file__ = GENERATOR
    loader.exec_module(module)
    return module


@pytest.fixture
def site():
    """full/ with the sample site's pages (no images), an empty degraded/;
    readable by the www-data children of a root-started Apache."""
    root = tempfile.mkdtemp(prefix="qosctl-example-")
    os.chmod(root, 0o755)
    try:
        php = qcharness.php_fpm_binary() is not None
        load_generator().write_pages(os.path.join(root, "full"), 1, php)
        os.mkdir(os.path.join(root, "degraded"))
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


class Example:
    """A private Apache running one example, at a fixed level."""

    def __init__(self, name, site, level, defines=(), before="",
                 mpm="event"):
        self.name, self.site = name, site
        self.defines, self.before = list(defines), before
        self.snapshot_port = qcharness.free_port()
        self.apache = qcharness.Apache(mpm=mpm)
        self.apache.write_conf(self.conf(level))

    def conf(self, level):
        defines = [("QOSCTL_SITE", self.site),
                   ("QOSCTL_VHOST", "127.0.0.1:%d" % self.apache.port),
                   ("QOSCTL_SNAPSHOT_PORT", str(self.snapshot_port)),
                   ("QOSCTL_FIXED_LEVEL", str(level))]
        lines = ["Define %s %s" % kv for kv in defines + self.defines]
        lines += [DEBIAN_APACHE2_CONF, self.before]
        lines.append('Include "%s"' % os.path.join(EXAMPLES, self.name))
        return "\n".join(lines) + "\n"

    def start(self):
        self.apache.start()
        return self

    def level(self, level):
        self.apache.graceful(self.conf(level))

    def get(self, path):
        return self.apache.get(path)

    def degrade(self, *urls):
        """qosctl-degrade as the example's comment runs it."""
        args = [sys.executable, TOOL, "--strict", "-q"]
        for url in urls:
            args += ["--snapshot", url]
        args += ["--server", "http://127.0.0.1:%d" % self.snapshot_port,
                 os.path.join(self.site, "full"),
                 os.path.join(self.site, "degraded")]
        return subprocess.run(args, capture_output=True, text=True,
                              timeout=120)

    def snapshot(self, page):
        with open(os.path.join(self.site, "degraded", page), "rb") as f:
            return f.read()


@pytest.fixture
def example():
    made = []

    def make(*args, **kw):
        made.append(Example(*args, **kw))
        return made[-1]

    yield make
    for e in made:
        e.apache.cleanup()


def check_degrades(ex, page, php_fpm=None):
    """Rejected at level 0 while the snapshot port still serves the live
    page; the live page at level 2; its snapshot, with no script run, at
    level 1."""
    uri = "/dynamic/" + page
    assert ex.get(uri)[0] == 503

    made = ex.degrade(uri)
    assert made.returncode == 0, made.stderr
    snapshot = ex.snapshot("dynamic/" + page)
    assert b"Checksum" in snapshot and b"Query:" not in snapshot
    assert b"<?" not in snapshot

    ex.level(2)
    served = php_fpm.requests() if php_fpm else 0
    for probe in ("alpha", "beta"):
        status, headers, body = ex.get(uri + "?probe=" + probe)
        assert status == 200, (status, body, ex.apache.log())
        assert b"Query: probe=" + probe.encode() in body
        assert headers["Content-Type"].startswith("text/html")
    if php_fpm:
        assert php_fpm.requests() == served + 2

    ex.level(1)
    served = php_fpm.requests() if php_fpm else 0
    for probe in ("gamma", "delta"):
        status, headers, body = ex.get(uri + "?probe=" + probe)
        assert status == 200, (status, body)
        assert body == snapshot
        assert headers["Content-Type"].startswith("text/html")
    if php_fpm:
        assert php_fpm.requests() == served


@pytest.mark.parametrize("mpm", ["event", "prefork"])   # mod_cgid, mod_cgi
def test_cpu_bound_example_serves_cgi_then_snapshots(example, site, mpm):
    ex = example("cpu-bound.conf", site, 0, mpm=mpm).start()
    check_degrades(ex, "cpu.cgi")


@pytest.mark.parametrize("debian_php_conf", [False, True],
                         ids=["alone", "with-a2enconf-php8.2-fpm"])
def test_php_fpm_example_serves_php_then_snapshots(example, site,
                                                   debian_php_conf):
    if not qcharness.php_fpm_binary():
        pytest.skip(NO_PHP)
    with qcharness.PhpFpm(children=2) as php_fpm:
        ex = example("php-fpm.conf", site, 0,
                     defines=[("QOSCTL_PHP_SOCKET", php_fpm.socket)],
                     before=DEBIAN_PHP_CONF if debian_php_conf else "")
        ex.start()
        check_degrades(ex, "report.php", php_fpm)


@pytest.mark.parametrize("name", ["cpu-bound.conf", "php-fpm.conf"])
def test_example_passes_config_test(site, name):
    """httpd -t on the example with its own defaults but the site's
    directory (QosCtlContentTrees checks that the trees exist)."""
    apache = qcharness.Apache(
        extra='Define QOSCTL_SITE %s\nInclude "%s"\n'
        % (site, os.path.join(EXAMPLES, name)))
    try:
        rc, out = apache.config_test()
        assert rc == 0, out
    finally:
        apache.cleanup()


# -- conf/examples/hosting.conf: premium only from what can be trusted -------

def hosting_premium_rule():
    """The example's SetEnvIfExpr that grants premium, as written (its
    continuation lines joined as httpd joins them)."""
    with open(os.path.join(EXAMPLES, "hosting.conf")) as f:
        text = f.read().replace("\\\n", "")
    rules = [l.strip() for l in text.splitlines()
             if "QOSCTL_CLASS=premium" in l and not l.lstrip().startswith("#")]
    assert len(rules) == 1, rules
    return rules[0]


def test_hosting_example_grants_premium_to_a_signed_cookie_only():
    import hashlib
    secret = "0123456789abcdef"
    good = "alice." + hashlib.sha1(("%s:alice" % secret).encode()).hexdigest()
    apache = qcharness.Apache(
        modules=["setenvif"],
        extra="Define QOSCTL_COOKIE_SECRET %s\nQosCtl On\n"
              "QosCtlContentTrees /degraded /full\n%s\n"
              "<Location /qosctl-status>\n  SetHandler qosctl-status\n"
              "</Location>\nQosCtlExclude /qosctl-status\n"
              % (secret, hosting_premium_rule()))
    from conftest import make_site
    make_site(apache.docroot)
    forged = ["plan=gold", "qosctl=alice", "qosctl=bob." + good[6:],
              "xqosctl=" + good, "qosctl=" + good + "x",
              "qosctl=alice." + "0" * 40, "qosctl=Alice." + good[6:]]
    signed = ["qosctl=" + good, "a=1; qosctl=" + good + "; b=2"]
    try:
        apache.start()
        for cookie in forged + signed:
            assert apache.get("/x.txt", headers={"Cookie": cookie})[0] == 200

        def classes():
            return apache.status_json()["vhosts"][0]["classes"]
        assert qcharness.wait_for(
            lambda: classes()["basic"]["arrived"]
            + classes()["premium"]["arrived"] >= len(forged + signed))
        assert classes()["premium"]["arrived"] == len(signed)
        assert classes()["basic"]["arrived"] >= len(forged)
    finally:
        apache.cleanup()
