"""The Prometheus page of a live private Apache, and what conf/examples
ships for it.

promtool (Debian's prometheus package) checks the page as Prometheus
would scrape it, the whole server's, a host's own and a dry run's, with
its lint of the naming guide; the alert rules pass `promtool check
rules` and fire in `promtool test rules` on series named as the page
names them; every query of the Grafana dashboard and of the rules names
a metric the live page declares.
"""

import json
import os
import re
import shutil
import subprocess

import pytest

import qcharness
from conftest import Server

PROMTOOL = shutil.which("promtool")
need_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (Debian package "
    "prometheus, in ./dev packages)")

EXAMPLES = os.path.join(qcharness.TOP_SRCDIR, "conf", "examples")
ALERTS = os.path.join(EXAMPLES, "qosctl-alerts.yml")
DASHBOARD = os.path.join(EXAMPLES, "grafana-dashboard.json")

SITE = """QosCtl {mode}
QosCtlContentTrees /degraded /full
<VirtualHost *:{port}>
  ServerName tenant.example
  QosCtlExclude /qosctl-status
  <Location /qosctl-status>
    SetHandler qosctl-host-status
  </Location>
</VirtualHost>
"""


def start(mode):
    port = qcharness.free_port()
    s = Server(SITE.format(mode=mode, port=port), port=port)
    s.start()
    for host in ("localhost", "tenant.example"):
        for _ in range(3):
            assert s.get("/x.txt", headers={"Host": host})[0] == 200
    assert qcharness.wait_for(
        lambda: s.status()["controller"]["periods"] >= 3, limit=30)
    return s


def page(s, host=None):
    st, headers, body = s.get(
        "/qosctl-status?format=prometheus",
        headers={"Host": host} if host else None,
        port=None if host else s.sport)
    assert st == 200
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    return body.decode("utf-8")


@pytest.fixture(scope="module")
def pages():
    """The pages of a server under control and of a dry run."""
    made, out = [], {}
    try:
        for mode in ("On", "LogOnly"):
            s = start(mode)
            made.append(s)
            out[mode] = page(s)
            if mode == "On":
                out["host"] = page(s, "tenant.example")
        yield out
    finally:
        for s in made:
            s.cleanup()


def families(text):
    """{name: (type, help)} of the page's TYPE and HELP lines, and its
    samples as (name, {label: value}, value)."""
    types, helps, samples = {}, {}, []
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, help_ = line[7:].split(" ", 1)
            helps[name] = help_
        elif line.startswith("# TYPE "):
            name, kind = line[7:].split(" ")
            types[name] = kind
        elif line and not line.startswith("#"):
            m = re.match(r'([a-z_:]+)(?:\{(.*)\})? (\S+)$', line)
            assert m, line
            labels = dict(re.findall(r'([a-z_]+)="((?:\\.|[^"\\])*)"',
                                     m.group(2) or ""))
            samples.append((m.group(1), labels, float(m.group(3))))
    assert set(types) == set(helps), set(types) ^ set(helps)
    return {n: (types[n], helps[n]) for n in types}, samples


@need_promtool
@pytest.mark.parametrize("which", ["On", "host", "LogOnly"])
def test_promtool_checks_the_live_page(pages, which):
    """`promtool check metrics`: the exposition format and the naming
    lint (units, _total on counters and only there, no abbreviations)."""
    p = subprocess.run([PROMTOOL, "check", "metrics"],
                       input=pages[which].encode(), capture_output=True,
                       timeout=60)
    assert p.returncode == 0 and not p.stdout.strip() \
        and not p.stderr.strip(), (p.stdout + p.stderr).decode()


def test_names_units_and_labels(pages):
    fams, samples = families(pages["On"])
    for name, (kind, _) in fams.items():
        assert name.startswith("qosctl_"), name
        assert (kind == "counter") == name.endswith("_total"), name
    # The rates that repeated counters are rate() over those counters.
    for gone in ("qosctl_r", "qosctl_w", "qosctl_r_rej", "qosctl_m",
                 "qosctl_u", "qosctl_u_target", "qosctl_arrived_total"):
        assert gone not in fams, gone
    for counter in ("qosctl_requests_total", "qosctl_response_bytes_total",
                    "qosctl_rejected_requests_total"):
        assert fams[counter][0] == "counter"
    # No stand-in for unknown: no NaN, and nothing negative but the
    # model's fit and the headroom of an overload (a sample is left out
    # instead).
    for name, _, value in samples:
        assert value == value, name
        if not name.startswith("qosctl_model_") \
                and name != "qosctl_headroom_ratio":
            assert value >= 0, (name, value)
    # One meaning per label: "tree" is a content tree's path wherever it
    # is, the index below the top is "depth".
    trees = [l["tree"] for _, l, _ in samples if "tree" in l]
    assert trees and all(t.startswith("/") for t in trees), trees
    depths = [l["depth"] for n, l, _ in samples if "depth" in l]
    assert depths and all(d.isdigit() for d in depths), depths
    tops = {l["vhost"]: v for n, l, v in samples if n == "qosctl_top_level"}
    assert tops and set(tops.values()) == {2.0}, tops


