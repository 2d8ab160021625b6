"""HAProxy's agent check (QosCtlAgentListen) on a real Apache, and in
front of it a real HAProxy (Debian's haproxy; skipped without it).

The agent answers a weight percentage and a maxconn hint, never an
administrative word: HAProxy's "ready" and "drain" would end a
maintenance an operator set.  0% (shown as DRAIN) while the server
rejects; 100% when the controller is silent, as the module then serves
everyone at full quality.  Levels are pinned with QosCtlFixedLevel so
that what the agent must say is known; the controller's own levels
reach the same code (tests/unit/test_agent.c).  Nothing here is timed:
HAProxy's state is polled until it shows what is asserted.
"""

import functools
import os
import re
import signal
import socket
import sys
import threading
import time

import pytest

import qcharness

sys.path.insert(0, os.path.join(os.path.dirname(__file__),
                                "..", "..", "bench", "lib"))
from qcdrip import Drip, agent_reply  # noqa: E402  (bench/soak's)

T = 0.25
wait_for = qcharness.wait_for
REPLY = re.compile(r"^(\d+)% maxconn:(\d+)\n$")
HAPROXY = qcharness.HAPROXY


def base(aport, extra="", trees="/degraded /full", listen="127.0.0.1:%d"):
    return (("QosCtl On\nQosCtlPeriod %s\n"
             "QosCtlContentTrees %s\n"
             "QosCtlAgentListen " + listen + "\n"
             "QosCtlExclude /qosctl-status /sub /qosctl-health\n"
             "<Location /qosctl-status>\n  SetHandler qosctl-status\n"
             "</Location>\n"
             "<Location /qosctl-health>\n  SetHandler qosctl-health\n"
             "</Location>\n%s") % (T, trees, aport, extra))


def ask(port, send=b"", timeout=10):
    return agent_reply(port, send, timeout).decode("ascii", "replace")


def weight(port, send=b""):
    m = REPLY.match(ask(port, send))
    assert m, ask(port, send)
    return int(m.group(1))


controller = qcharness.controller
fresh_controller = functools.partial(qcharness.fresh_controller, period=T)


@pytest.fixture
def apache(site_factory):
    def make(extra="", trees="/degraded /full", listen="127.0.0.1:%d",
             **kw):
        aport = qcharness.free_port()
        a = site_factory(extra=base(aport, extra, trees, listen), **kw)
        a.aport = aport
        a.start()
        assert wait_for(lambda: controller(a)["periods"] >= 2)
        return a

    return make


def test_idle_server_answers_a_weight_and_maxconn(apache):
    # Pinned at full quality: the CPU sensor sees the whole machine,
    # which other tests may load past the bound.
    a = apache("QosCtlFixedLevel 2\n")
    w = weight(a.aport)
    # Full quality: 100 idle, 55 at the bound (the CPU sensor sees the
    # whole machine, which other tests may load).
    assert 55 <= w <= 100, w
    m = REPLY.match(ask(a.aport))
    # event MPM, qcharness's MaxRequestWorkers 100
    assert int(m.group(2)) == 100, m.group(0)


def test_rejecting_server_drains_and_degrading_one_weighs_less(apache):
    a = apache("QosCtlFixedLevel 0.5\n"
               "Listen 127.0.0.1:{p}\n<VirtualHost 127.0.0.1:{p}>\n"
               "  ServerName degraded.test\n  QosCtlFixedLevel 1.5\n"
               "</VirtualHost>\n".format(p=qcharness.free_port()))
    # The whole server: one of its hosts rejects.
    assert weight(a.aport) == 0
    assert weight(a.aport, b"localhost\n") == 0
    # One host, by name or name:port: half way to the lowest tree.
    assert weight(a.aport, b"degraded.test\n") == 33
    port = [v["key"] for v in a.status_json()["vhosts"]
            if v["key"].startswith("degraded.test:")][0].split(":")[1]
    assert weight(a.aport, ("degraded.test:%s\r\n" % port).encode()) == 33


