"""tools/qosctl-balance: Ohta and Andou's delta-shift rule as a pure function,
against hand-worked steps and a simulated cluster of capacities 4:2:1;
the runtime API's answers as a real haproxy 2.6 gives them; one interval
of the loop against a fake runtime API; bad input gets one line and
exit 2; conf/examples/haproxy.cfg passes haproxy -c."""

import io
import math
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import types

import pytest

from tooltest import TOP, load_tool, tool_path

TOOL = tool_path("qosctl-balance")
B = load_tool("qosctl-balance")


def run(*args, timeout=60):
    return subprocess.run([sys.executable, TOOL] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=timeout)


# -- the rule, by hand ------------------------------------------------------


def test_one_step_by_hand():
    """r = (0.5, 0.3, 0.2), R = (0.1, 0.5, 0.2), DELTA 0.1: server 1 has
    the largest R; delta = 0.1 * 0.3 = 0.03 leaves it, 0.015 to each of
    the two others."""
    got = B.shift([0.5, 0.3, 0.2], [0.1, 0.5, 0.2], 0.1)
    assert got == pytest.approx([0.515, 0.27, 0.215])
    assert sum(got) == pytest.approx(1.0)


def test_equal_metrics_move_nothing():
    """No server is worse off than the others: all idle (R = 0 for
    every one), or all equally overloaded."""
    assert B.shift([0.6, 0.4], [0.0, 0.0], 0.1) == [0.6, 0.4]
    assert B.shift([0.2, 0.3, 0.5], [1.5, 1.5, 1.5], 0.1) == [0.2, 0.3, 0.5]
    assert B.choose([0.6, 0.4], [0.0, 0.0]) is None


def test_ties_cut_the_largest_share_then_the_first():
    assert B.choose([0.2, 0.5, 0.3], [1.0, 1.0, 0.0]) == 1
    assert B.choose([0.4, 0.4, 0.2], [1.0, 1.0, 0.0]) == 0


def test_no_synack_is_the_worst():
    """A server that answers no SYN (R = inf) is cut first."""
    assert B.choose([0.2, 0.5, 0.3], [math.inf, 3.0, 0.0]) == 0
    got = B.shift([0.2, 0.5, 0.3], [math.inf, 3.0, 0.0], 0.5)
    assert got == pytest.approx([0.1, 0.55, 0.35])


def test_unmeasured_servers_keep_their_share():
    """Server 2 has no metric: it takes no part, n - 1 is 1."""
    got = B.shift([0.4, 0.4, 0.2], [0.9, 0.1, None], 0.1)
    assert got == pytest.approx([0.36, 0.44, 0.2])
    # NaN is no measure either; fewer than two measured: no step.
    assert B.shift([0.5, 0.5], [float("nan"), 1.0], 0.1) == [0.5, 0.5]
    assert B.shift([1.0], [3.0], 0.1) == [1.0]


def test_delta_must_be_inside_zero_one():
    for bad in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ValueError):
            B.shift([0.5, 0.5], [1.0, 0.0], bad)


def test_a_share_never_reaches_zero():
    """delta = DELTA r_j < r_j: a thousand cuts leave a positive share,
    and the weights never go below 1, so never all 0."""
    r = [0.5, 0.5]
    for _ in range(1000):
        r = B.shift(r, [1.0, 0.0], 0.1)
    assert r[0] > 0 and sum(r) == pytest.approx(1.0)
    assert B.weights_from_shares(r) == [1, 256]


def test_weights_from_shares():
    assert B.weights_from_shares([0.5, 0.25, 0.25]) == [256, 128, 128]
    assert B.weights_from_shares([4 / 7.0, 2 / 7.0, 1 / 7.0]) \
        == [256, 128, 64]
    assert B.shares_from_weights([100, 100, 50]) == [0.4, 0.4, 0.2]


# -- the rule on a simulated cluster ----------------------------------------

CAPACITY = [4.0, 2.0, 1.0]
TARGET = [c / sum(CAPACITY) for c in CAPACITY]


