"""The request path on a real Apache: actuator, rejection, counters.

Each test starts a private Apache (own ServerRoot, high loopback port,
the module from this build) and talks to it over HTTP.  Client
addresses are set with X-Forwarded-For, which mod_remoteip trusts from
127.0.0.1 only, so the module sees them as r->useragent_ip.
"""

import http.client
import os
import subprocess
import time

import pytest

import qcharness

TREES = "QosCtl On\nQosCtlContentTrees /degraded /full\n"


def fetch_all(server, paths_and_ips, method="GET"):
    """GET each (path, ip) over one keep-alive connection: [(status,
    headers, body)]."""
    out = []
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        for path, ip in paths_and_ips:
            hdrs = {"X-Forwarded-For": ip} if ip else {}
            conn.request(method, path, headers=hdrs)
            resp = conn.getresponse()
            out.append((resp.status, dict(resp.getheaders()), resp.read()))
            if resp.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", server.port,
                                                  timeout=10)
    finally:
        conn.close()
    return out


def addresses(n, base=10):
    return ["%d.%d.%d.%d" % (base, (i >> 16) & 255, (i >> 8) & 255,
                             (i & 255) or 1) for i in range(1, n + 1)]


def settled_counters(server, expect_responses, key="localhost",
                     limit=10.0):
    """Counters once log_transaction has run for every reply httperf saw
    (it runs just after the reply is sent); bounded wait."""
    deadline = time.time() + limit
    while True:
        v = server.vhost(key)
        total = sum(c["responses"] + c["rejected"]
                    for c in v["classes"].values())
        if total >= expect_responses or time.time() > deadline:
            return v
        time.sleep(0.1)


@pytest.mark.parametrize("level,tree", [("2", "full"), ("1", "degraded")])
def test_integral_level_serves_one_tree(server_factory, level, tree):
    s = server_factory(TREES + "QosCtlFixedLevel %s\n" % level).start()
    replies = fetch_all(s, [("/x.txt", ip) for ip in addresses(300)])
    assert {r[0] for r in replies} == {200}
    assert {r[2] for r in replies} == {(tree + "\n").encode()}
    # Directory requests resolve their index in the same tree.
    (st, _, body), = fetch_all(s, [("/sub/", "10.9.9.9")])
    assert (st, body) == (200, (tree + " index\n").encode())


def test_fractional_level_splits_clients_evenly_and_stably(server_factory):
    s = server_factory(TREES + "QosCtlFixedLevel 1.5\n").start()
    ips = addresses(2000)
    first = fetch_all(s, [("/x.txt", ip) for ip in ips])
    second = fetch_all(s, [("/x.txt", ip) for ip in reversed(ips)])
    assert all(r[0] == 200 for r in first + second)
    full = sum(1 for r in first if r[2] == b"full\n")
    degraded = sum(1 for r in first if r[2] == b"degraded\n")
    assert full + degraded == 2000
    assert 0.45 <= full / 2000.0 <= 0.55, full
    # Each address always gets the same tree.  (Counted, not compared as
    # lists: pytest's diff of two 2000-item lists ran for 27 minutes.)
    changed = sum(1 for x, y in zip(first, reversed(second)) if x[2] != y[2])
    assert changed == 0, changed
    v = settled_counters(s, 4000)
    assert v["classes"]["basic"]["tree_responses"] == [degraded * 2,
                                                       full * 2]


def test_level_zero_rejects_with_retry_after(server_factory):
    s = server_factory(TREES + "QosCtlFixedLevel 0\nQosCtlRetryAfter 7\n"
                       "QosCtlExclude /status\n").start()
    replies = fetch_all(s, [("/x.txt", ip) for ip in addresses(50)])
    assert {r[0] for r in replies} == {503}
    assert {r[1].get("Retry-After") for r in replies} == {"7"}
    assert not any(b"degraded\n" == r[2] or b"full\n" == r[2]
                   for r in replies)
    # An excluded prefix is never rejected.
    (st, _, _), = fetch_all(s, [("/status/", "10.0.0.1")])
    assert st != 503
    rep = qcharness.httperf("127.0.0.1", s.port, uri="/x.txt", rate=400,
                            num_conns=800)
    assert rep["s5xx"] == rep["replies"] == 800
    v = settled_counters(s, 851)
    assert v["classes"]["basic"]["rejected"] == 850
    assert v["classes"]["basic"]["arrived"] == 851


