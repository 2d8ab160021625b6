"""Shared pieces of the bench/ scripts and of their smoke tests.

One place for: where the build and the sample site are, the Apache
configuration of a benchmark server, a server inside the testbed's server
namespace (bench/testbed) with its status page on that namespace's
loopback, offering load from the client namespaces, reading the
controller's QosCtlLog, and tearing everything down on a signal.

Use from a bench script (tests put bench/lib on sys.path the same way):

    sys.path.insert(0, os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "lib"))
    import qcbench
    qcbench.on_signals()
    with qcbench.testbed("qb") as tb:
        srv = qcbench.BenchServer(tb, qcbench.SITE, qcbench.qosctl_conf(
            tb, bound=0.9, log="ctl.tsv")).start()
        try:
            report = srv.offer("/bench/64k.jpg", rate=300, seconds=10)
            rows = srv.ctl_rows()
        finally:
            srv.cleanup()

The build is found as the test harness finds it: QOSCTL_TOP_BUILDDIR
(default <srcdir>/build, where ./dev builds) and QOSCTL_MODULE.  The
harness module is re-exported as qcbench.qcharness.
"""

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

SRCDIR = os.path.abspath(os.path.join(os.path.dirname(
    os.path.abspath(__file__)), "..", ".."))
# qcharness reads these when imported: set them first.
os.environ.setdefault("QOSCTL_TOP_SRCDIR", SRCDIR)
BUILDDIR = os.path.abspath(os.environ.setdefault(
    "QOSCTL_TOP_BUILDDIR", os.path.join(SRCDIR, "build")))
os.environ.setdefault("QOSCTL_MODULE",
                      os.path.join(BUILDDIR, ".libs", "mod_qosctl.so"))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "harness"))
import qcharness  # noqa: E402
import qcreport  # noqa: E402

SITE = os.path.join(BUILDDIR, "content-trees", "site")
TREES = "/degraded /full"
LINK_BITS = 100e6           # the testbed's default tbf rate
CLIENTS = 40                # distinct client addresses (X-Forwarded-For)
CLIENT_NS = 4               # client namespaces they are spread over
# On a 2-core machine: the server (and the kernel work of its replies) on
# CPU 0, the 40 httperf processes, which poll, on CPU 1, so that the load
# generator does not take the server's CPU.  None: no pinning.
SERVER_CPUS, CLIENT_CPUS = ("0", "1") if os.cpu_count() >= 2 else (None,
                                                                    None)

# Debian's mpm_event.conf worker counts, for both servers alike ("plain
# Apache" is Apache as shipped), but all children started up front and
# never reaped: children stopping and starting under overload stall
# plain Apache for seconds, which is not what is measured here.  (More
# workers only queue more replies behind the link: more dead time for
# the loop, more delay for every client.)
MPM = ("StartServers 6\nServerLimit 6\nThreadsPerChild 25\n"
       "MaxRequestWorkers 150\nMinSpareThreads 25\nMaxSpareThreads 150\n"
       "MaxConnectionsPerChild 0\n")


def require_build(site=SITE):
    """Exit with the build commands when the module or the site is
    missing (benchmarks need both)."""
    missing = [p for p in (qcharness.MODULE, os.path.join(site, "full"),
                           os.path.join(site, "degraded"))
               if not os.path.exists(p)]
    if os.geteuid() != 0:
        sys.exit("run as root: the testbed creates network namespaces")
    if missing:
        sys.exit("missing %s\nbuild first: cd %s && make && make sample-site"
                 " (or set QOSCTL_TOP_BUILDDIR)" % (", ".join(missing),
                                                    BUILDDIR))


def make_site(outdir):
    """Build the sample site into outdir (about 6 s); return outdir."""
    subprocess.run([sys.executable, os.path.join(
        SRCDIR, "content-trees", "make-sample-site"), outdir],
        check=True, capture_output=True, timeout=300)
    return outdir


def on_signals():
    """SIGINT/SIGTERM/SIGHUP end our servers and testbeds (via the
    harness) and the load generators we started, by pid, then exit
    through the callers' finally blocks."""
    def stop(signum, frame):
        qcharness.stop_all()
        for pid in qcharness.children_of(os.getpid()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        raise SystemExit(128 + signum)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)


# -- testbed ------------------------------------------------------------------

def netns_run(ns, *cmd):
    """Run a command inside a network namespace; its stdout."""
    return subprocess.run(["ip", "netns", "exec", ns] + list(cmd),
                          check=True, capture_output=True, text=True,
                          timeout=30).stdout