def test_bad_agent_send_gets_the_server_reply_and_a_log_line(apache):
    a = apache("QosCtlFixedLevel 2\n"
               "Listen 127.0.0.1:{p}\n<VirtualHost 127.0.0.1:{p}>\n"
               "  ServerName degraded.test\n  QosCtlFixedLevel 1.5\n"
               "</VirtualHost>\n".format(p=qcharness.free_port()))
    whole = weight(a.aport)
    assert whole == 33
    for junk in (b"\xff\xfe garbage; ready\n", b"x" * 5000, b"\x00\n"):
        assert weight(a.aport, junk) == whole, junk
    # A peer that sends and never reads gets its reply dropped, and the
    # agent goes on.
    with socket.create_connection(("127.0.0.1", a.aport), 10) as s:
        s.sendall(b"y" * 100000)
    assert weight(a.aport) == whole
    # One line for the first bad input, then silence for a minute.
    assert wait_for(lambda: "QosCtl: agent: agent-send" in a.log())
    assert a.log().count("QosCtl: agent:") == 1, a.log()


def test_stopped_and_killed_controller_leave_full_weight(apache):
    a = apache("QosCtlUtilizationBound 0.01\n")
    pid = controller(a)["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        # Silent for three periods: the module fails open, and the agent
        # (the supervisor, not the stopped controller) says so.
        assert wait_for(lambda: weight(a.aport) == 100, limit=20)
    finally:
        os.kill(pid, signal.SIGCONT)
    os.kill(pid, signal.SIGKILL)
    # Answered while the supervisor starts another controller, and after.
    assert REPLY.match(ask(a.aport))
    assert wait_for(lambda: controller(a)["pid"] not in (pid, 0, None),
                    limit=20)
    assert REPLY.match(ask(a.aport))


def _has_ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def test_an_unknown_host_name_is_neither_confirmed_nor_denied(apache):
    """A name of no host gets what a host at full quality gets, not the
    whole server's weight: an agent check cannot tell it from a real,
    idle host.  (The admin gets the log line.)"""
    a = apache("QosCtlFixedLevel 2\n"
               "Listen 127.0.0.1:{p}\n<VirtualHost 127.0.0.1:{p}>\n"
               "  ServerName degraded.test\n  QosCtlFixedLevel 1.5\n"
               "</VirtualHost>\n".format(p=qcharness.free_port()))
    assert weight(a.aport) == 33
    assert weight(a.aport, b"degraded.test\n") == 33
    known = weight(a.aport, b"localhost\n")
    # 100 idle, 55 at the bound (the machine's CPU), never the 33 of
    # the whole server that used to give unknown names away.
    assert 55 <= known <= 100, known
    for name in (b"no-such-host.test\n", b"degraded.test:1\n",
                 b"localhost.invalid\n"):
        reply = ask(a.aport, name)
        m = REPLY.match(reply)
        assert m, reply
        assert 55 <= int(m.group(1)) <= 100, (name, reply)
        assert m.group(2) == REPLY.match(ask(a.aport, b"localhost\n")) \
            .group(2)
    assert wait_for(lambda: "names no virtual host: no-such-host.test"
                    in a.log())


def listening_on(port):
    """The local addresses of the TCP sockets that listen on port."""
    found = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(name) as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                addr, p = local.split(":")
                if state == "0A" and int(p, 16) == port:
                    found.append(addr)
    return found


def test_a_port_alone_listens_on_loopback_only(apache):
    a = apache(listen="%d")
    assert listening_on(a.aport) == ["0100007F"]        # 127.0.0.1
    assert REPLY.match(ask(a.aport))


# -- clients that send slowly hold up nothing --------------------------------

def test_dripping_clients_hold_up_neither_checks_nor_the_watchdog(apache):
    """100 connections that each send a byte every 15 ms: an honest
    check is still answered at once, and a stopped controller is still
    replaced by the supervisor's watch (at QC_HUNG_MIN_SEC, 15 s)."""
    a = apache()
    with Drip(a.aport) as drip:
        assert wait_for(lambda: drip.opened >= 200, limit=20)
        took = []
        for _ in range(10):
            t0 = time.monotonic()
            assert REPLY.match(ask(a.aport, b"localhost\n"))
            took.append(time.monotonic() - t0)
            time.sleep(0.2)
        # It took 3.6 s when one connection was served at a time.
        assert max(took) < 1.0, took
        old = wait_for(lambda: fresh_controller(a), limit=10)["pid"]
        os.kill(old, signal.SIGSTOP)
        try:
            new = wait_for(lambda: fresh_controller(a, not_pid=old),
                           limit=40, step=0.2)
        finally:
            if qcharness.alive(old):
                os.kill(old, signal.SIGCONT)
        assert new, a.log()
        # Replaced by the supervisor, which the drip did not hold up.
        assert re.search(r"controller pid %d hung for [0-9.]+ s; replaced"
                         % old, a.log()), a.log()
        assert "killed by httpd's parent" not in a.log()
        assert REPLY.match(ask(a.aport))
    print("agent check under a 100-connection drip: max %.3f s" % max(took))


def test_config_errors_name_the_directive(tmp_path):
    a = qcharness.Apache(extra="QosCtl On\n")
    try:
        for bad in ("0", "65536", "host:", "localhost:0", "x y",
                    "127.0.0.1:99999", "[::1", "-5"):
            rc, out = a.config_test("QosCtl On\nQosCtlAgentListen %s\n"
                                    % bad)
            assert rc != 0, bad
            assert "QosCtlAgentListen" in out and bad.split()[0] in out, out
        rc, out = a.config_test("QosCtl On\n<VirtualHost *:80>\n"
                                "QosCtlAgentListen 8471\n</VirtualHost>\n")
        assert rc != 0 and "QosCtlAgentListen" in out, out
        # -t binds the address (port 0): ::1 only where it exists.
        for good in ("8471", "127.0.0.1:8471") + (
                ("[::1]:8471",) if _has_ipv6_loopback() else ()):
            rc, out = a.config_test("QosCtl On\nQosCtlAgentListen %s\n"
                                    % good)
            assert rc == 0, out
    finally:
        a.cleanup()


# -- a real HAProxy -----------------------------------------------------------

class Haproxy(qcharness.Haproxy):
    """In front of one Apache, agent-checking it."""

    def __init__(self, backend_port, agent_port):
        super().__init__(
            "backend be\n  balance leastconn\n"
            "  option httpchk GET /qosctl-health\n"
            "  server web 127.0.0.1:%d weight 100 check inter 200ms "
            "agent-check agent-addr 127.0.0.1 agent-port %d "
            "agent-inter 200ms\n" % (backend_port, agent_port))

    def server(self):
        return self.servers()["web"]


@pytest.fixture
def haproxy():
    if not os.access(HAPROXY, os.X_OK):
        pytest.skip("haproxy is not installed (apt-get install haproxy)")
    made = []

    def make(*args):
        h = Haproxy(*args)
        made.append(h)
        return h

    yield make
    for h in made:
        h.cleanup()


# srv_admin_state bits (HAProxy's SRV_ADMF_*): 0x01 forced maintenance
FMAINT = 0x01


def test_haproxy_drains_a_rejecting_server_and_takes_it_back(apache,
                                                             haproxy):
    a = apache("QosCtlFixedLevel 0.5\n")
    h = haproxy(a.port, a.aport)
    # The health check (an excluded path) keeps it up; the agent drains.
    assert wait_for(lambda: h.server()["srv_uweight"] == "0", limit=20)
    assert h.server()["srv_op_state"] == "2"        # running
    # Up, at weight 0: no new connections (the HTML stats page says
    # DRAIN), and nothing for the agent to undo but its own weight.
    stat = [l.split(",") for l in h.command("show stat").splitlines()]
    cols = stat[0]
    cols[0] = cols[0].lstrip("# ")
    web = dict(zip(cols, [r for r in stat if r[:2] == ["be", "web"]][0]))
    assert (web["status"], web["weight"]) == ("UP", "0"), web
    a.graceful(base(a.aport, "QosCtlFixedLevel 2\n"))
    assert wait_for(lambda: int(h.server()["srv_uweight"]) >= 55, limit=20)


def test_agent_never_ends_an_operators_maintenance(apache, haproxy):
    a = apache()
    h = haproxy(a.port, a.aport)
    assert wait_for(lambda: int(h.server()["srv_uweight"]) >= 55, limit=20)
    assert h.command("set server be/web state maint").strip() == ""
    assert int(h.server()["srv_admin_state"]) & FMAINT
    # Many agent intervals (200 ms) later it is still in maintenance; a
    # reply of "ready" or "drain" would have ended it.
    for _ in range(15):
        time.sleep(0.2)
        assert int(h.server()["srv_admin_state"]) & FMAINT
    h.command("set server be/web state ready")
    assert wait_for(lambda: not int(h.server()["srv_admin_state"])
                    & FMAINT)


def test_haproxy_keeps_a_server_whose_controller_died(apache, haproxy):
    a = apache("QosCtlFixedLevel 2\n")
    h = haproxy(a.port, a.aport)
    assert wait_for(lambda: int(h.server()["srv_uweight"]) >= 55, limit=20)
    pid = controller(a)["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        assert wait_for(lambda: h.server()["srv_uweight"] == "100",
                        limit=20)
        assert h.server()["srv_op_state"] == "2"
    finally:
        os.kill(pid, signal.SIGCONT)


def test_haproxy_drains_while_the_controller_rejects(apache, haproxy):
    # The controller's own rejection, not a pinned level: one tree (no
    # degraded one), loopback counted as a 2 Mbit/s link, and 64 KB
    # replies at about 10 Mbit/s, open loop (httperf: a refused client
    # goes away, so refusing relieves the link; closed-loop clients
    # that come back at once are not refused, doc/control.md,
    # "Refusing").  Only refusing can hold the bound, so the controller
    # refuses and the agent drains; when the load stops the level comes
    # back and so does the weight.  Other traffic on loopback only adds
    # to the overload.
    a = apache("QosCtlResource link lo 2Mbit\nQosCtlUtilizationBound 0.5\n",
               trees="/full")
    with open(os.path.join(a.docroot, "full", "64k.bin"), "wb") as f:
        f.write(b"q" * 65536)
    h = haproxy(a.port, a.aport)
    assert wait_for(lambda: int(h.server()["srv_uweight"]) >= 10, limit=20)
    rep = {}
    load = threading.Thread(target=lambda: rep.update(qcharness.httperf(
        "127.0.0.1", a.port, "/64k.bin", rate=20, num_conns=20 * 25,
        timeout=5, wall_limit=90)), daemon=True)
    load.start()
    try:
        assert wait_for(lambda: h.server()["srv_uweight"] == "0", limit=50)
        assert h.server()["srv_op_state"] == "2"
    finally:
        load.join(100)
    assert rep.get("s5xx", 0) > 0, rep.get("raw", "")[-300:]
    assert wait_for(lambda: int(h.server()["srv_uweight"]) >= 10, limit=40)


def test_health_handler_answers_even_when_rejecting(apache):
    a = apache("QosCtlFixedLevel 0\n")
    assert a.get("/x.txt")[0] == 503
    code, headers, body = a.get("/qosctl-health")
    assert (code, body) == (200, b"ok\n")
    assert headers.get("Cache-Control") == "no-store"
    req = b"POST /qosctl-health HTTP/1.0\r\nContent-Length: 0\r\n\r\n"
    assert a.raw_reply(req).startswith(b"HTTP/1.1 405")
