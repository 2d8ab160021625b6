"""Fuzzing qosctl-balance: its options, HAProxy's "show servers state"
and its other runtime API answers, the agents' replies and nft's JSON
counters.  A loopback server plays HAProxy's TCP stats socket and
another the agents; nft itself is replaced by a function that checks the
script the tool would run as root (only IP addresses where addresses go)
and answers counters: fuzzing must not change this machine's ruleset.
tests/tools/fuzz runs TARGETS."""

import ipaddress
import json
import re

from hypothesis import given, strategies as st

import fuzzlib as F

TOOL = F.load_tool("qosctl-balance")
NUM = F.number_text()


class Answers:
    state = "1\n# be_name\n"
    level = b"admin\n\n"
    set_reply = b"\n"
    agent = b"50%\n"
    counters = "{}"


def runtime_answer(line):
    cmd = line.decode("utf-8", "replace").strip()
    if cmd.startswith("show servers state"):
        return Answers.state.encode("utf-8", "surrogateescape")
    if cmd == "show cli level":
        return Answers.level
    if cmd.startswith("set weight"):
        return Answers.set_reply
    return b"Unknown command.\n"


RUNTIME = F.LineServer(runtime_answer)
AGENT = F.LineServer(lambda line: Answers.agent, read=False)
SOCKET = "127.0.0.1:%d" % RUNTIME.port

SCRIPT_LINE = re.compile(
    r"^(table inet [A-Za-z][A-Za-z0-9_]* \{|  counter (syn|synack)_\d+ \{ \}"
    r"|  chain (out|in) \{|    type filter hook (output|input) priority 0;"
    r" policy accept;|  \}|\}"
    r"|    ip6? [ds]addr (?P<addr>\S+) tcp [ds]port \d+ tcp flags & "
    r"\(syn \| ack\) == syn( \| ack)? counter name \"(syn|synack)_\d+\")$")


def fake_nft(args, stdin=None):
    """nft as the tool calls it: the script checked line by line."""
    if args[:2] == ["-f", "-"]:
        for line in stdin.rstrip("\n").split("\n"):
            m = SCRIPT_LINE.match(line)
            if not m:
                raise F.Broken("nft script line %r" % line)
            addr = m.group("addr")
            try:
                if addr is not None and str(ipaddress.ip_address(
                        addr)) != addr:
                    raise ValueError(addr)
            except ValueError:
                raise F.Broken("nft script address %r" % addr)
        return ""
    if args[:2] == ["-j", "list"]:
        return Answers.counters
    if args[0] == "list":
        raise TOOL.Unavailable("nft: no such table")
    return ""


TOOL.run_nft = fake_nft

COLUMNS = ("be_id be_name srv_id srv_name srv_addr srv_op_state "
           "srv_admin_state srv_uweight srv_iweight "
           "srv_time_since_last_change srv_check_status srv_check_result "
           "srv_check_health srv_check_state srv_agent_state bk_f_forced_id "
           "srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl "
           "srv_check_port srv_check_addr srv_agent_addr "
           "srv_agent_port").split()

ADDRS = ["127.0.0.1", "::1", "10.0.0.1", "::ffff:127.0.0.1", "-",
         "fe80::1%eth0", "fe80::1%x;flush ruleset", "1.2.3.4\0",
         "127.0.0.1\0", "1.2.3", "01.2.3.4", "a.b", "1.2.3.4/8",
         "127.0.0.1 } chain x {"]