def tune_clients(tb):
    """httperf opens a connection per request, and each client port then
    waits 60 s in TIME_WAIT: the default 28k ports last ~470 conn/s.
    Widen the range to 64k (these namespaces are ours) and spread load
    over several client namespaces (CLIENT_NS), not reuse TIME_WAIT
    ports: a reused port's new SYN meets the overloaded server's old
    socket, still draining to the link, and the connection fails.
    Keep no client TIME_WAIT at all: httperf --hog bind()s ports itself,
    in the same order in every run, and bind() fails on a port in
    TIME_WAIT; with 14,000 of them left by the run before, a 780 req/s
    httperf made 200 failed binds per connection, fell minutes behind
    its schedule and passed the harness's time limit ("httperf segment
    did not finish").  A closed port is free at once, and httperf takes
    it again only after cycling through 64k others."""
    for ns in tb.client_ns:
        tune_client_ns(ns)


def tune_client_ns(ns):
    """One client namespace, as tune_clients says."""
    netns_run(ns, "sysctl", "-q", "-w",
              "net.ipv4.ip_local_port_range=1024 65535",
              "net.ipv4.tcp_tw_reuse=0", "net.ipv4.tcp_max_tw_buckets=0")


@contextlib.contextmanager
def prefix_lock(prefix, wait=1800):
    """Hold /tmp/qosctl-testbed-<prefix>.lock: "bench/testbed up"
    replaces a testbed of the same prefix, so a second run of the same
    script would pull the network from under the first.  Waits (up to
    `wait` seconds) for the other run to finish."""
    path = os.path.join(tempfile.gettempdir(),
                        "qosctl-testbed-%s.lock" % prefix)
    with open(path, "w") as f:
        deadline = time.time() + wait
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.time() > deadline:
                    raise RuntimeError("testbed %s still busy" % prefix)
                if deadline - time.time() > wait - 1:
                    print("testbed %s in use by another run: waiting"
                          % prefix, flush=True)
                time.sleep(1)
        yield


@contextlib.contextmanager
def testbed(prefix, rate="100mbit", clients=CLIENT_NS, burst=None):
    """bench/testbed up ... down, whatever happens in between, one run
    per prefix at a time; clients is the number of client namespaces,
    burst the shaper's (None: the testbed's default)."""
    with prefix_lock(prefix):
        tb = qcharness.Testbed(prefix=prefix, rate=rate, clients=clients,
                               burst=burst)
        try:
            tb.up()
            tune_clients(tb)
            yield tb
        finally:
            tb.cleanup()


def tx_bytes(tb):
    """Bytes sent so far on the server's shaped interface."""
    return int(netns_run(tb.server_ns, "cat", "/sys/class/net/%s/statistics"
                         "/tx_bytes" % tb.server_if))


def tx_bytes_of(pid, interface):
    """tx_bytes() without a subprocess: the interface's transmitted
    bytes as seen from the network namespace of process pid."""
    with open("/proc/%d/net/dev" % pid) as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name.strip() == interface:
                return int(rest.split()[8])
    raise RuntimeError("no interface %s in /proc/%d/net/dev"
                       % (interface, pid))


def tcp_counters(tb):
    """(PassiveOpens, ListenDrops) of the server namespace."""
    out = subprocess.run(
        ["ip", "netns", "exec", tb.server_ns, "sh", "-c",
         "grep ^Tcp: /proc/net/snmp; grep ^TcpExt: /proc/net/netstat"],
        capture_output=True, text=True, timeout=30, check=True).stdout
    lines = out.splitlines()
    tcp = dict(zip(lines[0].split(), lines[1].split()))
    ext = dict(zip(lines[2].split(), lines[3].split()))
    return int(tcp["PassiveOpens"]), int(ext["ListenDrops"])


def drop_ratio(before, after):
    """Tsai et al.'s drop ratio between two tcp_counters(): connection
    attempts the listen queue dropped over all attempts."""
    opens, drops = after[0] - before[0], after[1] - before[1]
    return drops / float(opens + drops) if opens + drops > 0 else 0.0


