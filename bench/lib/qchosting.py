"""Hosted sites and stepped load for the bench/ experiments of paper
§7.6-7.8 (isolation, differentiation, excess sharing) and §4.3/§7.2
(model estimation).

    hosts = [Host("be.example"), Host("v1.example", contract(50, 13)[0])]
    streams = [Stream("BE", "be.example", "/bench/32k.jpg", ns=0),
               Stream("V1", "v1.example", "/bench/32k.jpg", ns=1)]
    with qcbench.testbed("qe", clients=len(streams)) as tb:
        rows, totals = run_series(tb, hosts, streams,
                                  [{"BE": 300, "V1": 50}, ...],
                                  qcbench.qosctl_conf(tb), args, "qosctl",
                                  out_dir)

Name-based virtual hosts share the server's address and port; httperf's
--server-name sets the Host header that picks one.  Each stream is a
population of client addresses (X-Forwarded-For, see
qcharness.httperf_clients) in a client namespace of its own, so that
namespace's counters are the stream's alone.

Load is layered, not restarted: when a stream's rate rises at a step, a
new group of httperf processes adds the difference and runs on to the
end (or until the rate falls below it).  Restarting all processes at
every step would leave a gap in the offered load at every step, which
the controller sees and a 2% goal cannot absorb.

Per step, from counters read at its start and end:
  sent       connections the stream's namespace opened (TCP
             ActiveOpens: one per request), i.e. what was offered
  delivered  bytes that namespace received, in full replies (divided
             by the wire bytes of one full reply, measured at light load
             before the series): late and failed replies count only as
             far as they got, degraded ones as the fraction they are
  server     the status page's counters of the stream's host and class:
             arrivals, replies per content tree, 503s, the level m
"""

import contextlib
import os
import shutil
import subprocess
import threading
import time

import qcbench
import qcreport

qcharness = qcbench.qcharness

# The paper's "32 KB" is 32,000 bytes (50 req/s is 12.8 Mbit/s, "just
# within" V1's 13 Mbit/s); the sample site's is 32,768.  Contracts are
# scaled by the ratio so that the same loads are just as much within.
WMAX_SCALE = 32768 / 32000.0

FULL_BYTES = {"/bench/32k.jpg": 32768, "/bench/64k.jpg": 65536,
              "/bench/1k.html": 1024}
# Client numbers from this one on map into PREMIUM_CIDR (client_address).
PREMIUM_FIRST = 1000
PREMIUM_CIDR = "10.99.4.0/24"


class Host:
    """A name-based virtual host; guarantee is "<Rmax> <Wmax>" or None
    (best effort); directives are more mod_qosctl lines for it."""

    def __init__(self, name, guarantee=None, directives=""):
        self.name, self.guarantee, self.directives = (name, guarantee,
                                                      directives)

    def conf(self, addr, port, docroot, qosctl):
        lines = ["<VirtualHost %s:%d>" % (addr, port),
                 "  ServerName " + self.name,
                 '  DocumentRoot "%s"' % docroot]
        if qosctl and self.guarantee:
            lines.append("  QosCtlGuarantee " + self.guarantee)
        if qosctl and self.directives:
            lines += ["  " + d for d in self.directives.splitlines()]
        return "\n".join(lines + ["</VirtualHost>"]) + "\n"


def hosting_server(tb, hosts, qosctl=None, **kw):
    """A BenchServer (not started) whose requests go to hosts, the first
    being the default for an unknown Host; qosctl None gives plain
    Apache with the same hosts over the full tree."""
    srv = qcbench.BenchServer(tb, qcbench.SITE, qosctl, **kw)
    vhosts = "".join(h.conf(tb.server_addr, srv.port, srv.docroot,
                            qosctl is not None) for h in hosts)
    srv.write_conf(srv.extra + vhosts)
    return srv