def overflow_metric(shares, load):
    """Ohta and Andou's R for a server offered share * load connections per
    unit of time and accepting at most its capacity: N_S the offered
    SYNs, N_A = min(N_S, capacity) the accepted ones,
    R = (N_S - N_A) / N_A."""
    out = []
    for r, c in zip(shares, CAPACITY):
        offered = r * load
        accepted = min(offered, c)
        out.append((offered - accepted) / accepted)
    return out


def error(shares):
    """The largest relative distance of a share from its capacity's."""
    return max(abs(r - t) / t for r, t in zip(shares, TARGET))


def simulate(load, delta=0.1, updates=60, proportional=False, noise=0.0):
    """The shares after each update, from Ohta and Andou's start (1/3 each);
    noise: each metric off by up to that share either way."""
    rnd = random.Random(1)
    r = [1.0 / 3] * 3
    out = []
    for _ in range(updates):
        metric = [m * (1.0 + noise * rnd.uniform(-1.0, 1.0))
                  for m in overflow_metric(r, load)]
        r = B.shift(r, metric, delta, proportional)
        out.append(r)
    return out


@pytest.mark.parametrize("overload", [1.1, 1.5, 3.0])
def test_simulated_cluster_overloaded(overload):
    """Capacities 4:2:1 offered 1.1, 1.5 and 3 times what the three
    carry, Ohta and Andou's DELTA 0.1 (its section 4.3), equal shares at
    the start (as in their paper).  The bounds follow from the rule:

    - While the cluster overflows, R_j = max(0, share_j load / c_j - 1)
      grows with share_j / c_j alone, so the rule cuts the largest
      share_j / c_j whatever the load: the same trajectory at every
      overload.
    - Only its own cuts lower a share, each by the factor 1 - DELTA: the
      smallest server's, from 1/3 to within 10% of 1/7, needs
      log(1.1 (1/7) / (1/3)) / log(1 - DELTA) of them (8), so no update
      before that one is within 10%.
    - Once there, one update moves a share from its target by at most
      a cut of DELTA of it, or the largest gain, DELTA/2 of the largest
      server's share given to the smallest: DELTA c_max / (2 c_min) of
      the smallest one's target.  The shares stay within that band,
      DELTA (1 + c_max / (2 c_min)) of their targets, swinging about
      them (the fixed cut never stops), and their mean lies within half
      of it.  Over 60 updates the second half is well past the start.

    So the exact rule with Ohta and Andou's DELTA converges, and its shares
    are proportional to capacity within that band and closer as a time
    average, but not at once (their trade-off of DELTA: see the next
    tests)."""
    delta, updates = 0.1, 60
    load = overload * sum(CAPACITY)
    traj = simulate(load, delta, updates)
    assert traj == simulate(3.0 * sum(CAPACITY), delta, updates)
    assert all(sum(r) == pytest.approx(1.0) and min(r) > 0 for r in traj)
    errs = [error(r) for r in traj]
    cuts = math.ceil(math.log(1.1 * TARGET[2] / (1.0 / 3))
                     / math.log(1.0 - delta))
    first = next(k + 1 for k, e in enumerate(errs) if e <= 0.10)
    assert first >= cuts == 8
    band = delta * (1.0 + max(CAPACITY) / (2.0 * min(CAPACITY)))
    half = traj[updates // 2:]
    assert max(error(r) for r in half) <= band
    mean = [sum(r[i] for r in half) / len(half) for i in range(3)]
    assert error(mean) <= band / 2


def test_simulated_cluster_below_capacity_settles():
    """Offered 0.9 times the capacity: once no server overflows, every
    R is 0 and nothing moves any more.  Measured: the shares stop at
    update 15 at (0.533, 0.312, 0.156), within 9.1% of 4:2:1."""
    traj = simulate(0.9 * sum(CAPACITY), updates=40)
    stop = next(k for k in range(1, len(traj)) if traj[k] == traj[k - 1])
    assert stop <= 15
    assert all(r == traj[stop] for r in traj[stop:])
    assert error(traj[-1]) < 0.10
    assert max(overflow_metric(traj[-1], 0.9 * sum(CAPACITY))) == 0.0


@pytest.mark.parametrize("overload", [1.1, 1.5, 3.0])
def test_proportional_cut_converges_within_10_updates(overload):
    """--proportional (DELTA 0.45, its default): the cut shrinks as the
    servers come level, so the shares settle on 4:2:1 instead of
    swinging about it.  Measured: first within 10% at update 8 (1.1x)
    and 6 (1.5x, 3x), and never out of it again; from update 18 on
    within 0.2%; with metrics up to 5% off at random, within 10% from
    update 8 (1.1x) and 6 on."""
    load = overload * sum(CAPACITY)
    errs = [error(r) for r in simulate(load, 0.45, proportional=True)]
    assert max(errs[7:]) <= 0.10                # from update 8 on
    assert max(errs[17:]) < 0.005
    noisy = [error(r) for r in simulate(load, 0.45, proportional=True,
                                        noise=0.05)]
    assert max(noisy[9:]) <= 0.10


def test_proportional_cut_holds_under_noise():
    """bench/shift at 1.2 C reads every R 1.1-1.6 from one update to the
    next.  Each server's offered/accepted (1 + R) up to 8% off at
    random, 100 runs of 20 updates: the shares stayed within 10% of
    4:2:1 from update 10 on in 53 runs (in 8 when the others shared a
    cut in equal parts, as Ohta and Andou's rule does, with DELTA 0.55), and
    93% of the updates from the 10th were within 10% (79%)."""
    load = 1.2 * sum(CAPACITY)
    held = inside = 0
    for seed in range(100):
        rnd = random.Random(seed)
        r = [1.0 / 3] * 3
        errs = []
        for _ in range(20):
            metric = [(1.0 + m) * (1.0 + 0.08 * rnd.uniform(-1.0, 1.0))
                      - 1.0 for m in overflow_metric(r, load)]
            r = B.shift(r, [max(0.0, m) for m in metric], 0.45, True)
            errs.append(error(r))
        held += max(errs[9:]) <= 0.10
        inside += sum(e <= 0.10 for e in errs[9:])
    assert held >= 40
    assert inside >= 0.85 * 100 * 11


def test_proportional_cut_by_hand():
    """R = (2, 0.5, 1): server 0 is cut by DELTA (2 - 0.5) / 3 = half of
    DELTA, and the others get it in proportion to their shares (3:2);
    an unanswering server (inf) is cut by DELTA whole; equal metrics
    move nothing."""
    r = B.shift([0.5, 0.3, 0.2], [2.0, 0.5, 1.0], 0.4, True)
    assert r == pytest.approx([0.4, 0.36, 0.24])
    r = B.shift([0.5, 0.3, 0.2], [math.inf, 0.5, 1.0], 0.4, True)
    assert r == pytest.approx([0.3, 0.42, 0.28])
    assert B.shift([0.5, 0.5], [1.0, 1.0], 0.4, True) == [0.5, 0.5]


def test_larger_delta_is_faster_but_swings():
    """Ohta and Andou's trade-off (section 4.2): DELTA 0.2 is within 10% of
    4:2:1 at update 10 already, but later swings up to about 48% from
    it; DELTA 0.1 swings up to about 23%."""
    load = 1.5 * sum(CAPACITY)
    fast = [error(r) for r in simulate(load, delta=0.2, updates=200)]
    slow = [error(r) for r in simulate(load, delta=0.1, updates=200)]
    assert fast[9] <= 0.10
    assert max(fast[100:]) > 2 * max(slow[100:])


def test_delta_near_one_oscillates():
    """Ohta and Andou's two-server example, DELTA 0.99: the load flips from
    one server to the other at every update."""
    cap = [1.0, 1.0]
    r = [0.5, 0.5]
    heavy = []
    for _ in range(6):
        load = 3.0
        metric = [max(0.0, x * load - c) / min(x * load, c)
                  for x, c in zip(r, cap)]
        metric[0] += 1e-9           # their "R for S0 becomes larger"
        r = B.shift(r, metric, 0.99)
        heavy.append(0 if r[0] > r[1] else 1)
    assert heavy == [1, 0, 1, 0, 1, 0]


# -- HAProxy's runtime API, as haproxy 2.6.12 (Debian 12) answers -----------

# "show servers state be" from haproxy 2.6.12-1+deb12u4 on
#   server s1 127.0.0.1:18081 check weight 100 agent-port 18471
#       agent-addr 127.0.0.2
#   server s2 127.0.0.1:18082 check weight 100 agent-check
#       agent-port 18472 agent-inter 2s
#   server s3 127.0.0.1:18083 weight 50
# after "set server be/s1 state drain", "set weight be/s1 60" and
# "disable server be/s2" (maintenance).
STATE = (
    "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state "
    "srv_admin_state srv_uweight srv_iweight srv_time_since_last_change "
    "srv_check_status srv_check_result srv_check_health srv_check_state "
    "srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port "
    "srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr "
    "srv_agent_port\n"
    "3 be 1 s1 127.0.0.1 2 8 60 100 0 15 3 4 6 0 0 0 - 18081 - 0 0 - "
    "127.0.0.2 18471\n"
    "3 be 2 s2 127.0.0.1 0 1 100 100 6 15 3 0 14 22 0 0 - 18082 - 0 0 - "
    "- 18472\n"
    "3 be 3 s3 127.0.0.1 2 0 50 50 7 1 0 2 0 0 0 0 - 18083 - 0 0 - - 0\n"
    "\n")


def test_parse_servers_state():
    got = B.parse_servers_state(STATE, "be")
    assert [s["name"] for s in got] == ["s1", "s2", "s3"]
    s1, s2, s3 = got
    assert (s1["addr"], s1["port"], s1["uweight"], s1["iweight"]) \
        == ("127.0.0.1", 18081, 60, 100)
    assert (s1["agent_addr"], s1["agent_port"]) == ("127.0.0.2", 18471)
    assert (s2["agent_addr"], s2["agent_port"]) == (None, 18472)
    assert s3["agent_port"] is None
    assert [B.server_state(s) for s in got] == ["DRAIN", "MAINT", None]
    # s2 runs HAProxy's own agent-check (0x16: configured, enabled,
    # agent); s1 has an agent-port only.
    assert s2["agent_state"] & B.CHK_ST_ENABLED
    assert not s1["agent_state"] & B.CHK_ST_ENABLED
    assert B.parse_servers_state(STATE, "other") == []


def test_parse_servers_state_errors():
    with pytest.raises(B.InputError, match="Can't find backend"):
        B.parse_servers_state("Can't find backend.\n\n", "nosuch")
    with pytest.raises(B.InputError, match="empty"):
        B.parse_servers_state("\n", "be")
    with pytest.raises(B.InputError, match="short line"):
        B.parse_servers_state(STATE.replace(" 18471\n", "\n"), "be")


def test_agent_address_from_state_or_option():
    s1, s2, s3 = B.parse_servers_state(STATE, "be")
    src = B.AgentSource({"s3": ("10.0.0.3", 8471)}, None, 1.0)
    assert src.address(s1) == ("127.0.0.2", 18471)
    assert src.address(s2) == ("127.0.0.1", 18472)     # srv_addr
    assert src.address(s3) == ("10.0.0.3", 8471)
    assert B.AgentSource({}, None, 1.0).address(s3) is None


@pytest.mark.parametrize("reply,pct", [
    ("73% maxconn:150\n", 73.0), ("weight:50%\n", 50.0),
    ("drain\n", 0.0), ("40% drain", 0.0), ("up ready\n", None),
    ("", None), ("garbage \x00\xff", None), ("150%", 100.0),
    ("75%\r\n10%", 75.0), ("maxconn:30,60%", 60.0),
    ("weight:50", 50.0), ("stopped#down for repair\n", 0.0),
    ("stopped #down for repair\n", 0.0)])
def test_parse_agent_reply(reply, pct):
    """As HAProxy reads an agent's line (configuration.txt, agent-check):
    words split on spaces, tabs and commas, up to the first CR or LF;
    weight:50 is absolute, here of an initial weight of 100."""
    assert B.parse_agent_reply(reply, 100) == pct


def test_syn_ratio():
    assert B.syn_ratio(10, 8) == pytest.approx(0.25)
    assert B.syn_ratio(8, 8) == 0.0
    assert B.syn_ratio(5, 0) == math.inf
    assert B.syn_ratio(0, 0) is None


def test_nft_script_and_counters():
    srv = [{"name": "a", "addr": "10.0.0.2", "port": 80},
           {"name": "b", "addr": "fd00::3", "port": 8080}]
    text = B.nft_script("qosctl_balance", srv)
    assert "table inet qosctl_balance {" in text
    assert ('ip daddr 10.0.0.2 tcp dport 80 tcp flags & (syn | ack) == '
            'syn counter name "syn_0"') in text
    assert ('ip6 saddr fd00::3 tcp sport 8080 tcp flags & (syn | ack) == '
            'syn | ack counter name "synack_1"') in text
    # As nft 1.0.6 prints `nft -j list counters table inet T`.
    listed = (
        '{"nftables": [{"metainfo": {"version": "1.0.6", "release_name": '
        '"Lester Gooch #5", "json_schema_version": 1}}, {"counter": '
        '{"family": "inet", "name": "syn_0", "table": "qb", "handle": 1, '
        '"packets": 7, "bytes": 420}}, {"counter": {"family": "inet", '
        '"name": "synack_0", "table": "qb", "handle": 2, "packets": 5, '
        '"bytes": 300}}]}')
    assert B.parse_nft_counters(listed, "qb") == {"syn_0": 7,
                                                  "synack_0": 5}
    with pytest.raises(B.Unavailable):
        B.parse_nft_counters("not json", "qb")


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("nft") is None,
                    reason="nft -c needs root and nftables")
