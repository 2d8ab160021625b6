"""QosCtl LogOnly, the dry run, on a real Apache.

The controller runs and decides as under QosCtl On, but every request is
served as with QosCtl Off: from the top tree, never 503.  The request
note (%{qosctl}n) says what would have happened, and the status page
shows the levels it would set and the shares of requests it would have
degraded and rejected.  A pinned level (QosCtlFixedLevel) makes the
decisions certain; the shaped link of bench/testbed makes a real
overload for the controller.  No timing is asserted.
"""

import json
import os
import re
import threading
import time

import pytest

import qcharness
from test_controller import (linkbed, read_log, shaped_apache,  # noqa: F401
                             start_shaped)

TREES = "QosCtlContentTrees /degraded /full\n"
LOG = ("LogFormat \"%U %>s %{qosctl}n\" qc\n"
       "CustomLog reasons.log qc\n")


@pytest.mark.parametrize("value", ["On", "on", "OFF", "Off", "LogOnly",
                                   "logonly", "LOGONLY", "logOnly"])
def test_directive_takes_on_off_logonly_in_any_case(apache, value):
    rc, out = apache.config_test("QosCtl %s\n%s" % (value, TREES))
    assert rc == 0, out
    assert "Syntax OK" in out


@pytest.mark.parametrize("value", ["Maybe", "1", "true", "Log-Only",
                                   "LogOnlyX", "DetectionOnly"])
def test_directive_rejects_other_values_naming_them(apache, value):
    rc, out = apache.config_test("QosCtl %s\n" % value)
    assert rc != 0, out
    assert "QosCtl" in out and "'%s'" % value in out, out
    assert "On, Off or LogOnly" in out, out
    assert "Traceback" not in out


def test_directive_takes_one_value(apache):
    rc, out = apache.config_test("QosCtl On LogOnly\n")
    assert rc != 0 and "QosCtl" in out, out
    rc, out = apache.config_test("<VirtualHost 127.0.0.1:1>\n"
                                 "QosCtl LogOnly\n</VirtualHost>\n")
    assert rc != 0 and "QosCtl" in out and "VirtualHost" in out, out


def reasons(server):
    with open(os.path.join(server.root, "reasons.log")) as f:
        return f.read().splitlines()


def test_pinned_level_is_logged_not_applied(server_factory):
    # m = 0.5 from one client: about half its requests would be refused,
    # the rest served from /degraded.  All are served in full.
    s = server_factory("QosCtl LogOnly\n" + TREES + "QosCtlFixedLevel 0.5\n"
                       "QosCtlReasonHeader On\n" + LOG).start()
    n = 200
    replies = [s.get("/x.txt") for _ in range(n)]
    assert {(code, body) for code, _, body in replies} == {(200, b"full\n")}
    told = {h.get("X-QosCtl-Reason") for _, h, _ in replies}
    assert told == {"would-reject m=0.50 basic fixed",
                    "would-degrade 1/2 m=0.50 basic fixed"}, told
    # QOSCTL_LEVEL and X-QosCtl-Level are for degraded replies only
    assert all("X-QosCtl-Level" not in h for _, h, _ in replies)

    # Responses are counted as log_transaction runs, just after the reply
    # is sent: until the last is, a bounded wait.
    assert qcharness.wait_for(lambda: sum(s.vhost()["classes"]["basic"]
                                          ["tree_responses"]) >= n, 10, 0.05)
    basic = s.vhost()["classes"]["basic"]
    would = basic["would"]
    assert basic["rejected"] == 0
    assert basic["tree_responses"] == [0, n]
    assert would["m"] == 0.5
    assert would["rejected"] + would["degraded"] == n
    assert would["tree_arrived"] == [would["degraded"]]
    assert 0.3 <= would["rejected_share"] <= 0.7, would
    assert would["degraded_share"] + would["rejected_share"] == \
        pytest.approx(1.0)
    assert s.status()["log_only"] is True

    prom = s.get("/qosctl-status?format=prometheus", port=s.sport)[2]
    prom = prom.decode()
    assert "\nqosctl_log_only 1\n" in prom
    assert re.search(r'qosctl_would_level\{vhost="localhost[^"]*",'
                     r'class="basic"\} 0\.5\n', prom), prom
    assert re.search(r'qosctl_would_rejected_total\{vhost="localhost[^"]*",'
                     r'class="basic"\} %d\n' % would["rejected"], prom)
    html = s.get("/qosctl-status", port=s.sport)[2].decode()
    assert "Dry run (QosCtl LogOnly)" in html

    s.stop()
    lines = reasons(s)
    assert "/x.txt 200 would-reject m=0.50 basic fixed" in lines, lines
    assert "/x.txt 200 would-degrade 1/2 m=0.50 basic fixed" in lines, lines
    assert not any(" 503 " in line or line.endswith(" -")
                   for line in lines if line.startswith("/x.txt")), lines


