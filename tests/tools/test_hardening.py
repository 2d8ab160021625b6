"""Inputs that once gave a traceback, a figure of inf or nan, or went
unchecked into a command (found by review and by tests/tools/fuzz):
each tool, run as the admin runs it, answers with one line on stderr
and a non-zero exit."""

import json
import os
import subprocess
import sys

import pytest

from tooltest import TOP, serve_once, tool_path
from test_balance import FakeSocket, STATE

DEGRADE = os.path.join(TOP, "content-trees", "qosctl-degrade")
BIG = "9" * 4400                        # past Python's 4300-digit limit
QOSCTL_HEADER = "time\tvserver\tclass\tR\tR_rej\tcapacity\n"


def refused(tool, *args, words=""):
    """Run `tool`: exit 2, one line on stderr naming it (and `words`)."""
    path = DEGRADE if tool == "qosctl-degrade" else tool_path(tool)
    p = subprocess.run([sys.executable, path]
                       + [a if isinstance(a, bytes) else str(a)
                          for a in args],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    lines = p.stderr.split("\n")
    assert len(lines) == 2 and lines[1] == "", p.stderr
    assert lines[0].startswith(tool + ": ") and words in lines[0], p.stderr
    return lines[0]


@pytest.mark.parametrize("tail", [
    ' 200 %s' % BIG,                    # a size
    ' 200 5 "-" "agent" %s' % BIG,      # a %D duration
])
def test_replay_split_numbers_past_the_int_limit(tmp_path, tail):
    log = tmp_path / "a.log"
    log.write_text('1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] '
                   '"GET / HTTP/1.0"%s\n' % tail)
    refused("qosctl-replay", "split", log, "--out", tmp_path / "s",
            words="size or duration over 4000 digits")


def test_replay_empty_split_log(tmp_path):
    (tmp_path / "r.timing").write_text(
        "# qosctl-replay timing 1 start=0\n")
    (tmp_path / "r.requests").write_text("# qosctl-replay requests 1\n")
    refused("qosctl-replay", "run", tmp_path / "r.requests", "--server",
            "http://127.0.0.1:9", "--out", tmp_path / "o",
            words="no requests")


@pytest.mark.parametrize("rows,words", [
    ("1e300\tv\tc\t5\t0\t10\n", "no periods"),
    ("-1e12\tv\tc\t5\t0\t10\n", "no periods"),
    ("1\tv\tc\t1e308\t0\t10\n1\tv\tc2\t1e308\t0\t10\n",
     "sum past floating-point range"),
    ("1\tv\tc\t5\t0\t5e-324\n", "out of floating-point range"),
])
def test_plan_qosctl_log_out_of_range(tmp_path, rows, words):
    log = tmp_path / "q.log"
    log.write_text(QOSCTL_HEADER + rows)
    refused("qosctl-plan", "-n", "2", log, words=words)


def test_plan_tiny_capacity_from_each_source(tmp_path):
    log = tmp_path / "q.log"
    log.write_text(QOSCTL_HEADER + "1\tv\tc\t5\t0\t10\n")
    refused("qosctl-plan", "-n", "2", "--capacity", "5e-324", log,
            words="out of floating-point range")
    srv, t, _ = serve_once({"capacity": {"full_quality": 5e-324,
                                         "lower_bound": False}})
    try:
        refused("qosctl-plan", "-n", "2", "--from-status",
                "http://127.0.0.1:%d/s" % srv.server_address[1], log,
                words="out of floating-point range")
    finally:
        t.join(10)
        srv.server_close()


@pytest.mark.parametrize("args,words", [
    (["--interval", "1e-300"], "--interval"),
    (["--power", "1e308,1e308"], "out of floating-point range"),
])
def test_plan_options_out_of_range(args, words):
    refused("qosctl-plan", "-n", "10", "--capacity", "10",
            "--synthetic-day", "100", *args, words=words)


@pytest.mark.parametrize("args", [
    ["-n", "1", "--service-rate", "1e-310", "--load", "0.5"],   # inf
    ["-n", "1", "--service-rate", "1e-310", "--load", "0.5", "--json"],
    ["-n", "2", "--service-rate", "1e308", "--load", "0.5"],    # n mu inf
    ["-n", "1", "--service-rate", "5e-324", "--load", "0.5"],   # lambda 0
])
def test_predict_refuses_what_it_cannot_compute(args):
    refused("qosctl-predict", *args, words="cannot predict")


@pytest.mark.parametrize("tool", ["qosctl-predict", "qosctl-plan",
                                  "qosctl-balance", "qosctl-replay",
                                  "qosctl-degrade"])
def test_a_line_break_in_an_argument_stays_one_line(tool):
    refused(tool, "--no-such-option\nsecond line")


@pytest.mark.parametrize("tool,args", [
    ("qosctl-plan", ["--synthetic-day", "100", "-n", "4", "--capacity",
                     "50"]),
    ("qosctl-predict", ["-n", "2", "--service-rate", "10", "--range",
                        "1:5:1"]),
])
def test_plot_where_no_file_can_go(tmp_path, tool, args):
    # gnuplot only warns when it cannot open its output, and exits 0
    refused(tool, *args, "--plot", tmp_path / "no-such-dir" / "x.png",
            words="cannot write it (No such file or directory)")
    refused(tool, *args, "--plot", tmp_path, words="cannot write it")


def test_replay_server_with_an_unclosed_bracket(tmp_path):
    (tmp_path / "r.timing").write_text(
        "# qosctl-replay timing 1 start=0\n")
    (tmp_path / "r.requests").write_text("# qosctl-replay requests 1\n")
    refused("qosctl-replay", "run", tmp_path / "r.requests", "--server",
            "http://[::1", "--out", tmp_path / "o", words="Invalid IPv6 URL")


@pytest.mark.parametrize("tool,args", [
    ("qosctl-plan", ["-n", "2", "--synthetic-day", "10"]),
    ("qosctl-predict", ["-n", "2", "--load", "0.5"]),
])
@pytest.mark.parametrize("url", ["http://a b/", "http://x\n/"])
def test_from_status_url_http_client_refuses(tool, args, url):
    refused(tool, *args, "--from-status", url, words="control characters")


def state_with(field, value):
    """STATE (tests/tools/test_balance.py) with server s3's `field`."""
    head = STATE.split("\n")[1].lstrip("# ").split()
    lines = STATE.split("\n")
    row = lines[4].split(" ")
    row[head.index(field)] = value
    lines[4] = " ".join(row)
    return "\n".join(lines)


@pytest.mark.parametrize("field,value,words", [
    ("srv_agent_port", "99999", "srv_agent_port '99999'"),
    ("srv_agent_port", "-5", "srv_agent_port '-5'"),
    ("srv_addr", "127.0.0.1\0", "not an IP address"),
    ("srv_agent_addr", "127.0.0.1\0", "not an IP address"),
    ("srv_addr", "fe80::1%x;flush", "not an IP address"),
    ("srv_addr", "web.example", "not an IP address"),
    ("srv_uweight", "100000000000000000000", "srv_uweight"),
    ("srv_iweight", "257", "srv_iweight"),
    ("srv_name", "s3;x", "not a HAProxy name"),
])
def test_balance_refuses_a_bad_server_state(field, value, words):
    fake = FakeSocket({"show servers state be": state_with(field, value),
                       "show cli level": "admin\n\n"})
    try:
        refused("qosctl-balance", "--socket", fake.path, "--backend", "be",
                "--metric", "syn", "--dry-run", "--interval", "0.1",
                "--duration", "0.2", words=words)
    finally:
        fake.close()


def test_degrade_rebuilds_from_a_damaged_manifest(tmp_path):
    full, out = tmp_path / "full", tmp_path / "out"
    full.mkdir()
    out.mkdir()
    (full / "a.html").write_text("<p>hi</p>\n")
    (out / ".htqosctl-manifest.json").write_text(json.dumps(
        {"version": 1, "files": {"a.html": None}, "snapshots": {}}))
    p = subprocess.run([sys.executable, DEGRADE, "-q", full, out],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "internal error" not in p.stderr
    assert "rebuilding everything" in p.stderr


@pytest.mark.parametrize("option", ["--max-dim", "--min-dim"])
def test_degrade_dimension_past_any_image(tmp_path, option):
    full = tmp_path / "full"
    full.mkdir()
    (full / "c.gif").write_bytes(b"GIF89a\x00\x01\x01")
    refused("qosctl-degrade", "-q", option, "9" * 4000, full,
            tmp_path / "out", words=option)


@pytest.mark.parametrize("args,words", [
    (["--socket", "a:b", "--backend", "be"], "--socket"),
    (["--socket", "/x", "--backend", b"b\xffe"], "--backend"),
    (["--socket", "/x", "--backend", "be;x"], "--backend"),
])
def test_balance_refuses_bad_socket_and_backend(args, words):
    refused("qosctl-balance", "--metric", "agent", *args, words=words)
