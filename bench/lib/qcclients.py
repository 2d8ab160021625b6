"""Client models: how load reaches the server (real clients keep
connections alive, retry, fetch pages, share a NAT address).  One
function per model, each offering `rate` requests/s for `seconds` from
the testbed's first client namespace (on the clients' CPU) and
returning the same dict, normalize()'s, so that rows of every model are
summed, scored and compared one way.

    open       httperf, open loop, each request on a new connection
               (bench/robustness's original model)
    closed     keepalive at light load; at the overload `conns`
               connections with no think at all: each sends its next
               request when the last reply comes (wrk's default, API
               clients), a load only the server's replies pace
    keepalive  wrk: `conns` keep-alive connections (10, 40, 200, 1000),
               each a closed-loop user that thinks between a reply and
               its next request (exponential, mean conns/rate s, so that
               instant replies would make the rate; at most THINK_MAX
               s: fewer connections at light rates, none idle past
               KeepAliveTimeout); over load every cycle stretches by the
               response time and the clients slow down.  wrk runs whole
               seconds: a segment's length is rounded
    h2         h2load: HTTP/2 cleartext by prior knowledge, `conns`
               connections (100) of up to `streams` (10) concurrent
               streams, each connection paced at rate/conns requests/s
               (--rps); below conns req/s one connection per req/s
               (h2load sends each connection's first request at once)
    retry      qchttp.py: open loop of jobs, a job a GET on a new
               connection, each 503 retried at once on a new
               connection up to `retries` (3) times: a retry storm
    browser    qchttp.py: browser-like sessions.  A page is the page
               and then its 10 images fetched one after another on one
               keep-alive connection; pages_per_session (3) pages a
               session with an exponential think (mean 0.5 s) after
               each; sessions start at rate/pages_per_session a second,
               or `browsers` concurrent browsers loop sessions; each
               session from an address drawn from `addresses` (seeded)

httperf's --wsesslog gives neither a page's object statuses nor page
times, so the browser is qchttp.py's too.  A reply's tree comes from
its size (full and degraded images differ tenfold), a program's page
from its ETag (Apache's for a file: the static snapshot; a program's
output has none): the module tells the tree only in X-QosCtl-Reason,
which needs QosCtlReasonHeader and is never sent by plain Apache.

normalize() keys, httperf's vocabulary (bench/lib/qcrobust.sum_reports):
    offered      open loop (open, retry): requests or jobs scheduled;
                 closed loop (keepalive, h2, browser): requests sent
    sent         requests sent (retry: attempts)
    replies      s1xx + ... + s5xx
    errors       requests without a reply: client_timo, connreset,
                 connrefused, fd_unavail, addrunavail, other
    cut          sent, no reply nor error when the client stopped
                 (h2load in flight at -D; qchttp's drain limit)
    good         the model's goodput unit: 2xx replies; retry: jobs that
                 succeeded; browser: pages whose every object was 2xx
and per model: retry jobs, attempts, jobs_ok, jobs_failed, late;
browser pages, pages_ok, pages_mixed, page_ms (each complete page's
time), tree_full, tree_degraded.
"""

import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qcbench  # noqa: E402
import qcmetrics  # noqa: E402

qcharness = qcbench.qcharness

MODELS = ("open", "keepalive", "closed", "h2", "retry", "browser")
CONNS = (10, 40, 200, 1000)     # keepalive's choices
THINK_MAX = 4.0                 # s; below KeepAliveTimeout 5
PAGE_OBJECTS = 10
HERE = os.path.dirname(os.path.abspath(__file__))
QCHTTP = os.path.join(HERE, "qchttp.py")
WRK_LUA = os.path.join(HERE, "qcwrk.lua")
WRK = "wrk"
H2LOAD = "h2load"
ERROR_KEYS = ("client_timo", "socket_timo", "connrefused", "connreset",
              "fd_unavail", "addrunavail", "ftab-full", "other")
# qchttp.py's error names, httperf's
QCHTTP_ERRORS = {"timeouts": "client_timo", "resets": "connreset",
                 "refused": "connrefused", "fd_unavail": "fd_unavail",
                 "addrunavail": "addrunavail", "other": "other"}


