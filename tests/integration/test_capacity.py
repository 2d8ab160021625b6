"""The capacity estimate (Tsai et al., queue monitoring) on a real Apache:
exported on the status page, in JSON and Prometheus; a lower bound while
nothing was hard; adapted down once the kernel drops connection
attempts at a server that cannot keep up.  Rates are compared with what
the test configures, never with wall-clock thresholds."""

import json
import os

import pytest

import qcharness
from test_controller import parse_prometheus

T = 0.25
BASE = ("QosCtl On\nQosCtlPeriod %s\nQosCtlContentTrees /degraded /full\n"
        "QosCtlExclude /qosctl-status\n"
        "<Location /qosctl-status>\n  SetHandler qosctl-status\n"
        "</Location>\n" % T)

wait_for = qcharness.wait_for


@pytest.fixture
def apache(site_factory):
    return lambda extra="", **kw: site_factory(extra=BASE + extra, **kw)


def capacity(a):
    return a.status_json()["capacity"]


def test_capacity_is_exported_and_a_lower_bound_at_light_load(apache):
    a = apache().start()
    wait_for(lambda: a.status_json()["controller"]["periods"] >= 2)
    for _ in range(20):
        assert a.get("/x.txt")[0] == 200
    # the fast start follows the peak rate of attempts up
    wait_for(lambda: (capacity(a)["requests_per_second"] or 0) > 0)
    c = capacity(a)
    assert c["lower_bound"] is True
    assert c["drop_tolerance"] == pytest.approx(0.01)
    assert 0.0 <= c["drop_ratio"] <= 1.0
    assert -1.0 <= c["headroom"] <= 1.0
    assert 0 < c["full_quality"] <= c["requests_per_second"]
    # Ohta and Andou's passive metric, on the server's side: our 20 GETs
    # were attempts, and every one answered.
    syn = a.status_json()["syn"]
    assert syn["received"] >= 20 and syn["answered"] >= 20, syn
    assert syn["answered"] <= syn["received"]
    assert syn["ratio"] >= 0.0

    code, _, body = a.get("/qosctl-status?format=prometheus")
    assert code == 200
    _, samples = parse_prometheus(body.decode())
    got = {s[0]: s[2] for s in samples}
    for name in ("qosctl_capacity_requests_per_second",
                 "qosctl_capacity_full_quality_requests_per_second",
                 "qosctl_capacity_lower_bound", "qosctl_drop_ratio",
                 "qosctl_headroom_ratio", "qosctl_syn_ratio",
                 "qosctl_syn_received_total", "qosctl_syn_answered_total"):
        assert name in got, name
    assert got["qosctl_capacity_lower_bound"] == 1
    code, _, body = a.get("/qosctl-status")
    assert code == 200 and b"Capacity: at least" in body


SLOW = "#!/bin/sh\nsleep 0.2\nprintf 'Content-Type: text/plain\\n\\nok\\n'\n"


def test_capacity_adapts_down_when_attempts_are_dropped(apache):
    # Two workers, 0.2 s a request: about 10 requests/s.  A backlog of 2
    # overflows when 40 connections/s are offered, and the kernel drops
    # attempts: the estimate leaves its lower bound and comes down to
    # what was served, well under what was offered.
    a = apache("QosCtlFixedLevel 2\nListenBacklog 2\n"
               "AddHandler cgi-script .cgi\n", modules=["cgid"],
               mpm_conf="StartServers 1\nServerLimit 1\nThreadsPerChild 2\n"
               "MaxRequestWorkers 2\nMinSpareThreads 1\n"
               "MaxSpareThreads 2\n")
    a.write_conf(a.extra + '<Directory "%s">\n  Options +ExecCGI\n'
                 '</Directory>\n' % a.docroot)
    for tree in ("full", "degraded"):
        path = os.path.join(a.docroot, tree, "slow.cgi")
        with open(path, "w") as f:
            f.write(SLOW)
        os.chmod(path, 0o755)
    a.start()
    wait_for(lambda: a.status_json()["controller"]["periods"] >= 2)
    seen = {"drops": 0.0}

    def adapted():
        c = capacity(a)
        seen["drops"] = max(seen["drops"], c["drop_ratio"] or 0.0)
        return not c["lower_bound"]

    rep = qcharness.httperf("127.0.0.1", a.port, "/slow.cgi", rate=40,
                            num_conns=200, timeout=3, nice=19)
    assert rep["connections"] >= 1
    assert wait_for(adapted, limit=10.0), (capacity(a), seen, a.log())
    c = capacity(a)
    print("capacity %.1f req/s (served at most ~10/s, offered 40/s); "
          "highest drop ratio read %.3f; client errors %d" % (
              c["requests_per_second"], seen["drops"], rep["errors"]))
    assert c["requests_per_second"] < 40
    assert json.loads(json.dumps(c))["headroom"] <= 1.0


def test_power_from_the_admins_model_and_none_without(apache):
    """This machine has no RAPL (powercap): with QosCtlPowerModel the
    estimate is the model on the CPU's utilization, within idle..max;
    without it, none, and no metric."""
    if os.path.isdir("/sys/class/powercap"):
        pytest.skip("RAPL would be used here, not the model")
    a = apache("QosCtlPowerModel 90 250\n").start()
    wait_for(lambda: a.status_json()["controller"]["periods"] >= 3)
    p = a.status_json()["power"]
    assert p["source"] == "model"
    assert 90.0 <= p["watts"] <= 250.0
    code, _, body = a.get("/qosctl-status?format=prometheus")
    assert code == 200
    _, samples = parse_prometheus(body.decode())
    watts = [s for s in samples if s[0] == "qosctl_power_watts"]
    assert len(watts) == 1 and 90.0 <= watts[0][2] <= 250.0
    assert 'source="model"' in body.decode()
    code, _, body = a.get("/qosctl-status")
    assert code == 200 and b"Power: " in body
    a.stop()

    b = apache().start()
    wait_for(lambda: b.status_json()["controller"]["periods"] >= 2)
    p = b.status_json()["power"]
    assert p["source"] is None and p["watts"] is None
    code, _, body = b.get("/qosctl-status?format=prometheus")
    assert b"qosctl_power_watts" not in body
