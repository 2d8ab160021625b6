"""Pieces of bench/robustness: plain Apache, Apache + mod_qos and Apache
+ mod_qosctl under one scenario matrix, measured the same way for all.

    kinds        link/static, cpu/cgi, cpu/php: the bottleneck and the
                 content on it
    set_clients  1 address, N uniform or N Zipf-weighted real source
                 addresses: nftables SNAT in the client namespace, each
                 new connection to an address drawn by numgen
    calibrate    per kind: resource cost of a full and a degraded reply
                 (light load, plain Apache), capacity, and mod_qos's
                 concurrency limit N from a short sweep
    run_one      one scenario on one server: scheduled httperf segments
                 (or another client model's, bench/lib/qcclients.py),
                 the bench's own 1 s utilization samples (link tx bytes or
                 CPU 0's /proc/stat), a timing probe, counters, the log

Probe: httperf gives neither percentiles nor times by status, so a
small open-loop client (this file run as a script, `probe`) sends a
few requests a second from the client namespace and times each, by
status; they are a few percent of the load.
"""

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qcbench  # noqa: E402
import qcclients  # noqa: E402
import qcmetrics  # noqa: E402

qcharness = qcbench.qcharness

SERVERS = ("plain", "modqos", "qosctl")
# The fixed servers a row's goodput is held against (vs_best_fixed):
# plain Apache (the full tree) and mod_qosctl pinned to the lowest tree.
FIXED = ("plain", "pinned")
ALL_SERVERS = ("plain", "pinned", "modqos", "qosctl")
# What --servers may name: those, and logonly, mod_qosctl's dry run
# (QosCtl LogOnly: the controller decides, every reply is the full
# tree's), run only when named.
CHOICES = ALL_SERVERS + ("logonly",)
# Servers whose controller decides, and logs its periods (ctl.tsv).
DECIDING = ("qosctl", "logonly")
BOUNDS = {"link": 0.9, "cpu": 0.6}
SNAT_NET = "10.214"             # client addresses, routed to the client ns
CLIENT_ADDR = "10.213.1.1"      # bench/testbed's first client namespace
ZIPF_BUCKETS = 8000
QOS_SWEEP = (1, 2, 4, 8, 16, 32)
# Connections one httperf holds open at most: select()'s FD_SETSIZE
# (1,024) less its own descriptors.
HTTPERF_FDS = 1000
PCRE = ("/usr/lib/x86_64-linux-gnu/libpcre.so.3",
        "/lib/x86_64-linux-gnu/libpcre.so.3")
MODULES = qcharness.MODULES_DIR
# Every reply on its own connection, closed by the server: each request
# samples a client address, and the client namespace keeps no TIME_WAIT
# ports (1,300 conn/s from one address would exhaust them).
KEEPALIVE = "KeepAlive Off\n"
# Debian's apache2.conf, for the client models that keep connections.
KEEPALIVE_ON = ("KeepAlive On\nMaxKeepAliveRequests 100\n"
                "KeepAliveTimeout 5\n")


# -- what is served --------------------------------------------------------

class Kind:
    """A bottleneck and the content that loads it."""

    def __init__(self, resource, content, uri, location, conf=""):
        self.resource, self.content = resource, content
        self.uri, self.location, self.conf = uri, location, conf
        self.name = "%s/%s" % (resource, content)
        self.pids = []          # processes outside httpd that serve it
        self.bound = BOUNDS[resource]


def find_page(site, suffix, avoid=()):
    """/dynamic/<page> of the full tree with this suffix, the newest
    sample pages (~3 ms CPU) before the old CGI report; None if none."""
    d = os.path.join(site, "full", "dynamic")
    names = sorted(n for n in os.listdir(d) if n.endswith(suffix)
                   and n not in avoid) if os.path.isdir(d) else []
    return "/dynamic/" + names[0] if names else None


def php_conf(site, sock):
    """PHP pages of the full tree through php-fpm; their static
    snapshots in the degraded tree sent as HTML."""
    return ("LoadModule proxy_module %s/mod_proxy.so\n"
            "LoadModule proxy_fcgi_module %s/mod_proxy_fcgi.so\n"
            "<Directory \"%s/full/dynamic\">\n  <FilesMatch \"\\.php$\">\n"
            "    SetHandler \"proxy:unix:%s|fcgi://localhost/\"\n"
            "  </FilesMatch>\n</Directory>\n"
            "<Directory \"%s/degraded\">\n  <FilesMatch \"\\.php$\">\n"
            "    SetHandler None\n    ForceType text/html\n"
            "  </FilesMatch>\n</Directory>\n"
            % (MODULES, MODULES, site, sock, site))


