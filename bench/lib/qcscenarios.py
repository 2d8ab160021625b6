"""Pieces of bench/scenarios: a random scenario of qosctl-scenario
(bench/scenario/qc_scenario.h) mapped onto the testbed, run under plain
Apache, the lowest tree pinned and mod_qosctl, and judged by the
simulator's invariants (tests/sim/sim_scenarios.c).

    kind_of      the scenario's kind as a qcrobust.Kind (cpu-static:
                 the 64 KB photo served from CPU 0 over an unshaped link)
    timeline     the shape as whole-second segments (start, seconds,
                 multiplier; -1: light), a ramp in five steps
    plan_pop     a population's tool and its settings per segment
    run_server   one server over the whole timeline: every population
                 in its own threads, the background job, the status
                 page's per-host, per-class tree counts at the window's
                 edges
    judge        the invariants over the three (four) runs
"""

import contextlib
import json
import math
import os
import subprocess
import sys
import threading
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qcbench  # noqa: E402
import qcclients  # noqa: E402
import qcrobust  # noqa: E402

qcharness = qcbench.qcharness

# The simulator's goals (tests/sim/sim_scenarios.c).
GOOD_MIN = 0.85
REFUSE_MAX = 0.001
FULL_MIN = 0.98
ALONE_MIN = 0.90
MIXED_MAX = 0.01
ERRORS_SLACK = 0.001
INVARIANTS = ("goodput", "refusals", "guarantee", "premium", "mixing",
              "errors")

# What one client process on the clients' CPU can do; beyond, the
# population is capped and the mapping says so.
OPEN_RATE_MAX = 3000.0      # httperf connections/s, all its processes
WRK_CONNS_MAX = 1000        # wrk connections of one population
H2_CONNS_MAX = 200          # h2load connections of one population
BROWSERS_MAX = 400          # qchttp.py's concurrent browsers
OBJECTS_BYTES = 65536       # Wmax per request of a guarantee
# httperf polls without pause: niced, it leaves the clients' CPU to the
# other populations' tools (wrk, h2load, qchttp.py) that wait on epoll.
HTTPERF_NICE = 10
HOSTS = ("h0.example", "h1.example", "h2.example")
RAMP_STEPS = 5
WINDOW_SLACK = 1.0          # s past the window's start, as the simulator


def kind_of(site, name, fpm=None):
    """(qcrobust.Kind, what was done instead when the kind is not on
    this machine, or None)."""
    avail = qcrobust.kinds(site, fpm)
    if name == "link":
        return avail["link/static"], None
    if name == "cgi":
        return avail["cpu/cgi"], None
    if name == "php":
        if "cpu/php" in avail and fpm:
            return avail["cpu/php"], None
        return avail["cpu/cgi"], "php: no php-fpm8.2, ran the CGI page"
    k = qcrobust.Kind("cpu", "static", "/bench/64k.jpg", "/bench")
    return k, None


def timeline(sc, scale=1.0):
    """[(start, seconds, multiplier)], whole seconds; multiplier -1 is
    the light load (each population light / npops, as the simulator);
    and the measured window's start (the load's arrival)."""
    T = max(2, int(round(sc["duration"] * scale)))
    tl = int(round(sc["t_load"] * scale))
    te = int(round(sc["t_end"] * scale))
    if sc["shape"] == "cold" or tl <= 0:
        return [(0, T, 1.0)], 0
    tl = min(max(1, tl), T - 1)
    te = min(max(tl + 1, te), T)
    segs = [(0, tl, -1.0)]
    if sc["shape"] == "flash":
        segs.append((tl, te - tl, 1.0))
        if T > te:
            segs.append((te, T - te, -1.0))
    elif sc["shape"] == "ramp":
        span = max(RAMP_STEPS, int(round(0.5 * (T - tl))))
        d = span // RAMP_STEPS
        for i in range(RAMP_STEPS):
            mid = (i + 0.5) * d
            segs.append((tl + i * d, d, min(1.0, 0.25 + 0.75 * mid / span)))
        rest = tl + RAMP_STEPS * d
        if T > rest:
            segs.append((rest, T - rest, 1.0))
    else:
        segs.append((tl, T - tl, 1.0))
    return segs, tl