def test_nft_script_is_valid_nftables():
    srv = [{"name": "a", "addr": "127.0.0.1", "port": 18081},
           {"name": "b", "addr": "::1", "port": 18082}]
    p = subprocess.run(["nft", "-c", "-f", "-"], text=True,
                       input=B.nft_script("qosctl_balance_check", srv),
                       capture_output=True, timeout=30)
    assert p.returncode == 0, p.stderr


# -- one interval of the loop, against a fake runtime API -------------------


class FakeRuntime:
    """Answers show servers state from `servers` (dicts as
    parse_servers_state returns) and records set weight."""

    def __init__(self, servers):
        self.servers = servers
        self.sets = []
        self.down = False

    def command(self, line):
        if self.down:
            raise B.Unavailable("gone")
        if line.startswith("show servers state"):
            rows = ["1", "# be_name srv_name srv_addr srv_op_state "
                    "srv_admin_state srv_uweight srv_iweight srv_port "
                    "srv_agent_state srv_agent_addr srv_agent_port"]
            for s in self.servers:
                rows.append("be %s 10.0.0.%d %d %d %d 100 80 0 - 0" % (
                    s["name"], len(rows), s.get("op", 2), s.get("admin", 0),
                    s["w"]))
            return "\n".join(rows) + "\n\n"
        if line.startswith("set weight be/"):
            name, w = line[len("set weight be/"):].split()
            self.sets.append((name, int(w)))
            for s in self.servers:
                if s["name"] == name:
                    s["w"] = int(w)
            return "\n"
        return "Unknown command.\n"