def kinds(site, fpm=None):
    """Every kind this site supports, by name (fpm: a running
    php_fpm())."""
    out = {"link/static": Kind("link", "static", "/bench/64k.jpg",
                               "/bench")}
    cgi = find_page(site, ".cgi", avoid=("report.cgi",)) \
        or find_page(site, ".cgi")
    if cgi == "/dynamic/report.cgi":
        cgi += "?n=0"       # the old report: no checksum loop, ~30 ms
    if cgi:
        out["cpu/cgi"] = Kind("cpu", "cgi", cgi, "/dynamic")
    php = find_page(site, ".php")
    if php and shutil_which("php-fpm8.2"):
        out["cpu/php"] = Kind("cpu", "php", php, "/dynamic", php_conf(
            site, fpm.sock if fpm else "/nonexistent"))
        out["cpu/php"].pids = [fpm.pid] if fpm else []
    return out


def shutil_which(name):
    import shutil
    return shutil.which(name) or (os.path.exists("/usr/sbin/" + name)
                                  and "/usr/sbin/" + name)


@contextlib.contextmanager
def php_fpm(cpus=qcbench.SERVER_CPUS):
    """A private php-fpm pool on a unix socket in a temporary directory,
    pinned with the server; yields .sock and .pid; stopped by pid."""
    d = tempfile.mkdtemp(prefix="qosctl-fpm-")
    os.chmod(d, 0o755)
    sock = os.path.join(d, "fpm.sock")
    user = qcharness.run_user() or "www-data"
    with open(os.path.join(d, "fpm.conf"), "w") as f:
        f.write("[global]\npid = %s/fpm.pid\nerror_log = %s/fpm.log\n"
                "daemonize = no\n[bench]\nuser = %s\ngroup = %s\n"
                "listen = %s\nlisten.mode = 0666\npm = static\n"
                "pm.max_children = 8\n" % (d, d, user, user if user ==
                                            "www-data" else "nogroup",
                                            sock))
    pin = ["taskset", "-c", cpus] if cpus else []
    proc = subprocess.Popen(pin + [shutil_which("php-fpm8.2"), "-n", "-y",
                                   os.path.join(d, "fpm.conf"), "-F"],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        for _ in range(100):
            if os.path.exists(sock) or proc.poll() is not None:
                break
            time.sleep(0.1)
        if not os.path.exists(sock):
            raise RuntimeError("php-fpm did not start")
        yield type("Fpm", (), {"sock": sock, "pid": proc.pid})
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGQUIT)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(10)
        import shutil
        shutil.rmtree(d, ignore_errors=True)


# -- client addresses ------------------------------------------------------