def field(name):
    if name in ("srv_addr", "srv_agent_addr", "srv_check_addr"):
        return st.one_of(st.sampled_from(ADDRS), F.field_text())
    if name == "srv_agent_port":
        return st.one_of(st.just(str(AGENT.port)), st.sampled_from(
            ["0", "-5", "99999", "65536", "x"]), NUM)
    if name == "be_name":
        return st.sampled_from(["be", "be", "other", "b e", "be\0"])
    if name == "srv_name":
        return st.one_of(st.sampled_from(["s1", "s2", "s3", "s;x", "s/1"]),
                         F.field_text())
    if name in ("srv_uweight", "srv_iweight"):
        return st.one_of(st.sampled_from(["0", "1", "50", "100", "256",
                                          "257", "1e20", "-1"]), NUM)
    if name == "srv_op_state":
        return st.one_of(st.sampled_from(["2", "2", "0", "1", "3"]), NUM)
    if name in ("srv_admin_state", "srv_agent_state"):
        return st.one_of(st.sampled_from(["0", "0", "1", "8", "4", "22"]),
                         NUM)
    if name == "srv_port":
        return st.one_of(st.sampled_from(["80", "18081", "0", "65536",
                                          "-5"]), NUM)
    return st.one_of(st.just("0"), F.field_text())


GOOD = {"be_id": "3", "be_name": "be", "srv_id": "1", "srv_name": "s1",
        "srv_addr": "127.0.0.1", "srv_op_state": "2",
        "srv_admin_state": "0", "srv_uweight": "50", "srv_iweight": "50",
        "srv_agent_state": "0", "srv_fqdn": "-", "srv_port": "80",
        "srvrecord": "-", "srv_check_addr": "-", "srv_agent_addr": "-",
        "srv_agent_port": str(AGENT.port)}


# The columns the tool takes values from, drawn more often.
CHECKED = ["srv_addr", "srv_agent_addr", "srv_agent_port", "srv_port",
           "srv_uweight", "srv_iweight", "srv_name", "srv_op_state"]


def state_row(k):
    """Server k in play, a few of its fields anything."""
    def row(changes):
        values = dict(GOOD, srv_id=str(k), srv_name="s%d" % k)
        values.update(changes)
        return values
    change = st.sampled_from(COLUMNS + CHECKED * 3).flatmap(
        lambda c: field(c).map(lambda v: (c, v)))
    return st.one_of(st.just([]), st.just([]), st.lists(
        change, min_size=1, max_size=2)).map(row)


def state_text():
    """A "show servers state" answer: format 1, a header of HAProxy's
    columns (rarely some dropped or moved), servers mostly in play with
    a few fields anything."""
    def text(t):
        head, cols, rows = t
        return "%s\n# %s\n%s\n\n" % (head, " ".join(cols), "\n".join(
            " ".join(r.get(c, "0") for c in cols) for r in rows))
    cols = st.one_of(st.just(COLUMNS), st.just(COLUMNS), st.just(COLUMNS),
                     st.just(COLUMNS), st.permutations(COLUMNS),
                     st.lists(st.sampled_from(COLUMNS), unique=True))
    rows = st.tuples(*[state_row(k) for k in (1, 2, 3)]).flatmap(
        lambda all3: st.sampled_from([3, 3, 2, 1, 0]).map(
            lambda n: all3[:n]))
    head = st.sampled_from(["1"] * 8 + ["2", "", "Can't find backend."])
    good = st.tuples(head, cols, rows).map(text)
    return st.one_of(good, good, good, good, st.text(min_size=1,
                                                     max_size=60))


def agent_reply():
    words = st.sampled_from(["50%", "100%", "0%", "up", "drain", "maint",
                             "weight:80%", "weight:30", "weight:99999",
                             "ready", "#x", "1e20%", "-5%", "٥%", "²%",
                             "weight:²", "weight:٣"])
    line = st.lists(st.one_of(words, st.text(max_size=6)),
                    max_size=4).map(" ".join)
    return st.one_of(line.map(lambda t: (t + "\n").encode("utf-8",
                                                          "replace")),
                     st.binary(max_size=40))


def counters():
    item = st.fixed_dictionaries({"counter": st.fixed_dictionaries({
        "table": st.sampled_from(["qosctl_balance", "x"]),
        "name": st.sampled_from(["syn_0", "synack_0", "syn_1",
                                 "synack_1", "syn_2", "synack_2"]),
        "packets": st.one_of(st.integers(min_value=-5, max_value=10 ** 6),
                             F.json_value(0))})})
    doc = st.fixed_dictionaries({"nftables": st.lists(
        st.one_of(item, F.json_value(0)), max_size=8)})
    return st.one_of(doc.map(json.dumps), st.text(max_size=20))


