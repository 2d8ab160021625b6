"""Fixtures shared by the integration tests: sites and private servers."""

import os
import signal
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "harness"))
import qcharness  # noqa: E402


def _terminate(signum, frame):
    # Let finalizers run (servers stopped by pid) on SIGTERM/SIGINT too.
    qcharness.stop_all()
    raise SystemExit(128 + signum)


signal.signal(signal.SIGTERM, _terminate)


@pytest.fixture(scope="session", autouse=True)
def _teardown_all():
    yield
    qcharness.stop_all()


def make_site(root):
    """Two trees whose files say which tree they came from."""
    for tree in ("degraded", "full"):
        d = os.path.join(root, tree)
        os.makedirs(os.path.join(d, "sub"), exist_ok=True)
        with open(os.path.join(d, "x.txt"), "w") as f:
            f.write(tree + "\n")
        with open(os.path.join(d, "sub", "index.html"), "w") as f:
            f.write(tree + " index\n")
        with open(os.path.join(d, "1k.html"), "wb") as f:
            f.write((tree[0] * 1023 + "\n").encode())
    with open(os.path.join(root, "full", "only-full.txt"), "w") as f:
        f.write("full only\n")
    with open(os.path.join(root, "secret.txt"), "w") as f:
        f.write("SECRET outside every tree\n")
    os.makedirs(os.path.join(root, "status"), exist_ok=True)
    return root


STATUS_VHOST = """
Listen 127.0.0.1:{sport}
<VirtualHost 127.0.0.1:{sport}>
  ServerName status.test
  QosCtlExclude /qosctl-status
  <Location /qosctl-status>
    SetHandler qosctl-status
  </Location>
</VirtualHost>
"""


class Server(qcharness.Apache):
    """A private Apache over make_site(), status on its own port so that
    reading the counters does not change the counters being read."""

    def __init__(self, qosctl_conf, **kw):
        self.sport = qcharness.free_port()
        super().__init__(**kw)
        make_site(self.docroot)
        self.write_conf(qosctl_conf + STATUS_VHOST.format(sport=self.sport))

    def status(self):
        import json
        import urllib.request
        url = "http://127.0.0.1:%d/qosctl-status?format=json" % self.sport
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.loads(r.read())

    def vhost(self, key_prefix="localhost"):
        for v in self.status()["vhosts"]:
            if v["key"].startswith(key_prefix):
                return v
        raise KeyError(key_prefix)


@pytest.fixture(scope="module")
def apache():
    """One unstarted Apache over make_site() for a module's tests, each
    writing its own configuration (a module may define its own)."""
    a = qcharness.Apache()
    make_site(a.docroot)
    yield a
    a.cleanup()


@pytest.fixture
def site_factory():
    """Unstarted Apaches over make_site(), made with qcharness.Apache's
    arguments, cleaned up after the test."""
    made = []

    def make(**kw):
        a = qcharness.Apache(**kw)
        make_site(a.docroot)
        made.append(a)
        return a

    yield make
    for a in made:
        a.cleanup()


@pytest.fixture
def server_factory():
    made = []

    def make(qosctl_conf, **kw):
        s = Server(qosctl_conf, **kw)
        made.append(s)
        return s

    yield make
    for s in made:
        s.cleanup()