def missing(model):
    """What model needs that this machine lacks (None: nothing)."""
    import shutil
    need = {"keepalive": (WRK, "wrk"), "closed": (WRK, "wrk"),
            "h2": (H2LOAD, "nghttp2-client"),
            "open": (qcharness.HTTPERF, "httperf")}.get(model)
    if need and not shutil.which(need[0]):
        return "%s not installed (Debian package %s)" % need
    if model == "h2" and not os.path.exists(os.path.join(
            qcharness.MODULES_DIR, "mod_http2.so")):
        return "no mod_http2.so in " + qcharness.MODULES_DIR
    return None


def server_options(model):
    """What the server needs for model: KeepAlive On for the models that
    keep connections, HTTP/2 cleartext for h2 (qcrobust.server's
    keyword arguments)."""
    return {"keepalive": model in ("keepalive", "closed", "h2", "browser"),
            "h2": model == "h2"}


# -- running clients in the client namespace ---------------------------------

def client_cmd(tb, argv):
    """argv in the testbed's first client namespace, on the clients'
    CPU."""
    cmd = list(argv)
    if qcbench.CLIENT_CPUS:
        cmd = ["taskset", "-c", qcbench.CLIENT_CPUS] + cmd
    return ["ip", "netns", "exec", tb.client_ns[0]] + cmd


def run_client(tb, argv, limit, env=None):
    """A client's stdout; RuntimeError when it fails or overruns limit
    seconds (subprocess.run kills it by its pid)."""
    try:
        p = subprocess.run(client_cmd(tb, argv), capture_output=True,
                           text=True, timeout=limit,
                           env=dict(os.environ, **(env or {})))
    except subprocess.TimeoutExpired:
        raise RuntimeError("%s ran past %.0f s" % (argv[0], limit))
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (
            os.path.basename(argv[0]), p.returncode,
            (p.stderr or p.stdout)[-500:]))
    return p.stdout


def url(tb, port, uri):
    return "http://%s:%d%s" % (tb.server_addr, port, uri)


# -- the models --------------------------------------------------------------

def open_loop(tb, port, uri, rate, seconds, timeout=5, **_):
    """httperf --rate, a new connection per request."""
    n = max(1, int(round(rate * seconds)))
    rep = qcharness.httperf(tb.server_addr, port, uri, rate=rate,
                            num_conns=n, timeout=timeout,
                            netns=tb.client_ns[0],
                            cpus=qcbench.CLIENT_CPUS)
    return normalize("open", rep, n)


def keepalive_plan(rate, conns):
    """(connections, mean think in ms) of a keepalive segment."""
    n = max(1, min(conns, int(rate * THINK_MAX)))
    return n, 1e3 * n / rate if rate > 0 else 0.0


def keepalive(tb, port, uri, rate, seconds, timeout=5, conns=40,
              saturate=False, **_):
    """wrk with conns closed-loop keep-alive connections (qcwrk.lua's
    think time and counts).  saturate: none think, whatever the rate,
    each sends its next request when the last reply comes (wrk's own
    way, and API clients')."""
    n, think = (conns, 0.0) if saturate else keepalive_plan(rate, conns)
    secs = max(1, int(round(seconds)))
    out = run_client(tb, [WRK, "-t", str(min(2, n)), "-c", str(n), "-d",
                          "%ds" % secs, "--timeout", "%ds" % max(1, int(
                              round(timeout))), "-s", WRK_LUA,
                          url(tb, port, uri)],
                     secs + timeout + 60, env={"QC_THINK_MS": "%.3f"
                                               % think})
    raw = parse_wrk(out)
    raw["conns"] = n
    return normalize("keepalive", raw)


def h2(tb, port, uri, rate, seconds, timeout=5, conns=100, streams=10,
       **_):
    """h2load over h2c (prior knowledge), paced per connection."""
    n = max(1, min(conns, int(rate)))
    out = run_client(tb, [H2LOAD, "-c", str(n), "-m", str(streams),
                          "-t", "1", "--rps", "%.4f" % (rate / n),
                          "-D", "%dms" % max(1, int(seconds * 1e3)),
                          "-N", "%ds" % max(1, int(round(timeout))),
                          url(tb, port, uri)],
                     seconds + timeout + 60)
    raw = parse_h2load(out)
    raw["conns"] = n
    return normalize("h2", raw)


def retry(tb, port, uri, rate, seconds, timeout=5, retries=3, **_):
    """qchttp.py retry: jobs at rate, 503s retried at once."""
    out = run_client(tb, [sys.executable, QCHTTP, "retry", tb.server_addr,
                          str(port), uri, "%.4f" % rate, "%.3f" % seconds,
                          "%.3f" % timeout, str(retries)],
                     seconds + (retries + 1) * timeout + 60)
    return normalize("retry", json.loads(out))