def client_address(i):
    return "%s.%d.%d" % (SNAT_NET, i // 250, i % 250 + 1)


def zipf_buckets(n, s=1.0, buckets=ZIPF_BUCKETS):
    """Address indices, each repeated in proportion to its Zipf(s)
    weight (at least once): a uniform draw over them is Zipf."""
    w = [1.0 / (i + 1) ** s for i in range(n)]
    total = sum(w)
    out = []
    for i, x in enumerate(w):
        out += [i] * max(1, int(round(x / total * buckets)))
    return out


def client_addresses(n, zipf=False):
    """The addresses of set_clients(n, zipf), each as often as it is
    drawn (a uniform draw from the list is the population's); None for
    one address (the namespace's own)."""
    if n <= 1:
        return None
    idx = zipf_buckets(n) if zipf else list(range(n))
    return [client_address(i) for i in idx]


def set_clients(tb, n, zipf=False, local=False):
    """Make every new connection from the client namespace to the server
    come from one of n addresses (n == 1: the namespace's own, no NAT).
    local: also give the namespace the n addresses, for a client that
    binds each of its sessions to one (qcclients' browser); what binds
    to one is left alone by the NAT."""
    ns = tb.client_ns[0]
    subprocess.run(["ip", "netns", "exec", ns, "nft", "delete", "table",
                    "ip", "qcrobust"], capture_output=True, timeout=30)
    if n <= 1:
        return
    idx = zipf_buckets(n) if zipf else list(range(n))
    elems = ", ".join("%d : %s" % (k, client_address(i))
                      for k, i in enumerate(idx))
    rules = ("table ip qcrobust {\n  map addr { typeof numgen random mod %d"
             " : ip saddr; elements = { %s } }\n  chain post { type nat "
             "hook postrouting priority srcnat; policy accept;\n"
             "    %sip daddr %s snat to numgen random mod %d map @addr\n"
             "  }\n}\n" % (len(idx), elems, "ip saddr %s " % CLIENT_ADDR
                           if local else "", tb.server_addr, len(idx)))
    if local:
        add_local_addresses(ns, n)
    with tempfile.NamedTemporaryFile("w", suffix=".nft") as f:
        f.write(rules)
        f.flush()
        qcbench.netns_run(ns, "nft", "-f", f.name)
    # Conntrack's TIME_WAIT entries would pile up at 1,000 conn/s.
    qcbench.netns_run(ns, "sysctl", "-q", "-w",
                      "net.netfilter.nf_conntrack_tcp_timeout_time_wait=2")
    subprocess.run(["ip", "-n", tb.server_ns, "route", "replace",
                    SNAT_NET + ".0.0/16", "via", CLIENT_ADDR], check=True,
                   capture_output=True, timeout=30)


def add_local_addresses(ns, n):
    """client_address(0 .. n-1) on the client namespace's interface
    (bench/testbed names it after the namespace: qr-c1, qrc1)."""
    dev = ns.replace("-", "")
    lines = "".join("address replace %s/32 dev %s\n" % (client_address(i),
                                                         dev)
                    for i in range(n))
    subprocess.run(["ip", "-n", ns, "-batch", "-"], input=lines, text=True,
                   check=True, capture_output=True, timeout=60)


# -- measuring ---------------------------------------------------------------

class Sampler(threading.Thread):
    """The bottleneck's utilization every `interval` seconds, measured
    here for every server alike: link tx bytes over its rate, or CPU 0's
    busy share; samples (t, U) with t the end of each interval."""

    def __init__(self, tb, resource, pid, cpu="0", interval=1.0,
                 limit=3600):
        super().__init__(daemon=True)
        self.tb, self.resource, self.cpu = tb, resource, cpu
        self.pid = pid      # a process in the server namespace (httpd)
        self.interval, self.limit = interval, limit
        self.samples, self.halt = [], threading.Event()

    def read(self):
        # No subprocess between the clock and the counter: a late
        # `ip netns exec cat` on a busy CPU 1 read 1.4 for a full link.
        if self.resource == "link":
            return time.time(), qcbench.tx_bytes_of(
                self.pid, self.tb.server_if), None
        busy, total = qcbench.cpu_times(self.cpu)
        return time.time(), busy, total

    def run(self):
        t0 = time.time()
        prev = self.read()
        while not self.halt.wait(self.interval) \
                and time.time() - t0 < self.limit:
            cur = self.read()
            if self.resource == "link":
                u = (cur[1] - prev[1]) * 8 / qcbench.LINK_BITS / (
                    cur[0] - prev[0])
            else:
                u = (cur[1] - prev[1]) / max(1, cur[2] - prev[2])
            self.samples.append((cur[0], u))
            prev = cur

    def stop(self):
        self.halt.set()
        self.join(10)
        return self.samples

    def between(self, t0, t1):
        return [u for t, u in self.samples if t0 < t <= t1]


def httperf_cmd(tb, port, uri, rate, conns, timeout):
    cmd = [qcharness.HTTPERF, "--server", tb.server_addr, "--port",
           str(port), "--uri", uri, "--num-conns", str(conns),
           "--num-calls", "1", "--timeout", str(timeout), "--rate",
           str(rate), "--hog"]
    if qcbench.CLIENT_CPUS:
        cmd = ["taskset", "-c", qcbench.CLIENT_CPUS] + cmd
    return ["ip", "netns", "exec", tb.client_ns[0]] + cmd


def httperf_split(tb, port, uri, rate, conns, timeout):
    """One segment's load from as many httperf processes as it takes for
    none to run out of descriptors: httperf waits on select(), so each
    holds at most HTTPERF_FDS connections open, and a slow server at the
    segment's rate keeps rate * timeout of them.  Their counts summed,
    the raw texts joined."""
    k = max(1, -(-int(rate * timeout) // HTTPERF_FDS))
    reps, why = [None] * k, [None] * k

    def one(j):
        try:
            reps[j] = qcharness.httperf(
                tb.server_addr, port, uri, rate=rate / k,
                num_conns=max(1, conns // k + (j < conns % k)),
                timeout=timeout, netns=tb.client_ns[0],
                cpus=qcbench.CLIENT_CPUS)
        except (subprocess.TimeoutExpired, RuntimeError) as e:
            why[j] = str(e)[-300:]
    threads = [threading.Thread(target=one, args=(j,), daemon=True)
               for j in range(k)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if None in reps:
        raise RuntimeError(next(w for w in why if w) or "httperf failed")
    return reps[0] if k == 1 else qcharness.sum_httperf(reps)


def run_load(tb, port, uri, segments, timeout):
    """segments: (start offset, seconds, rate); each its own httperf
    (httperf_split), started on time whether or not the previous one has
    drained, so load is continuous.  Returns (t0, reports in segment
    order)."""
    reps = [None] * len(segments)
    why = [None] * len(segments)
    t0 = time.time() + 0.2

    def one(i, start, secs, rate):
        time.sleep(max(0.0, t0 + start - time.time()))
        try:
            reps[i] = httperf_split(tb, port, uri, rate,
                                    max(1, int(round(rate * secs))),
                                    timeout)
        except (subprocess.TimeoutExpired, RuntimeError) as e:
            why[i] = str(e)[-300:]      # reps[i] stays None: said below
    threads = [threading.Thread(target=one, args=(i,) + s, daemon=True)
               for i, s in enumerate(segments)]
    for t in threads:
        t.start()
    end = segments[-1][0] + segments[-1][1] + timeout + 90
    for t in threads:
        t.join(max(1, t0 + end - time.time()))
    if None in reps:
        i = reps.index(None)
        raise RuntimeError("httperf segment %d of %d did not finish: %s"
                           % (i, len(reps), why[i] or "still running"))
    return t0, reps


def start_probe(tb, port, uri, rate, seconds, timeout, t0):
    """The timing probe in the client namespace (on the clients' CPU)."""
    cmd = [sys.executable, os.path.abspath(__file__), "probe",
           tb.server_addr, str(port), uri, "%.3f" % rate, "%.3f" % seconds,
           "%.3f" % timeout, "%.3f" % t0]
    if qcbench.CLIENT_CPUS:
        cmd = ["taskset", "-c", qcbench.CLIENT_CPUS] + cmd
    return subprocess.Popen(["ip", "netns", "exec", tb.client_ns[0]] + cmd,
                            stdout=subprocess.PIPE, text=True)


def probe_results(proc, limit):
    """[(send time, status or None, ms)] of a probe."""
    try:
        out, _ = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate(timeout=10)
    rows = []
    for line in out.splitlines():
        t, st, ms = line.split("\t")
        rows.append((float(t), None if st == "-" else int(st), float(ms)))
    return rows


def probe_main(argv):
    """probe HOST PORT URI RATE SECONDS TIMEOUT T0: open-loop GETs, one
    per 1/RATE s from T0 (epoch), each on its own connection; prints
    `send time<TAB>status or -<TAB>ms` per request."""
    host, port, uri = argv[0], int(argv[1]), argv[2]
    rate, seconds, timeout, t0 = (float(x) for x in argv[3:7])
    out, lock = [], threading.Lock()
    req = ("GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n" % uri).encode()

    def one(ts):
        status, start = None, time.time()
        try:
            with socket.create_connection((host, port), timeout) as s:
                s.settimeout(max(0.1, timeout - (time.time() - start)))
                s.sendall(req)
                data = b""
                while time.time() - start < timeout:
                    b = s.recv(65536)
                    if not b:
                        break
                    data += b
                else:
                    data = b""
                parts = data.split(b" ", 2)
                if len(parts) > 1 and parts[0].startswith(b"HTTP/"):
                    status = int(parts[1])
        except (OSError, ValueError):
            status = None
        with lock:
            out.append((ts, status, (time.time() - start) * 1e3))
    threads = []
    for i in range(int(rate * seconds)):
        ts = t0 + i / rate
        time.sleep(max(0.0, ts - time.time()))
        if sum(t.is_alive() for t in threads[-300:]) < 200:
            t = threading.Thread(target=one, args=(ts,), daemon=True)
            t.start()
            threads.append(t)
    for t in threads:
        t.join(timeout + 2)
    with lock:
        for ts, st, ms in sorted(out):
            print("%.3f\t%s\t%.2f" % (ts, "-" if st is None else st, ms))


# -- servers ---------------------------------------------------------------

# Debian's packages, unpacked here when the system lacks them: installing
# libapache2-mod-qos runs a postinst that enables it in the system's
# Apache, which this bench must not touch.
PEER_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "..", "out", ".peer")


def unpacked(package, path):
    """path inside Debian package `package`, unpacked under PEER_DIR
    (apt-get download, dpkg -x: no maintainer script runs)."""
    target = os.path.join(PEER_DIR, path.lstrip("/"))
    if not os.path.exists(target):
        os.makedirs(PEER_DIR, exist_ok=True)
        if subprocess.run(["apt-get", "download", package], cwd=PEER_DIR,
                          capture_output=True).returncode != 0:
            raise RuntimeError("cannot download Debian package %s" % package)
        for deb in os.listdir(PEER_DIR):
            if deb.startswith(package + "_") and deb.endswith(".deb"):
                subprocess.run(["dpkg", "-x", deb, "."], cwd=PEER_DIR,
                               check=True, capture_output=True)
    if not os.path.exists(target):
        raise RuntimeError("%s not found in Debian package %s"
                           % (path, package))
    return target


def pcre_path():
    for p in PCRE:
        if os.path.exists(p):
            return p
    return unpacked("libpcre3", PCRE[1])


def modqos_path():
    p = os.path.join(MODULES, "mod_qos.so")
    if os.path.exists(p):
        return p
    return unpacked("libapache2-mod-qos",
                    "/usr/lib/apache2/modules/mod_qos.so")


def modqos_conf(location, n):
    """mod_qos as its documentation sets a concurrency limit on the
    expensive location, refused requests answered 503."""
    return ("LoadFile %s\nLoadModule qos_module %s\n"
            "QS_LocRequestLimit %s %d\nQS_ErrorResponseCode 503\n"
            % (pcre_path(), modqos_path(), location, n))


_CPU_RESOURCE = []


def cpu_resource():
    """`QosCtlResource cpu 0` when this build accepts it, else `cpu`
    (httpd's affinity mask, CPU 0 here)."""
    if not _CPU_RESOURCE:
        a = qcharness.Apache(extra="QosCtl On\nQosCtlResource cpu 0\n")
        try:
            rc, _ = a.config_test()
        finally:
            a.cleanup()
        _CPU_RESOURCE.append("cpu 0" if rc == 0 else "cpu")
    return _CPU_RESOURCE[0]


def qosctl_model(kind, cal, prior=1.0):
    """The true cost model (link: qcbench.link_model; CPU: the measured
    ms per full reply), scaled by prior for a cold start."""
    if kind.resource == "link":
        base = [float(x) for x in qcbench.link_model().split()[1:]]
    else:
        base = [cal["cost_full"] * 1e3, 0.001, cal["cost_deg"] * 1e3]
    return "QosCtlModel " + " ".join("%.6g" % (x * prior) for x in base)


def server(tb, site, kind, which, cal=None, prior=1.0, qos_n=None,
           keepalive=False, h2=False):
    """A BenchServer of one of ALL_SERVERS for kind (not started):
    pinned is mod_qosctl with QosCtlFixedLevel 1, every reply from the
    lowest tree; logonly the same as qosctl under QosCtl LogOnly.
    keepalive: Debian's KeepAlive settings (else off); h2: HTTP/2
    cleartext too (qcclients.server_options())."""
    conf = (KEEPALIVE_ON if keepalive else KEEPALIVE) + kind.conf
    if which == "plain":
        return qcbench.BenchServer(tb, site, None, conf=conf, http2=h2)
    if which == "modqos":
        return qcbench.BenchServer(tb, site, None, conf=conf + modqos_conf(
            kind.location, qos_n), http2=h2)
    qc = qcbench.qosctl_conf(
        tb, bound=kind.bound, period=1, log="ctl.tsv",
        fixed_level=1 if which == "pinned" else None,
        model=qosctl_model(kind, cal, prior),
        resource=None if kind.resource == "link" else cpu_resource())
    if which == "logonly":
        qc = qc.replace("QosCtl On\n", "QosCtl LogOnly\n", 1)
    return qcbench.BenchServer(tb, site, qc, conf=conf, http2=h2)


def pinned_server(tb, site, kind, log=False, backlog=None):
    """mod_qosctl on the full tree (QosCtlFixedLevel 2): the controller
    measures and estimates, nothing is degraded or refused."""
    conf = KEEPALIVE + kind.conf
    if backlog:
        conf += "ListenBacklog %d\n" % backlog
    return qcbench.BenchServer(tb, site, qcbench.qosctl_conf(
        tb, bound=kind.bound, period=1, fixed_level=2,
        log="ctl.tsv" if log else None,
        resource=None if kind.resource == "link" else cpu_resource()),
        conf=conf)


# -- calibration ---------------------------------------------------------

class ServerCpu:
    """CPU seconds used by a server (httpd, what it forks, kind.pids):
    a private cgroup; without one, CPU 0's busy time from /proc/stat
    (which counts others' load too)."""

    def __init__(self, srv, kind):
        self.acct = qcbench.CpuAccount("qosctl-bench")
        for p in [srv.pid] + kind.pids:
            self.acct.add(p)

    def seconds(self):
        s = self.acct.seconds()
        if s is None:
            s = qcbench.cpu_times("0")[0] / os.sysconf("SC_CLK_TCK")
        return s

    def close(self):
        self.acct.close()


def resource_seconds(tb, srv, cpu=None):
    """The bottleneck's busy seconds so far: the server's CPU seconds
    (cpu: its ServerCpu), else the link's, from the bytes it sent."""
    if cpu:
        return cpu.seconds()
    return qcbench.tx_bytes_of(srv.pid, tb.server_if) * 8 \
        / qcbench.LINK_BITS


def measure_cost(tb, site, kind, tree, rate, seconds, timeout):
    """Resource seconds per 2xx reply of `tree` on plain Apache at a
    light rate: link seconds of the bytes on the wire, or CPU seconds of
    the server (ServerCpu)."""
    srv = qcbench.BenchServer(tb, site, None, tree=tree,
                              conf=KEEPALIVE + kind.conf).start()
    cpu = ServerCpu(srv, kind) if kind.resource == "cpu" else None
    try:
        time.sleep(0.5)
        c0 = resource_seconds(tb, srv, cpu)
        _, (rep,) = run_load(tb, srv.port, kind.uri, [(0, seconds, rate)],
                             timeout)
        used = resource_seconds(tb, srv, cpu) - c0
    finally:
        srv.cleanup()
        if cpu:
            cpu.close()
    if rep["s2xx"] <= 0 or used <= 0:
        raise RuntimeError("calibration of %s %s failed" % (kind.name, tree))
    return used / rep["s2xx"], rep


def sweep_modqos(tb, site, kind, rate, seconds, timeout, ns=QOS_SWEEP):
    """mod_qos's N: the limit whose utilization under `rate` (link:
    median of the last seconds; CPU: the server's own CPU seconds per
    second) is nearest the bound; [(N, U)] kept."""
    points = []
    for n in ns:
        srv = server(tb, site, kind, "modqos", qos_n=n).start()
        s = Sampler(tb, kind.resource, srv.pid)
        cpu = ServerCpu(srv, kind) if kind.resource == "cpu" else None
        p = None
        try:
            s.start()
            t0 = time.time()
            p = subprocess.Popen(httperf_cmd(
                tb, srv.port, kind.uri, rate, int(rate * seconds), timeout),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)
            c1 = cpu.seconds() if cpu else 0
            time.sleep(seconds - 1)
            if cpu:
                # The server's own CPU: others' load must not pick N.
                u = (cpu.seconds() - c1) / (seconds - 1)
            else:
                u = qcmetrics.percentile(s.between(t0 + 1, t0 + seconds
                                                   + 0.5), 50)
        finally:
            s.stop()
            if cpu:
                cpu.close()
            if p and p.poll() is None:
                os.kill(p.pid, signal.SIGTERM)
                p.wait(10)
            srv.cleanup()
        points.append((n, u or 0.0))
        if u is not None and u > kind.bound + 0.05 and len(points) > 1:
            break           # past the bound: larger N only go further
    best = min(points, key=lambda nu: (abs(nu[1] - kind.bound), nu[0]))
    return best[0], points


def calibrate(tb, site, kind, seconds=5.0, sweep_seconds=4.0, timeout=5,
              qos_n=None):
    """Costs of full and degraded replies, capacity (full replies/s at
    U = 1) and mod_qos's N for this kind."""
    if kind.resource == "link":
        full, _ = measure_cost(tb, site, kind, "full", 40, seconds, timeout)
        deg, _ = measure_cost(tb, site, kind, "degraded", 40, seconds,
                              timeout)
    else:
        guess, _ = measure_cost(tb, site, kind, "full", 2,
                                min(3.0, seconds), timeout)
        rate = max(5.0, min(400.0, 0.3 / guess))
        full, _ = measure_cost(tb, site, kind, "full", rate, seconds,
                               timeout)
        deg, _ = measure_cost(tb, site, kind, "degraded", 300, seconds,
                              timeout)
    # Below the noise of others' work on CPU 0 a degraded reply reads
    # as free: count it at least 1% of a full one.
    cal = {"kind": kind.name, "uri": kind.uri, "cost_full": full,
           "cost_deg": min(max(deg, 0.01 * full), full),
           "capacity": 1.0 / full}
    if qos_n:
        cal["qos_n"], cal["qos_sweep"] = qos_n, []
    else:
        cal["qos_n"], cal["qos_sweep"] = sweep_modqos(
            tb, site, kind, 3 * cal["capacity"], sweep_seconds, timeout)
    return cal


# -- one run ---------------------------------------------------------------

LOADS = ("step", "ramp", "cold10", "cold01")


def profile(load, cap, light, over, ramp, times=3.0):
    """(segments, overload window, light window) of a load, in offsets
    from the start: segments (start, seconds, rate).  The overload is
    `times` the capacity (the ramp's top one more)."""
    lo = 0.1 * cap
    if load == "step":
        return ([(0, light, lo), (light, over, times * cap)],
                (light, light + over), (0, light))
    if load == "ramp":
        n = max(2, int(ramp // 2))
        d = ramp / n
        segs = [(0, light, lo)] + [
            (light + i * d, d, cap * (0.5 + (times + 0.5) * i / (n - 1)))
            for i in range(n)]
        first = next(s[0] for s in segs[1:] if s[2] > cap)
        return segs, (first, light + ramp), (0, light)
    return ([(0, over, times * cap), (over, light, lo)], (0, over),
            (over, over + light))


def sum_reports(reps, segs):
    """Summed httperf reports; offered is what the segments scheduled
    (httperf counts no connection it could not open)."""
    keys = ("connections", "replies", "s2xx", "s5xx", "errors",
            "client_timo", "socket_timo", "connrefused", "connreset",
            "fd_unavail")
    out = {k: sum(r[k] for r in reps) for k in keys}
    for k in ("addrunavail", "ftab-full", "other"):
        out[k] = sum(float(n) for r in reps for n in re.findall(
            r"\b%s ([0-9]+)" % k, r.get("raw", "")))
    out["offered"] = sum(max(1, int(round(s[2] * s[1]))) for s in segs)
    return out


def ideal_at_run_costs(bound, cal, segs, u_own, u_med, n_full, n_deg,
                       seconds, scale_all=False):
    """The most full-quality share the bound allowed at the costs the
    run itself measured: a full reply's CPU is the server's own CPU
    seconds (U_own) less the degraded replies' calibrated cost, over
    the full replies; on a link (scale_all) a reply's cost is its bytes
    on the wire, and what the run sent beyond the calibrated costs
    (retransmissions) is shared by every reply alike.  The budget is
    what the bound left beside others' load (U_own + bound - U_med),
    segment by segment (a ramp's segment below capacity serves all full
    and cannot lend the rest of its budget to a later one).  None
    without U_own or full replies."""
    if u_own is None or u_med is None or not n_full or seconds <= 0:
        return None
    deg = cal["cost_deg"]
    if scale_all:
        k = u_own * seconds / (n_full * cal["cost_full"] + n_deg * deg)
        full, deg = k * cal["cost_full"], k * deg
    else:
        full = (u_own * seconds - n_deg * deg) / n_full
    if full <= deg:
        return None
    spare = u_own + bound - u_med
    offered = sum(rate * secs for _, secs, rate in segs)
    allowed = sum(qcmetrics.max_full_share(spare * secs, rate * secs, full,
                                           deg) * rate * secs
                  for _, secs, rate in segs)
    return allowed / offered if offered else None


def settle(us, bound, hold=3):
    """First period from which U stays within bound +- 0.1 (None if it
    never does for `hold` periods)."""
    return qcmetrics.settling_index(us, bound, 0.1 / bound, hold) \
        if us else None


def run_one(tb, site, kind, cal, which, load, light, over, ramp, timeout,
            ctl_copy=None, times=3.0, client="open", copts=None):
    """One scenario on one server: a table row and the U series.
    client: the client model (qcclients.MODELS; open: httperf, as
    always), copts its options (qcclients.run_segments)."""
    cap = cal["capacity"]
    segs, win, lwin = profile(load, cap, light, over, ramp, times)
    prior = {"cold10": 10.0, "cold01": 0.1}.get(load, 1.0)
    # What else keeps CPU 0 busy (a shared machine): read it, not hidden.
    bg = None
    if kind.resource == "cpu":
        b0 = qcbench.cpu_times("0")
        time.sleep(1.0)
        b1 = qcbench.cpu_times("0")
        bg = (b1[0] - b0[0]) / max(1, b1[1] - b0[1])
    srv = server(tb, site, kind, which, cal, prior, cal["qos_n"],
                 **qcclients.server_options(client)).start()
    cpu = ServerCpu(srv, kind) if kind.resource == "cpu" else None
    snaps = {}
    sampler = Sampler(tb, kind.resource, srv.pid)
    try:
        sampler.start()
        if load in ("step", "ramp"):
            time.sleep(1.0)         # cold runs start loading at once
        end = segs[-1][0] + segs[-1][1]
        probe_rate = max(1.0, min(10.0, 0.05 * cap))
        t_probe = time.time() + 0.2
        probe = start_probe(tb, srv.port, kind.uri, probe_rate, end,
                            timeout, t_probe)

        def snap(key, at):
            time.sleep(max(0.0, at - time.time()))
            with contextlib.suppress(Exception):
                snaps["own_" + key] = (time.time(),
                                       resource_seconds(tb, srv, cpu))
            with contextlib.suppress(Exception):
                if which in ("qosctl", "pinned", "logonly"):
                    snaps[key] = srv.counters()
        timers = [threading.Thread(target=snap, args=(k, t_probe + w),
                                   daemon=True)
                  for k, w in (("w0", win[0] + 1), ("w1", win[1]))]
        for t in timers:
            t.start()
        if client == "open":
            t0, reps = run_load(tb, srv.port, kind.uri, segs, timeout)
        else:
            t0, reps = qcclients.run_segments(client, tb, srv.port,
                                              kind.uri, segs, timeout, copts)
        probes = probe_results(probe, end + timeout + 30)
        for t in timers:
            t.join(5)
        samples = sampler.stop()
        rows = srv.ctl_rows() if which in DECIDING else []
        if ctl_copy and which in DECIDING:
            srv.copy_out("ctl.tsv", ctl_copy if which == "qosctl"
                         else ctl_copy.replace(".tsv", "-%s.tsv" % which))
    finally:
        sampler.halt.set()
        srv.cleanup()
        if cpu:
            cpu.close()
    ws, we = t0 + win[0], t0 + win[1]
    own = None
    if "own_w0" in snaps and "own_w1" in snaps:
        (ta, ca), (tb_, cb) = snaps["own_w0"], snaps["own_w1"]
        own = (cb - ca) / max(1e-3, tb_ - ta)
    inside = [i for i, s in enumerate(segs) if win[0] <= s[0] < win[1]]
    if client == "open":
        over_reps = sum_reports([reps[i] for i in inside],
                                [segs[i] for i in inside])
        over_reps.update(model="open", good=over_reps["s2xx"])
    else:
        over_reps = qcclients.sum_metrics([reps[i] for i in inside])
    us = [u for t, u in samples if ws + 1 < t <= we]
    frac = 1.0
    if which in ("qosctl", "pinned", "logonly") and "w0" in snaps \
            and "w1" in snaps:
        n = [snaps["w1"]["tree_responses"][k]
             - snaps["w0"]["tree_responses"][k] for k in (0, 1)]
        frac = n[1] / sum(n) if sum(n) else None
    offered = over_reps["offered"]
    budget = kind.bound * (win[1] - win[0])
    ideal = qcmetrics.max_full_share(budget, offered, cal["cost_full"],
                                     cal["cost_deg"])
    served = [ms for t, st, ms in probes
              if ws <= t < we and st is not None and 200 <= st < 300]
    # The held state apart from the step's transient: the second half.
    held = [ms for t, st, ms in probes
            if (ws + we) / 2 <= t < we and st is not None
            and 200 <= st < 300]
    light_ms = [ms for t, st, ms in probes
                if t0 + lwin[0] + 0.5 <= t < t0 + lwin[1]
                and st is not None and 200 <= st < 300]
    ctl_u = [r["U_measured"] for r in rows if ws < r["time"] <= we + 0.5]
    u_periods = ctl_u if which == "qosctl" \
        else [u for t, u in samples if ws < t <= we + 0.5]
    below, strays = qcmetrics.held_below(u_periods, kind.bound + 0.1)
    row = {"server": which, "qos_n": cal["qos_n"] if which == "modqos"
           else None,
           "offered": offered, "U_bg": bg,
           "U_own": own, "U_med": qcmetrics.percentile(us, 50),
           "U_p95": qcmetrics.percentile(us, 95),
           "errors": over_reps["errors"],
           "err_share": over_reps["errors"] / offered if offered else None,
           "timeouts": over_reps["client_timo"] + over_reps["socket_timo"],
           "resets": over_reps["connreset"],
           "refused": over_reps["connrefused"],
           "other_errors": over_reps["fd_unavail"] + over_reps["addrunavail"]
           + over_reps["ftab-full"] + over_reps["other"],
           "s503": over_reps["s5xx"], "s2xx": over_reps["s2xx"],
           "full_share": None if frac is None or not offered
           else over_reps["s2xx"] * frac / offered,
           "full_ideal": ideal,
           "ideal_run": ideal_at_run_costs(
               kind.bound, cal, [segs[i] for i in inside], own,
               qcmetrics.percentile(us, 50),
               over_reps["s2xx"] * frac if frac is not None else None,
               over_reps["s2xx"] * (1 - frac) if frac is not None else 0,
               win[1] - win[0], kind.resource == "link")
           if which == "qosctl" else None,
           "settle": settle(u_periods, kind.bound),
           "below": below, "strays": strays, "periods": len(u_periods),
           # the basic class's level over the overload, as set (qosctl)
           # or as it would be (logonly)
           "m_med": qcmetrics.percentile(
               [r["m"] for r in rows if ws < r["time"] <= we + 0.5], 50),
           "rt_med_ms": qcmetrics.percentile(served, 50),
           "rt_p95_ms": qcmetrics.percentile(served, 95),
           "rt_p95_held_ms": qcmetrics.percentile(held, 95),
           "rt_p95_light_ms": qcmetrics.percentile(light_ms, 95),
           "probes": len(served), "client": client}
    row.update(qcclients.derived(over_reps, win[1] - win[0]))
    series = [(t - t0, u) for t, u in samples]
    return row, series


if __name__ == "__main__":
    if len(sys.argv) == 9 and sys.argv[1] == "probe":
        probe_main(sys.argv[2:])
    else:
        sys.exit("usage: qcrobust.py probe HOST PORT URI RATE SECONDS "
                 "TIMEOUT T0")