class FakeSource:
    kind = "agent"

    def __init__(self, metrics):
        self.metrics = metrics
        self.fail = False

    def setup(self, servers):
        pass

    def close(self):
        pass

    def measure(self, servers):
        if self.fail:
            raise B.Unavailable("nobody home")
        return {s["name"]: (self.metrics[s["name"]], "%g" %
                            self.metrics[s["name"]]) for s in servers}


def balancer(servers, metrics, dry_run=False):
    args = types.SimpleNamespace(backend="be", delta=0.1, proportional=False,
                                 dry_run=dry_run)
    rt, src, err = FakeRuntime(servers), FakeSource(metrics), io.StringIO()
    return B.Balancer(args, rt, src, err=err), rt, src, err


def test_step_sets_weights_and_leaves_maint_and_drain_alone():
    servers = [{"name": "a", "w": 100}, {"name": "b", "w": 100},
               {"name": "m", "w": 100, "admin": 1, "op": 0},
               {"name": "d", "w": 100, "admin": 8}]
    bal, rt, src, err = balancer(servers, {"a": 0.1, "b": 0.7, "m": 0.0,
                                           "d": 0.0})
    line = bal.step()
    # a, b at 0.5 each; b cut to 0.45, a to 0.55: 256 and 209.
    assert rt.sets == [("a", 256), ("b", 209)]
    assert line.endswith("a=0.1/256 b=0.7/209 m=MAINT d=DRAIN cut=b")
    bal.step()
    # a 0.595, b 0.405: b alone changes, to 174.
    assert rt.sets[2:] == [("b", 174)]
    assert servers[2]["w"] == 100 and servers[3]["w"] == 100
    assert err.getvalue() == ""


