"""Who sees the status pages with the location conf/qosctl.conf ships:
at server level, `Require local`.  Every virtual host inherits that
<Location>, a tenant's too, and a tenant's script on the same machine
passes `Require local` with any Host header it likes.  So the shipped
location answers on the main server alone; on a virtual host it is not
found, whatever name the script sends, unless that host's own
<VirtualHost> sets a status handler.  The admin reads the whole server
on a host of their own that asks for more than the address
(doc/operating.md, "Who sees what").

The tenant's script is a real CGI program run by the tenant's virtual
host, which asks the status URL over loopback with a Host header of its
choosing, as `curl -H 'Host: other.test' http://127.0.0.1/...` does.
"""

import base64
import hashlib
import json
import os
import re

import pytest

import qcharness


def shipped_location():
    """The status location of conf/qosctl.conf, as the package ships it."""
    with open(os.path.join(qcharness.TOP_SRCDIR, "conf", "qosctl.conf")) as f:
        text = f.read()
    m = re.search(r"^\s*QosCtlExclude /qosctl-status\n"
                  r"\s*<Location /qosctl-status>\n.*?</Location>\n",
                  text, re.M | re.S)
    assert m, "conf/qosctl.conf has no status location"
    assert "Require local" in m.group(0)
    return m.group(0)


# As Debian's 000-default.conf, a default host without a ServerName of
# its own takes every request on the port; then two tenants, one with
# CGI.  The admin's host, on its own port, asks for a password as well
# as the address.  No port is left to the main server.
HOSTS = """QosCtl On
QosCtlContentTrees /degraded /full
{location}
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
Listen 127.0.0.1:{sport}
<VirtualHost 127.0.0.1:{sport}>
  ServerName qosctl-status.localhost
  QosCtlExclude /qosctl-status
  <Location /qosctl-status>
    SetHandler qosctl-status
    AuthType Basic
    AuthName qosctl
    AuthBasicProvider file
    AuthUserFile "{root}/admin.passwd"
    <RequireAll>
      Require local
      Require valid-user
    </RequireAll>
  </Location>
</VirtualHost>
"""

ADMIN = ("admin", "not-a-tenant's")

# The tenant's script: asks the status page at the port, with the Host
# header and format of its query string, and prints the status code it
# got and the body.
SCRIPT = """#!/usr/bin/python3
import os, urllib.error, urllib.parse, urllib.request
q = urllib.parse.parse_qs(os.environ.get("QUERY_STRING", ""))
req = urllib.request.Request(
    "http://127.0.0.1:%s/qosctl-status?format=%s"
    % (q["port"][0], q["format"][0]),
    headers={"Host": q["host"][0]})
try:
    with urllib.request.urlopen(req, timeout=10) as r:
        code, body = r.status, r.read()
except urllib.error.HTTPError as e:
    code, body = e.code, e.read()
print("Content-Type: application/octet-stream")
print()
print(code)
print(body.decode("utf-8", "replace"), end="")
"""


@pytest.fixture
def shipped(server_factory):
    port = qcharness.free_port()
    s = server_factory("", port=port, modules=[
        "cgid", "auth_basic", "authn_core", "authn_file", "authz_user"])
    for tree in ("degraded", "full"):
        d = os.path.join(s.root, "tenant", tree)
        os.makedirs(d)
        path = os.path.join(d, "ask.cgi")
        with open(path, "w") as f:
            f.write(SCRIPT)
        os.chmod(path, 0o755)
    os.chmod(os.path.join(s.root, "tenant"), 0o755)
    with open(os.path.join(s.root, "admin.passwd"), "w") as f:
        f.write("%s:{SHA}%s\n" % (ADMIN[0], base64.b64encode(
            hashlib.sha1(ADMIN[1].encode()).digest()).decode()))
    os.chmod(os.path.join(s.root, "admin.passwd"), 0o644)
    s.write_conf(HOSTS.format(location=shipped_location(), port=port,
                              sport=s.sport, root=s.root))
    s.start()
    return s