class CpuAccount:
    """CPU time of some processes and of everything they fork later
    (CGI programs, which mod_cgid reaps unaccounted), from a private
    cpuacct cgroup: unlike /proc/stat, blind to other loads on the CPU.
    seconds() is None where no cgroup can be made."""

    V1 = "/sys/fs/cgroup/cpuacct"

    def __init__(self, name):
        self.path = None
        if os.path.isfile(os.path.join(self.V1, "cpuacct.usage")):
            self.root = self.V1
        elif os.path.isfile("/sys/fs/cgroup/cgroup.controllers"):
            self.root = "/sys/fs/cgroup"
        else:
            return
        path = os.path.join(self.root, "%s-%d" % (name, os.getpid()))
        with contextlib.suppress(OSError):
            os.mkdir(path)
            self.path = path

    def add(self, pid):
        """Move pid and its descendants in."""
        if not self.path:
            return
        todo = [pid]
        for _ in range(10000):
            if not todo:
                break
            p = todo.pop()
            with contextlib.suppress(OSError):
                with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
                    f.write(str(p))
            todo += qcharness.children_of(p)

    def seconds(self):
        if not self.path:
            return None
        if self.root == self.V1:
            with open(os.path.join(self.path, "cpuacct.usage")) as f:
                return int(f.read()) / 1e9
        with open(os.path.join(self.path, "cpu.stat")) as f:
            for line in f:
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
        return None

    def close(self):
        """Move what is left back to the root group; remove ours."""
        if not self.path:
            return
        with contextlib.suppress(OSError):
            with open(os.path.join(self.path, "cgroup.procs")) as f:
                left = f.read().split()
            for p in left:
                with contextlib.suppress(OSError):
                    with open(os.path.join(self.root, "cgroup.procs"),
                              "w") as f:
                        f.write(p)
        with contextlib.suppress(OSError):
            os.rmdir(self.path)
        self.path = None


def cpu_times(cpu, steal=False):
    """(busy, total) jiffies of one CPU so far, from /proc/stat (not
    per namespace): busy is all but idle and iowait; steal: (busy,
    total, steal), the time the hypervisor gave to others, within
    busy."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu%s " % cpu):
                v = [int(x) for x in line.split()[1:9]]
                v += [0] * (8 - len(v))
                busy = sum(v) - v[3] - v[4]
                return (busy, sum(v), v[7]) if steal else (busy, sum(v))
    raise RuntimeError("no cpu%s in /proc/stat" % cpu)


# -- configuration ------------------------------------------------------------

def link_model(bits_per_s=LINK_BITS, request_bytes=600, reject_bytes=700):
    """QosCtlModel for a link: b is the link's time per KB; a and c the
    time on the wire of one reply's headers and TCP control packets and
    of one 503 (bytes are rough; the controller refines them online)."""
    ms_per_byte = 8e3 / bits_per_s
    return "QosCtlModel %.4f %.5f %.4f" % (
        request_bytes * ms_per_byte, 1024 * ms_per_byte,
        reject_bytes * ms_per_byte)


def site_conf(site):
    """content-trees/apache-snapshot.conf for this site: CGI in the full
    tree, the degraded tree's static snapshots served as HTML."""
    with open(os.path.join(SRCDIR, "content-trees",
                           "apache-snapshot.conf")) as f:
        return f.read().replace("/srv/site", site)


def qosctl_conf(tb, bound=None, period=None, gain_margin=None,
                model=None, fixed_level=None, log=None, extra="",
                resource=None):
    """mod_qosctl's directives for a link-bound server on the testbed
    (None leaves the module's default).  log: a QosCtlLog file name,
    relative to the server's private root.  resource: the
    QosCtlResource arguments when not the testbed's link ("cpu")."""
    lines = ["QosCtl On",
             "QosCtlResource " + (resource or "link %s %dM" % (
                 tb.server_if, LINK_BITS / 1e6)),
             model or link_model(),
             "QosCtlContentTrees " + TREES,
             "RemoteIPInternalProxy 10.213.0.0/16"]
    for name, value in (("QosCtlUtilizationBound", bound),
                        ("QosCtlPeriod", period),
                        ("QosCtlGainMargin", gain_margin),
                        ("QosCtlFixedLevel", fixed_level),
                        ("QosCtlLog", log)):
        if value is not None:
            lines.append("%s %s" % (name, value))
    return "\n".join(lines) + "\n" + extra


# Status pages on their own loopback vhost: polls neither count as load
# nor add responses to the measured host's counters.  mod_status's
# /server-status (both servers) counts every reply; /qosctl-status
# (mod_qosctl only) has the controller's state and per-tree counters.
STATUS_VHOST = """
Listen 127.0.0.1:{sport}
<VirtualHost 127.0.0.1:{sport}>
  ServerName status.bench
  <Location /server-status>
    SetHandler server-status
  </Location>
  {qosctl}
</VirtualHost>
"""
QOSCTL_STATUS = """QosCtlExclude /qosctl-status /server-status
  <Location /qosctl-status>
    SetHandler qosctl-status
  </Location>"""


# HTTP/2 beside HTTP/1.1 (BenchServer's http2), for h2load's clients.
H2C = "Protocols h2c http/1.1\n"


