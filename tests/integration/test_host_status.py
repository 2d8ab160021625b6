"""The per-host status view: "SetHandler qosctl-host-status" in a
tenant's virtual host shows that host's figures and nothing of the other
tenants' or the server's.  The server-wide view stays
"qosctl-status", for the provider.
"""

import json

import pytest

import qcharness

TENANTS = """QosCtl On
QosCtlContentTrees /degraded /full
<VirtualHost *:{port}>
  ServerName alice.example
  QosCtlExclude /qosctl-status
  <Location /qosctl-status>
    SetHandler qosctl-host-status
  </Location>
</VirtualHost>
<VirtualHost *:{port}>
  ServerName bob.example
  QosCtlGuarantee 10 1Mbit
  QosCtlExclude /qosctl-status
  <Location /qosctl-status>
    SetHandler qosctl-host-status
  </Location>
</VirtualHost>
"""


@pytest.fixture
def tenants(server_factory):
    port = qcharness.free_port()
    s = server_factory(TENANTS.format(port=port), port=port).start()
    for _ in range(3):
        assert s.get("/x.txt", headers={"Host": "alice.example"})[0] == 200
    assert s.get("/x.txt", headers={"Host": "bob.example"})[0] == 200
    return s


def view(s, host, fmt=""):
    st, _, body = s.get("/qosctl-status" + fmt, headers={"Host": host})
    assert st == 200
    return body.decode()


def test_json_shows_the_own_host_only(tenants):
    alice = "alice.example:%d" % tenants.port
    got = json.loads(view(tenants, "alice.example", "?format=json"))
    assert got["scope"] == "host"
    assert [v["key"] for v in got["vhosts"]] == [alice]
    # Its three pages (and status reads, excluded but counted).
    assert got["vhosts"][0]["classes"]["basic"]["arrived"] >= 3
    # Nothing server-wide: no controller, model, utilization, other hosts.
    assert set(got) == {"enabled", "scope", "fail_open", "vhosts"}
    bob = json.loads(view(tenants, "bob.example", "?format=json"))
    assert [v["key"] for v in bob["vhosts"]] \
        == ["bob.example:%d" % tenants.port]
    assert bob["vhosts"][0]["guaranteed"] is True


def test_prometheus_and_html_show_the_own_host_only(tenants):
    prom = view(tenants, "alice.example", "?format=prometheus")
    html = view(tenants, "alice.example")
    for text in (prom, html):
        assert "alice.example" in text
        assert "bob.example" not in text and "localhost" not in text
        assert "status.test" not in text
    samples = [l for l in prom.splitlines() if l and not l.startswith("#")]
    assert samples and all(l.startswith("qosctl_fail_open ")
                           or 'vhost="alice.example:' in l for l in samples)
    assert "qosctl_model_a_seconds" not in prom
    assert "Controller: pid" not in html and "model a" not in html


def test_server_view_still_shows_every_host(tenants):
    keys = {v["key"] for v in tenants.status()["vhosts"]}
    assert {"alice.example:%d" % tenants.port,
            "bob.example:%d" % tenants.port} <= keys
    assert tenants.status()["scope"] == "server"


def test_status_query_is_parsed_exactly(tenants):
    """?format= picks the format by exact value; a cache buster is
    ignored; an unknown format is refused, not shown as HTML."""
    get = lambda q: tenants.get("/qosctl-status" + q,
                                headers={"Host": "alice.example"})
    st, headers, body = get("?t=17&format=json")
    assert st == 200 and headers["Content-Type"] == "application/json"
    assert json.loads(body)["scope"] == "host"
    assert get("?format=prometheus")[1]["Content-Type"].startswith(
        "text/plain; version=0.0.4")
    for q in ("?format=xml", "?format=jsonx", "?format="):
        assert get(q)[0] == 400, q
    assert get("?xformat=json")[1]["Content-Type"].startswith("text/html")
