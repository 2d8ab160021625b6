"""HTTP/2 through mod_http2, in clear (h2c) and over TLS (mod_ssl).

Browsers speak HTTP/2 over TLS, many streams on one connection.  Each
stream is a request of its own to httpd (mod_http2 runs it through the
same hooks, on a secondary connection that carries the client's
address), so mod_qosctl must count, degrade and reject each one as it
does a request over HTTP/1.1.  These tests run a real Apache with
mod_http2 (Protocols h2 h2c http/1.1) and an SSL virtual host with a
self-signed certificate made here; the clients are h2load (many
streams, its counts of status codes and body bytes), curl over TLS
(one connection per source address, each stream's body) and nghttp
(server push).

The trees are told apart by the body: /x.txt is "full\\n" (5 bytes) in
the full tree and "degraded\\n" (9 bytes) in the degraded one, so
h2load's count of body bytes says how many replies each tree served.
The TLS host is a virtual host of its own (key localhost:<tls port>),
with its own counters and its own threshold: each protocol is compared
with HTTP/1.1 on the same host.
"""

import os
import re
import subprocess
import sys
import tempfile
import threading

import pytest

import qcharness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench", "lib"))
import qcclients  # noqa: E402  (bench's reading of h2load's report)

TREES = "QosCtl On\nQosCtlContentTrees /degraded /full\nQosCtlPeriod 0.25\n"
PROTOCOLS = "h2 h2c http/1.1"
# What httpd saw of each request: the client address mod_qosctl hashes,
# the protocol and the module's note (its decision).
ACCESS_LOG = ('LogFormat "%a %H %>s %U%q %{qosctl}n" qc\n'
              "CustomLog access.log qc\n")
FULL, DEGRADED = b"full\n", b"degraded\n"


@pytest.fixture
def h2_server(server_factory, tmp_path):
    """make(qosctl_conf): a started Apache serving h2c on .port and h2
    over TLS on .tls_port, its access log in ACCESS_LOG's format."""
    tls = qcharness.self_signed_cert(str(tmp_path))

    def make(conf):
        s = server_factory(conf + ACCESS_LOG, protocols=PROTOCOLS, tls=tls)
        return s.start()
    return make


def base_url(s, tls):
    return ("https://127.0.0.1:%d" % s.tls_port if tls
            else "http://127.0.0.1:%d" % s.port)


def host(s, tls):
    """The virtual host's entry in the status page."""
    key = "localhost:%d" % (s.tls_port if tls else s.port)
    for v in s.status()["vhosts"]:
        if v["key"] == key:
            return v
    raise KeyError(key)


def totals(s, tls):
    """The host's counts, both classes summed."""
    classes = host(s, tls)["classes"].values()
    out = {k: sum(c[k] for c in classes)
           for k in ("arrived", "rejected", "responses")}
    for k in ("tree_responses", "tree_bytes"):
        out[k] = [sum(c[k][i] for c in classes) for i in range(2)]
    return out


def settled(s, tls, done, limit=15.0):
    """The counts once log_transaction has run for `done` replies (it
    runs just after the reply is sent): bounded wait."""
    def counted():
        t = totals(s, tls)
        return t if t["responses"] + t["rejected"] >= done else None
    return qcharness.wait_for(counted, limit, 0.05) or totals(s, tls)


def published(s, tls):
    """Once the controller has published the pinned level's threshold
    (until then a new host's slot serves the top tree to everyone)."""
    basic = host(s, tls)["classes"]["basic"]
    return 1.0 < basic["threshold"] < 2.0 and basic["threshold"]


def h2load(uris, requests, conns=1, streams=16, h1=False, tmp="/tmp",
           headers=()):
    """h2load over `uris` (each connection requests them in order, from
    the first), `requests` in all: its counts and the protocol it spoke.
    Over HTTP/1.1 one request at a time per connection (no pipelining).
    headers: ("Name: value", ...) sent with every request."""
    fd, path = tempfile.mkstemp(prefix="uris-", dir=tmp)
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(uris) + "\n")
    cmd = ["h2load", "-c", str(conns), "-n", str(requests), "-i", path,
           "-m", "1" if h1 else str(streams), "-T", "20"]
    if h1:
        cmd.append("--h1")
    for h in headers:
        cmd += ["-H", h]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    out = qcclients.parse_h2load(p.stdout)
    # body bytes: "traffic: ... 1.35KB (1380) data"
    out["data"] = int(re.search(r"traffic: .*\((\d+)\) data",
                                p.stdout).group(1))
    return out


