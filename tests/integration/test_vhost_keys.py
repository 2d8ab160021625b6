"""Virtual hosts are keyed by name and port.

An http and an https host of one ServerName are two hosts with their own
guarantees; keyed by name alone ("localhost:0") they would be told apart
only by their order in the configuration, which changes when a host is
added, and the status page could not say which is which.
"""

import qcharness

TWO_PORTS = """QosCtl On
Listen 127.0.0.1:{p2}
<VirtualHost *:{p1}>
  ServerName www.example
</VirtualHost>
<VirtualHost *:{p2}>
  ServerName www.example
</VirtualHost>
"""


def arrived(v):
    return sum(c["arrived"] for c in v["classes"].values())


def by_key(server):
    """The status page's hosts by key; no key twice."""
    vhosts = server.status()["vhosts"]
    keys = [v["key"] for v in vhosts]
    assert len(keys) == len(set(keys)), keys
    return {v["key"]: v for v in vhosts}


def test_one_name_on_two_ports_gets_two_entries(server_factory):
    p1, p2 = qcharness.free_port(), qcharness.free_port()
    s = server_factory(TWO_PORTS.format(p1=p1, p2=p2), port=p1).start()
    k1, k2 = "www.example:%d" % p1, "www.example:%d" % p2

    vh = by_key(s)
    assert k1 in vh and k2 in vh, sorted(vh)
    assert arrived(vh[k1]) == 0 and arrived(vh[k2]) == 0

    for _ in range(5):
        assert s.get("/full/x.txt", port=p1)[0] == 200
    vh = by_key(s)
    assert (arrived(vh[k1]), arrived(vh[k2])) == (5, 0)

    for _ in range(3):
        assert s.get("/full/x.txt", port=p2)[0] == 200
    vh = by_key(s)
    assert (arrived(vh[k1]), arrived(vh[k2])) == (5, 3)

    # A restart reorders httpd's listeners; each host keeps its slot.
    s.graceful()
    vh = by_key(s)
    assert (arrived(vh[k1]), arrived(vh[k2])) == (5, 3)


def test_main_server_key_has_its_listen_port(server_factory):
    s = server_factory("QosCtl On\n").start()
    keys = sorted(by_key(s))
    assert "localhost:%d" % s.port in keys, keys
    assert "status.test:%d" % s.sport in keys, keys
    assert not any(k.endswith(":0") for k in keys), keys


LONG = "{prefix}{which}.example"
# Two names alike in their first 150 bytes, longer than a key the
# shared segment holds: cut short, they would be one host.
PREFIX = ("a" * 60 + ".") * 2 + "b" * 28 + "."
LONG_HOSTS = """QosCtl On
<VirtualHost *:{p}>
  ServerName {one}
</VirtualHost>
<VirtualHost *:{p}>
  ServerName {two}
</VirtualHost>
"""


def test_long_names_keep_their_own_keys(server_factory):
    one = LONG.format(prefix=PREFIX, which="one")
    two = LONG.format(prefix=PREFIX, which="two")
    p = qcharness.free_port()
    s = server_factory(LONG_HOSTS.format(p=p, one=one, two=two),
                       port=p).start()
    vh = by_key(s)
    long_keys = sorted(k for k in vh if k.startswith(PREFIX[:60]))
    assert len(long_keys) == 2, sorted(vh)
    for k in long_keys:
        assert len(k) < 120 and k.endswith(":%d" % s.port), k

    for _ in range(4):
        assert s.get("/full/x.txt", headers={"Host": one})[0] == 200
    assert s.get("/full/x.txt", headers={"Host": two})[0] == 200
    counts = sorted(arrived(by_key(s)[k]) for k in long_keys)
    assert counts == [1, 4], counts

    # The same keys after a restart: each host keeps its slot.
    s.graceful()
    vh = by_key(s)
    assert sorted(k for k in vh if k.startswith(PREFIX[:60])) == long_keys
    assert sorted(arrived(vh[k]) for k in long_keys) == [1, 4]


def test_host_exclusions_add_to_the_servers(server_factory):
    """A host's QosCtlExclude adds to the main server's list: the
    server's exclusion still holds on that host."""
    s = server_factory("QosCtl On\nQosCtlContentTrees /degraded /full\n"
                       "QosCtlFixedLevel 0\nQosCtlExclude /status\n"
                       "<VirtualHost *:{p}>\n  ServerName tenant.test\n"
                       "  QosCtlExclude /sub\n</VirtualHost>\n"
                       .replace("{p}", "*")).start()
    host = {"Host": "tenant.test"}
    assert s.get("/x.txt", headers=host)[0] == 503
    assert s.get("/sub/", headers=host)[0] != 503
    assert s.get("/status/", headers=host)[0] != 503