def test_step_follows_shares_not_rounded_weights():
    """The shares are kept between intervals: five cuts of b give
    0.5 * 0.9^5 (a share), not the rounding of five weights."""
    servers = [{"name": "a", "w": 100}, {"name": "b", "w": 100}]
    bal, rt, src, err = balancer(servers, {"a": 0.0, "b": 1.0})
    for _ in range(5):
        bal.step()
    rb = 0.5 * 0.9 ** 5
    assert servers[1]["w"] == round(256 * rb / (1 - rb))
    assert servers[0]["w"] == 256


def test_step_dry_run_sets_nothing():
    servers = [{"name": "a", "w": 100}, {"name": "b", "w": 100}]
    bal, rt, src, err = balancer(servers, {"a": 0.0, "b": 1.0},
                                 dry_run=True)
    lines = [bal.step() for _ in range(3)]
    assert rt.sets == []
    # The shares still follow the rule, as if set: 209, 174, 147.
    assert [ln.split()[2] for ln in lines] == ["b=1/209", "b=1/174",
                                               "b=1/147"]


def test_step_starts_again_from_an_operators_weight():
    servers = [{"name": "a", "w": 100}, {"name": "b", "w": 100}]
    bal, rt, src, err = balancer(servers, {"a": 0.0, "b": 1.0})
    bal.step()
    servers[0]["w"], servers[1]["w"] = 50, 150      # set weight by hand
    bal.step()
    # From 0.25 / 0.75: b cut to 0.675, a 0.325: 123 and 256.
    assert rt.sets[-2:] == [("a", 123), ("b", 256)]


