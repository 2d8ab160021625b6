"""Pieces of bench/cluster: three Apache backends behind a real HAProxy,
each backend's egress shaped by tbf, load from httperf beside HAProxy.

    ns PREFIX-lb   HAProxy (frontend 127.0.0.1:PORT, stats socket at
                   level admin in the run directory) and httperf
        | veth PREFIXl1 10.215.1.254     ...  PREFIXl3 10.215.3.254
        |                                       |
    ns PREFIX-b1   veth PREFIXb1 10.215.1.1, tbf egress (100 Mbit)
    ns PREFIX-b2   veth PREFIXb2 10.215.2.1, tbf egress (50 Mbit)
    ns PREFIX-b3   veth PREFIXb3 10.215.3.1, tbf egress (25 Mbit)

Replies leave each backend through its shaped veth: the link is the
backend's bottleneck, as in bench/testbed.  Client addresses: one
httperf process per address (X-Forwarded-For, appended to by HAProxy's
`option forwardfor`; the backends trust HAProxy and loopback through
mod_remoteip), each cycling through session identities (?qcid=, the
identity mod_qosctl hashes), as qcbench.offer() does.  The TCP source
of every request on a backend is HAProxy's address.

Every process here is started by us and ended by its pid; every wait
is bounded.
"""

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qcbench  # noqa: E402

qcharness = qcbench.qcharness

NET = "10.215"
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
BALANCE = os.path.join(qcbench.SRCDIR, "tools", "qosctl-balance")
URI = "/bench/64k.jpg"
FULL_BYTES = 65536 + 300        # a full reply on the wire, roughly
BOUND = 0.9                     # the link kind's bound (bench/robustness)
AGENT_PORT = 8405


def run(cmd, check=True, timeout=30):
    return subprocess.run(cmd, check=check, capture_output=True, text=True,
                          timeout=timeout)


def parse_rate(text):
    """'100mbit' / '25M' -> bits/s."""
    m = re.match(r"^([0-9.]+)\s*([kmg]?)(bit)?$", text.strip().lower())
    if not m:
        raise ValueError("bad rate %r" % text)
    return float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6,
                                "g": 1e9}[m.group(2)]


class Backend:
    """One backend namespace: what qcbench.BenchServer needs of a
    testbed (server_ns, server_if, server_addr, client_ns)."""

    def __init__(self, prefix, i, bits):
        self.i, self.bits = i, bits
        self.name = "b%d" % i
        self.server_ns = "%s-b%d" % (prefix, i)
        self.server_if = "%sb%d" % (prefix, i)
        self.peer_if = "%sl%d" % (prefix, i)
        self.server_addr = "%s.%d.1" % (NET, i)
        self.peer_addr = "%s.%d.254" % (NET, i)
        self.client_ns = []

    def shape(self, bits, change=False):
        """tbf on the backend's egress at bits/s (bench/testbed's burst:
        above one GSO segment)."""
        run(["tc", "-n", self.server_ns, "qdisc", "change" if change
             else "add", "dev", self.server_if, "root", "tbf", "rate",
             "%dbit" % bits, "burst", "256kb", "latency", "100ms"])
        self.bits = bits


class Cluster(qcharness.Testbed):
    """The namespaces and links; a Testbed for the harness's emergency
    teardown order (servers first, then this)."""

    def __init__(self, prefix, rates):
        super().__init__(prefix=prefix)
        self.lb_ns = prefix + "-lb"
        self.backends = [Backend(prefix, i + 1, b)
                         for i, b in enumerate(rates)]

    def ours(self, ns):
        return ns == self.lb_ns or re.fullmatch(
            re.escape(self.prefix) + r"-b[0-9]+", ns) is not None

    def down(self):
        out = run(["ip", "netns", "list"], check=False).stdout
        for ns in [line.split()[0] for line in out.splitlines() if line]:
            if self.ours(ns):
                run(["ip", "netns", "del", ns], check=False)

    def up(self):
        self.down()
        qcharness._live[("testbed", self.prefix)] = self
        try:
            lb = self.lb_ns
            run(["ip", "netns", "add", lb])
            run(["ip", "-n", lb, "link", "set", "lo", "up"])
            for b in self.backends:
                run(["ip", "netns", "add", b.server_ns])
                run(["ip", "-n", b.server_ns, "link", "set", "lo", "up"])
                run(["ip", "link", "add", b.server_if, "netns",
                     b.server_ns, "type", "veth", "peer", "name",
                     b.peer_if, "netns", lb])
                run(["ip", "-n", b.server_ns, "addr", "add",
                     b.server_addr + "/24", "dev", b.server_if])
                run(["ip", "-n", lb, "addr", "add", b.peer_addr + "/24",
                     "dev", b.peer_if])
                run(["ip", "-n", b.server_ns, "link", "set", b.server_if,
                     "up"])
                run(["ip", "-n", lb, "link", "set", b.peer_if, "up"])
                b.shape(b.bits)
            # httperf opens a connection a request (qcbench.tune_clients)
            qcbench.tune_client_ns(lb)
        except Exception:
            self.cleanup()
            raise
        return self

    def cleanup(self):
        self.down()
        qcharness._live.pop(("testbed", self.prefix), None)


