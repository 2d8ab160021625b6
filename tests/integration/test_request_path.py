"""The request path on a real Apache: actuator, rejection, counters.

Each test starts a private Apache (own ServerRoot, high loopback port,
the module from this build) and talks to it over HTTP.  Client
addresses are set with X-Forwarded-For, which mod_remoteip trusts from
127.0.0.1 only, so the module sees them as r->useragent_ip.
"""

import http.client
import os
import shutil
import subprocess
import tempfile
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


def controller_periods(server):
    return server.status()["controller"]["periods"]


def wait_periods(server, n, limit=30.0):
    """Until the controller has run n more periods (bounded): each one
    publishes the levels and the threshold, recomputes the marks of the
    hash buckets and sets the class's balance to 0."""
    until = controller_periods(server) + n
    return qcharness.wait_for(lambda: controller_periods(server) >= until,
                              limit, 0.05)


def published(server, key="localhost"):
    """The basic class's status once the controller has published its
    level for it: a new slot holds the top level (threshold 2) until
    then, and at the top level no client is hashed at all."""
    basic = server.vhost(key)["classes"]["basic"]
    return 1.0 < basic["threshold"] < 2.0 and basic


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
    s = server_factory(TREES + "QosCtlFixedLevel 1.5\n"
                       "QosCtlPeriod 0.25\n").start()
    ips = addresses(2000)
    # Not before the controller has published the pinned level and its
    # threshold, with the balance beside them: until then the request
    # path has only the level itself, and nothing can move a client.
    assert qcharness.wait_for(lambda: published(s), 30, 0.05)
    first = fetch_all(s, [("/x.txt", ip) for ip in ips])
    assert wait_periods(s, 2)
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


def keyed(i, nat=None):
    """A request of client i, named by QOSCTL_CLIENT (the harness's
    servers set it from ?qcid=); a NAT's by its address alone."""
    return ("/x.txt", nat) if nat else ("/x.txt?qcid=%d" % i, None)


def with_nat(requests, nat, every):
    """The requests with one from a NAT address after every `every`."""
    if not nat:
        return list(requests)
    out = []
    for k, r in enumerate(requests, 1):
        out.append(r)
        if k % every == 0:
            out.append(keyed(0, nat))
    return out


@pytest.mark.parametrize("nat", [None, "10.77.0.1"],
                         ids=["clients", "clients-and-a-nat"])
def test_pinned_level_moves_no_client(server_factory, nat):
    """Pinned: with QosCtlFixedLevel 1.5, 1,000 clients each
    ask twice, the controller's periods between the two (each publishes
    the threshold, marks the buckets of heavy keys and sets the class's
    balance to 0): not one client changes tree, whatever the counts
    say.  With a NAT address sending a third of the requests, its
    bucket is marked and its own requests are split between the trees;
    the 15 or so clients that share its bucket keep theirs."""
    s = server_factory(TREES + "QosCtlFixedLevel 1.5\n"
                       "QosCtlPeriod 0.25\n").start()
    # Until the controller has published the level and counted enough
    # clients (other ones) to hold a threshold and mark buckets: bounded
    # in rounds and in time.
    warm = with_nat([keyed(-i) for i in range(1, 301)], nat, 2)
    deadline = time.time() + 30
    while time.time() < deadline:
        fetch_all(s, warm)
        basic = published(s)
        if basic and sum(basic["bucket_arrived"]) >= 1500 \
                and (basic["spread_buckets"] >= 1 or not nat):
            break
    assert basic and sum(basic["bucket_arrived"]) >= 1500, basic
    if nat:
        assert basic["spread_buckets"] >= 1, basic
    clients = [keyed(i) for i in range(1000)]
    first = fetch_all(s, with_nat(clients, nat, 2))
    assert wait_periods(s, 3)
    second = fetch_all(s, with_nat(reversed(clients), nat, 2))
    assert all(r[0] == 200 for r in first + second)
    tree = {}
    nat_trees = []
    for (path, ip), reply in zip(with_nat(clients, nat, 2)
                                 + with_nat(reversed(clients), nat, 2),
                                 first + second):
        if ip:
            nat_trees.append(reply[2])
        else:
            tree.setdefault(path, []).append(reply[2])
    assert len(tree) == 1000
    changed = sum(1 for t in tree.values() if t[0] != t[1])
    full = sum(1 for t in tree.values() if t[0] == b"full\n")
    print("pinned 1.5: %d of 1000 clients changed tree; %d on the full "
          "tree; NAT: %d of %d full" % (changed, full,
                                        nat_trees.count(b"full\n"),
                                        len(nat_trees)))
    assert changed == 0, changed
    assert 400 <= full <= 600, full
    if nat:
        assert 0.3 <= nat_trees.count(b"full\n") / len(nat_trees) <= 0.7