class Stream:
    """Requests for one URI on one host from `clients` client addresses
    per layer, in client namespace number ns; cls names the class the
    server should put them in."""

    def __init__(self, name, host, uri, clients=10, first_client=0,
                 cls="basic", ns=0):
        self.name, self.host, self.uri = name, host, uri
        self.clients, self.first_client = clients, first_client
        self.cls, self.ns = cls, ns
        self.full_bytes = FULL_BYTES[uri]

    def offer(self, srv, rate, seconds, timeout, layer=0):
        """httperf_clients at rate req/s for seconds: the summed report.
        httperf is given the host's name as the server, so that it sends
        it as Host (resolve_hosts() maps it to the server's address);
        each layer has its own client addresses."""
        clients = max(1, min(self.clients, int(rate)))
        return qcharness.httperf_clients(
            self.host, srv.port, self.uri, rate, seconds, clients=clients,
            timeout=timeout, first_client=self.first_client
            + layer * self.clients, netns=srv.tb.client_ns[self.ns])


@contextlib.contextmanager
def resolve_hosts(tb, hosts):
    """Within the block, the hosts' names resolve to the server's address
    in every client namespace: ip netns exec mounts /etc/netns/<ns>/hosts
    over /etc/hosts.  The files are ours and removed after."""
    made = []
    try:
        for ns in tb.client_ns:
            d = os.path.join("/etc/netns", ns)
            os.makedirs(d, exist_ok=True)
            made.append(d)
            with open(os.path.join(d, "hosts"), "w") as f:
                f.write("127.0.0.1 localhost\n%s %s\n" % (
                    tb.server_addr, " ".join(h.name for h in hosts)))
        yield
    finally:
        for d in made:
            with contextlib.suppress(OSError):
                os.remove(os.path.join(d, "hosts"))
                os.rmdir(d)


def _ancestry(pid):
    """pid and its ancestors' pids."""
    out = []
    while pid and pid > 1 and len(out) < 64:
        out.append(pid)
        pid = qcbench.qcharness.parent_pid(pid)
    return out


def foreign_httperf():
    """Pids of httperf processes that we did not start."""
    me, out = os.getpid(), []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/comm" % pid) as f:
                if f.read().strip() != "httperf":
                    continue
        except OSError:
            continue
        if me not in _ancestry(int(pid)):
            out.append(int(pid))
    return out


def foreign_netns(own="qe-"):
    """Network namespaces of other testbeds (benchmarks, tests)."""
    p = subprocess.run(["ip", "netns", "list"], capture_output=True,
                       text=True, timeout=30)
    return [l.split()[0] for l in p.stdout.splitlines()
            if l.strip() and not l.startswith(own)]


def cpu_busy(seconds=1.0):
    """Share of all CPUs' time spent busy over the next seconds."""
    def read():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
        return v[3] + v[4], sum(v)
    idle0, total0 = read()
    time.sleep(seconds)
    idle1, total1 = read()
    return 1.0 - (idle1 - idle0) / max(1, total1 - total0)


def foreign_load():
    """Something else is loading the machine: another benchmark's httperf
    or another testbed's namespaces (a description, or None)."""
    pids, spaces = foreign_httperf(), foreign_netns()
    if pids or spaces:
        return "%d httperf, namespaces %s" % (len(pids),
                                              " ".join(spaces) or "-")
    return None


# Longest wait for another benchmark to finish (seconds).
WAIT_LIMIT = float(os.environ.get("QOSCTL_BENCH_WAIT", "600"))


def wait_quiet(limit=None, quiet_for=10.0, log=print):
    """Wait, at most limit seconds, until nothing else (foreign_load(), or
    over a quarter of the CPUs busy) has loaded the machine for quiet_for
    seconds: on two cores, two benchmarks at once measure each other.
    Returns the seconds waited, and says so when it gave up.  limit
    defaults to $QOSCTL_BENCH_WAIT, else 600 s."""
    limit = WAIT_LIMIT if limit is None else limit
    t0 = last_busy = time.time()
    said = False
    while time.time() - t0 < limit:
        what = foreign_load()
        if what is not None:
            time.sleep(1.0)
        if what is not None or cpu_busy(1.0) > 0.25:
            last_busy = time.time()
            if not said:
                log("waiting for the machine to be quiet (%s)..."
                    % (what or "CPU busy"))
                said = True
        elif time.time() - last_busy >= quiet_for or (
                not said and time.time() - t0 >= 3.0):
            break
    if foreign_load():
        log("NOTE: gave up waiting (%s): results may be perturbed"
            % foreign_load())
    return time.time() - t0