@contextlib.contextmanager
def cluster(prefix, rates):
    """Cluster up ... down whatever happens, one run per prefix."""
    with qcbench.prefix_lock(prefix):
        c = Cluster(prefix, rates)
        try:
            c.up()
            yield c
        finally:
            c.cleanup()


# -- backends ----------------------------------------------------------------

_AGENT = []


def agent_supported():
    """Whether this build's module takes QosCtlAgentListen."""
    if not _AGENT:
        a = qcharness.Apache(extra="QosCtl On\nQosCtlAgentListen "
                             "127.0.0.1:%d\n" % AGENT_PORT)
        try:
            rc, _ = a.config_test()
        finally:
            a.cleanup()
        _AGENT.append(rc == 0)
    return _AGENT[0]


def backend_server(b, site, qosctl, agent=False, fixed_level=None,
                   conf="", **kw):
    """A BenchServer (not started) in backend b: plain Apache (module
    not loaded, the full tree) or mod_qosctl bound to its link (held at
    fixed_level, if given).  conf: more directives; kw: BenchServer's
    (mpm, mpm_conf)."""
    conf = ("KeepAlive Off\nRemoteIPInternalProxy %s.0.0/16\n" % NET
            + conf)
    if not qosctl:
        return qcbench.BenchServer(b, site, None, conf=conf, **kw)
    extra = ""
    if agent:
        extra = "QosCtlAgentListen %s:%d\n" % (b.server_addr, AGENT_PORT)
    return qcbench.BenchServer(b, site, qcbench.qosctl_conf(
        b, bound=BOUND, period=1, log="ctl.tsv", fixed_level=fixed_level,
        model=qcbench.link_model(b.bits),
        resource="link %s %dM" % (b.server_if, b.bits / 1e6),
        extra=extra), conf=conf, **kw)


def tx_bytes(srv):
    return qcbench.tx_bytes_of(srv.pid, srv.tb.server_if)


def rejected(srv):
    """Requests a mod_qosctl backend's measured host refused so far
    (its 503s), or None."""
    try:
        return float(srv.counters()["rejected"])
    except (RuntimeError, KeyError, TypeError, ValueError):
        return None


def tree_counts(srv):
    """(degraded, full) replies so far of a mod_qosctl backend's
    measured host, or None."""
    try:
        c = srv.counters()
        n = c["tree_responses"]
        return float(n[0]), float(n[-1])
    except (RuntimeError, KeyError, IndexError, TypeError, ValueError):
        return None


# -- HAProxy -----------------------------------------------------------------

POLICIES = ("rr", "leastconn", "agent", "delta")

HAPROXY_CFG = """global
    maxconn 8000
    nbthread 1
    stats socket {sock} mode 600 level admin
    stats timeout 2m

defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    timeout queue 5s
    option httpclose
    option forwardfor

frontend fe
    bind 127.0.0.1:{port}
    default_backend be

backend be
    balance {balance}
{servers}
"""


