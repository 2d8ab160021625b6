"""qosctl-replay against a real Apache: a tree rebuilt from a log of a
few hundred requests, replayed in full; Apache's own access log says
which paths came in and in what order.  No wall-clock thresholds: the
issue times are checked for order and against their records."""

import json
import os
import subprocess
import sys

import qcharness

TOOL = os.path.join(qcharness.TOP_SRCDIR, "tools", "qosctl-replay")
ENV = dict(os.environ, QOSCTL_DEGRADE=os.path.join(
    qcharness.TOP_SRCDIR, "content-trees", "qosctl-degrade"))
N = 300


def write_log(path):
    """N requests over 6 s of log time: pages, images, a directory index
    and a 404; targets in order."""
    targets = []
    with open(path, "w") as f:
        for i in range(N):
            k = i % 10
            if k < 5:
                t, size = "/page-%d.html" % (i % 23), 1000 + 37 * (i % 23)
            elif k < 8:
                t, size = "/img/p%d.jpg" % (i % 7), 9000 + 1000 * (i % 7)
            elif k == 8:
                t, size = "/docs/", 400
            else:
                t, size = "/missing-%d" % i, 0
            status = 404 if t.startswith("/missing") else 200
            f.write('192.0.2.%d - - [10/Oct/2000:13:55:%02d +0000] "GET %s '
                    'HTTP/1.1" %d %d\n' % (i % 200, i * 6 // N, t, status,
                                            size))
            targets.append(t)
    return targets


def replay(log, url, out, *extra):
    r = subprocess.run([sys.executable, TOOL, "run", log, "--server", url,
                        "--out", out, "--no-plot", "-q"] + list(extra),
                       capture_output=True, text=True, timeout=300, env=ENV)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    rows = []
    with open(os.path.join(out, "requests.tsv")) as f:
        for ln in f:
            if not ln.startswith("#"):
                x = ln.rstrip("\n").split("\t")
                rows.append([float(v) for v in x[:4]] + [int(x[4]),
                                                         int(x[5]), x[7]])
    return summary, rows


def access_paths(root):
    with open(os.path.join(root, "access.log")) as f:
        return [ln.split('"')[1].split(" ")[1] for ln in f]


def test_replay_against_apache(tmp_path):
    log = str(tmp_path / "access.log")
    targets = write_log(log)
    # in the server's root: tmp_path is not readable by its User
    a = qcharness.Apache(with_qosctl=False)
    tree = os.path.join(a.root, "tree")
    r = subprocess.run([sys.executable, TOOL, "mktree", log, "--out", tree],
                       capture_output=True, text=True, timeout=300, env=ENV)
    assert r.returncode == 0, r.stderr
    a.docroot = os.path.join(tree, "full")
    # every request on one connection (no MaxKeepAliveRequests boundary:
    # where a connection ends, its last request may be logged after the
    # next connection's first)
    a.write_conf('CustomLog "%s/access.log" "%%h \\"%%r\\" %%>s %%B"\n'
                 'MaxKeepAliveRequests 0\n' % a.root)
    try:
        a.start()
        url = "http://127.0.0.1:%d" % a.port
        # one connection: Apache sees the log's order exactly
        s, rows = replay(log, url, str(tmp_path / "one"), "--speedup", "4",
                         "--max-conns", "1")
        assert s["requests"] == N and s["errors"] == 0
        assert s["status"] == {"200": N - N // 10, "404": N // 10}
        assert s["bytes_differ_from_log"] == 0
        assert [r[6] for r in rows] == targets
        assert access_paths(a.root) == targets
        # issue-time error: never early, in schedule order, and the
        # summary's figures are the records'
        lags = sorted((r[1] - r[0]) * 1e3 for r in rows)
        assert lags[0] >= 0
        issued = [r[1] for r in rows]
        assert issued == sorted(issued)
        assert abs(s["issue_lag_ms"]["max"] - lags[-1]) < 1e-3
        within = sum(1 for x in lags if x <= 5.0) / N
        assert abs(s["issued_within_5ms"]["all"] - within) < 1e-4
        # many connections, no keep-alive: the same requests, each on its
        # own connection
        os.truncate(os.path.join(a.root, "access.log"), 0)
        s, rows = replay(log, url, str(tmp_path / "many"), "--speedup",
                         "8", "--max-conns", "16", "--no-keepalive")
        assert s["requests"] == N and s["errors"] == 0
        assert s["connections_opened"] == N
        assert sorted(access_paths(a.root)) == sorted(targets)
    finally:
        a.cleanup()


def test_tree_serves_degraded_under_the_module(tmp_path):
    """The tree is ready for QosCtlContentTrees: pinned to the lowest
    tree, the images come at qosctl-degrade's sizes."""
    log = str(tmp_path / "access.log")
    write_log(log)
    a = qcharness.Apache(extra=(
        "QosCtl On\nQosCtlContentTrees /degraded /full\n"
        "QosCtlFixedLevel 1\n"))
    tree = a.docroot
    r = subprocess.run([sys.executable, TOOL, "mktree", log, "--out", tree,
                        "--hash-names", "--key", "test"],
                       capture_output=True, text=True, timeout=300, env=ENV)
    assert r.returncode == 0, r.stderr
    try:
        a.start()
        s, rows = replay(os.path.join(tree, "replay.requests"),
                         "http://127.0.0.1:%d" % a.port,
                         str(tmp_path / "run"), "--speedup", "8")
        assert s["requests"] == N and s["errors"] == 0
        for sch, iss, first, done, status, nbytes, target in rows:
            if target.endswith(".jpg"):
                assert status == 200
                assert nbytes == os.path.getsize(
                    os.path.join(tree, "degraded") + target)
                assert nbytes < os.path.getsize(
                    os.path.join(tree, "full") + target)
    finally:
        a.cleanup()