def _start(fn, *args):
    """fn(*args) in a thread; the thread's .result holds its value."""
    t = threading.Thread(target=lambda: setattr(t, "result", fn(*args)),
                         daemon=True)
    t.start()
    return t


def _ns_counters_cmd(tb, streams):
    """One shell command printing, per stream, its client namespace's
    received bytes and TCP ActiveOpens (connections it opened: one per
    request), then the server's sent bytes.  One command, so that all
    are read within a few milliseconds of each other."""
    parts = []
    for s in streams:
        ns = tb.client_ns[s.ns]
        # bench/testbed names the interface of namespace P-cN "PcN".
        parts.append("ip netns exec %s sh -c 'cat /sys/class/net/%s/"
                     "statistics/rx_bytes; grep ^Tcp: /proc/net/snmp'"
                     % (ns, ns.replace("-", "")))
    parts.append("ip netns exec %s sh -c 'cat /sys/class/net/%s/statistics"
                 "/tx_bytes; grep ^TcpExt: /proc/net/netstat'"
                 % (tb.server_ns, tb.server_if))
    return "; ".join(parts)


# The server's TCP counters kept (its accept queue overflowing shows
# in the first two).
SERVER_TCP = ("ListenOverflows", "ListenDrops", "TCPTimeouts")


def read_counters(tb, streams):
    """(time, {stream: (rx bytes, active opens)}, server tx bytes,
    {SERVER_TCP counter: value})."""
    t0 = time.time()
    out = subprocess.run(["sh", "-c", _ns_counters_cmd(tb, streams)],
                         capture_output=True, text=True, timeout=30,
                         check=True).stdout.split("\n")
    t = (t0 + time.time()) / 2
    per, i = {}, 0
    for s in streams:
        head, vals = out[i + 1].split(), out[i + 2].split()
        per[s.name] = (int(out[i]), int(vals[head.index("ActiveOpens")]))
        i += 3
    head, vals = out[i + 1].split(), out[i + 2].split()
    tcp = {k: int(vals[head.index(k)]) for k in SERVER_TCP}
    return t, per, int(out[i]), tcp


def sample(srv, streams):
    """Now: the counters of read_counters(), the status page (None for
    plain Apache) and what else loads the machine (foreign_load())."""
    t, per, tx, tcp = read_counters(srv.tb, streams)
    return {"t": t, "rx": {n: v[0] for n, v in per.items()},
            "opens": {n: v[1] for n, v in per.items()}, "tx": tx,
            "tcp": tcp,
            "status": srv.status() if srv.with_qosctl else None,
            "foreign": foreign_load()}


def calibrate(srv, streams, rate=15, seconds=2.0):
    """Wire bytes a stream's namespace receives per full-quality reply,
    measured at light load (the server idle, every host at its top
    tree): all streams at once, each from its own namespace."""
    s0 = sample(srv, streams)
    runs = {s.name: _start(s.offer, srv, rate, seconds, 5.0, 99)
            for s in streams}
    for t in runs.values():
        t.join(seconds + 60)
    s1 = sample(srv, streams)
    out = {}
    for s in streams:
        rep = getattr(runs[s.name], "result", None)
        if not rep or rep["s2xx"] == 0 or rep["errors"]:
            raise RuntimeError("calibration of %s failed: %s" % (s.name, rep))
        out[s.name] = (s1["rx"][s.name] - s0["rx"][s.name]) / rep["s2xx"]
    return out


def plan_layers(rates, name):
    """Layers of stream name's load: [start step, end step, req/s] such
    that the layers active in step k add up to rates[k][name].  A rise
    adds a layer; a fall ends the newest layers first."""
    stack, done = [], []
    for k, step in enumerate(rates):
        want, have = step.get(name, 0), sum(l[2] for l in stack)
        while stack and have > want + 1e-9:
            layer = stack.pop()
            layer[1] = k
            have -= layer[2]
            done.append(layer)
        if want > have + 1e-9:
            stack.append([k, None, want - have])
    for layer in stack:
        layer[1] = len(rates)
    return sorted(done + stack)