def test_missing_degraded_file_comes_from_full(server_factory):
    s = server_factory(TREES + "QosCtlFixedLevel 1\n").start()
    (st, _, body), = fetch_all(s, [("/only-full.txt", "10.0.0.1")])
    assert (st, body) == (200, b"full only\n")
    # Missing everywhere: the same 404 the top tree gives.
    (st, _, _), = fetch_all(s, [("/nowhere.txt", "10.0.0.1")])
    assert st == 404
    v = settled_counters(s, 2)
    assert v["classes"]["basic"]["tree_responses"] == [0, 2]


TRAVERSALS = [
    b"/../secret.txt", b"/%2e%2e/secret.txt", b"/.%2e/secret.txt",
    b"/%2E%2E/%2E%2E/etc/passwd", b"/sub/../../secret.txt",
    b"/..%2fsecret.txt", b"/..%2Fsecret.txt", b"/%2fsecret.txt",
    b"//secret.txt", b"///../secret.txt", b"/secret.txt",
    b"/./../secret.txt", b"/x.txt%00.html", b"/%00/../secret.txt",
    b"/..\\secret.txt", b"/%5c..%5csecret.txt", b"/full/../secret.txt",
    b"/degraded/../../secret.txt", b"/" + b"a/" * 2100 + b"../secret.txt",
    b"/" + b"x" * 4500, b"/" + b"%2e%2e/" * 50 + b"etc/passwd",
]


@pytest.mark.parametrize("level", ["1", "2"])
def test_traversal_never_leaves_the_tree(server_factory, level):
    s = server_factory(TREES + "QosCtlFixedLevel %s\n" % level).start()
    for uri in TRAVERSALS:
        req = (b"GET " + uri + b" HTTP/1.1\r\nHost: localhost\r\n"
               b"Connection: close\r\n\r\n")
        data = s.raw_reply(req)
        assert data.startswith(b"HTTP/1.1 "), uri
        assert b"SECRET" not in data, uri
        assert b"root:x:" not in data, uri
        assert not data.startswith(b"HTTP/1.1 200"), uri
    # The server is still healthy afterwards.
    (st, _, _), = fetch_all(s, [("/x.txt", "10.0.0.1")])
    assert st == 200


def test_tree_names_are_not_reachable_directly(server_factory):
    s = server_factory(TREES + "QosCtlFixedLevel 1\n").start()
    (st, _, _), = fetch_all(s, [("/full/x.txt", "10.0.0.1")])
    assert st == 404


@pytest.mark.parametrize("mpm", ["event", "worker", "prefork"])
def test_counters_match_httperf_under_concurrency(server_factory, mpm):
    s = server_factory(TREES + "QosCtlFixedLevel 2\n", mpm=mpm).start()
    runs = [qcharness.httperf("127.0.0.1", s.port, uri="/1k.html",
                              rate=rate, num_conns=1500, num_calls=calls)
            for rate, calls in ((600, 1), (300, 4))]
    requests = sum(int(r["requests"]) for r in runs)
    replies = sum(int(r["replies"]) for r in runs)
    assert replies == requests == 1500 + 1500 * 4
    v = settled_counters(s, replies)
    basic = v["classes"]["basic"]
    assert basic["arrived"] == requests
    assert basic["responses"] == replies
    assert basic["rejected"] == 0
    assert basic["bytes"] == replies * 1024
    assert basic["tree_responses"] == [0, replies]
    assert v["classes"]["premium"]["arrived"] == 0


def test_premium_by_address_and_by_environment(server_factory):
    s = server_factory(TREES + "QosCtlFixedLevel 2\n"
                       "QosCtlPremiumAddress 10.1.0.0/16 2001:db8::/32\n"
                       "SetEnvIf X-Tier gold QOSCTL_CLASS=premium\n").start()
    fetch_all(s, [("/x.txt", "10.1.2.3"), ("/x.txt", "10.1.255.1"),
                  ("/x.txt", "10.2.0.1"), ("/x.txt", "2001:db8::5"),
                  ("/x.txt", "2001:db9::5")])
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
    conn.request("GET", "/x.txt", headers={"X-Tier": "gold",
                                           "X-Forwarded-For": "10.3.0.1"})
    conn.getresponse().read()
    conn.close()
    v = settled_counters(s, 6)
    assert v["classes"]["premium"]["arrived"] == 4
    assert v["classes"]["basic"]["arrived"] == 2