def degraded_of(run):
    """Replies from the degraded tree, from the body bytes h2load saw:
    every reply was /x.txt, 5 bytes full or 9 degraded."""
    extra = run["data"] - len(FULL) * run["s2xx"]
    assert extra % 4 == 0 and 0 <= extra <= 4 * run["s2xx"], run
    return int(extra) // 4


def keyed_uris(s, tls, n):
    """n clients named by QOSCTL_CLIENT (?qcid=, the harness's servers
    set it), all from 127.0.0.1."""
    return ["%s/x.txt?qcid=%d" % (base_url(s, tls), i) for i in range(n)]


@pytest.mark.parametrize("tls", [False, True], ids=["h2c", "h2-tls"])
def test_streams_counted_and_degraded_as_http1(h2_server, tmp_path, tls):
    """At a pinned m = 1.5 a population of 1,000 clients (QOSCTL_CLIENT)
    asks once over HTTP/1.1 and twice over HTTP/2 (two connections,
    16 streams each): the share served degraded is the same within
    0.05, near a half, and the module counts every stream, by tree,
    exactly as the client saw them, bytes too."""
    s = h2_server(TREES + "QosCtlFixedLevel 1.5\n")
    uris = keyed_uris(s, tls, 1000)
    tmp = str(tmp_path)
    # The controller publishes the threshold from counted clients.
    warm = 0
    while warm < 20 and not published(s, tls):
        assert h2load(uris, 1000, streams=32, tmp=tmp)["s2xx"] == 1000
        warm += 1
    assert published(s, tls), host(s, tls)
    before = settled(s, tls, warm * 1000)
    h1 = h2load(uris, 1000, h1=True, tmp=tmp)
    mid = settled(s, tls, before["responses"] + 1000)
    h2 = h2load(uris, 2000, conns=2, tmp=tmp)
    after = settled(s, tls, mid["responses"] + 2000)
    assert h1["protocol"] == "http/1.1"
    assert h2["protocol"] == ("h2" if tls else "h2c")
    assert h1["s2xx"] == h1["done"] == 1000, h1
    assert h2["s2xx"] == h2["done"] == 2000, h2
    d1, d2 = degraded_of(h1), degraded_of(h2)
    print("m 1.5, %s: degraded %d of 1000 over HTTP/1.1, %d of 2000 over "
          "HTTP/2" % ("TLS" if tls else "clear", d1, d2))
    assert abs(d1 / 1000.0 - d2 / 2000.0) <= 0.05, (d1, d2)
    assert 0.3 <= d2 / 2000.0 <= 0.7, d2
    # Every stream counted once, in the tree its body came from.
    for a, b, n, d in ((before, mid, 1000, d1), (mid, after, 2000, d2)):
        assert b["arrived"] - a["arrived"] == n
        assert b["responses"] - a["responses"] == n
        assert b["rejected"] == a["rejected"]
        assert [y - x for x, y in zip(a["tree_responses"],
                                      b["tree_responses"])] == [d, n - d]
        assert [y - x for x, y in zip(a["tree_bytes"], b["tree_bytes"])] \
            == [len(DEGRADED) * d, len(FULL) * (n - d)]


@pytest.mark.parametrize("tls", [False, True], ids=["h2c", "h2-tls"])
def test_level_zero_rejects_every_stream(h2_server, tmp_path, tls):
    """At level 0 every stream of a multiplexed connection is a 503
    with Retry-After, counted as rejected, and the connection stays
    up for the next stream."""
    s = h2_server(TREES + "QosCtlFixedLevel 0\nQosCtlRetryAfter 7\n")
    uris = keyed_uris(s, tls, 100)
    run = h2load(uris, 600, conns=2, streams=32, tmp=str(tmp_path))
    assert run["protocol"] == ("h2" if tls else "h2c")
    assert run["done"] == run["s5xx"] == 600, run
    t = settled(s, tls, 600)
    assert (t["arrived"], t["rejected"], t["responses"]) == (600, 600, 0)
    # The reply itself, over HTTP/2.
    p = subprocess.run(["curl", "-sS", "-k", "-D", "-", "-o", "/dev/null",
                        "--http2" if tls else "--http2-prior-knowledge",
                        uris[0]], capture_output=True, text=True, timeout=30)
    head = p.stdout.lower().splitlines()
    assert head and head[0].strip() == "http/2 503", p.stdout + p.stderr
    assert "retry-after: 7" in head, head



STREAMS = 16