def run_steps(srv, streams, rates, seconds, timeout=5.0, log=print):
    """Offer rates[k] ({stream name: req/s}) during step k, back to back;
    seconds is one length for all steps or a list of one per step.
    Returns one dict per step: rates, seconds (measured), s0 and s1 (its
    sample() at start and end) and layers ({name: reports of the httperf
    runs active in the step; each run spans its whole layer})."""
    if not isinstance(seconds, (list, tuple)):
        seconds = [seconds] * len(rates)
    plan = [(s, n, layer) for s in streams
            for n, layer in enumerate(plan_layers(rates, s.name))]
    samples, running, end = [sample(srv, streams)], [], time.time()
    for k, step_rates in enumerate(rates):
        for s, n, (start, stop, rate) in plan:
            if start == k:
                running.append((s, start, stop, _start(
                    s.offer, srv, rate, sum(seconds[start:stop]), timeout,
                    n)))
        end += seconds[k]
        time.sleep(max(0.0, end - time.time()))
        samples.append(sample(srv, streams))
        log("  step %d/%d (%g s): %s" % (k + 1, len(rates), seconds[k],
                                         ", ".join("%s %g req/s" % kv for kv
                                                   in sorted(
                                                       step_rates.items()))))
    limit = time.time() + timeout + 120
    for s, start, stop, t in running:
        t.join(max(1.0, limit - time.time()))
        if not hasattr(t, "result"):
            raise RuntimeError("load of %s did not finish" % s.name)
    return [{"rates": dict(r), "s0": samples[k], "s1": samples[k + 1],
             "seconds": samples[k + 1]["t"] - samples[k]["t"],
             "layers": {s.name: [t.result for s2, a, b, t in running
                                 if s2 is s and a <= k < b]
                        for s in streams}}
            for k, r in enumerate(rates)]


def _counters(sample_, host, cls):
    for v in (sample_["status"] or {}).get("vhosts", []):
        if v["key"].split(":")[0] == host:
            return v["classes"][cls]
    return None


def server_view(step, stream):
    """The server's counters of the stream's host and class over a step
    (None for plain Apache): arrivals, body Mbit/s, share of arrivals
    answered from the top tree, 503s, and at the step's end the level m
    applied, its own loop's m_own and the best-effort loop's m_be."""
    c0 = _counters(step["s0"], stream.host, stream.cls)
    c1 = _counters(step["s1"], stream.host, stream.cls)
    if c0 is None or c1 is None:
        return {"srv_arrived": None, "srv_mbps": None, "full_ratio": None,
                "srv_rejected": None, "m": None, "m_own": None,
                "m_be": None}
    arrived = c1["arrived"] - c0["arrived"]
    full = c1["tree_responses"][-1] - c0["tree_responses"][-1]
    return {"srv_arrived": arrived,
            "srv_mbps": (c1["bytes"] - c0["bytes"]) * 8 / step["seconds"]
            / 1e6,
            "full_ratio": full / arrived if arrived else None,
            "srv_rejected": c1["rejected"] - c0["rejected"], "m": c1["m"],
            # Its own loop's output and the best-effort loop's (a
            # fraction of the range): m is the higher (§5.3).
            "m_own": c1.get("m_own"),
            "m_be": step["s1"]["status"]["best_effort"]["m"]}


def ratio(num, den):
    """num / den, None when den is 0 or either is missing."""
    return num / den if num is not None and den else None


def step_rows(steps, streams, wire, **fixed):
    """One row per step and stream: the nominal rate; requests its
    clients opened in the step (sent), offered and delivered Mbit/s
    (see the module's doc; wire from calibrate()) and their ratio;
    server_view(); every stream's rate as rate_<name>, their sum
    total_rate, and the fixed columns given."""
    rows = []
    for k, step in enumerate(steps):
        rates = {"rate_" + s.name: step["rates"].get(s.name, 0)
                 for s in streams}
        s0, s1, dt = step["s0"], step["s1"], step["seconds"]
        for s in streams:
            sent = s1["opens"][s.name] - s0["opens"][s.name]
            replies = (s1["rx"][s.name] - s0["rx"][s.name]) / wire[s.name]
            row = dict(fixed, step=k, stream=s.name, host=s.host, cls=s.cls,
                       total_rate=sum(rates.values()), sent=sent,
                       rate=step["rates"].get(s.name, 0), **rates)
            # Offered: what the clients actually sent in the step, at
            # full quality; delivered: what arrived, in full replies.
            row["offered_mbps"] = sent * s.full_bytes * 8 / dt / 1e6
            row["delivered_mbps"] = replies * s.full_bytes * 8 / dt / 1e6
            row["delivered_ratio"] = ratio(replies, sent)
            row["link_util"] = (s1["tx"] - s0["tx"]) * 8 / dt \
                / qcbench.LINK_BITS
            row["foreign"] = s0["foreign"] or s1["foreign"]
            row["listen_drops"] = (s1["tcp"]["ListenDrops"]
                                   - s0["tcp"]["ListenDrops"])
            row.update(server_view(step, s))
            row["undegraded"] = undegraded(row)
            rows.append(row)
    return rows