def browser(tb, port, uri, rate, seconds, timeout=5, pages=None,
            browsers=None, addresses=None, pages_per_session=3,
            think=0.5, seed=34, **_):
    """qchttp.py browser: pages (browser_pages()) at rate pages/s, or
    `browsers` concurrent browsers."""
    pages = pages or {"page": uri, "objects": [], "sizes": {}}
    plan = browser_plan(pages, rate, seconds, browsers, addresses,
                        pages_per_session, think, seed)
    with tempfile.NamedTemporaryFile("w", suffix=".json",
                                     prefix="qc-plan-") as f:
        json.dump(plan, f)
        f.flush()
        os.chmod(f.name, 0o644)
        out = run_client(tb, [sys.executable, QCHTTP, "browser",
                              tb.server_addr, str(port), f.name,
                              "%.3f" % timeout],
                         seconds + 2 * timeout + 60)
    return normalize("browser", json.loads(out))


FUNCS = {"open": open_loop, "keepalive": keepalive, "closed": keepalive,
         "h2": h2,
         "retry": retry, "browser": browser}


def run(model, tb, port, uri, rate, seconds, timeout=5, **opts):
    """One model for seconds at rate: normalize()'s dict."""
    return FUNCS[model](tb, port, uri, rate, seconds, timeout, **opts)


# -- the browser's pages ------------------------------------------------------

def tree_sizes(site, uri):
    """[full, degraded] sizes of uri's file in each tree (None where
    the tree has no such file, or it is a program: its output's size is
    not the file's)."""
    path = uri.split("?")[0].lstrip("/")
    out = []
    for tree in ("full", "degraded"):
        p = os.path.join(site, tree, path)
        dynamic = tree == "full" and path.startswith("dynamic/")
        out.append(os.path.getsize(p) if os.path.isfile(p)
                   and not dynamic else None)
    return out


def browser_pages(site, page="/index.html", objects=PAGE_OBJECTS):
    """The browser's page and its objects: the site's images that both
    trees have, at least 4 KB at full quality (photos, the banner, the
    chart, not the icons), sorted, the first `objects`; each one's size
    per tree (tree_sizes)."""
    full = os.path.join(site, "full")
    imgs = []
    for d, _, names in sorted(os.walk(os.path.join(full, "img"))):
        for name in sorted(names):
            rel = os.path.relpath(os.path.join(d, name), full)
            if os.path.isfile(os.path.join(site, "degraded", rel)) \
                    and os.path.getsize(os.path.join(full, rel)) >= 4096:
                imgs.append("/" + rel)
    objs = sorted(imgs)[:objects]
    return {"page": page, "objects": objs,
            "sizes": {u: tree_sizes(site, u) for u in [page] + objs}}


def page_weight(pages, site, uri, resource, cal=None):
    """A page in units of uri's full reply: on a link its bytes at full
    quality over uri's; on a CPU the page (uri's program) and each
    object at a static reply's cost, which the calibration's degraded
    reply (a static snapshot) stands for: 1 + objects x cost_deg /
    cost_full (1 + objects without a calibration)."""
    if resource != "link":
        ratio = cal["cost_deg"] / cal["cost_full"] if cal else 1.0
        return 1.0 + len(pages["objects"]) * ratio
    base = tree_sizes(site, uri)[0]
    total = sum(s[0] or 0 for s in pages["sizes"].values())
    return total / base if base and total else 1.0


def browser_plan(pages, rate, seconds, browsers=None, addresses=None,
                 pages_per_session=3, think=0.5, seed=34):
    """qchttp.py's browser plan: the pages, the sizes that tell a
    reply's tree, and sessions [start s, source address or "", think
    times], all drawn from a seeded RNG.  Rate: pages/s, in sessions of
    pages_per_session; browsers: that many sessions from the start,
    each long enough to browse all the while."""
    rng = random.Random(seed)
    addrs = addresses or [""]
    sessions = []
    if browsers:
        for i in range(browsers):
            thinks = [rng.expovariate(1.0 / think)
                      for _ in range(int(2 * seconds / think) + 10)]
            sessions.append([i * min(1.0, seconds / 4) / browsers,
                             rng.choice(addrs), thinks])
    else:
        per = max(1, pages_per_session)
        n = max(1, int(round(rate * seconds / per)))
        for i in range(n):
            sessions.append([i * per / rate if rate > 0 else 0.0,
                             rng.choice(addrs),
                             [rng.expovariate(1.0 / think)
                              for _ in range(per - 1)]])
    return dict(pages, seconds=seconds, sessions=sessions)