class HAProxy(qcharness._Server):
    """HAProxy 2.6 in the balancer namespace, in the foreground (-db),
    ended by its pid.  check: each server's health check options ("":
    none, the server is taken as up)."""

    def __init__(self, c, policy, servers, cpus=qcbench.CLIENT_CPUS,
                 check="check inter 2s"):
        self.dir = tempfile.mkdtemp(prefix="qosctl-haproxy-")
        self.sock = os.path.join(self.dir, "haproxy.sock")
        self.port = qcharness.free_port()
        self.ns, self.policy, self.cpus = c.lb_ns, policy, cpus
        self.proc = None
        self.error_log = os.path.join(self.dir, "haproxy.log")
        lines = []
        for b, srv in zip(c.backends, servers):
            s = "    server %s %s:%d weight 100 %s" % (
                b.name, b.server_addr, srv.port, check)
            if policy == "agent":
                s += " agent-check agent-port %d agent-inter 1s" % (
                    AGENT_PORT)
            lines.append(s)
        self.cfg = os.path.join(self.dir, "haproxy.cfg")
        with open(self.cfg, "w") as f:
            f.write(HAPROXY_CFG.format(
                sock=self.sock, port=self.port,
                balance="leastconn" if policy == "leastconn"
                else "roundrobin", servers="\n".join(lines)))

    def start(self, timeout=20):
        p = run([HAPROXY, "-c", "-f", self.cfg], check=False)
        if p.returncode != 0:
            self.cleanup()
            raise RuntimeError("haproxy -c failed:\n" + p.stdout + p.stderr)
        pin = ["taskset", "-c", self.cpus] if self.cpus else []
        with open(self.error_log, "w") as log:
            self.proc = subprocess.Popen(
                ["ip", "netns", "exec", self.ns] + pin
                + [HAPROXY, "-db", "-f", self.cfg],
                stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        qcharness._live[self.proc.pid] = self
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                why = self.log()[-2000:]
                self.cleanup()
                raise RuntimeError("haproxy exited: " + why)
            with contextlib.suppress(OSError):
                if "be" in self.command("show servers state be"):
                    return self
            time.sleep(0.1)
        self.cleanup()
        raise RuntimeError("haproxy did not start within %ds" % timeout)

    def command(self, cmd, timeout=5):
        """One runtime API command on the stats socket; its answer."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(self.sock)
            s.sendall((cmd + "\n").encode())
            data = b""
            while len(data) < 1 << 20:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        return data.decode(errors="replace")

    def servers_state(self):
        """{server name: {'weight': current, 'iweight': initial,
        'admin': srv_admin_state, 'op': srv_op_state}}."""
        text = self.command("show servers state be")
        lines = [l for l in text.splitlines() if l.strip()]
        head = next((l for l in lines if l.startswith("#")), None)
        if not head:
            return {}
        cols = head.lstrip("# ").split()
        out = {}
        for l in lines:
            if l.startswith("#") or l.strip() == "1":
                continue
            v = dict(zip(cols, l.split()))
            if "srv_name" in v:
                out[v["srv_name"]] = {
                    "weight": float(v.get("srv_uweight", "nan")),
                    "iweight": float(v.get("srv_iweight", "nan")),
                    "admin": v.get("srv_admin_state"),
                    "op": v.get("srv_op_state")}
        return out

    def server_stats(self):
        """{server name: show stat row as a dict} of backend be."""
        text = self.command("show stat")
        lines = text.splitlines()
        if not lines or not lines[0].startswith("#"):
            return {}
        cols = lines[0].lstrip("# ").split(",")
        out = {}
        for l in lines[1:]:
            v = dict(zip(cols, l.split(",")))
            if v.get("pxname") == "be":
                out[v.get("svname")] = v
        return out

    def sessions(self, names):
        """Sessions each named server of backend be took so far (show
        stat's stot); 0 for one not found or while the socket fails."""
        st = {}
        with contextlib.suppress(OSError):
            st = self.server_stats()
        return [float(st.get(n, {}).get("stot") or 0) for n in names]

    def stop(self, timeout=10):
        return qcharness.stop_process(self.proc, signal.SIGTERM, timeout)

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class Balancer:
    """tools/qosctl-balance beside HAProxy (the delta policy), in the
    balancer namespace, ended by its pid."""

    def __init__(self, c, hap, seconds, out_log=None, interval=1,
                 extra=()):
        self.cmd = ["ip", "netns", "exec", c.lb_ns, sys.executable,
                    BALANCE, "--socket", hap.sock, "--backend", "be",
                    "--metric", "syn", "--interval", "%g" % interval,
                    "--duration", "%d" % max(1, int(seconds))] + list(extra)
        self.log = out_log or os.path.join(hap.dir, "balance.log")
        self.proc = None

    def start(self):
        with open(self.log, "w") as f:
            self.proc = subprocess.Popen(self.cmd, stdout=f,
                                         stderr=subprocess.STDOUT,
                                         start_new_session=True)
        qcharness._live[self.proc.pid] = self
        time.sleep(1.0)
        if self.proc.poll() is not None:
            with open(self.log) as f:
                raise RuntimeError("qosctl-balance exited: "
                                   + f.read()[-1500:])
        return self

    def cleanup(self):
        qcharness.stop_process(self.proc, signal.SIGTERM, 10)


def balance_available():
    """(usable, why not) for tools/qosctl-balance."""
    if not os.path.exists(BALANCE):
        return False, "tools/qosctl-balance not in this tree yet"
    p = run([sys.executable, BALANCE, "--help"], check=False)
    if p.returncode != 0 or "--metric" not in p.stdout:
        return False, "tools/qosctl-balance --help failed or has no --metric"
    return True, ""


# -- load ------------------------------------------------------------------

HIST = re.compile(r"^\s*([0-9.]+)\s+([0-9]+)\s*$")


def lifetime_hist(raw):
    """httperf's connection lifetime histogram (-v -v): {ms: count}."""
    lines = raw.splitlines()
    start = next((i for i, l in enumerate(lines)
                  if l.startswith("Connection lifetime histogram")), None)
    bins = {}
    if start is None:
        return bins
    for line in lines[start + 1:]:
        if line.strip() == ":":
            continue
        m = HIST.match(line)
        if not m:
            break
        bins[float(m.group(1))] = bins.get(float(m.group(1)), 0) + int(
            m.group(2))
    return bins


def hist_percentile(bins, q):
    total = sum(bins.values())
    if not total:
        return None
    seen = 0
    for ms in sorted(bins):
        seen += bins[ms]
        if seen >= q * total:
            return ms
    return max(bins)


def offer(c, port, rate, seconds, clients=qcbench.CLIENTS, timeout=5,
          first_client=0, identities=25, uri=URI):
    """rate req/s for seconds to HAProxy from `clients` httperf
    processes in the balancer namespace (each its own X-Forwarded-For
    address and `identities` sessions), summed: offered, connections,
    replies, s2xx, s5xx, errors (and kinds), duration, and the merged
    connection lifetime histogram (completed connections)."""
    rep = qcharness.httperf_clients(
        "127.0.0.1", port, uri, rate, seconds, clients=clients,
        first_client=first_client, identities=identities, timeout=timeout,
        netns=c.lb_ns, cpus=qcbench.CLIENT_CPUS, extra=["-v", "-v"],
        wall_limit=seconds + timeout + 90)
    runs = rep["runs"]
    keys = ("connections", "replies", "s2xx", "s5xx", "errors",
            "client_timo", "socket_timo", "connrefused", "connreset",
            "fd_unavail")
    total = {k: rep[k] for k in keys}
    total["offered"] = rep["offered"]
    total["duration"] = rep["duration"]
    hist = {}
    for r in runs:
        for ms, n in lifetime_hist(r["raw"]).items():
            hist[ms] = hist.get(ms, 0) + n
    total["hist"] = hist
    total["rt_med_ms"] = hist_percentile(hist, 0.5)
    total["rt_p95_ms"] = hist_percentile(hist, 0.95)
    return total


def quiesce(servers, limit=30.0, share=0.05):
    """Wait (at most limit s) until every backend's link sends under
    `share` of its rate: the previous load's queues have drained."""
    deadline = time.time() + limit
    prev = [tx_bytes(s) for s in servers]
    t_prev = time.time()
    while time.time() < deadline:
        time.sleep(0.5)
        cur, now = [tx_bytes(s) for s in servers], time.time()
        busy = [(c - p) * 8 / (now - t_prev) / s.tb.bits
                for c, p, s in zip(cur, prev, servers)]
        prev, t_prev = cur, now
        if max(busy) < share:
            return True
    return False


def json_dump(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, default=str)