def test_a_connection_keeps_its_tree_where_its_key_is_split(server_factory):
    """Browser pages: one NAT address whose requests are split
    between the trees at QosCtlFixedLevel 1.5 (its bucket marked heavy)
    still gets every request of one keep-alive connection from one tree,
    as a browser's page needs; the connections, not the requests, carry
    the count, so about half of them are on the full tree."""
    nat = "10.77.0.1"
    s = server_factory(TREES + "QosCtlFixedLevel 1.5\n"
                       "QosCtlPeriod 0.25\n").start()
    deadline = time.time() + 30
    basic = None
    while time.time() < deadline:
        fetch_all(s, with_nat([keyed(-i) for i in range(1, 301)], nat, 2))
        basic = published(s)
        if basic and basic["spread_buckets"] >= 1:
            break
    assert basic and basic["spread_buckets"] >= 1, basic
    # Split request by request on new connections...
    single = [fetch_all(s, [("/x.txt", nat)])[0][2] for _ in range(40)]
    assert 10 <= single.count(b"full\n") <= 30, single
    # ...and one tree a connection, half of the connections on each.
    pages = [fetch_all(s, [("/x.txt", nat)] * 11) for _ in range(40)]
    assert all(r[0] == 200 for page in pages for r in page)
    mixed = sum(1 for page in pages if len({r[2] for r in page}) > 1)
    full = sum(1 for page in pages if page[0][2] == b"full\n")
    print("NAT at 1.5: %d of 40 new connections full; %d of 40 keep-alive "
          "pages mixed, %d full" % (single.count(b"full\n"), mixed, full))
    assert mixed == 0, mixed
    assert 10 <= full <= 30, full