# -- parsing and normalizing -----------------------------------------------

def parse_wrk(text):
    """qcwrk.lua's QC line as numbers."""
    m = re.search(r"^QC (.*)$", text, re.M)
    if not m:
        raise RuntimeError("wrk printed no QC line: " + text[-300:])
    f = m.group(1).split()
    return {k: float(v) for k, v in zip(f[::2], f[1::2])}


def parse_h2load(text):
    """h2load's request and status counts, the protocol it spoke (h2c)
    and the mean request time."""
    out = {}
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, "
                  r"(\d+) succeeded, (\d+) failed, (\d+) errored, "
                  r"(\d+) timeout", text)
    s = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, "
                  r"(\d+) 5xx", text)
    if not m or not s:
        raise RuntimeError("no h2load report: " + text[-300:])
    for k, v in zip(("total", "started", "done", "succeeded", "failed",
                     "errored", "timeout"), m.groups()):
        out[k] = float(v)
    for k, v in zip(("s2xx", "s3xx", "s4xx", "s5xx"), s.groups()):
        out[k] = float(v)
    p = re.search(r"Application protocol: (\S+)", text)
    out["protocol"] = p.group(1) if p else None
    t = re.search(r"time for request:\s+(\S+)\s+(\S+)\s+(\S+)", text)
    out["mean_ms"] = duration_ms(t.group(3)) if t else None
    return out


def duration_ms(text):
    """h2load's "481.56ms", "1.34s", "86us" in ms."""
    m = re.fullmatch(r"([0-9.]+)(us|ms|s)", text)
    if not m:
        return None
    return float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[
        m.group(2)]


def blank():
    """normalize()'s dict with every count zero."""
    out = {k: 0.0 for k in ("offered", "sent", "connections", "replies",
                            "s1xx", "s2xx", "s3xx", "s4xx", "s5xx",
                            "errors", "cut", "good") + ERROR_KEYS}
    return out


def normalize(model, raw, scheduled=None):
    """One run's report (httperf's parsed report, qcwrk.lua's line,
    h2load's, qchttp.py's JSON) in one vocabulary (this module's
    docstring); raw is kept under 'raw' for what is particular."""
    out = blank()
    out["model"] = model
    classes = ("s1xx", "s2xx", "s3xx", "s4xx", "s5xx")
    for k in classes:
        out[k] = float(raw.get(k, 0) or 0)
    out["replies"] = sum(out[k] for k in classes)
    if model == "open":
        for k in ("client_timo", "socket_timo", "connrefused", "connreset",
                  "fd_unavail"):
            out[k] = raw.get(k, 0.0)
        for k in ("addrunavail", "ftab-full", "other"):
            m = re.search(r"\b%s ([0-9]+)" % k, raw.get("raw", ""))
            out[k] = float(m.group(1)) if m else 0.0
        out["errors"] = raw.get("errors", 0.0)
        out["connections"] = raw.get("connections", 0.0)
        out["sent"] = raw.get("requests", 0.0)
        out["offered"] = float(scheduled or out["sent"])
        out["good"] = out["s2xx"]
    elif model in ("keepalive", "closed"):
        out["connrefused"] = raw["connect"]
        out["connreset"] = raw["read"] + raw["write"]
        out["client_timo"] = raw["timeout"]
        out["errors"] = raw["connect"] + raw["read"] + raw["write"] \
            + raw["timeout"]
        out["sent"] = out["offered"] = out["replies"] + raw["connect"] \
            + raw["read"] + raw["write"]
        out["connections"] = raw.get("conns", 0.0)
        out["good"] = out["s2xx"]
    elif model == "h2":
        out["connreset"] = raw["errored"]
        out["client_timo"] = raw["timeout"]
        out["errors"] = raw["errored"] + raw["timeout"]
        out["sent"] = out["offered"] = raw["started"]
        out["cut"] = max(0.0, raw["started"] - out["replies"]
                         - out["errors"])
        out["connections"] = raw.get("conns", 0.0)
        out["good"] = out["s2xx"]
    else:
        for k, v in QCHTTP_ERRORS.items():
            out[v] = float(raw.get(k, 0))
        out["errors"] = sum(out[v] for v in QCHTTP_ERRORS.values())
        out["fd_unavail"] += float(raw.get("skipped", 0))
        out["s503"] = float(raw.get("s503", 0))
        if model == "retry":
            out["sent"] = out["attempts"] = float(raw.get("attempts", 0))
            out["connections"] = out["attempts"]
            out["offered"] = out["jobs"] = float(raw.get("jobs", 0))
            out["good"] = out["jobs_ok"] = float(raw.get("jobs_ok", 0))
            out["cut"] = float(raw.get("cut", 0))
            out["jobs_failed"] = out["jobs"] - out["jobs_ok"]
            out["late"] = float(raw.get("late", 0))
        else:
            out["sent"] = out["offered"] = float(raw.get("requests", 0))
            out["connections"] = float(raw.get("connections", 0))
            for k in ("pages", "pages_ok", "pages_mixed", "sessions",
                      "tree_full", "tree_degraded", "tree_unknown"):
                out[k] = float(raw.get(k, 0))
            out["good"] = out["pages_ok"]
            out["page_ms"] = list(raw.get("page_ms", []))
            out["mixed"] = list(raw.get("mixed", []))
            out["cut"] = float(raw.get("cut", 0))
    out["raw"] = raw
    return out