def test_agent_weighs_what_is_served_not_what_would_be(server_factory):
    # Under QosCtl On this host rejects, and the agent check drains the
    # server (test_agent); under LogOnly everyone is served in full.
    from test_agent import REPLY, ask
    aport = qcharness.free_port()
    s = server_factory("QosCtl LogOnly\n" + TREES + "QosCtlFixedLevel 0.5\n"
                       "QosCtlAgentListen 127.0.0.1:%d\n" % aport).start()
    assert qcharness.wait_for(lambda: s.status()["controller"]["periods"])
    reply = qcharness.wait_for(lambda: REPLY.match(ask(aport)))
    assert reply and int(reply.group(1)) >= 55, reply


def test_on_shows_no_dry_run(server_factory):
    s = server_factory("QosCtl On\n" + TREES + "QosCtlFixedLevel 1\n")
    s.start()
    assert s.get("/x.txt")[2] == b"degraded\n"
    doc = s.status()
    assert doc["log_only"] is False
    assert "would" not in s.vhost()["classes"]["basic"]
    prom = s.get("/qosctl-status?format=prometheus", port=s.sport)[2]
    assert b"\nqosctl_log_only 0\n" in prom
    assert b"qosctl_would_" not in prom
    html = s.get("/qosctl-status", port=s.sport)[2]
    assert b"Dry run" not in html


def test_overload_on_a_link_is_served_in_full(linkbed):  # noqa: F811
    # About twice what the link carries at the bound with 64 KB replies,
    # from 40 client addresses: under QosCtl On the controller degrades
    # (test_controller); under LogOnly it only says it would.
    tb = linkbed
    a, status = shaped_apache(tb, "100M", "QosCtl LogOnly\n"
                              "QosCtlModel 0.02 0.08 0.01\n" + LOG)
    seen = []
    try:
        start_shaped(a)
        result = {}
        load = threading.Thread(target=lambda: result.update(
            qcharness.httperf_clients(tb.server_addr, a.port, "/img.bin",
                                      250, 12, clients=40, timeout=5,
                                      netns=tb.client_ns[0])))
        load.start()
        deadline = time.time() + 60
        while load.is_alive() and time.time() < deadline:
            seen.append(status()["vhosts"][0]["classes"]["basic"])
            time.sleep(1.0)
        load.join(120)
        doc = status()
        rows = read_log(os.path.join(a.root, "ctl.tsv"))
        a.stop()
        lines = reasons(a)
    finally:
        a.cleanup()
    basic = doc["vhosts"][0]["classes"]["basic"]
    would = basic["would"]
    print("LogOnly on the link: would-be m over the run %s; would degrade "
          "%.3f, reject %.3f; httperf %d replies, %d errors of %d"
          % ([round(c["m"], 2) for c in seen], would["degraded_share"],
             would["rejected_share"], result["replies"], result["errors"],
             result["offered"]))
    assert doc["log_only"] is True
    # served as with QosCtl Off: no 503, nothing from /degraded
    assert result["s5xx"] == 0 and result["s2xx"] == result["replies"]
    assert basic["rejected"] == 0 and basic["tree_responses"][0] == 0
    assert basic["tree_responses"][1] > 0
    img = [line for line in lines if line.startswith("/img.bin ")]
    assert img and all(line.split()[1] == "200" for line in img)
    # and the controller would have acted
    assert min(c["m"] for c in seen) < 2.0, seen
    assert min(r["m"] for r in rows if r["R"] > 0) < 2.0
    assert would["degraded"] + would["rejected"] > 0, would
    assert would["degraded_share"] + would["rejected_share"] > 0.05, would
    assert any(" would-degrade " in line or " would-reject " in line
               for line in img), img[:20]
    # ... as far as On would: the lowest tree carries this load, so the
    # would-be level holds above it and refuses nothing (decided on the
    # virtual plant, controller/qc_ctl_dry.c; on the saturated link
    # itself it went to the lowest tree and below, 4% would-be 503s)
    loaded = sorted(r["m"] for r in rows if r["R"] > 0)
    assert loaded[len(loaded) // 2] > 1.05, loaded
    # the log shows both readings: the full link's, and the virtual
    # plant's at the would-be levels, which degrading lowers
    full = [r for r in rows if r["R"] > 0 and r["U_measured"] >= 0.95]
    assert full and all(0.0 <= r["U_decided"] <= 1.0 for r in full), full
    assert any(r["U_decided"] < r["U_measured"] - 0.05 for r in full), \
        [(r["U_measured"], r["U_decided"]) for r in full]
    assert would["rejected_share"] <= 0.01, would
    # what it says it would do matches its counts (a reply still on the
    # link when the server stops may go unlogged)
    noted = sum(1 for line in img if " would-" in line)
    counted = would["degraded"] + would["rejected"]
    assert 0.95 * counted - 5 <= noted <= counted, (noted, counted)
