"""Smoke versions of bench/baseline and bench/step-response, and of the
other bench/ experiments and client models, each at its smallest.

Same testbed (prefix qs<pid>), site, server configuration and helpers as the
benchmarks (bench/lib), at one load each, asserting only what holds on
a noisy shared 2-core machine: against plain Apache at 4x what the link
carries at full quality, mod_qosctl fails at most a tenth as many
connections; after a step from idle to 3x that, the controller lowers m
and holds the mean utilization of the second half near the bound.
Numbers are printed, never compared with wall-clock limits.
"""

import os
import shutil
import sys
import tempfile
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench", "lib"))
import qcbench  # noqa: E402
import qcmetrics  # noqa: E402

URI = "/bench/64k.jpg"
FULL_RATE = 185             # 64 KB replies/s a 100 Mbit/s link carries
BOUND = 0.58
PERIOD = 0.5                # twice the periods of the default 1 s per second

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root for network namespaces")


@pytest.fixture(scope="module")
def site():
    """The build's sample site, or a fresh one when it was not made."""
    if os.path.isdir(os.path.join(qcbench.SITE, "degraded")):
        yield qcbench.SITE
        return
    if not shutil.which("convert"):
        pytest.skip("no sample site and no ImageMagick to make one")
    d = tempfile.mkdtemp(prefix="qosctl-site-")
    os.chmod(d, 0o755)          # httpd's user reads it
    try:
        yield qcbench.make_site(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def testbed():
    # Per process: two runs on one machine must not share a testbed.
    with qcbench.testbed("qs%d" % (os.getpid() % 1000)) as tb:
        yield tb


def trace(rows):
    """The controller's periods in a line each for U and m (shown when
    an assertion fails)."""
    return "U_measured %s\nm          %s" % tuple(
        " ".join("%.2f" % r[k] for r in rows) for k in ("U_measured", "m"))


def conn_error_ratio(tb, site, qosctl, rate, warmup=8, seconds=8):
    """Connection errors / offered over `seconds` of load at rate, after
    `warmup` seconds at the same rate (load continuous across both): the
    comparison is about overload, not about the controller's transient
    from idle (that is the step test's)."""
    srv = qcbench.BenchServer(tb, site, qosctl).start()
    try:
        warm = threading.Thread(target=srv.offer, args=(URI, rate, warmup),
                                daemon=True)
        warm.start()
        time.sleep(warmup)
        rep = srv.offer(URI, rate, seconds)
        warm.join(120)
        rows = srv.ctl_rows() if qosctl else []
    finally:
        srv.cleanup()
    print("%s at %d req/s: %d errors, %d 503 of %d offered; median "
          "connection time %.1f ms" % ("mod_qosctl" if qosctl else "plain",
                                       rate, rep["errors"], rep["s5xx"],
                                       rep["offered"],
                                       rep["conn_time_median"]))
    if rows:
        print(trace(rows))
    return rep["errors"] / rep["offered"]


def test_qosctl_fails_a_tenth_of_plain_connections_at_4x(testbed, site):
    rate = 4 * FULL_RATE
    plain = conn_error_ratio(testbed, site, None, rate)
    adaptive = conn_error_ratio(testbed, site, qcbench.qosctl_conf(
        testbed, bound=BOUND, period=PERIOD, log="ctl.tsv"), rate)
    assert plain >= 0.2         # the comparison needs a real overload
    assert adaptive <= plain / 10


def test_step_to_overload_lowers_m_and_holds_the_bound(testbed, site):
    period, periods = PERIOD, 30
    srv = qcbench.BenchServer(testbed, site, qcbench.qosctl_conf(
        testbed, bound=BOUND, period=period, log="ctl.tsv")).start()
    try:
        time.sleep(4 * period)
        step = time.time()
        rep = srv.offer(URI, 3 * FULL_RATE, periods * period)
        rows = srv.ctl_rows()
    finally:
        srv.cleanup()
    after = [r for r in rows
             if step < r["time"] <= step + (periods + 0.5) * period]
    m = qcmetrics.step_response([r["U_measured"] for r in after], BOUND)
    print("step to %d req/s: %d periods logged; %s; lowest m %.2f; "
          "%d errors, %d 503 of %d" % (
              3 * FULL_RATE, len(after), m, min(r["m"] for r in after),
              rep["errors"], rep["s5xx"], rep["offered"]))
    print(trace(after))
    assert len(after) >= periods * 0.8
    assert min(r["m"] for r in after) < 1.9
    assert abs(m["mean_tail"] - BOUND) <= 0.25 * BOUND


ROBUSTNESS = os.path.join(qcbench.SRCDIR, "bench", "robustness")
NUMERIC = ("offered", "U_med", "U_p95", "errors", "err_share", "s503",
           "s2xx", "full_share", "full_ideal", "rt_p95_light_ms")


def smallest_robustness(site, prefix, extra=()):
    """bench/robustness on its smallest scenario (link, one client
    address, a step, seconds long): its table rows and summary."""
    import csv
    import json
    import subprocess
    out = tempfile.mkdtemp(prefix="qosctl-robust-")
    try:
        p = subprocess.run(
            [sys.executable, ROBUSTNESS, "--only", "link", "--clients", "1",
             "--load", "step", "--light", "2", "--seconds", "3",
             "--timeout", "2", "--calibrate-seconds", "2", "--qos-n", "4",
             "--site", site, "--out", out,
             "--prefix", "%s%d" % (prefix, os.getpid() % 1000)]
            + list(extra), capture_output=True, text=True, timeout=300)
        print(p.stdout[-3000:], p.stderr[-3000:])
        assert p.returncode == 0
        with open(os.path.join(out, "table.tsv")) as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        with open(os.path.join(out, "summary.json")) as f:
            doc = json.load(f)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return rows, doc


@pytest.mark.skipif(not os.path.exists(os.path.join(
    qcbench.qcharness.MODULES_DIR, "mod_qos.so")),
    reason="libapache2-mod-qos not installed")
def test_robustness_runs_one_scenario_on_three_servers(site):
    """bench/robustness end to end on its smallest scenario: only the
    table's shape is checked."""
    rows, _ = smallest_robustness(site, "qr")
    assert sorted(r["server"] for r in rows) == ["modqos", "plain",
                                                 "qosctl"]
    for r in rows:
        assert float(r["offered"]) > 0
        for k in NUMERIC:
            if r[k] != "NA":
                float(r[k])


def test_robustness_sweeps_and_says_the_clean_rates(site):
    """--times with a list: every scenario at each rate, and the highest
    rate each server carried clean, mod_qosctl's over plain Apache's as a
    goal.  Only the shape is checked, never the figures."""
    rows, doc = smallest_robustness(site, "qw", ["--servers", "plain,qosctl",
                                                 "--times", "2,0.5"])
    assert sorted((r["server"], float(r["times"])) for r in rows) == [
        ("plain", 0.5), ("plain", 2.0), ("qosctl", 0.5), ("qosctl", 2.0)]
    names = [n["name"] for n in doc["numbers"]]
    for server in ("plain", "qosctl"):
        assert any(n.startswith("link/static 1 step " + server)
                   and "highest rate" in n for n in names), names
    assert any("highest error-free rate over plain" in g["goal"]
               for g in doc["goals"]), doc["goals"]


ACTUATOR_SHARE = os.path.join(qcbench.SRCDIR, "bench", "actuator-share")


def test_actuator_share_reads_a_run(tmp_path):
    """bench/actuator-share on a made-up run: the full share over the
    mean m - 1 of the periods at over half the peak arrivals."""
    import subprocess
    (tmp_path / "table.tsv").write_text(
        "kind\tclients\tload\tserver\tfull_share\n"
        "cpu/cgi\t40\tstep\tqosctl\t0.2\n"
        "cpu/cgi\t40\tstep\tplain\t1\n")
    (tmp_path / "ctl-cpu-cgi-40-step.tsv").write_text(
        "time\tvserver\tclass\tR\tm\n"
        "1\ta\tbasic\t10\t2.0\n"
        "2\ta\tbasic\t700\t1.3\n"
        "2\ta\tpremium\t0\t2.0\n"
        "3\ta\tbasic\t700\t1.1\n")
    p = subprocess.run([sys.executable, ACTUATOR_SHARE, str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "1.00 to 1.00 over 1 rows" in p.stdout, p.stdout


@pytest.mark.parametrize("args", [[], ["/nonexistent/run"], ["-h", "x"]])
def test_actuator_share_refuses_bad_input(args):
    import subprocess
    p = subprocess.run([sys.executable, ACTUATOR_SHARE] + args,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert p.stderr.startswith("actuator-share: ")
    assert len(p.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("times", ["0", "x", "1,,2", "30", "nan"])
def test_robustness_refuses_a_bad_sweep(times):
    import subprocess
    p = subprocess.run([sys.executable, ROBUSTNESS, "--times", times],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert p.stderr.strip().startswith("robustness: invalid --times")
    assert len(p.stderr.strip().splitlines()) == 1
    assert "Traceback" not in p.stderr


CLUSTER = os.path.join(qcbench.SRCDIR, "bench", "cluster")


def needs_cluster(test):
    """Skip test without HAProxy or ip(8): bench/lib/qccluster's parts."""
    test = pytest.mark.skipif(
        not shutil.which("haproxy") and not os.path.exists(
            "/usr/sbin/haproxy"),
        reason="haproxy not installed (Debian package haproxy)")(test)
    return pytest.mark.skipif(not shutil.which("ip"), reason="no ip(8) "
                              "for network namespaces (iproute2)")(test)


@needs_cluster
def test_cluster_quick_prints_a_row_per_policy(site):
    """bench/cluster --quick end to end (HAProxy over three shaped
    backends, two rates per policy, 1 s each): only that it finishes,
    prints the capacity table with a row for every policy and backend
    kind (a policy whose part is missing says `skipped`), and no
    traceback."""
    import subprocess
    out = tempfile.mkdtemp(prefix="qosctl-cluster-")
    try:
        p = subprocess.run(
            [sys.executable, CLUSTER, "--quick", "--seconds", "1",
             "--site", site, "--out", out,
             "--prefix", "qcs%d" % (os.getpid() % 1000)],
            capture_output=True, text=True, timeout=900)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    print(p.stdout[-4000:], p.stderr[-3000:])
    assert p.returncode == 0
    assert "Traceback" not in p.stdout + p.stderr
    table = p.stdout.split("error-free capacity (client errors")[1]
    for policy in ("rr", "leastconn", "agent", "delta"):
        for server in ("plain", "qosctl"):
            assert any(line.split()[:2] == [policy, server]
                       for line in table.splitlines()), (policy, server)


SIZING = os.path.join(qcbench.SRCDIR, "bench", "sizing")


def run_quick(bench, site, prefix, tsv, extra=()):
    """bench --quick on site in namespaces of prefix: it must finish
    with status 0 and no traceback; (the process, the rows of its tsv
    output)."""
    import csv
    import subprocess
    out = tempfile.mkdtemp(prefix="qosctl-quick-")
    try:
        p = subprocess.run(
            [sys.executable, bench, "--quick", "--site", site, "--out", out,
             "--prefix", "%s%d" % (prefix, os.getpid() % 1000)]
            + list(extra),
            capture_output=True, text=True, timeout=600)
        print(p.stdout[-3000:], p.stderr[-3000:])
        assert p.returncode == 0
        assert "Traceback" not in p.stdout + p.stderr
        with open(os.path.join(out, tsv)) as f:
            return p, list(csv.DictReader(f, delimiter="\t"))
    finally:
        shutil.rmtree(out, ignore_errors=True)


@needs_cluster
def test_sizing_quick_runs_the_plan_on_haproxy(site):
    """bench/sizing --quick end to end (three shaped backends behind
    HAProxy, qosctl-plan's day at half a second an hour, twice): it finishes,
    writes a row per hour of each pass, takes servers out of rotation
    where the plan says so, and prints a saving per power model.  What
    the schedule saves and drops is bench/sizing's to print, not
    asserted on a shared machine."""
    p, rows = run_quick(SIZING, site, "qz", "hours.tsv",
                        ["--hour-seconds", "0.5"])
    every = [r for r in rows if r["pass"] == "all"]
    sized = [r for r in rows if r["pass"] == "sized"]
    assert len(every) == len(sized) == 24
    assert {int(r["on"]) for r in every} == {3}
    assert min(int(r["on"]) for r in sized) == 1
    assert max(int(r["on"]) for r in sized) == 3
    assert all(int(float(r["offered"])) > 0 for r in rows)
    assert p.stdout.count("saving") == 2


SHIFT = os.path.join(qcbench.SRCDIR, "bench", "shift")


@needs_cluster
def test_shift_quick_moves_traffic_off_the_smallest_backend(site):
    """bench/shift --quick end to end (qosctl-balance's proportional
    delta shift on the SYN metric, real HAProxy, three plain backends
    at 100/50/25 Mbit/s offered 1.2 times what they carry): it
    finishes, logs an update per interval, and the rule's first cut is
    the 25 Mbit/s backend's, which equal weights overload 2.8 times
    (before any SYN is dropped nothing is cut), and it ends below the
    100 Mbit/s one.  How fast and how close the
    shares come to the capacities is bench/shift's to print."""
    _, rows = run_quick(SHIFT, site, "qh", "updates.tsv")
    assert len(rows) >= 4
    assert [r["cut"] for r in rows if r["cut"] != "-"][0] == "b3"
    last = [r for r in rows if r["w_b1"] != "NA" and r["w_b3"] != "NA"][-1]
    assert float(last["w_b3"]) < float(last["w_b1"])


# -- client models (bench/lib/qcclients.py), a few seconds each -------------

def client_server(tb, site, model, qosctl=None, conf=""):
    """A started BenchServer as bench/robustness runs it for model
    (KeepAlive, h2c), with an access log of each request's client
    address, status and size (access.log in its root)."""
    import qcclients
    import qcrobust
    opts = qcclients.server_options(model)
    return qcbench.BenchServer(
        tb, site, qosctl, http2=opts["h2"], conf=(
            qcrobust.KEEPALIVE_ON if opts["keepalive"]
            else qcrobust.KEEPALIVE) + conf + ACCESS_LOG).start()


# mod_log_config is built into Debian's httpd.
ACCESS_LOG = "CustomLog access.log \"%a %>s %b\"\n"


def access_log(srv):
    """[(client address, status)] of the requests srv logged, but the
    harness's own (from the server's address: is it up yet?)."""
    with open(os.path.join(srv.root, "access.log")) as f:
        rows = [(line.split()[0], int(line.split()[1])) for line in f]
    return [r for r in rows if r[0] != srv.tb.server_addr]


def pinned(tb, level):
    """mod_qosctl pinned to a level (0: every request refused)."""
    return qcbench.qosctl_conf(tb, bound=0.9, period=1, fixed_level=level)


def adds_up(m):
    """What every model's metrics must satisfy: replies are the sum of
    the status classes, and nothing is counted twice."""
    classes = sum(m[k] for k in ("s1xx", "s2xx", "s3xx", "s4xx", "s5xx"))
    assert m["replies"] == classes
    errors = sum(m[k] for k in ("client_timo", "socket_timo",
                                "connrefused", "connreset", "fd_unavail",
                                "addrunavail", "ftab-full", "other"))
    assert m["errors"] == errors
    assert m["sent"] >= m["replies"]


def needs(model):
    import qcclients
    why = qcclients.missing(model)
    return pytest.mark.skipif(why is not None, reason=str(why))


@needs("keepalive")
def test_keepalive_clients_reuse_their_connections(testbed, site):
    """wrk, 10 closed-loop keep-alive connections, 2 s at 100 req/s
    offered: every reply counted by class, and far fewer connections
    opened than requests served."""
    import qcclients
    srv = client_server(testbed, site, "keepalive")
    try:
        before = qcbench.tcp_counters(testbed)
        m = qcclients.keepalive(testbed, srv.port, URI, 100, 2, timeout=5,
                                conns=10)
        opens = qcbench.tcp_counters(testbed)[0] - before[0]
    finally:
        srv.cleanup()
    print(m, "connections opened", opens)
    adds_up(m)
    assert m["replies"] > 0
    assert m["s2xx"] == m["replies"] == m["good"]
    assert m["sent"] == m["replies"] + m["connrefused"] + m["connreset"]
    assert opens < m["replies"] / 2


@needs("h2")
def test_h2_clients_speak_h2c_to_the_server(testbed, site):
    """h2load by prior knowledge against a server with `Protocols h2c
    http/1.1`: it speaks h2c, and what it sent is replied, errored or
    still in flight at the end."""
    import qcclients
    srv = client_server(testbed, site, "h2")
    try:
        m = qcclients.h2(testbed, srv.port, URI, 50, 2, timeout=5,
                         conns=10, streams=10)
    finally:
        srv.cleanup()
    print(m)
    adds_up(m)
    assert m["raw"]["protocol"] == "h2c"
    assert m["replies"] > 0 and m["s2xx"] == m["replies"]
    assert m["sent"] == m["replies"] + m["errors"] + m["cut"]


def test_retry_clients_retry_each_503_three_times(testbed, site):
    """qchttp.py's retry storm: against plain Apache every job succeeds
    at the first attempt; against mod_qosctl pinned at level 0 (every
    request refused) each job is tried four times, on four connections,
    then given up."""
    import qcclients
    runs = {}
    for name, qosctl in (("plain", None), ("refusing", pinned(testbed, 0))):
        srv = client_server(testbed, site, "retry", qosctl)
        try:
            runs[name] = qcclients.retry(testbed, srv.port, URI, 20, 2,
                                         timeout=5, retries=3)
            runs[name]["logged"] = access_log(srv)
        finally:
            srv.cleanup()
    ok, no = runs["plain"], runs["refusing"]
    for name, m in runs.items():
        print(name, {k: v for k, v in m.items() if k != "logged"})
    for m in (ok, no):
        adds_up(m)
        assert m["jobs"] == 40
        assert m["sent"] == m["replies"] + m["errors"]
    assert ok["jobs_ok"] == ok["attempts"] == ok["s2xx"] == 40
    assert ok["jobs_failed"] == 0
    assert no["jobs_ok"] == 0 and no["jobs_failed"] == 40
    assert no["attempts"] == no["s503"] == no["s5xx"] == 160
    assert len(no["logged"]) == 160     # each attempt a request served
    assert no["raw"]["jobs_gave_up"] == 40


def test_browser_pages_are_complete_and_tell_their_tree(testbed, site):
    """qchttp.py's browser, 2 s of sessions from 40 addresses of their
    own: plain Apache serves every page whole from the full tree,
    mod_qosctl pinned at level 1 from the degraded one; no page mixes
    trees; each session's requests come from its address."""
    import qcclients
    import qcrobust
    pages = qcclients.browser_pages(site)
    assert len(pages["objects"]) == qcclients.PAGE_OBJECTS
    qcrobust.set_clients(testbed, 40, local=True)
    runs = {}
    try:
        for name, qosctl in (("full", None), ("degraded",
                                              pinned(testbed, 1))):
            srv = client_server(testbed, site, "browser", qosctl)
            try:
                runs[name] = qcclients.browser(
                    testbed, srv.port, None, 10, 2, timeout=5, pages=pages,
                    addresses=qcrobust.client_addresses(40))
                runs[name]["logged"] = access_log(srv)
            finally:
                srv.cleanup()
    finally:
        qcrobust.set_clients(testbed, 1)
    for tree, m in runs.items():
        print(tree, {k: v for k, v in m.items() if k != "logged"})
        adds_up(m)
        assert m["pages"] > 0
        assert m["sent"] == m["replies"] + m["errors"]
        assert m["sent"] == m["pages"] * (1 + qcclients.PAGE_OBJECTS)
        assert m["pages_ok"] == m["pages"] == m["good"]
        assert m["tree_" + tree] == m["s2xx"] == m["sent"]
        assert m["pages_mixed"] == 0
        assert len(m["page_ms"]) == m["pages_ok"]
        addrs = {a for a, _ in m["logged"]}
        assert len(m["logged"]) == m["sent"]
        assert all(a.startswith(qcrobust.SNAT_NET + ".") for a in addrs)
        assert len(addrs) > 1


@needs("keepalive")
def test_robustness_runs_client_models_beside_the_fixed_servers(site):
    """bench/robustness --client keepalive,retry on plain Apache and
    mod_qosctl pinned to the lowest tree: a row per model and server,
    the client column, and each row's vs_best_fixed its goodput over
    the best goodput of its own model's fixed servers (not another
    model's, not a fixed 1).  Beyond that only the table's shape is
    checked."""
    rows, doc = smallest_robustness(site, "qk", [
        "--client", "keepalive,retry", "--conns", "10",
        "--servers", "plain,pinned"])
    assert sorted((r["client"], r["conns"], r["server"]) for r in rows) \
        == [("keepalive", "10", "pinned"), ("keepalive", "10", "plain"),
            ("retry", "NA", "pinned"), ("retry", "NA", "plain")]
    assert all(float(r["goodput"]) > 0 for r in rows)
    for model in ("keepalive", "retry"):
        mine = [r for r in rows if r["client"] == model]
        best = max(float(r["goodput"]) for r in mine)
        for r in mine:
            # (the table keeps 6 significant digits)
            assert float(r["vs_best_fixed"]) == pytest.approx(
                float(r["goodput"]) / best, rel=1e-4), (model, r)
    assert any("best fixed" in g["goal"] for g in doc["goals"])


SOAK = os.path.join(qcbench.SRCDIR, "bench", "soak")


def test_soak_runs_half_a_minute_and_plots(site, tmp_path):
    """bench/soak for 30 s with a controller SIGKILL and a graceful
    restart 10 s apart and a few slow agent clients: it finishes, writes
    its TSVs, summary and a PNG plot, and the summary has every field
    the results table takes.  The figures are bench/soak's to print."""
    import subprocess
    p = subprocess.run(
        [sys.executable, SOAK, "--minutes", "0.5", "--every", "10",
         "--events", "kill,graceful", "--agent-drip", "5",
         "--site", site, "--out", str(tmp_path),
         "--prefix", "qk%d" % (os.getpid() % 1000)],
        capture_output=True, text=True, timeout=600)
    print(p.stdout[-4000:], p.stderr[-3000:])
    assert p.returncode == 0
    assert "Traceback" not in p.stdout + p.stderr
    for name in ("samples.tsv", "segments.tsv", "httperf.txt",
                 "summary.txt"):
        assert (tmp_path / name).stat().st_size > 0, name
    png = (tmp_path / "soak.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10000
    text = (tmp_path / "summary.txt").read_text()
    assert text == p.stdout[p.stdout.index("soak: "):]
    for field in ("requests: ", " offered, ", " 503), ", "client errors (",
                  "timeout ", "refused ", "reset ", "no fd ", "other ",
                  "fail-open windows (status page every ",
                  "control back after the kill at ",
                  "control back after the graceful at ",
                  "errors by the event in their segment: ",
                  "controllers restarted: ", "drip of 5 on the agent: ",
                  "verdict: too short to tell growth"):
        assert field in text, field
    assert "SIGKILL controller" in text and "graceful restart" in text