def undegraded(row):
    """Share of the offered bandwidth delivered at full quality in the
    step: the lower of delivered / offered (late, lost and degraded
    replies count only as far as their bytes got) and, where the server
    counts it, replies from the top tree / arrivals."""
    vals = [v for v in (row["delivered_ratio"], row["full_ratio"])
            if v is not None]
    return min(vals) if vals else None


def loaded(rows, series, names):
    """Rows of the named streams with load, in one series."""
    return [r for r in rows if r["series"] == series
            and r["stream"] in names and r["rate"] > 0]


def worst(rows, stream, col):
    """The smallest value of col among the stream's rows (None if none)."""
    vals = [r[col] for r in rows if r["stream"] == stream
            and r[col] is not None]
    return min(vals) if vals else None


# A 503's body is Apache's short error page: small next to a reply, but
# subtracted so that rejected requests do not pass for degraded ones.
ERROR_BODY = 400


def degraded_bytes(uri):
    """Size of the URI's file in the sample site's degraded tree (the full
    one where the degraded tree has none)."""
    for tree in ("degraded", "full"):
        path = os.path.join(qcbench.SITE, tree, uri.lstrip("/"))
        if os.path.exists(path):
            return os.path.getsize(path)
    raise FileNotFoundError(uri)


def client_totals(steps, stream):
    """What the stream's clients saw over a whole series (every layer
    once): requests offered, replies, errors, 503s, the share of 2xx
    bodies at full quality (from their mean size) and the slowest
    layer's median connection time (ms)."""
    seen, reps = set(), []
    for step in steps:
        for rep in step["layers"][stream.name]:
            if id(rep) not in seen:
                seen.add(id(rep))
                reps.append(rep)
    out = {k: sum(r[k] for r in reps) for k in ("offered", "replies",
                                                "errors", "s5xx", "s2xx")}
    body = sum(r["replies"] * r["reply_content"] for rep in reps
               for r in rep["runs"])
    out["full_share"] = None
    if out["s2xx"]:
        lo, hi = degraded_bytes(stream.uri), stream.full_bytes
        mean = (body - out["s5xx"] * ERROR_BODY) / out["s2xx"]
        out["full_share"] = (min(1.0, max(0.0, (mean - lo) / (hi - lo)))
                             if hi > lo else 1.0)
    out["conn_time_median"] = max((r["conn_time_median"] for r in reps),
                                  default=None)
    return out


def wide(rows, key, columns, prefix=lambda r: r["stream"]):
    """One row per value of key, holding every row's columns as
    <prefix(row)>_<column> (for gnuplot: one curve per column)."""
    out = {}
    for r in rows:
        w = out.setdefault(r[key], {key: r[key]})
        for c in columns:
            w["%s_%s" % (prefix(r), c)] = r.get(c)
    return [out[k] for k in sorted(out)]


def plot_tsv(path, rows, x, columns, series_key="series"):
    """A wide TSV for plots: one line per x, with <series>_<stream>_<col>
    columns.  Returns the path."""
    data = wide(rows, x, columns,
                prefix=lambda r: "%s_%s" % (r[series_key], r["stream"]))
    cols = [x] + sorted({k for r in data for k in r} - {x})
    return qcreport.write_tsv(path, cols, data)