def addresses(tls):
    """Forty clients: over TLS source addresses of their own (127.0.0.10
    to 49, which mod_remoteip does not trust as proxies); in clear,
    addresses that 127.0.0.1 forwards for (X-Forwarded-For, which
    mod_remoteip trusts from it), as behind a proxy."""
    return ["127.0.0.%d" % i if tls else "10.20.0.%d" % i
            for i in range(10, 50)]


def connection(s, tls, client, streams, h1=False, tmp="/tmp"):
    """`streams` GETs of /x.txt from `client` on one connection: over
    HTTP/2 all at once, multiplexed; over HTTP/1.1 one after another,
    kept alive.  (full, degraded): how many replies each tree served.

    Over TLS curl from the client's own source address, each stream's
    body read.  In clear h2load, one connection from 127.0.0.1 with
    the client's X-Forwarded-For, the trees counted from the body
    bytes: curl 7.88 (Debian 12) fails every stream but the first of
    a reused h2c connection ("Error in the HTTP2 framing layer", curl
    issue 10634, fixed in 8.0), and h2load cannot bind a source."""
    paths = ["/x.txt?stream=%d" % j for j in range(streams)]
    if not tls:
        run = h2load([base_url(s, tls) + p for p in paths], streams,
                     streams=streams, h1=h1, tmp=tmp,
                     headers=["X-Forwarded-For: " + client])
        assert run["protocol"] == ("http/1.1" if h1 else "h2c"), run
        assert run["s2xx"] == streams, run
        d = degraded_of(run)
        return streams - d, d
    out_dir = os.path.join(tmp, "%s-%s" % ("h1" if h1 else "h2", client))
    os.makedirs(out_dir, exist_ok=True)
    cmd = ["curl", "-sS", "-k", "--interface", client, "--max-time", "30",
           "-w", "%{local_port} %{http_version} %{response_code} "
           "%{filename_effective}\\n"]
    cmd += ["--http1.1"] if h1 else ["--http2", "--parallel",
                                     "--parallel-max", str(streams)]
    for j, path in enumerate(paths):
        cmd += ["-o", os.path.join(out_dir, str(j)), base_url(s, tls) + path]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    ports, bodies = set(), []
    for line in p.stdout.splitlines():
        port, version, code, name = line.split(" ", 3)
        assert (version, code) == ("1.1" if h1 else "2", "200"), line
        ports.add(port)
        with open(name, "rb") as f:
            bodies.append(f.read())
    assert len(bodies) == streams and len(ports) == 1, p.stdout
    assert set(bodies) <= {FULL, DEGRADED}, bodies
    return bodies.count(FULL), bodies.count(DEGRADED)


def access_log(s):
    """(client address, protocol, status, URI, note) of each request."""
    with open(os.path.join(s.root, "access.log")) as f:
        return [line.rstrip("\n").split(" ", 4) for line in f]