def test_step_source_unavailable_leaves_weights_and_says_once():
    servers = [{"name": "a", "w": 100}, {"name": "b", "w": 100}]
    bal, rt, src, err = balancer(servers, {"a": 0.0, "b": 1.0})
    src.fail = True
    for _ in range(3):
        assert bal.step().endswith("cut=-")
    assert rt.sets == []
    assert err.getvalue().count("unavailable") == 1
    src.fail = False
    bal.step()
    assert rt.sets and "available again" in err.getvalue()
    rt.down = True
    assert bal.step() is None and bal.step() is None
    assert err.getvalue().count("runtime API unavailable") == 1


def test_step_one_server_in_play_is_never_set():
    servers = [{"name": "a", "w": 100},
               {"name": "m", "w": 100, "admin": 1}]
    bal, rt, src, err = balancer(servers, {"a": 1.0, "m": 0.0})
    assert bal.step().endswith("a=1/100 m=MAINT cut=-")
    assert rt.sets == []


# -- the command line -------------------------------------------------------


class FakeSocket:
    """A stats socket on a Unix path answering fixed replies, one
    command a connection, for the command line's checks."""

    def __init__(self, replies):
        self.dir = tempfile.mkdtemp(prefix="qosctl-balance-")
        self.path = os.path.join(self.dir, "admin.sock")
        self.replies = replies
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(self.path)
        self.srv.listen(8)
        self.srv.settimeout(0.2)
        self.stop = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stop:
            try:
                c, _ = self.srv.accept()
            except OSError:
                continue
            with c:
                c.settimeout(5)
                data = b""
                while not data.endswith(b"\n"):
                    chunk = c.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                cmd = data.decode().strip()
                reply = next((v for k, v in self.replies.items()
                              if cmd.startswith(k)), "Unknown command.\n")
                c.sendall(reply.encode())

    def close(self):
        self.stop = True
        self.thread.join(5)
        self.srv.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.mark.parametrize("args,words", [
    (["--backend", "be", "--metric", "agent"], "--socket"),
    (["--socket", "/x", "--metric", "agent"], "--backend"),
    (["--socket", "/x", "--backend", "be", "--metric", "rtt"], "--metric"),
    (["--socket", "/x", "--backend", "be", "--metric", "syn",
      "--delta", "1"], "--delta"),
    (["--socket", "/x", "--backend", "be", "--metric", "syn",
      "--delta", "nan"], "--delta"),
    (["--socket", "/x", "--backend", "be", "--metric", "syn",
      "--interval", "0"], "--interval"),
    (["--socket", "/x", "--backend", "be", "--metric", "agent",
      "--agent", "s1:8471"], "SERVER=HOST:PORT"),
    (["--socket", "/x", "--backend", "be", "--metric", "agent",
      "--agent", "s1=h:99999"], "SERVER=HOST:PORT"),
    (["--socket", "/x", "--backend", "be", "--metric", "syn",
      "--agent", "s1=h:1"], "go with --metric agent"),
    (["--socket", "/x", "--backend", "be", "--metric", "agent",
      "--window", "3"], "--window goes with"),
    (["--socket", "/x", "--backend", "be", "--metric", "syn",
      "--nft-table", "a b"], "--nft-table"),
    (["--socket", "/nonexistent/admin.sock", "--backend", "be",
      "--metric", "agent"], "no answer"),
])
def test_bad_input_one_line_exit_2(args, words):
    out = run(*args)
    assert out.returncode == 2
    assert out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert words in out.stderr
    assert "Traceback" not in out.stderr