def light_share(sc):
    return sc["light"] / max(1, len(sc["pops"]))


def plan_pop(sc, pop, cap, seg_mults):
    """Per segment, what the population's tool is given: {'rate': req/s}
    (open, retry, h2: h2 also 'conns'), {'conns', 'think_ms'} (closed,
    think, keepalive) or {'browsers', 'think'} (browser); and notes of
    what the testbed could not do as the scenario says."""
    model, notes = pop["model"], []
    light = light_share(sc)
    load = pop["load"]
    out = []
    for mult in seg_mults:
        if model in ("open", "retry", "h2"):
            share = light if mult < 0 else load * mult
            rate = max(0.5, share * cap)
            if rate > OPEN_RATE_MAX:
                notes.append("rate %.0f/s capped at %.0f" % (rate,
                                                             OPEN_RATE_MAX))
                rate = OPEN_RATE_MAX
            p = {"rate": rate}
            if model == "h2":
                want = pop["clients"]
                if mult < 0:
                    want = math.ceil(want * min(1.0, light / load))
                else:
                    want = math.ceil(want * mult)
                if want > H2_CONNS_MAX:
                    notes.append("h2 connections %d capped at %d"
                                 % (want, H2_CONNS_MAX))
                p["conns"] = max(1, min(H2_CONNS_MAX, want))
            out.append(p)
            continue
        want = pop["clients"]
        if mult < 0:
            want = 1 if model == "closed" else math.ceil(
                want * min(1.0, light / load))
        else:
            want = math.ceil(want * mult)
        want = max(1, want)
        if model == "browser":
            if want > BROWSERS_MAX:
                notes.append("browsers %d capped at %d" % (want,
                                                           BROWSERS_MAX))
            out.append({"browsers": min(want, BROWSERS_MAX),
                        "think": max(0.001, pop["think"])})
        else:
            if want > WRK_CONNS_MAX:
                notes.append("connections %d capped at %d"
                             % (want, WRK_CONNS_MAX))
            out.append({"conns": min(want, WRK_CONNS_MAX),
                        "think_ms": 1e3 * pop["think"]})
    return out, sorted(set(notes))


# -- clients -----------------------------------------------------------------

def ns_view(tb, i):
    """A testbed whose first client namespace is tb's i-th: qcclients'
    models run in client_ns[0]."""
    return types.SimpleNamespace(server_addr=tb.server_addr,
                                 server_ns=tb.server_ns,
                                 server_if=tb.server_if,
                                 client_ns=[tb.client_ns[i]])