def test_off_does_nothing(server_factory):
    s = server_factory("QosCtl Off\nQosCtlContentTrees /degraded /full\n"
                       "QosCtlFixedLevel 0\n").start()
    (st, _, body), = fetch_all(s, [("/full/x.txt", "10.0.0.1")])
    assert (st, body) == (200, b"full\n")
    assert s.status() == {"enabled": False}


def test_graceful_restart_keeps_counts(server_factory):
    s = server_factory(TREES + "QosCtlFixedLevel 2\n").start()
    fetch_all(s, [("/x.txt", ip) for ip in addresses(100)])
    assert settled_counters(s, 100)["classes"]["basic"]["responses"] == 100
    s.graceful()
    fetch_all(s, [("/x.txt", ip) for ip in addresses(50)])
    basic = settled_counters(s, 150)["classes"]["basic"]
    assert basic["arrived"] == 150
    assert basic["responses"] == 150


def _stamp_segment_version(pid, version):
    """Write `version` into the layout stamp of the parent's segment, as
    a module of another layout would have left it (root reads and writes
    another process's memory through /proc); the number of segments."""
    import struct
    magic = struct.pack("<I", 0x31435351)      # QC_SHM_MAGIC, "QSC1"
    found = 0
    with open("/proc/%d/maps" % pid) as maps, \
            open("/proc/%d/mem" % pid, "r+b", buffering=0) as mem:
        for line in maps:
            f = line.split()
            if not f[1].startswith("rw") or not f[1].endswith("s"):
                continue
            start = int(f[0].split("-")[0], 16)
            mem.seek(start)
            # APR keeps the segment's size before its base address
            at = mem.read(64).find(magic)
            if at >= 0 and at % 4 == 0:
                mem.seek(start + at + 4)
                mem.write(struct.pack("<I", version))
                found += 1
    return found


def test_graceful_restart_over_another_layout_starts_afresh(server_factory):
    """Issue #11, finding 3: a segment whose layout stamp is not this
    module's (an upgrade over a graceful restart) is never read: the
    counts start again, a line says why, and requests are served."""
    s = server_factory(TREES + "QosCtlFixedLevel 2\n").start()
    fetch_all(s, [("/x.txt", ip) for ip in addresses(30)])
    assert settled_counters(s, 30)["classes"]["basic"]["responses"] == 30
    assert _stamp_segment_version(s.pid, 0xdead) == 1
    s.graceful()
    fetch_all(s, [("/x.txt", ip) for ip in addresses(20)])
    basic = settled_counters(s, 20)["classes"]["basic"]
    assert basic["arrived"] == 20 and basic["responses"] == 20
    with open(os.path.join(s.root, "error.log")) as f:
        assert "has another layout (an upgrade); counts start again" \
            in f.read()


def _shm_state():
    ipcs = subprocess.run(["ipcs", "-m", "-s", "-q"], capture_output=True,
                          text=True).stdout
    return ipcs, sorted(os.listdir("/dev/shm"))


def test_stop_leaves_no_shared_memory_or_files(server_factory):
    before = _shm_state()
    s = server_factory(TREES + "QosCtlFixedLevel 2\n").start()
    fetch_all(s, [("/x.txt", "10.0.0.1")])
    s.graceful()
    fetch_all(s, [("/x.txt", "10.0.0.1")])
    pid = s.pid
    assert s.stop() == 0
    assert not os.path.exists("/proc/%d" % pid)
    assert _shm_state() == before
    leftovers = sorted(set(os.listdir(s.root)) - {"httpd.conf", "error.log",
                                                  "htdocs"})
    assert leftovers == []


def test_client_identity_from_the_environment(server_factory):
    """QOSCTL_CLIENT replaces the address in the hash: one address, many
    sessions, split evenly and each session stable."""
    s = server_factory(TREES + "QosCtlFixedLevel 1.5\n"
                       'SetEnvIf X-Session "(.+)" QOSCTL_CLIENT=$1\n').start()
    sessions = ["s%d" % i for i in range(400)]

    def trees():
        out = []
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
        for sid in sessions:
            conn.request("GET", "/x.txt", headers={
                "X-Forwarded-For": "10.0.0.1", "X-Session": sid})
            out.append(conn.getresponse().read())
        conn.close()
        return out

    first, second = trees(), trees()
    assert first == second
    full = first.count(b"full\n")
    assert 0.40 <= full / 400.0 <= 0.60, full