def sum_metrics(reps):
    """normalize()'s dicts of several segments summed (lists joined;
    'raw' dropped)."""
    out = {}
    for r in reps:
        for k, v in r.items():
            if k in ("raw", "model"):
                continue
            if isinstance(v, list):
                out.setdefault(k, []).extend(v)
            elif isinstance(v, (int, float)):
                out[k] = out.get(k, 0.0) + v
    if reps:
        out["model"] = reps[0].get("model")
    return out


def derived(m, seconds):
    """The figures a table shows from summed metrics over a window of
    seconds: goodput (good/s), shares, the page p95; retry's late: jobs
    started over 0.1 s behind their time (the client short of CPU: the
    load was less than the schedule)."""
    out = {"goodput": m.get("good", 0.0) / seconds if seconds > 0
           else None}
    if m.get("model") == "retry":
        jobs = m.get("jobs") or 0.0
        out.update(attempts=m.get("attempts"), jobs_failed=m.get(
            "jobs_failed"), fail_share=m["jobs_failed"] / jobs
            if jobs else None, late=m.get("late"))
    if m.get("model") == "browser":
        out.update(pages_ok=m.get("pages_ok"),
                   pages_mixed=m.get("pages_mixed"),
                   mixed=m.get("mixed", []),
                   page_p95_ms=qcmetrics.percentile(m.get("page_ms", []),
                                                    95))
    return out


# -- segments ---------------------------------------------------------------

def run_segments(model, tb, port, uri, segments, timeout, opts=None):
    """segments: (start offset, seconds, rate); each its own client run,
    started on time whether or not the previous one has finished, so
    load is continuous (qcrobust.run_load's contract, for any model).
    opts: the model's options; 'weight' divides a browser's rate
    (pages/s = rate / weight), 'browsers' is scaled with each segment's
    rate against the highest.  Returns (t0, normalize()'s dicts in
    segment order)."""
    opts = dict(opts or {})
    weight = opts.pop("weight", 1.0) or 1.0
    top = max(s[2] for s in segments)
    reps = [None] * len(segments)
    why = [None] * len(segments)
    t0 = time.time() + 0.2

    def one(i, start, secs, rate):
        kw = dict(opts)
        if model == "closed":
            kw["saturate"] = rate >= top
        if model == "browser":
            rate = rate / weight
            if kw.get("browsers"):
                kw["browsers"] = max(1, int(round(kw["browsers"] * rate
                                                  * weight / top)))
        time.sleep(max(0.0, t0 + start - time.time()))
        try:
            reps[i] = run(model, tb, port, uri, rate, secs, timeout, **kw)
        except (subprocess.TimeoutExpired, RuntimeError, ValueError,
                KeyError) as e:
            why[i] = str(e)[-300:]
    threads = [threading.Thread(target=one, args=(i,) + tuple(s),
                                daemon=True)
               for i, s in enumerate(segments)]
    for t in threads:
        t.start()
    end = segments[-1][0] + segments[-1][1] + 4 * timeout + 90
    for t in threads:
        t.join(max(1, t0 + end - time.time()))
    if None in reps:
        i = reps.index(None)
        raise RuntimeError("%s segment %d of %d did not finish: %s"
                           % (model, i, len(reps), why[i]
                              or "still running"))
    return t0, reps