class CgroupPlant:
    """A resource the controller reads as a cgroup v2 group of one CPU
    (QosCtlResource cgroup): cpu.stat's usage_usec grows by what each
    reply cost, by the tree it came from.  The controller runs as
    another user, so the directory and files are readable by all."""

    def __init__(self, cost_us):
        self.dir = tempfile.mkdtemp(prefix="qosctl-plant-")
        os.chmod(self.dir, 0o755)
        for name, text in (("cpu.max", "100000 100000\n"),
                           ("cpuset.cpus.effective", "0\n")):
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(text)
        self.cost_us = cost_us
        self.usec = 0.0
        self.written = 0.0
        self.write()

    def write(self):
        tmp = os.path.join(self.dir, ".cpu.stat")
        with open(tmp, "w") as f:
            f.write("usage_usec %d\nuser_usec 0\nsystem_usec 0\n"
                    % self.usec)
        os.chmod(tmp, 0o644)
        os.replace(tmp, os.path.join(self.dir, "cpu.stat"))
        self.written = time.time()

    def served(self, body):
        self.usec += self.cost_us.get(body, 0.0)
        if time.time() - self.written >= 0.005:
            self.write()

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def test_steady_loop_moves_few_clients(server_factory):
    """Under the controller's own loop: 1,000 clients
    ask in turn at 1,000 req/s, on a resource that a full reply costs
    0.9 ms of and a degraded one 0.3 ms, so the loop holds m near 1.47
    (U at the 0.58 bound).  While m holds within 0.01, at most 1% of
    the clients find their next request (a second later) on another
    tree.  A pass in which the client itself fell behind (a busy
    machine) moves m and is not counted."""
    rate, n = 1000.0, 1000
    plant = CgroupPlant({b"full\n": 900.0, b"degraded\n": 300.0})
    s = server_factory("QosCtl On\nQosCtlContentTrees /degraded /full\n"
                       "QosCtlPeriod 1\nQosCtlResource cgroup %s\n"
                       % plant.dir).start()
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
    clock = [time.time(), 0]

    def basic():
        return s.vhost()["classes"]["basic"]

    def one_pass():
        """Every client once, paced: their trees, the loop's m in the
        middle and at the end, and whether the pace held."""
        trees, ms, behind = [], [], False
        for i in range(n):
            due = clock[0] + clock[1] / rate
            now = time.time()
            if due > now:
                time.sleep(due - now)
            elif now - due > 0.05:
                clock[0], clock[1], behind = now, 0, True
            clock[1] += 1
            conn.request("GET", "/x.txt?qcid=%d" % i)
            body = conn.getresponse().read()
            plant.served(body)
            trees.append(body)
            if i == n // 2:
                ms.append(basic()["m"])
        ms.append(basic()["m"])
        return trees, ms, behind

    try:
        passes, seen = [], []
        steady = switched = 0
        deadline = time.time() + 90
        while time.time() < deadline and steady < 4:
            passes.append(one_pass())
            seen.append(passes[-1][1][-1])
            if len(passes) < 3:
                continue
            # m from the start of the first pass to the end of the other
            (before, m_before, late), (after, m_after, late_too) = \
                passes[-2:]
            ms = seen[-3:-2] + m_before + m_after
            if not late and not late_too and 1.0 < min(ms) \
                    and max(ms) < 2.0 and max(ms) - min(ms) <= 0.01:
                steady += 1
                switched += sum(1 for a, b in zip(before, after) if a != b)
        last = basic()
        print("steady loop: m %s, threshold %.4f; %d of %d clients' next "
              "requests on another tree over %d steady pairs of passes"
              % (" ".join("%.4f" % x for x in seen), last["threshold"],
                 switched, steady * n, steady))
        assert steady >= 1, seen
        assert switched <= 0.01 * steady * n, (switched, steady)
    finally:
        conn.close()
        plant.cleanup()


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
    """A segment whose layout stamp is not this
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


def test_an_ipv6_client_is_keyed_by_its_64(server_factory):
    """Hash shopping by address: an IPv6 host picks any address in its
    /64, so the key is the /64.  At a pinned 1.5, 16 addresses of one /64
    all get one tree, and 400 /64s get both, about half each.  (The /64's
    requests are a 26th of the load, short of a heavy key's, whose
    requests are split one by one.)"""
    s = server_factory(TREES + "QosCtlFixedLevel 1.5\n").start()
    requests = []
    for i in range(1, 401):
        requests.append(("/x.txt", "2001:db8:%x:%x::1" % (i, i)))
        if i % 25 == 0:
            requests.append(("/x.txt", "2001:db8:77:1::%x" % i))
    replies = fetch_all(s, requests)
    assert all(r[0] == 200 for r in replies)
    one = [r[2] for (path, ip), r in zip(requests, replies)
           if ip.startswith("2001:db8:77:1::")]
    many = [r[2] for (path, ip), r in zip(requests, replies)
            if not ip.startswith("2001:db8:77:1::")]
    assert len(one) == 16 and len(set(one)) == 1, one
    assert 140 <= many.count(b"full\n") <= 260, many.count(b"full\n")


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
