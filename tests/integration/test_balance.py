"""tools/qosctl-balance against a real HAProxy (Debian's haproxy; skipped
without it): two trivial backends (http.server threads on loopback),
three server lines, one of them put into maintenance by the test
through the runtime API, fake agents answering fixed percentages.

With --metric agent the weights move away from the server with less
headroom, and the server in maintenance stays there with its weight
untouched.  With --metric syn (root and nft only) the tool's nftables
table counts HAProxy's SYNs and the backends' SYN-ACKs, and is gone
after the run, whether it ends by --duration or by SIGTERM.  Nothing
here is timed: the runs are bounded by --duration and by timeouts.
"""

import http.server
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import pytest

import qcharness

HAPROXY = qcharness.HAPROXY
TOOL = os.path.join(qcharness.TOP_SRCDIR, "tools", "qosctl-balance")

pytestmark = pytest.mark.skipif(
    not os.access(HAPROXY, os.X_OK),
    reason="haproxy not installed (apt-get install haproxy)")


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def backend():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def agent(reply):
    """A fake mod_qosctl agent: one fixed line to every connection."""
    lsn = socket.socket()
    lsn.bind(("127.0.0.1", 0))
    lsn.listen(16)
    lsn.settimeout(0.2)
    state = {"stop": False, "asked": 0}

    def serve():
        while not state["stop"]:
            try:
                c, _ = lsn.accept()
            except OSError:
                continue
            with c:
                state["asked"] += 1
                c.sendall(reply)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return lsn, state, t


def haproxy(servers, check=""):
    """qcharness.Haproxy over (name, port, agent port) servers."""
    return qcharness.Haproxy(
        "backend be\n    balance leastconn\n"
        + "".join("    server %s 127.0.0.1:%d weight 100 %s agent-port %d\n"
                  % (name, port, check, aport)
                  for name, port, aport in servers))


def weights(hap):
    """{server: (op_state, admin_state, uweight)}."""
    return {name: (int(r["srv_op_state"]), int(r["srv_admin_state"]),
                   int(r["srv_uweight"]))
            for name, r in hap.servers().items()}


def balance(*args, timeout=60):
    return subprocess.run([sys.executable, TOOL] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=timeout)


def test_agent_weights_move_and_maintenance_stays():
    b1, b2 = backend(), backend()
    a1 = agent(b"90% maxconn:100\n")
    a2 = agent(b"30%\n")
    hap = None
    logdir = tempfile.mkdtemp(prefix="qosctl-balance-log-")
    try:
        p1, p2 = b1.server_address[1], b2.server_address[1]
        ap1, ap2 = a1[0].getsockname()[1], a2[0].getsockname()[1]
        hap = haproxy([("s1", p1, ap1), ("s2", p2, ap2),
                       ("s3", p2, ap2)])
        assert hap.command("disable server be/s3").strip() == ""
        before = weights(hap)
        assert before["s3"][1] & 1 and before["s3"][2] == 100
        log = os.path.join(logdir, "balance.log")
        out = balance("--socket", hap.sock, "--backend", "be",
                      "--metric", "agent", "--interval", "0.2",
                      "--duration", "2", "--log", log)
        assert out.returncode == 0, out.stderr
        assert out.stderr == ""
        after = weights(hap)
        # s2 reports less headroom: its share is cut every interval.
        assert after["s1"][2] == 256
        assert after["s2"][2] < 100 < after["s1"][2]
        # s3 stays in maintenance with the weight it had.
        assert after["s3"][1] & 1 and after["s3"][2] == 100
        with open(log) as f:
            lines = f.read().splitlines()
        assert lines and all("s1=90%/256 " in ln and "s3=MAINT" in ln
                             and ln.endswith("cut=s2") for ln in lines)
        assert lines == out.stdout.splitlines()
        assert a1[1]["asked"] >= len(lines)
        # And HAProxy still serves through the weighted servers.
        url = "http://127.0.0.1:%d/" % hap.port
        with urllib.request.urlopen(url, timeout=10) as r:
            assert r.status == 200
    finally:
        if hap:
            hap.cleanup()
        for lsn, state, t in (a1, a2):
            state["stop"] = True
            t.join(5)
            lsn.close()
        for b in (b1, b2):
            b.shutdown()
            b.server_close()
        shutil.rmtree(logdir, ignore_errors=True)


NFT = shutil.which("nft") or "/usr/sbin/nft"
needs_nft = pytest.mark.skipif(
    os.geteuid() != 0 or not os.access(NFT, os.X_OK),
    reason="the syn metric's nftables table needs root and nft")


def table_exists(name):
    return subprocess.run([NFT, "list", "table", "inet", name],
                          capture_output=True, timeout=10).returncode == 0


def traffic(port, stop):
    """Requests through HAProxy until stop is set (bounded)."""
    url = "http://127.0.0.1:%d/" % port
    for _ in range(2000):
        if stop.is_set():
            return
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                r.read()
        except OSError:
            pass
        time.sleep(0.01)


@needs_nft
def test_syn_counts_and_the_table_goes_away():
    table = "qosctl_balance_test%d" % os.getpid()
    b1, b2 = backend(), backend()
    hap, stop, proc, feeder = None, threading.Event(), None, None
    try:
        p1, p2 = b1.server_address[1], b2.server_address[1]
        # Health checks every 100 ms: SYNs to both in every interval.
        hap = haproxy([("s1", p1, 1), ("s2", p2, 1)],
                      check="check inter 100ms")
        feeder = threading.Thread(target=traffic, args=(hap.port, stop),
                                  daemon=True)
        feeder.start()
        out = balance("--socket", hap.sock, "--backend", "be",
                      "--metric", "syn", "--interval", "0.5",
                      "--duration", "2", "--dry-run",
                      "--nft-table", table)
        assert out.returncode == 0, out.stderr
        assert not table_exists(table)
        lines = out.stdout.splitlines()
        assert len(lines) == 4
        # Every SYN gets its SYN-ACK: R is 0 but for a handshake split
        # by an interval's end (about 5 SYNs an interval each).
        for ln in lines:
            for name in ("s1", "s2"):
                r = float(ln.split(" %s=" % name)[1].split("/")[0])
                assert abs(r) <= 0.5, lines

        # Without --duration: until SIGTERM, and the table goes then.
        proc = subprocess.Popen(
            [sys.executable, TOOL, "--socket", hap.sock, "--backend", "be",
             "--metric", "syn", "--interval", "0.5", "--dry-run",
             "--nft-table", table], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        assert qcharness.wait_for(lambda: table_exists(table), limit=20)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "Traceback" not in err
        assert not table_exists(table)
    finally:
        stop.set()
        if feeder:
            feeder.join(30)
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait(10)
        if table_exists(table):
            subprocess.run([NFT, "delete", "table", "inet", table],
                           timeout=10)
        if hap:
            hap.cleanup()
        for b in (b1, b2):
            b.shutdown()
            b.server_close()