def plot_bandwidth(png, title, tsv, xcol, xlabel, panels, titles=(),
                   size="900,900", extra="",
                   key="inside right center box opaque"):
    """Mbit/s against xcol of a wide TSV, one panel per list of curves
    (column, title, style), style e.g. 'lp pt 7 lc 1'."""
    script = qcreport.plot_header(png, "" if len(panels) > 1 else title,
                                  size)
    if len(panels) > 1:
        script += "set multiplot layout %d,1 title '%s'\n" % (len(panels),
                                                              title)
    script += ("set xlabel '%s'\nset ylabel 'Mbit/s'\nset key %s\n"
               "set yrange [0:*]\n%s" % (xlabel, key, extra))
    for i, curves in enumerate(panels):
        if len(panels) > 1:
            script += "set title '%s'\n" % (titles[i] if i < len(titles)
                                             else "")
        script += "plot " + ", \\\n  ".join(
            "'%s' u '%s':'%s' w %s lw 2 t '%s'" % (tsv, xcol, col, style, t)
            for col, t, style in curves) + "\n"
    if len(panels) > 1:
        script += "unset multiplot\n"
    return png if qcreport.gnuplot(script) else None


def contract(rmax, paper_mbit):
    """QosCtlGuarantee arguments for the paper's (Rmax, Wmax Mbit/s),
    Wmax scaled by WMAX_SCALE; and that Wmax in Mbit/s."""
    wmax = paper_mbit * WMAX_SCALE
    return "%g %.2fMbit" % (rmax, wmax), round(wmax, 2)


def add_step_args(p, seconds=10.0, warmup=6.0, period=1.0):
    """The options every stepped experiment takes."""
    p.add_argument("--seconds", type=float, default=seconds,
                   help="seconds per load step (default %g)" % seconds)
    p.add_argument("--warmup", type=float, default=warmup,
                   help="unmeasured seconds of the first step's load first "
                   "(default %g)" % warmup)
    p.add_argument("--timeout", type=float, default=5.0,
                   help="httperf --timeout: a slower reply is an error")
    p.add_argument("--period", type=float, default=period,
                   help="QosCtlPeriod (default %g s)" % period)
    p.add_argument("--quick", action="store_true",
                   help="fewer and shorter steps")


def series_once(tb, hosts, streams, rates, qosctl, args, label, out):
    """One server (plain Apache when qosctl is None): calibration, a
    warm-up at rates[0], then every step of rates; its controller log is
    kept as out/ctl-<label>.tsv.  Returns run_steps()'s steps and the
    calibration."""
    srv = hosting_server(tb, hosts, qosctl).start()
    with resolve_hosts(tb, hosts):
        try:
            print("%s:" % label, flush=True)
            wire = calibrate(srv, streams)
            steps = run_steps(srv, streams, [rates[0]] + list(rates),
                              [args.warmup] + [args.seconds] * len(rates),
                              args.timeout)[1:]
        finally:
            keep_logs(srv, out, label)
            srv.cleanup()
    return steps, wire


def keep_logs(srv, out, label):
    """The controller's log (ctl-<label>.tsv) and httpd's error log
    (error-<label>.log) into out: the evidence behind the numbers."""
    for src, name in (("ctl.tsv", "ctl-%s.tsv"), ("error.log",
                                                  "error-%s.log")):
        path = os.path.join(srv.root, src)
        if os.path.exists(path):
            shutil.copy(path, os.path.join(out, name % label))


def run_series(tb, hosts, streams, rates, qosctl, args, label, out,
               retries=1):
    """series_once(), run again (retries times, once the machine is
    quiet) when another benchmark's httperf ran during it.  Returns
    (step_rows() tagged series=label, {stream name: client_totals()})."""
    for attempt in range(retries + 1):
        wait_quiet()
        steps, wire = series_once(tb, hosts, streams, rates, qosctl, args,
                                  label, out)
        rows = step_rows(steps, streams, wire, series=label)
        if not any(r["foreign"] for r in rows) or attempt == retries:
            break
        print("another benchmark or test ran meanwhile: %s again" % label)
    totals = {s.name: client_totals(steps, s) for s in streams}
    return rows, totals


def perturbation_note(rows):
    """A warning when another benchmark or test ran during a measured
    step (None otherwise)."""
    bad = sorted({r["series"] for r in rows if r.get("foreign")})
    if not bad:
        return None
    what = sorted({r["foreign"] for r in rows if r.get("foreign")})
    return ("NOTE: another benchmark or test ran during series %s (%s): "
            "those numbers are perturbed (two cores shared)"
            % (", ".join(bad), "; ".join(what)))