def open_segment(tbx, port, uri, rate, secs, timeout):
    """httperf at rate for secs, split over processes as
    qcrobust.httperf_split does (one holds at most HTTPERF_FDS
    connections), niced; normalize()'s dict."""
    n = max(1, int(round(rate * secs)))
    k = max(1, -(-int(rate * timeout) // qcrobust.HTTPERF_FDS))
    reps, why = [None] * k, [None] * k

    def one(j):
        try:
            reps[j] = qcharness.httperf(
                tbx.server_addr, port, uri, rate=rate / k,
                num_conns=max(1, n // k + (j < n % k)), timeout=timeout,
                netns=tbx.client_ns[0], cpus=qcbench.CLIENT_CPUS,
                nice=HTTPERF_NICE)
        except (subprocess.TimeoutExpired, RuntimeError) as e:
            why[j] = str(e)[-300:]
    ts = [threading.Thread(target=one, args=(j,), daemon=True)
          for j in range(k)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if None in reps:
        raise RuntimeError(next(w for w in why if w) or "httperf failed")
    rep = reps[0] if k == 1 else qcharness.sum_httperf(reps)
    return qcclients.normalize("open", rep, n)


def wrk_segment(tbx, port, uri, conns, think_ms, secs, timeout, close):
    """wrk with conns closed-loop connections thinking think_ms after
    each reply (qcwrk.lua); close: each request on a new connection
    (Connection: close, the scenario's think model)."""
    argv = [qcclients.WRK, "-t", str(min(2, conns)), "-c", str(conns),
            "-d", "%ds" % max(1, int(round(secs))), "--timeout",
            "%ds" % max(1, int(round(timeout))), "-s", qcclients.WRK_LUA]
    if close:
        argv += ["-H", "Connection: close"]
    out = qcclients.run_client(tbx, argv + [qcclients.url(tbx, port, uri)],
                               secs + timeout + 60,
                               env={"QC_THINK_MS": "%.3f" % think_ms})
    raw = qcclients.parse_wrk(out)
    raw["conns"] = conns
    return qcclients.normalize("keepalive", raw)


def run_segment(tbx, port, uri, pop, p, secs, timeout, pages, seed):
    model = pop["model"]
    if model == "open":
        return open_segment(tbx, port, uri, p["rate"], secs, timeout)
    if model == "retry":
        return qcclients.retry(tbx, port, uri, p["rate"], secs, timeout,
                               retries=3)
    if model == "h2":
        return qcclients.h2(tbx, port, uri, p["rate"], secs, timeout,
                            conns=p["conns"], streams=10)
    if model == "browser":
        return qcclients.browser(tbx, port, uri, 0.0, secs, timeout,
                                 pages=pages, browsers=p["browsers"],
                                 think=p["think"], seed=seed)
    return wrk_segment(tbx, port, uri, p["conns"], p["think_ms"], secs,
                       timeout, close=model == "think")


def browser_pages(site, uri, objects):
    """The page and its objects: the kind's request, objects times over
    (the simulator costs every object as the page); each reply's tree
    from its size, or a program's from its ETag."""
    return {"page": uri, "objects": [uri] * objects,
            "sizes": {uri: qcclients.tree_sizes(site, uri)}}


# -- the background job -------------------------------------------------------

BUSY = ("import time,sys\nd=float(sys.argv[1]);e=float(sys.argv[2])\n"
        "while time.time()<e:\n t=time.time()\n"
        " while time.time()-t<d*0.01: pass\n time.sleep((1-d)*0.01)\n")
UDP = ("import socket,time,sys\nbps=float(sys.argv[2]);e=float(sys.argv[3])"
       "\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\nb=b'x'*1400\n"
       "t0=time.time();n=0\nwhile time.time()<e:\n"
       " due=int((time.time()-t0)*bps/8/1428)\n"
       " while n<due:\n  s.sendto(b,(sys.argv[1],9));n+=1\n"
       " time.sleep(0.005)\n")


def background_job(tb, kind, share, end):
    """The scenario's job beside the server until `end` (epoch): on a
    CPU a busy loop on the server's CPU for `share` of each 10 ms; on
    the link a UDP stream of share x the link's rate from the server's
    namespace to the client's (the bytes cross the shaped link; the
    controller's sensor counts them as it would a backup's).  Popen."""
    if kind.resource == "cpu":
        cmd = ["taskset", "-c", qcbench.SERVER_CPUS or "0", sys.executable,
               "-c", BUSY, "%.3f" % share, "%.3f" % end]
    else:
        cmd = ["ip", "netns", "exec", tb.server_ns] + (
            ["taskset", "-c", qcbench.CLIENT_CPUS]
            if qcbench.CLIENT_CPUS else []) + [
            sys.executable, "-c", UDP, qcrobust.CLIENT_ADDR,
            "%.0f" % (share * qcbench.LINK_BITS), "%.3f" % end]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


# -- servers ------------------------------------------------------------------

def premium_cidr(tb):
    """The second client namespace's /24: premium populations run there
    on its own address (mod_remoteip leaves an address without a
    forwarding header as it is)."""
    out = subprocess.run(["ip", "-n", tb.client_ns[1], "-4", "-o", "addr",
                          "show", "scope", "global"], capture_output=True,
                         text=True, timeout=30, check=True).stdout
    addr = out.split()[3].split("/")[0]
    return addr.rsplit(".", 1)[0] + ".0/24"


def make_server(tb, site, kind, cal, sc, which, prior, h2):
    """A BenchServer (not started) of plain, pinned or qosctl with one
    port-based virtual host per scenario host (h0 on the server's own
    port); guarantees and premium lists on the module's servers.
    Returns (server, ports)."""
    conf = qcrobust.KEEPALIVE_ON + kind.conf
    if which == "plain":
        srv = qcbench.BenchServer(tb, site, None, conf=conf, http2=h2)
    else:
        qc = qcbench.qosctl_conf(
            tb, bound="%.3f" % sc["bound"], period="%.3f" % sc["period"],
            log="ctl.tsv", fixed_level=1 if which == "pinned" else None,
            model=qcrobust.qosctl_model(kind, cal, prior),
            resource=None if kind.resource == "link"
            else qcrobust.cpu_resource())
        srv = qcbench.BenchServer(tb, site, qc, conf=conf, http2=h2)
    ports = [srv.port]
    text = ""
    cidr = premium_cidr(tb)
    for i, h in enumerate(sc["hosts"]):
        if i:
            ports.append(qcharness.free_port())
            text += "Listen %s:%d\n" % (tb.server_addr, ports[-1])
        text += "<VirtualHost %s:%d>\n  ServerName %s\n" \
            '  DocumentRoot "%s"\n' % (tb.server_addr, ports[i], HOSTS[i],
                                       srv.docroot)
        if which != "plain" and h["guaranteed"]:
            rmax = max(0.01, h["rmax_share"] * cal["capacity"])
            text += "  QosCtlGuarantee %.3f %dB\n" % (
                rmax, int(rmax * OBJECTS_BYTES))
        if which != "plain" and h["premium"]:
            text += "  QosCtlPremiumAddress %s\n" % cidr
        text += "</VirtualHost>\n"
    srv.write_conf(srv.extra + text)
    return srv, ports


def class_counts(status, host, cls):
    """(responses by tree, lowest first; 503s) of a host's class."""
    for v in (status or {}).get("vhosts", []):
        if v["key"].split(":")[0] == host:
            c = v["classes"][cls]
            return list(c["tree_responses"]), c.get("rejected") or 0
    return None, None


def busy_shares(cpus, seconds=1.0):
    """Each CPU's busy share over the next seconds: others' load on a
    shared machine, which the module's CPU sensor sees as load on the
    server's CPU and which slows the clients on theirs."""
    b0 = [qcbench.cpu_times(c) for c in cpus]
    time.sleep(seconds)
    b1 = [qcbench.cpu_times(c) for c in cpus]
    return [(y[0] - x[0]) / max(1, y[1] - x[1]) for x, y in zip(b0, b1)]


def run_server(tb, site, kind, cal, sc, which, segs, win, timeout,
               only=None, ctl_copy=None, log=print, info=None):
    """Every population (or those in `only`) over the timeline on one
    server: per population its window's summed metrics and, for the
    module's servers, the share of its host's class replies from the
    top tree over the window.  info: gets U_bg and C_bg, the server's
    and the clients' CPU's busy share in the second before the server
    started."""
    if info is not None:
        info["U_bg"], info["C_bg"] = busy_shares(
            [qcbench.SERVER_CPUS or "0", qcbench.CLIENT_CPUS or "0"])
    prior = sc["prior"] if sc["shape"] == "cold" else 1.0
    h2 = any(p["model"] == "h2" for p in sc["pops"])
    srv, ports = make_server(tb, site, kind, cal, sc, which, prior, h2)
    srv.start()
    pops = [i for i in range(len(sc["pops"])) if only is None or i in only]
    results = {i: [None] * len(segs) for i in pops}
    why = {}
    snaps = {}
    job = None
    try:
        time.sleep(1.0)
        t0 = time.time() + 0.5
        end = t0 + segs[-1][0] + segs[-1][1]

        def one(i, k):
            pop = sc["pops"][i]
            start, secs, _ = segs[k]
            time.sleep(max(0.0, t0 + start - time.time()))
            tbx = ns_view(tb, 1 if pop["premium"] else 0)
            try:
                results[i][k] = run_segment(
                    tbx, ports[pop["host"]], kind.uri, pop,
                    sc["_plans"][i][k], secs, timeout, sc["_pages"][i],
                    seed=sc["seed"] % 100000 + 7 * i + k)
            except (RuntimeError, ValueError, KeyError,
                    subprocess.TimeoutExpired) as e:
                why[(i, k)] = str(e)[-300:]

        def snap(key, at):
            time.sleep(max(0.0, at - time.time()))
            with contextlib.suppress(Exception):
                snaps[key] = srv.status() if which != "plain" else {}

        threads = [threading.Thread(target=one, args=(i, k), daemon=True)
                   for i in pops for k in range(len(segs))]
        snapper = threading.Thread(target=snap, args=(
            "w0", t0 + win + WINDOW_SLACK), daemon=True)
        for t in threads:
            t.start()
        snapper.start()
        if sc["shape"] == "background" and sc["background"] > 0:
            time.sleep(max(0.0, t0 + sc["_job"][0] - time.time()))
            job = background_job(tb, kind, sc["background"],
                                 t0 + sc["_job"][1])
        limit = end + 4 * timeout + 120
        for t in threads:
            t.join(max(1.0, limit - time.time()))
        snapper.join(5)
        snap("w1", 0)
        if ctl_copy and which != "plain":
            with contextlib.suppress(OSError):
                srv.copy_out("ctl.tsv", ctl_copy)
    finally:
        if job and job.poll() is None:
            job.kill()
            job.wait(10)
        srv.cleanup()
    if why:
        (i, k), w = sorted(why.items())[0]
        log("  %s: pop %d segment %d: %s" % (which, i, k, w))
    out = {}
    for i in pops:
        pop = sc["pops"][i]
        inside = [results[i][k] for k in range(len(segs))
                  if segs[k][0] >= win and results[i][k] is not None]
        missing = sum(1 for k in range(len(segs)) if segs[k][0] >= win
                      and results[i][k] is None)
        m = qcclients.sum_metrics(inside)
        out[i] = pop_figures(pop, m, which, snaps, missing)
    return out


def pop_figures(pop, m, which, snaps, missing):
    """What the simulator measures of a population, from its tool's
    summed metrics and the server's tree counts of its host and class."""
    model = pop["model"]
    s2xx = m.get("s2xx", 0.0)
    good = s2xx
    if model == "retry":
        good = m.get("jobs_ok", 0.0)
    elif model == "browser":
        good = m.get("pages_ok", 0.0) * (pop["objects"] + 1)
    if which == "plain":
        frac = 1.0
    elif which == "pinned":
        frac = 0.0
    else:
        host = HOSTS[pop["host"]]
        cls = "premium" if pop["premium"] else "basic"
        a, _ = class_counts(snaps.get("w0"), host, cls)
        b, _ = class_counts(snaps.get("w1"), host, cls)
        frac = None
        if a is not None and b is not None:
            d = [y - x for x, y in zip(a, b)]
            frac = d[-1] / sum(d) if sum(d) > 0 else None
    return {"offered": m.get("offered", 0.0), "sent": m.get("sent", 0.0),
            "served": s2xx, "full": None if frac is None else s2xx * frac,
            "full_share": frac, "refused": m.get("s5xx", 0.0),
            "errors": m.get("errors", 0.0), "good": good,
            "pages": m.get("pages", 0.0),
            "mixed": m.get("pages_mixed", 0.0),
            "jobs_ok": m.get("jobs_ok"), "segments_missing": missing}


def totals(run):
    keys = ("good", "sent", "refused", "errors", "offered")
    return {k: sum(p[k] for p in run.values()) for k in keys}


def alone_runs(sc):
    """The runs premium is judged against, {name: populations}: for each
    host with premium clients, every population but that host's basic
    ones (the goal: whatever basic clients on the same host do)."""
    pops = sc["pops"]
    return {"alone-h%d" % h: {i for i, p in enumerate(pops)
                              if p["host"] != h or p["premium"]}
            for h in sorted({p["host"] for p in pops if p["premium"]})}


def pop_load(p):
    """A population's share of the resource; a closed loop (-1) takes as
    much as the resource gives."""
    return 1e9 if p["load"] < 0 else p["load"]


def premium_fits(sc, h):
    """The simulator's premium_fits (tests/sim/sim_scenarios.c): host h's
    premium clients fit at full quality on a guaranteed host within its
    contract, on a best-effort host with all best-effort hosts' premium
    within what the bound leaves after the contracts and a background
    job.  Beyond that no policy serves them all at full quality and holds
    the bound; what is left to ask is the goodput they get alone."""
    hosts = sc["hosts"]
    room = sc["bound"] - sc["background"] \
        - sum(g["rmax_share"] for g in hosts if g["guaranteed"])
    load = sum(pop_load(p) for p in sc["pops"] if p["premium"] and (
        p["host"] == h or (not hosts[h]["guaranteed"]
                           and not hosts[p["host"]]["guaranteed"])))
    return load <= (hosts[h]["rmax_share"] if hosts[h]["guaranteed"]
                    else room)


def judge(sc, runs):
    """The simulator's invariants over runs {server: {pop: figures}}:
    (goodput ratio, [(invariant, text)])."""
    fails = []
    t = {w: totals(r) for w, r in runs.items()
         if not w.startswith("alone")}
    best = max(t["plain"]["good"], t["pinned"]["good"])
    ratio = t["qosctl"]["good"] / best if best > 0 else 1.0
    if t["qosctl"]["good"] < GOOD_MIN * best:
        fails.append(("goodput", "%.2f of %.0f" % (ratio, best)))
    pin, qc = t["pinned"], t["qosctl"]
    if pin["errors"] <= REFUSE_MAX * pin["sent"] \
            and qc["refused"] > REFUSE_MAX * qc["sent"]:
        fails.append(("refusals", "%.4f of %.0f" % (
            qc["refused"] / max(1.0, qc["sent"]), qc["sent"])))
    q = runs["qosctl"]
    for h, host in enumerate(sc["hosts"]):
        if not host["guaranteed"]:
            continue
        mine = [i for i, p in enumerate(sc["pops"]) if p["host"] == h]
        load = sum(pop_load(sc["pops"][i]) for i in mine)
        offered = sum(q[i]["offered"] for i in mine)
        if any(q[i]["full"] is None for i in mine):
            continue
        full = sum(q[i]["full"] for i in mine)
        if load <= host["rmax_share"] and offered > 0 \
                and full < FULL_MIN * offered:
            fails.append(("guarantee", "host %d: %.3f full" % (
                h, full / offered)))
    for i, p in enumerate(sc["pops"]):
        if not p["premium"] or not q[i]["served"] > 0:
            continue
        alone = runs.get("alone-h%d" % p["host"]) or {}
        # full is None when the server counted none of its replies in
        # the window (all came before it): its quality is unknown.
        full = q[i]["full"]
        ag = alone.get(i, {}).get("good", 0.0)
        if (full is not None and premium_fits(sc, p["host"])
                and full < FULL_MIN * q[i]["served"]) \
                or q[i]["good"] < ALONE_MIN * ag:
            fails.append(("premium", "pop %d: %s full, %.2f of alone" % (
                i, "?" if full is None else "%.3f" % (full / q[i]["served"]),
                q[i]["good"] / ag if ag else 1.0)))
    pages = sum(p["pages"] for p in q.values())
    mixed = sum(p["mixed"] for p in q.values())
    if pages > 0 and mixed > MIXED_MAX * pages:
        fails.append(("mixing", "%.3f of %.0f pages" % (mixed / pages,
                                                       pages)))
    best_e = min(t["plain"]["errors"], t["pinned"]["errors"])
    if qc["errors"] > best_e + ERRORS_SLACK * qc["sent"]:
        fails.append(("errors", "%.0f against %.0f" % (qc["errors"],
                                                       best_e)))
    return ratio, fails


def scenarios(program, seed, count):
    """qosctl-scenario's scenarios of seed .. seed + count - 1."""
    p = subprocess.run([program, str(seed), str(count)], capture_output=True,
                       text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError("qosctl-scenario failed: " + p.stderr.strip())
    return [json.loads(line) for line in p.stdout.splitlines()
            if line.strip()]