class BenchServer(qcharness.Apache):
    """Apache in the testbed's server namespace serving site.

    qosctl: directives from qosctl_conf(), or None for plain Apache
    (module not loaded, DocumentRoot site/<tree>, so that both servers
    answer the same URLs).  conf: more directives for either (another
    module's, KeepAlive).  http2: load mod_http2 and speak HTTP/2
    cleartext too (`Protocols h2c http/1.1`: by prior knowledge or
    Upgrade)."""

    def __init__(self, tb, site, qosctl=None, tree="full", mpm_conf=MPM,
                 cpus=SERVER_CPUS, conf="", http2=False, **kw):
        self.tb = tb
        self.sport = qcharness.free_port()
        plain = qosctl is None
        extra = (site_conf(site) + conf + (qosctl or "")
                 + (H2C if http2 else "")
                 + STATUS_VHOST.format(sport=self.sport, qosctl=""
                                       if plain else QOSCTL_STATUS))
        super().__init__(docroot=os.path.join(site, tree) if plain
                         else site, with_qosctl=not plain, netns=tb.server_ns,
                         listen_addr=tb.server_addr, mpm_conf=mpm_conf,
                         modules=("cgid", "http2") if http2 else ("cgid",),
                         extra=extra, cpus=cpus, **kw)

    def status(self):
        """The status page's JSON (None when it does not answer)."""
        code, _, body = self.get("/qosctl-status?format=json",
                                 port=self.sport, addr="127.0.0.1")
        return json.loads(body) if code == 200 else None

    def counters(self, key_prefix="localhost"):
        """The basic class's counters of the measured host."""
        for v in (self.status() or {}).get("vhosts", []):
            if v["key"].startswith(key_prefix):
                return v["classes"]["basic"]
        raise RuntimeError("no status for host %s" % key_prefix)

    def accesses(self):
        """Replies finished so far, all hosts (mod_status's Total
        Accesses): handed to the kernel, not necessarily received."""
        code, _, body = self.get("/server-status?auto", port=self.sport,
                                 addr="127.0.0.1")
        for line in body.decode(errors="replace").splitlines():
            if code == 200 and line.startswith("Total Accesses:"):
                return int(line.split(":")[1])
        raise RuntimeError("no Total Accesses in /server-status")

    def offer(self, uri, rate, seconds, clients=CLIENTS, timeout=5,
              first_client=0, cpus=CLIENT_CPUS, identities=None):
        """offer() to this server."""
        return offer(self.tb, self.port, uri, rate, seconds, clients,
                     timeout, first_client, cpus, identities)

    def ctl_rows(self, name="ctl.tsv", **kw):
        """read_ctl_log() of the QosCtlLog file name in our root."""
        return read_ctl_log(os.path.join(self.root, name), **kw)

    def copy_out(self, name, dest):
        """Copy a file of our private root (a log) to dest, before
        cleanup() removes the root."""
        shutil.copyfile(os.path.join(self.root, name), dest)
        return dest


def offer(tb, port, uri, rate, seconds, clients=CLIENTS, timeout=5,
          first_client=0, cpus=CLIENT_CPUS, identities=None):
    """rate req/s for seconds from `clients` client addresses, split
    evenly over the testbed's client namespaces (one
    qcharness.httperf_clients each, in parallel): the summed report,
    'runs' holding every httperf process's.  identities: sessions per
    address (httperf_clients's default when None; 1: the address alone,
    as behind a NAT without cookies)."""
    kw = {} if identities is None else {"identities": identities}
    spaces = tb.client_ns[:clients]
    groups = [len(range(i, clients, len(spaces)))
              for i in range(len(spaces))]
    reps = [None] * len(spaces)

    def one(i):
        reps[i] = qcharness.httperf_clients(
            tb.server_addr, port, uri, rate * groups[i] / clients, seconds,
            clients=groups[i], timeout=timeout,
            first_client=first_client + sum(groups[:i]), netns=spaces[i],
            cpus=cpus, **kw)
    threads = [threading.Thread(target=one, args=(i,))
               for i in range(len(spaces))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 400)
    if None in reps:
        raise RuntimeError("a client namespace's load did not finish")
    return merge_reports(reps)


def merge_reports(reps):
    """Sum httperf_clients reports as httperf_clients sums its runs."""
    runs = [r for rep in reps for r in rep["runs"]]
    total = qcharness.sum_httperf(runs)
    total["offered"] = sum(rep["offered"] for rep in reps)
    total["runs"] = runs
    return total


def tc_size(text):
    """True if text is a size or rate as bench/testbed passes it to tc
    (4kb, 256kb, 300mbit): digits and a unit, nothing a shell or tc
    could read otherwise."""
    return text is not None and re.fullmatch(
        r"[0-9]+(b|k|kb|m|mb|kbit|mbit|gbit)?", text) is not None


def read_ctl_log(path, vserver="localhost", cls="basic"):
    """QosCtlLog rows of one host (key prefix) and class, oldest first,
    as dicts; every column but vserver and class is a float."""
    return [r for r in qcreport.read_tsv(path, keep=("vserver", "class"))
            if r["class"] == cls and r["vserver"].startswith(vserver)]