def test_dry_run_has_counters_not_shares(pages):
    fams, _ = families(pages["LogOnly"])
    assert fams["qosctl_would_degraded_total"][0] == "counter"
    assert fams["qosctl_would_rejected_total"][0] == "counter"
    assert not [n for n in fams if n.endswith("_share")
                or n.startswith("qosctl_would_") and n.endswith("_ratio")]


# -- what queries name ---------------------------------------------------

KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on",
            "ignoring", "group_left", "group_right"}


def metric_names(expr):
    """The metric names a PromQL expression (or a Grafana label_values()
    query) reads."""
    m = re.match(r"\s*label_values\((.*)\)\s*$", expr, re.S)
    if m:
        expr = m.group(1).rsplit(",", 1)[0] if "," in m.group(1) \
            else m.group(1)
    expr = re.sub(r'"(?:\\.|[^"\\])*"', "", expr)
    expr = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "", expr)
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)"
                  r"\s*\([^)]*\)", "", expr)
    expr = re.sub(r"\$\w+", "", expr)
    names = set()
    for tok, call in re.findall(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*(\(?)", expr):
        if not call and tok not in KEYWORDS:
            names.add(tok)
    return names


def test_metric_names_of_a_query():
    assert metric_names('sum by (vhost) (rate(qosctl_requests_total'
                        '{vhost=~"$vhost"}[$__rate_interval])) > 0') \
        == {"qosctl_requests_total"}
    assert metric_names("qosctl_level < on (instance, vhost) group_left "
                        "qosctl_top_level") \
        == {"qosctl_level", "qosctl_top_level"}
    assert metric_names('label_values(qosctl_top_level{a="b"}, vhost)') \
        == {"qosctl_top_level"}


def alert_rules():
    """(name, expr) of every rule in the shipped alert rules."""
    out, rule = [], None
    with open(ALERTS) as f:
        lines = f.read().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("- alert:"):
            rule = line.split(":", 1)[1].strip()
        elif line.startswith("expr:") and rule:
            expr = line.split(":", 1)[1].strip()
            if expr in (">-", ">", "|", "|-"):
                body, ind = [], len(lines[i + 1]) - len(lines[i + 1].lstrip())
                while i + 1 < len(lines) and lines[i + 1].strip() and \
                        len(lines[i + 1]) - len(lines[i + 1].lstrip()) >= ind:
                    i += 1
                    body.append(lines[i].strip())
                expr = " ".join(body)
            out.append((rule, expr))
        i += 1
    return out


def dashboard_queries():
    with open(DASHBOARD) as f:
        d = json.load(f)
    out = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
    for v in d["templating"]["list"]:
        if v["type"] == "query":
            q = v["query"]
            out.append(q["query"] if isinstance(q, dict) else q)
    return out


def test_alert_rules_name_exported_metrics(pages):
    exported = set(families(pages["On"])[0])
    rules = alert_rules()
    assert {r for r, _ in rules} >= {
        "QosCtlDegradedForMinutes", "QosCtlRefusing",
        "QosCtlControllerGone", "QosCtlFailingOpen"}
    for rule, expr in rules:
        names = metric_names(expr)
        assert names and names <= exported, (rule, names - exported)


def test_dashboard_queries_name_exported_metrics(pages):
    exported = set(families(pages["On"])[0])
    queries = dashboard_queries()
    assert len(queries) >= 10
    used = set()
    for q in queries:
        names = metric_names(q)
        assert names and names <= exported, (q, names - exported)
        used |= names
    for needed in ("qosctl_utilization_measured_ratio", "qosctl_level",
                   "qosctl_rejected_requests_total", "qosctl_fail_open"):
        assert needed in used, needed


@need_promtool
def test_alert_rules_pass_promtool():
    p = subprocess.run([PROMTOOL, "check", "rules", ALERTS],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


@need_promtool
def test_dashboard_queries_parse_as_promql(tmp_path):
    """Each query as a recording rule: promtool parses it (Grafana's
    $__rate_interval and variables as Prometheus would get them)."""
    rules = []
    for i, q in enumerate(dashboard_queries()):
        if q.startswith("label_values("):
            q = q[len("label_values("):-1].rsplit(",", 1)[0]
        q = q.replace("$__rate_interval", "1m").replace("$instance", ".*")
        q = q.replace("$vhost", ".*")
        rules.append({"record": "qosctl:query%d" % i, "expr": q})
    path = tmp_path / "dashboard-rules.yml"
    path.write_text(json.dumps({"groups": [{"name": "dashboard",
                                            "rules": rules}]}))
    p = subprocess.run([PROMTOOL, "check", "rules", str(path)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


# Series as the page names them, one sample a minute: a host held at
# level 1 of 2, refusing, whose controller stops at minute 5 and whose
# request path fails open from minute 6.
# (Lines as promtool's test format has them, however long.)
ALERT_TEST = """rule_files:
  - {alerts}
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'qosctl_level{{instance="w",job="q",vhost="a:80",class="basic"}}'
        values: '1x20'
      - series: 'qosctl_top_level{{instance="w",job="q",vhost="a:80"}}'
        values: '2x20'
      - series: 'qosctl_rejected_requests_total{{instance="w",job="q",vhost="a:80",class="basic"}}'
        values: '0+60x20'
      - series: 'qosctl_controller_periods_total{{instance="w",job="q"}}'
        values: '0+60x5 300x15'
      - series: 'qosctl_fail_open{{instance="w",job="q"}}'
        values: '0x5 1x15'
      - series: 'qosctl_warning{{instance="w",job="q",kind="wrong-resource"}}'
        values: '0x20'
    alert_rule_test:
      - eval_time: 3m
        alertname: QosCtlDegradedForMinutes
        exp_alerts: []
      - eval_time: 15m
        alertname: QosCtlDegradedForMinutes
        exp_alerts:
          - exp_labels: {{severity: warning, instance: w, job: q, vhost: "a:80", class: basic}}
            exp_annotations:
              summary: "a:80 (basic) served below its top tree for 10 minutes"
              description: "Level 1 on w: the bottleneck is held at its bound by degrading content."
      - eval_time: 10m
        alertname: QosCtlRefusing
        exp_alerts:
          - exp_labels: {{severity: critical, instance: w, job: q, vhost: "a:80", class: basic}}
            exp_annotations:
              summary: "a:80 (basic) refuses requests with 503"
              description: "1 refusals per second on w over the last 5 minutes."
      - eval_time: 4m
        alertname: QosCtlControllerGone
        exp_alerts: []
      - eval_time: 12m
        alertname: QosCtlControllerGone
        exp_alerts:
          - exp_labels: {{severity: critical, instance: w, job: q}}
            exp_annotations:
              summary: "mod_qosctl's controller on w runs no control periods"
              description: "No period for 2 minutes: the request path fails open, serving every request in full."
      - eval_time: 5m
        alertname: QosCtlFailingOpen
        exp_alerts: []
      - eval_time: 10m
        alertname: QosCtlFailingOpen
        exp_alerts:
          - exp_labels: {{severity: critical, instance: w, job: q}}
            exp_annotations:
              summary: "mod_qosctl fails open on w"
              description: "The controller is stale: requests are served in full with no control of the bottleneck."
      - eval_time: 15m
        alertname: QosCtlWarning
        exp_alerts: []
"""


@need_promtool
def test_alerts_fire_on_the_pages_series(pages, tmp_path):
    """The rules fire when they should and not before, on series whose
    names and labels the live page has."""
    fams, samples = families(pages["On"])
    for name in ("qosctl_level", "qosctl_top_level",
                 "qosctl_rejected_requests_total",
                 "qosctl_controller_periods_total", "qosctl_fail_open",
                 "qosctl_warning"):
        assert name in fams, name
    labels = {n: set(l) for n, l, _ in samples}
    assert labels["qosctl_level"] == {"vhost", "class"}
    assert labels["qosctl_top_level"] == {"vhost"}
    assert labels["qosctl_warning"] == {"kind"}
    path = tmp_path / "alerts-test.yml"
    path.write_text(ALERT_TEST.format(alerts=ALERTS))
    p = subprocess.run([PROMTOOL, "test", "rules", str(path)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


# -- conf/examples/logformat.conf ----------------------------------------

def test_logformat_example_logs_the_note(server_factory):
    """Included as shipped: the access log's last field is the note."""
    s = server_factory("QosCtl On\nQosCtlContentTrees /degraded /full\n"
                       "QosCtlFixedLevel 1\n")
    s.write_conf(s.extra + 'Define APACHE_LOG_DIR "%s"\nInclude %s\n'
                 % (s.root, os.path.join(EXAMPLES, "logformat.conf")))
    s.start()
    assert s.get("/x.txt")[2] == b"degraded\n"
    log = os.path.join(s.root, "access.log")
    assert qcharness.wait_for(lambda: os.path.exists(log)
                              and "x.txt" in open(log).read())
    line = [l for l in open(log).read().splitlines() if "/x.txt" in l][0]
    assert line.endswith('"degraded 1/2 m=1.00 basic fixed"'), line


def test_operating_md_names_every_metric(pages):
    """doc/operating.md's table names each metric the pages declare, and
    no other."""
    with open(os.path.join(qcharness.TOP_SRCDIR, "doc", "operating.md")) as f:
        doc = f.read()
    named = set(re.findall(r"`(qosctl_[a-z_]+)(?:\{[a-z]+\})?`", doc))
    declared = set()
    for text in pages.values():
        declared |= set(families(text)[0])
    assert declared - named == set()
    # The power figure needs QosCtlPowerModel or RAPL; qosctl_combined
    # is the example's LogFormat.
    assert named - declared <= {"qosctl_power_watts", "qosctl_combined"}, \
        named - declared