@pytest.mark.parametrize("tls", [False, True], ids=["h2c", "h2-tls"])
def test_one_connection_stays_in_one_tree(h2_server, tmp_path, tls):
    """The tree is chosen by a hash of the client: its address (after
    mod_remoteip), or QOSCTL_CLIENT when the admin sets it.  Every
    stream of a connection has the connection's address, so at a
    steady m each HTTP/2 connection is served from one tree, and from
    the tree the same address gets over HTTP/1.1.  Forty addresses,
    each one connection of 16 concurrent streams, at a pinned m = 1.5:
    each connection's streams come from one tree, both trees serve
    some connections, each address gets its tree over HTTP/1.1 too,
    and httpd logged each stream as HTTP/2 from its client's address.

    The one exception is by design: a key that carries over three hash
    buckets' share of the load (a NAT) is split request by request.
    So that none of these addresses is such a key, 2,000 clients named
    by QOSCTL_CLIENT ask twenty times as often, between them."""
    s = h2_server(TREES + "QosCtlFixedLevel 1.5\n"
                  "QosCtlPremiumAddress 127.0.0.200/32 10.20.9.9/32\n")
    tmp = str(tmp_path)
    crowd = keyed_uris(s, tls, 2000)
    warm = 0
    while warm < 20 and not published(s, tls):
        assert h2load(crowd, 2000, streams=32, tmp=tmp)["s2xx"] == 2000
        warm += 1
    assert published(s, tls), host(s, tls)
    h2, h1, thresholds, steady = {}, {}, [], []
    clients = addresses(tls)

    def one(client):
        """Its HTTP/2 connection, then at once its HTTP/1.1 one."""
        try:
            h2[client] = connection(s, tls, client, STREAMS, tmp=tmp)
            h1[client] = connection(s, tls, client, 2, h1=True, tmp=tmp)
        except Exception as e:      # reported below, by client
            h2[client] = e
    for k in range(0, len(clients), 5):
        batch = clients[k:k + 5]
        assert h2load(crowd, 1600, streams=32, tmp=tmp)["s2xx"] == 1600
        first = published(s, tls)
        threads = [threading.Thread(target=one, args=(a,)) for a in batch]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        thresholds.append(published(s, tls))
        # The threshold is held while the clients' spread over the hash
        # stays, but set anew as the counts grow: where it moved during
        # the batch, a client may have crossed it between its two
        # connections.
        if thresholds[-1] == first:
            steady += batch
    spread = host(s, tls)["classes"]["basic"]["spread_buckets"]
    failed = {a: r for a, r in h2.items() if isinstance(r, Exception)}
    assert not failed and sorted(h2) == sorted(clients), failed
    split = [a for a in clients if 0 not in h2[a]]
    full = [a for a in clients if h2[a][1] == 0]
    moved = [a for a in steady if (h2[a][1] == 0) != (h1[a][1] == 0)
             or 0 not in h1[a]]
    print("m 1.5 over %s: %d of %d connections full, %d split; of %d at a "
          "steady threshold %d on another tree over HTTP/1.1; thresholds "
          "%s; %d buckets spread"
          % ("TLS" if tls else "h2c", len(full), len(clients), len(split),
             len(steady), len(moved), thresholds, spread))
    assert split == [], split
    assert 5 <= len(full) <= len(clients) - 5, full
    assert len(steady) >= 20 and moved == [], (steady, moved)
    # httpd's own view: each stream HTTP/2 from its client's address,
    # and the module's note names the tree the client got.
    logged = {}
    for addr, proto, code, uri, note in access_log(s):
        if uri.startswith("/x.txt?stream="):
            logged.setdefault((addr, proto), []).append(
                "degraded" if note.startswith("degraded") else note)
    for a in clients:
        notes = logged.get((a, "HTTP/2.0"), [])
        assert len(notes) == STREAMS, (a, logged.keys())
        assert notes.count("degraded") == h2[a][1], (a, notes)
        assert len(logged.get((a, "HTTP/1.1"), [])) == 2, a
    # The module classifies by the address it sees over HTTP/2 too: a
    # premium address's streams count as premium.
    premium = "127.0.0.200" if tls else "10.20.9.9"
    before = host(s, tls)["classes"]["premium"]["arrived"]
    connection(s, tls, premium, STREAMS, tmp=tmp)
    assert qcharness.wait_for(
        lambda: host(s, tls)["classes"]["premium"]["arrived"] - before
        == STREAMS, 10, 0.05), host(s, tls)["classes"]["premium"]


PUSH = ('H2Push on\n<Location "/x.txt">\n'
        '  Header add Link "</1k.html>;rel=preload"\n</Location>\n')


@pytest.mark.parametrize("level,tree", [("1", b"d"), ("2", b"f")])
def test_pushed_resource_is_a_request_of_its_own(server_factory, level,
                                                 tree):
    """mod_http2 pushes what a reply's Link: rel=preload names, as a
    request it makes on the client's connection (with its address):
    mod_qosctl counts it and serves it from the client's tree.  (Chrome
    and Firefox no longer accept pushes; nghttp does.)"""
    s = server_factory(TREES + "QosCtlFixedLevel %s\n" % level + PUSH
                       + ACCESS_LOG, protocols=PROTOCOLS,
                       modules=("headers",)).start()
    p = subprocess.run(["nghttp", "-as", "http://127.0.0.1:%d/x.txt"
                        % s.port], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    # Both bodies, then the statistics: a pushed stream is marked '*'.
    assert (tree * 1023 + b"\n").decode() in p.stdout, p.stdout
    assert re.search(r"\*.*\s200\s+1K /1k\.html", p.stdout), p.stdout
    t = settled(s, False, 2)
    assert (t["arrived"], t["responses"]) == (2, 2), t
    assert t["tree_responses"] == ([2, 0] if tree == b"d" else [0, 2]), t
    logged = [(line[1], line[3]) for line in access_log(s)
              if line[3] in ("/x.txt", "/1k.html")]
    assert sorted(logged) == [("HTTP/2.0", "/1k.html"),
                              ("HTTP/2.0", "/x.txt")], logged