def run(argv):
    code, out, err = F.call_main(TOOL, argv)
    F.check("qosctl-balance", code, out, err, argv)


MORE = {"agent": [["--agent-timeout", "0.2"]], "syn": [["--window", "2"]]}


@given(state_text(), st.sampled_from(["agent", "syn"]).flatmap(
    lambda m: st.tuples(st.just(m), st.lists(st.sampled_from(
        [["--dry-run"], ["--proportional"], ["--delta", "0.5"]]
        + MORE[m]), max_size=3))), agent_reply(), counters(),
    st.sampled_from([b"admin\n\n"] * 4 + [b"operator\n", b""]),
    st.sampled_from([b"\n", b"\n", b"", b"No such server.\n"]))
def fuzz_balance_runtime(state, options, reply, count, level, set_reply):
    """What HAProxy, the agents and nft answer, through a short run."""
    metric, more = options
    Answers.state, Answers.agent, Answers.counters = state, reply, count
    Answers.level, Answers.set_reply = level, set_reply
    run(["--socket", SOCKET, "--backend", "be", "--metric", metric]
        + [w for m in more for w in m]
        + ["--interval", "0.01", "--duration", "0.03"])


def no_host(text):
    """Text that is no HOST:PORT: fuzzing looks up no host name."""
    return text.replace(":", "")


AGENTS = ["s1=127.0.0.1:%d" % AGENT.port, "s1=[::1]:1", "s9=127.0.0.1:1",
          "s1=h\0:1", "s1=127.0.0.1:99999", "s1=127.0.0.1:-5", "=x:1",
          "s1=127.0.0.1:0", "s1=[x]:1", "s1=1.2.3.4%x:1",
          "s1=127.0.0.1:" + "9" * 4400]
OPTIONS = {
    "--socket": st.one_of(st.sampled_from(
        [SOCKET, "/nonexistent/admin.sock", "127.0.0.1:99999",
         "127.0.0.1:-5", "a:b", "x\0y", "[::1]:1", "", "h\0:1"]),
        st.text(max_size=10).map(no_host)),
    "--backend": st.one_of(st.sampled_from(["be", "b e", "be\n",
                                            "be;x"]),
                           st.text(max_size=6)),
    "--metric": st.one_of(st.sampled_from(["syn", "agent"]),
                          st.text(max_size=4)),
    "--interval": NUM, "--delta": NUM, "--proportional": None,
    "--window": NUM, "--duration": NUM, "--dry-run": None,
    # relative: in call_main's empty working directory, under tmp
    "--log": st.one_of(st.sampled_from(["missing/x", "a\0b", ""]),
                       st.text(max_size=6)),
    "--agent": st.one_of(st.sampled_from(AGENTS),
                         st.text(max_size=10).map(no_host)),
    "--agent-send": st.one_of(st.sampled_from(["host\n", "h\0", "\udcff",
                                              "vhost"]),
                              st.text(max_size=6)),
    "--agent-timeout": NUM,
    "--nft-table": st.one_of(st.sampled_from(["qosctl_balance", "a b",
                                              "x" * 70]),
                             st.text(max_size=6)),
}


@given(F.argv_of(OPTIONS, max_size=10))
def fuzz_balance_argv(argv):
    """Any options; a run that starts is kept short."""
    Answers.state = ("1\n# %s\n3 be 1 s1 127.0.0.1 2 0 50 50 0 1 0 2 0 0 "
                     "0 0 - 80 - 0 0 - - %d\n\n" % (" ".join(COLUMNS),
                                                   AGENT.port))
    Answers.level, Answers.agent = b"admin\n\n", b"50%\n"
    run(argv + ["--interval", "0.01", "--duration", "0.02"])


TARGETS = [fuzz_balance_runtime, fuzz_balance_argv]