def ask(s, host, fmt="json", port=None):
    """(status, body) the tenant's script got for Host: host."""
    st, _, body = s.get("/ask.cgi?host=%s&format=%s&port=%d"
                        % (host, fmt, port or s.port),
                        headers={"Host": "tenant.test"})
    assert st == 200, s.log()[-2000:]
    code, _, text = body.decode("utf-8").partition("\n")
    return int(code), text


def admin(s, credentials=ADMIN):
    auth = base64.b64encode(("%s:%s" % credentials).encode()).decode()
    return s.get("/qosctl-status?format=json", port=s.sport,
                 headers={"Host": "qosctl-status.localhost",
                          "Authorization": "Basic " + auth})


@pytest.mark.parametrize("fmt", ["json", "prometheus", "html"])
@pytest.mark.parametrize("host", ["tenant.test", "other.test", "localhost",
                                  "127.0.0.1", "no-such-host.test"])
def test_tenant_script_reads_no_host_through_the_shipped_location(
        shipped, host, fmt):
    """Its own host's name, another's, the main server's, an address, a
    name no host has: each lands on a virtual host, where the shipped
    location is not found."""
    code, body = ask(shipped, host, fmt)
    assert code == 404, (host, fmt, body[:300])
    for leak in ("tenant.test:", "other.test:", "vhost=", '"scope"',
                 "qosctl_"):
        assert leak not in body, (host, fmt, leak)


@pytest.mark.parametrize("host", ["qosctl-status.localhost", "other.test"])
def test_tenant_script_is_refused_the_admins_host(shipped, host):
    code, body = ask(shipped, host, port=shipped.sport)
    assert code == 401, body[:300]
    assert "other.test:" not in body and '"scope"' not in body


def test_the_admin_reads_the_whole_server(shipped):
    st, _, body = admin(shipped)
    assert st == 200, body[:300]
    got = json.loads(body)
    assert got["scope"] == "server" and "controller" in got
    keys = {v["key"] for v in got["vhosts"]}
    assert {"tenant.test:%d" % shipped.port,
            "other.test:%d" % shipped.port} <= keys
    assert admin(shipped, (ADMIN[0], "guess"))[0] == 401


def test_main_server_shows_the_whole_server(server_factory):
    """Where a port is left to the main server (no <VirtualHost> takes
    it), the shipped location shows the whole server there, to any local
    process: doc/operating.md says to leave none, or to protect it."""
    port, aport = qcharness.free_port(), qcharness.free_port()
    s = server_factory("", port=port)
    s.write_conf("QosCtl On\n" + shipped_location()
                 + "Listen 127.0.0.1:%d\n" % aport
                 + "<VirtualHost 127.0.0.1:%d>\n  ServerName a.test\n"
                   "</VirtualHost>\n" % port)
    s.start()
    st, _, body = s.get("/qosctl-status?format=json", port=aport)
    assert st == 200
    got = json.loads(body)
    assert got["scope"] == "server" and "controller" in got
    assert "a.test:%d" % port in {v["key"] for v in got["vhosts"]}
    assert s.get("/qosctl-status?format=json",
                 headers={"Host": "a.test"})[0] == 404


def test_server_level_host_status_is_not_found_on_virtual_hosts(
        server_factory):
    """qosctl-host-status at server level would show each host to whoever
    names it: it too answers on the main server only, and a host's page
    is one its own <VirtualHost> sets."""
    port = qcharness.free_port()
    s = server_factory("", port=port)
    s.write_conf("""QosCtl On
<Location /qosctl-status>
  SetHandler qosctl-host-status
</Location>
<VirtualHost 127.0.0.1:{port}>
  ServerName a.test
</VirtualHost>
<VirtualHost 127.0.0.1:{port}>
  ServerName b.test
  <Location /qosctl-status>
    SetHandler qosctl-host-status
  </Location>
</VirtualHost>
""".format(port=port))
    s.start()
    assert s.get("/qosctl-status?format=json",
                 headers={"Host": "a.test"})[0] == 404
    st, _, body = s.get("/qosctl-status?format=json",
                        headers={"Host": "b.test"})
    assert st == 200
    got = json.loads(body)
    assert got["scope"] == "host"
    assert [v["key"] for v in got["vhosts"]] == ["b.test:%d" % port]
