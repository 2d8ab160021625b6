"""Who sees the whole server's status when the status location is at
server level, as conf/qosctl.conf ships it: every virtual host inherits
that <Location>, a tenant's too, and a tenant's script on the same
machine passes `Require local` with any Host header it likes.  The
whole server shows on the main server and on a host whose own
<VirtualHost> sets the handler; on any other host the same location
shows that host alone.

The tenant's script is a real CGI program run by the tenant's virtual
host, which asks the status URL over loopback with a Host header of its
choosing, as `curl -H 'Host: tenant.test' http://127.0.0.1/...` does.
"""

import json
import os

import pytest

import qcharness

# As conf/qosctl.conf: the location at server level, Require local.
SHIPPED = """QosCtl On
QosCtlContentTrees /degraded /full
QosCtlExclude /qosctl-status
<Location /qosctl-status>
  SetHandler qosctl-status
  Require local
</Location>
"""

# A default host without a ServerName of its own, as Debian's
# 000-default.conf, then two tenants with their own DocumentRoot and
# CGI (the main server's own port, {aport}, has no virtual host).
HOSTS = """Listen 127.0.0.1:{aport}
AddHandler cgi-script .cgi
<VirtualHost 127.0.0.1:{port}>
</VirtualHost>
<VirtualHost 127.0.0.1:{port}>
  ServerName tenant.test
  DocumentRoot "{root}/tenant"
  <Directory "{root}/tenant">
    Require all granted
    Options ExecCGI
  </Directory>
</VirtualHost>
<VirtualHost 127.0.0.1:{port}>
  ServerName other.test
</VirtualHost>
"""

# The tenant's script: asks the status page with the Host header and
# format of its query string and prints what it got.
SCRIPT = """#!/usr/bin/python3
import os, urllib.parse, urllib.request
q = urllib.parse.parse_qs(os.environ.get("QUERY_STRING", ""))
req = urllib.request.Request(
    "http://127.0.0.1:%s/qosctl-status?format=%s"
    % (q["port"][0], q["format"][0]),
    headers={{"Host": q["host"][0]}})
with urllib.request.urlopen(req, timeout=10) as r:
    body = r.read()
print("Content-Type: application/octet-stream")
print()
print(body.decode("utf-8"), end="")
"""


@pytest.fixture
def shipped(server_factory):
    port = qcharness.free_port()
    aport = qcharness.free_port()
    s = server_factory("", port=port, modules=["cgid"])
    for tree in ("degraded", "full"):
        d = os.path.join(s.root, "tenant", tree)
        os.makedirs(d)
        path = os.path.join(d, "ask.cgi")
        with open(path, "w") as f:
            f.write(SCRIPT.format())
        os.chmod(path, 0o755)
    os.chmod(os.path.join(s.root, "tenant"), 0o755)
    s.write_conf(SHIPPED + HOSTS.format(port=port, aport=aport, root=s.root)
                 + s.extra)
    s.aport = aport
    s.start()
    for host in ("tenant.test", "other.test"):
        assert s.get("/qosctl-status?format=json",
                     headers={"Host": host})[0] == 200
    return s


def ask(s, host, fmt="json"):
    """What the tenant's script got for Host: host."""
    st, _, body = s.get("/ask.cgi?host=%s&format=%s&port=%d"
                        % (host, fmt, s.port),
                        headers={"Host": "tenant.test"})
    assert st == 200, s.log()[-2000:]
    return body.decode("utf-8")


def test_tenant_script_sees_its_own_host_only(shipped):
    port = shipped.port
    got = json.loads(ask(shipped, "tenant.test"))
    assert got["scope"] == "host"
    assert [v["key"] for v in got["vhosts"]] == ["tenant.test:%d" % port]
    assert set(got) == {"enabled", "scope", "fail_open", "vhosts"}
    prom = ask(shipped, "tenant.test", "prometheus")
    assert "other.test" not in prom
    assert "qosctl_model_request_seconds" not in prom
    assert 'vhost="tenant.test:%d"' % port in prom


@pytest.mark.parametrize("host", ["other.test", "localhost",
                                  "127.0.0.1", "no-such-host.test"])
def test_no_host_header_gets_the_whole_server(shipped, host):
    """Another host's name, the main server's, an address, a name no
    host has: each lands on a virtual host, which shows itself only."""
    got = json.loads(ask(shipped, host))
    assert got["scope"] == "host", host
    assert "controller" not in got and "model" not in got
    (key,) = [v["key"] for v in got["vhosts"]]
    assert key != "tenant.test:%d" % shipped.port or host == "tenant.test"
    prom = ask(shipped, host, "prometheus")
    assert "qosctl_controller_periods_total" not in prom
    assert len({l.split('vhost="')[1].split('"')[0]
                for l in prom.splitlines() if 'vhost="' in l}) == 1


def test_main_server_and_a_marked_host_show_the_whole_server(shipped):
    """The main server's own port, and the harness's status host, whose
    <VirtualHost> sets the handler itself."""
    url = "/qosctl-status?format=json"
    st, _, body = shipped.get(url, port=shipped.aport)
    assert st == 200
    got = json.loads(body)
    assert got["scope"] == "server" and "controller" in got
    keys = {v["key"] for v in got["vhosts"]}
    assert {"tenant.test:%d" % shipped.port,
            "other.test:%d" % shipped.port} <= keys
    assert shipped.status()["scope"] == "server"