def test_unknown_backend_and_level():
    fake = FakeSocket({"show servers state nosuch":
                       "Can't find backend.\n\n",
                       "show servers state be": STATE,
                       "show cli level": "operator\n\n"})
    try:
        out = run("--socket", fake.path, "--backend", "nosuch",
                  "--metric", "agent")
        assert out.returncode == 2 and "Can't find backend" in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
        out = run("--socket", fake.path, "--backend", "be",
                  "--metric", "agent")
        assert out.returncode == 2 and "level 'operator'" in out.stderr
        out = run("--socket", fake.path, "--backend", "be",
                  "--metric", "agent", "--agent", "s9=127.0.0.1:1")
        assert out.returncode == 2 and "no server s9" in out.stderr
        # --dry-run needs no admin level; bounded by --duration.  s3
        # alone is in play (s1 drains, s2 is in maintenance): nothing
        # to shift, and its agent address is missing: said once.
        out = run("--socket", fake.path, "--backend", "be",
                  "--metric", "agent", "--dry-run", "--interval", "0.1",
                  "--duration", "0.35")
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert len(lines) == 3
        assert all(ln.endswith("s1=DRAIN s2=MAINT s3=-/50 cut=-")
                   for ln in lines)
        assert out.stderr.count("no agent address") == 1
    finally:
        fake.close()


# -- conf/examples/haproxy.cfg ----------------------------------------------

HAPROXY = shutil.which("haproxy") or (
    "/usr/sbin/haproxy" if os.access("/usr/sbin/haproxy", os.X_OK) else None)


@pytest.mark.skipif(HAPROXY is None,
                    reason="haproxy not installed (apt-get install haproxy)")
def test_example_haproxy_cfg_passes_haproxy_c():
    cfg = os.path.join(TOP, "conf", "examples", "haproxy.cfg")
    p = subprocess.run([HAPROXY, "-c", "-f", cfg], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    text = open(cfg).read()
    for want in ("agent-check", "agent-port 8471", "agent-inter 2s",
                 "/qosctl-health", "level admin"):
        assert want in text
