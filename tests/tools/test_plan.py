"""tools/qosctl-plan: servers on per interval and the energy saved, from
access logs, QosCtlLog files and the synthetic day, against hand-worked
cases; bad input gets one line and exit 2."""

import gzip
import json
import math
import os
import shutil
import subprocess
import sys

import pytest

from tooltest import load_tool, serve_once, tool_path

TOOL = tool_path("qosctl-plan")
P = load_tool("qosctl-plan")


def run(*args, env=None):
    return subprocess.run([sys.executable, TOOL] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=60,
                          env=env)


def run_json(*args):
    out = run(*(args + ("--json",)))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), out.stderr


HEADER = ("time\tvserver\tclass\tR\tR_rej\tW\tU_model\tU_target\tm\t"
          "U_measured\ta\tb\tc\tqueued\tcalibration\ta_next\tspread\td\t"
          "backlog\tvalve\tcapacity\tdrop_ratio")
T0 = 999999960             # a multiple of 60: 2001-09-09T01:46:00Z


def qosctl_row(t, vserver, cls, r, capacity):
    """A line as qc_ctl_log_period writes it (22 columns)."""
    return ("%.3f\t%s\t%s\t%.2f\t%.2f\t%.0f\t%.5f\t%.5f\t%.4f\t%.5f\t%.4g\t"
            "%.4g\t%.4g\t%d\t%.4g\t%.4g\t%u\t%.4g\t%.4g\t%d\t%.1f\t%.4g\n"
            % (t, vserver, cls, r, 0.0, 1e6, 0.5, 0.8, 3.0, 0.5, 0.001,
               1e-8, 1e-4, 0, 1.0, 0.0005, 0, 0.01, 0.0, 0, capacity, 0.0))


def write_qosctl_log(path, periods):
    """periods: (time, [R of a/premium, a/basic, b/premium, b/basic],
    capacity) each: two virtual hosts, two classes."""
    with open(path, "w") as f:
        f.write(HEADER + "\n")
        for t, rs, cap in periods:
            for (vs, cls), r in zip([("a.example", "premium"),
                                     ("a.example", "basic"),
                                     ("b.example", "premium"),
                                     ("b.example", "basic")], rs):
                f.write(qosctl_row(t, vs, cls, r, cap))
    return str(path)


# Rates 10, 150, 330, 400, 500 req/s, one 60 s interval each, split over
# the two hosts and two classes in the ratio 1:2:3:4.
HAND_RATES = [10, 150, 330, 400, 500]


def hand_log(tmp_path):
    return write_qosctl_log(
        tmp_path / "qosctl.log",
        [(T0 + 60 * i + 5, [r // 10, 2 * r // 10, 3 * r // 10, 4 * r // 10],
          -1.0) for i, r in enumerate(HAND_RATES)])


def test_hand_worked_sizing(tmp_path):
    """Capacity 100, level 0.8 (80 req/s a server), N 4:
      10 /80 = 0.125 -> 1 server, utilization 0.1
     150 /80 = 1.875 -> 2, utilization 0.75
     330 /80 = 4.125 -> 5 > 4: 4, over capacity, utilization 0.825
     400 /80 = 5     -> 4, over capacity, utilization 1, no drop
     500 /80 = 6.25  -> 4, over capacity, drop (500 - 400) / 500 = 0.2"""
    got, err = run_json(hand_log(tmp_path), "-n", 4, "--capacity", 100,
                        "--interval", 60)
    assert err == ""
    rows = got["intervals"]
    assert [r["rate"] for r in rows] == HAND_RATES
    assert [r["servers_on"] for r in rows] == [1, 2, 4, 4, 4]
    assert [r["over_capacity"] for r in rows] == [
        False, False, True, True, True]
    assert [r["utilization"] for r in rows] == pytest.approx(
        [0.1, 0.75, 0.825, 1.0, 1.0])
    assert [r["drop_ratio"] for r in rows] == pytest.approx(
        [0, 0, 0, 0, 0.2])
    assert rows[0]["start"] == "2001-09-09T01:46:00Z"
    assert got["max_drop_ratio"] == pytest.approx(0.2)
    assert got["over_capacity_intervals"] == 3
    assert got["capacity"] == 100 and got["capacity_source"] == "--capacity"
    assert got["level"] == 0.8 and got["servers"] == 4
    # No --power: sizing only, and no invented wattage.
    assert got["power_source"] is None
    assert got["energy_all_on_kwh"] is None and got["saving"] is None
    assert all(r["power_sized"] is None for r in rows)
    # 1 + 2 + 4 + 4 + 4 = 15 server-minutes against 5 x 4 = 20.
    assert got["server_hours_on"] == pytest.approx(15 / 60)
    assert got["server_hours_all_on"] == pytest.approx(20 / 60)


def test_sizing_edges():
    rows = P.size([(0, 1, 0.0), (1, 1, 160.0), (2, 1, 160.0001)],
                  servers=10, capacity=100, level=0.8, min_on=0)
    # No load and --min-on 0: all off; exactly 2 x 80: 2, not 3.
    assert [r["servers_on"] for r in rows] == [0, 2, 3]
    assert rows[0]["drop_ratio"] == 0 and rows[0]["utilization"] == 0
    assert P.servers_needed(10, 100, 0.8, 3) == 3


def test_hand_worked_energy(tmp_path):
    """--power 100,200: P(u) = 100 + 100 u W, off 0 W, N 4, capacity 100.
    all on, u = rate / 400: 10 -> 4 x 102.5 = 410; 150 -> 4 x 137.5 = 550;
        330 -> 4 x 182.5 = 730; 400 -> 800; 500 -> 800 (u at most 1)
    sized: 10 -> 1 x 110 = 110; 150 -> 2 x 175 = 350; the others all on.
    Energy (60 s each): all on 3290 W x 60 s = 0.0548333 kWh, sized
    2790 x 60 = 0.0465 kWh; saving 1 - 2790 / 3290 = 500 / 3290."""
    got, _ = run_json(hand_log(tmp_path), "-n", 4, "--capacity", 100,
                      "--interval", 60, "--power", "100,200")
    rows = got["intervals"]
    assert [r["power_all_on"] for r in rows] == pytest.approx(
        [410, 550, 730, 800, 800])
    assert [r["power_sized"] for r in rows] == pytest.approx(
        [110, 350, 730, 800, 800])
    assert got["energy_all_on_kwh"] == pytest.approx(3290 * 60 / 3.6e6)
    assert got["energy_sized_kwh"] == pytest.approx(0.0465)
    assert got["saving"] == pytest.approx(500 / 3290)
    assert "100" in got["power_source"] and "200" in got["power_source"]
    # Turned off servers that draw 10 W: 3 x 10 + 2 x 10 more.
    got, _ = run_json(hand_log(tmp_path), "-n", 4, "--capacity", 100,
                      "--interval", 60, "--power", "100,200",
                      "--off-watts", 10)
    assert got["saving"] == pytest.approx(450 / 3290)


def test_no_idle_power_no_saving(tmp_path):
    """Linear with idle 0: n servers at lambda / (n C) draw what N do."""
    got, _ = run_json(hand_log(tmp_path), "-n", 4, "--capacity", 100,
                      "--interval", 60, "--power", "0,200")
    assert got["saving"] == pytest.approx(0.0, abs=1e-12)


def simpson(f, a, b, n=16):
    h = (b - a) / n
    return h / 3 * (f(a) + f(b) + sum((4 if i % 2 else 2) * f(a + i * h)
                                      for i in range(1, n)))


def test_synthetic_day_saving():
    """--servers 10 --capacity 100 --synthetic-day 900 --power 150,250,
    level 0.8, 300 s intervals.  By hand from the formula: the interval's
    mean rate (Simpson's rule on rate(t)), n = min(10, ceil(rate / 80)).
    With a linear model the sized cluster draws (10 - n) x 150 W less
    than all on, which draws 10 x 150 + 100 x rate / 100 W: the mean rate
    is 0.55 x 900 = 495, so all on is 1995 W, 47.88 kWh a day."""
    out = run("--servers", 10, "--capacity", 100, "--synthetic-day", 900,
              "--power", "150,250", "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)

    def rate(t):
        return 900 * (0.55 - 0.45 * math.cos(2 * math.pi * (t - 14400)
                                             / 86400))
    assert P.diurnal_rate(900, 4 * 3600) == pytest.approx(90)
    assert P.diurnal_rate(900, 16 * 3600) == pytest.approx(900)
    means = [simpson(rate, a, a + 300) / 300 for a in range(0, 86400, 300)]
    assert [r["rate"] for r in got["intervals"]] == pytest.approx(means)
    on = [min(10, math.ceil(m / 80)) for m in means]
    assert [r["servers_on"] for r in got["intervals"]] == on
    all_on = sum(10 * 150 + 100 * m / 100 for m in means) * 300
    saved = sum((10 - n) * 150 for n in on) * 300
    assert all_on / 3.6e6 == pytest.approx(47.88)
    assert got["energy_all_on_kwh"] == pytest.approx(all_on / 3.6e6)
    assert got["saving"] == pytest.approx(saved / all_on)
    # What that arithmetic gives (not a target): 27.0%, 153.7 of 240
    # server-hours on, never a drop (the peak is 90% of 10 servers).
    assert got["saving"] == pytest.approx(0.2704, abs=5e-4)
    assert got["server_hours_on"] == pytest.approx(sum(on) / 12)
    assert got["max_drop_ratio"] == 0
    assert got["over_capacity_intervals"] == sum(
        1 for m in means if m > 800)
    assert len(got["intervals"]) == 288
    assert got["intervals"][48]["start"] == "04:00"
    # The table says the same.
    out = run("--servers", 10, "--capacity", 100, "--synthetic-day", 900,
              "--power", "150,250")
    assert out.returncode == 0 and out.stderr == ""
    assert "saving 27.0%" in out.stdout
    assert "\n16:00 " in out.stdout and "idle 150 W" in out.stdout


def test_synthetic_day_uneven_interval():
    """7 h intervals: three whole and a last one of 3 h."""
    rows = P.synthetic_day(100.0, 7 * 3600.0)
    assert [r[1] for r in rows] == [25200.0] * 3 + [10800.0]
    day = sum(length * mean for _, length, mean in rows)
    assert day / 86400 == pytest.approx(55.0)


COMMON = [
    # 20:55 UTC: three requests
    b'127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] '
    b'"GET /apache_pb.gif HTTP/1.0" 200 2326',
    b'2001:db8::1 - - [10/Oct/2000:13:55:37 -0700] "GET /y HTTP/1.1" 304 -',
    b'10.0.0.1 - - [10/Oct/2000:13:55:59 -0700] '
    b'"GET /a\\"b\\" HTTP/1.1" 404 12',
    # 20:56: two (a huge size; bytes that are not UTF-8)
    b'10.0.0.2 - - [10/Oct/2000:13:56:00 -0700] "GET /iso HTTP/1.1" 200 '
    b'99999999999999999999999999',
    b'10.0.0.3 - \xff\xfe [10/Oct/2000:13:56:30 -0700] '
    b'"GET /caf\xe9 HTTP/1.1" 200 5',
    # 20:57: none; 20:58: one, logged at +0200
    b'10.0.0.4 - - [10/Oct/2000:22:58:10 +0200] "GET / HTTP/1.1" 200 1',
    # malformed: a bad date, an unknown month, a truncated line, junk
    b'10.0.0.5 - - [32/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 1',
    b'10.0.0.6 - - [10/Foo/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 1',
    b'10.0.0.7 - - [10/Oct/2000:13:56:10 -0700] "GET /trunc HT',
    b'\x00\x01 not a log line at all',
]
COMBINED_TAIL = b' "http://example.com/start.html" "Mozilla/4.08 [en] (Win98)"'


@pytest.mark.parametrize("combined", [False, True])
@pytest.mark.parametrize("gzipped", [False, True])
def test_access_log(tmp_path, combined, gzipped):
    lines = [line + COMBINED_TAIL if combined and b"[10/" in line
             and not line.endswith(b"HT") else line for line in COMMON]
    data = b"\n".join(lines) + b"\n\n"
    path = tmp_path / ("access.log" + (".1" if gzipped else ""))
    path.write_bytes(gzip.compress(data) if gzipped else data)
    got, err = run_json(path, "-n", 2, "--capacity", 0.05, "--interval", 60)
    assert err == "qosctl-plan: 4 malformed lines skipped\n"
    rows = got["intervals"]
    assert [r["start"] for r in rows] == [
        "2000-10-10T20:55:00Z", "2000-10-10T20:56:00Z",
        "2000-10-10T20:57:00Z", "2000-10-10T20:58:00Z"]
    assert [r["rate"] for r in rows] == pytest.approx(
        [3 / 60, 2 / 60, 0, 1 / 60])
    # 0.8 x 0.05 = 0.04 req/s a server: 0.05 needs 2, 0.033 and 0 one.
    assert [r["servers_on"] for r in rows] == [2, 1, 1, 1]


def test_access_log_from_standard_input(tmp_path):
    out = subprocess.run(
        [sys.executable, TOOL, "-", "-n", "1", "--capacity", "1", "--json"],
        input=gzip.compress(b"\n".join(COMMON[:3]) + b"\n"),
        capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert [r["rate"] for r in json.loads(out.stdout)["intervals"]] \
        == pytest.approx([3 / 300])


def test_access_line_parser():
    assert P.parse_access_line(COMMON[0].decode()) == 971211336
    assert P.parse_access_line(COMMON[5].decode()) == 971211490
    assert P.parse_access_line('h - - [10/Oct/2000:13:55:36 -0760] "GET / '
                               'HTTP/1.0" 200 1') is None


def test_qosctl_log_two_hosts_two_classes(tmp_path):
    """Two periods an interval (the mean of their sums), a gap, a
    capacity column whose positive values have the median 100, a row cut
    short and one with a bad number."""
    path = write_qosctl_log(tmp_path / "q.log", [
        (T0 + 1, [1, 2, 3, 4], -1.0),           # interval 0: 10 and 30
        (T0 + 31, [3, 6, 9, 12], 90.0),
        (T0 + 61, [10, 20, 30, 40], 100.0),     # interval 1: 100
        (T0 + 181, [40, 40, 40, 40], 130.0),    # interval 3: 160
    ])
    with open(path, "a") as f:
        f.write(qosctl_row(T0 + 62, "a.example", "basic", 1, 1).replace(
            "\t1.0\t", "\tx\t"))
        f.write("%.3f\ta.example\tbasic\t5" % (T0 + 240))
    got, err = run_json(path, "-n", 4, "--interval", 60)
    assert err == "qosctl-plan: 2 malformed lines skipped\n"
    assert got["capacity"] == 100
    assert "median" in got["capacity_source"]
    assert "12" in got["capacity_source"]          # 3 periods x 4 rows
    rows = got["intervals"]
    assert [r["start"][11:] for r in rows] == ["01:46:00Z", "01:47:00Z",
                                               "01:49:00Z"]
    assert [r["rate"] for r in rows] == pytest.approx([20, 100, 160])
    # 80 req/s a server: 1, 2 (100 / 80 = 1.25), 2 (160 / 80 = 2).
    assert [r["servers_on"] for r in rows] == [1, 2, 2]
    # --capacity wins over the log's; the table says where C came from.
    got, _ = run_json(path, "-n", 4, "--capacity", 10, "--interval", 60)
    assert got["capacity"] == 10 and got["capacity_source"] == "--capacity"
    out = run(path, "-n", 4, "--power", "50,100")
    assert out.returncode == 0
    assert "capacity 100 req/s per server: the median" in out.stdout
    assert "saving" in out.stdout


@pytest.mark.parametrize("lower,degraded", [(False, False), (True, False),
                                            (False, True)])
def test_capacity_from_status(lower, degraded, capsys):
    srv, t, seen = serve_once({"capacity": {
        "requests_per_second": 200.0, "full_quality": 150.0,
        "lower_bound": lower}})
    try:
        code = P.main(["-n", "3", "--synthetic-day", "300", "--json",
                       "--from-status", "http://127.0.0.1:%d/qosctl-status"
                       % srv.server_port] + (["--degraded"] if degraded
                                             else []))
    finally:
        t.join(10)
        srv.server_close()
    out = capsys.readouterr()
    assert code == 0
    assert seen == ["/qosctl-status?format=json"]
    got = json.loads(out.out)
    # full quality unless asked: a plan for the replies the sites serve
    assert got["capacity"] == (200 if degraded else 150)
    assert got["capacity_source"].startswith("--from-status http://")
    assert ("as degraded" if degraded else "full quality") in \
        got["capacity_source"]
    if lower:
        assert "lower bound" in got["capacity_source"]
        assert len(out.err.splitlines()) == 1
        assert "only a lower bound" in out.err
    else:
        assert out.err == ""


def test_no_capacity_estimate_on_the_status_page():
    srv, t, seen = serve_once({"capacity": {
        "requests_per_second": None, "lower_bound": True}})
    try:
        with pytest.raises(P.InputError, match="no capacity estimate"):
            P.capacity_from_status("http://127.0.0.1:%d/s?x=1"
                                   % srv.server_port)
    finally:
        t.join(10)
        srv.server_close()
    assert seen == ["/s?x=1&format=json"]


def test_rapl_hint_without_power(tmp_path, monkeypatch, capsys):
    for zone in ("intel-rapl:0", "intel-rapl:0:0", "intel-rapl:1",
                 "intel-rapl-mmio:0"):
        (tmp_path / zone).mkdir()
    assert [os.path.basename(p) for p in P.rapl_packages(str(tmp_path))] \
        == ["intel-rapl:0", "intel-rapl:1"]
    assert P.rapl_packages(str(tmp_path / "none")) == []
    monkeypatch.setattr(P, "rapl_packages", lambda: ["intel-rapl:0"])
    args = ["-n", "2", "--capacity", "10", "--synthetic-day", "10"]
    assert P.main(args) == 0
    out = capsys.readouterr()
    assert "no power model given" in out.out
    assert "RAPL found on this machine: measure idle and max with it and " \
        "pass --power" in out.out
    head = [x for x in out.out.splitlines() if x.startswith("start")]
    assert head and "W" not in head[0]              # no power columns
    assert P.main(args + ["--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["power_source"] is None
    assert "RAPL found" in out.err


@pytest.mark.skipif(shutil.which("gnuplot") is None, reason="no gnuplot")
def test_plot(tmp_path):
    for args in (["--synthetic-day", "900", "--interval", "3600"],
                 [hand_log(tmp_path), "--interval", "60"]):
        png = tmp_path / "it's.png"
        out = run("-n", 4, "--capacity", 100, "--plot", png, *args)
        assert out.returncode == 0, out.stderr
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        png.unlink()


def test_plot_without_gnuplot(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    out = run("-n", 4, "--capacity", 100, "--synthetic-day", 900,
              "--plot", tmp_path / "p.png", env=dict(os.environ,
                                                     PATH=str(empty)))
    assert out.returncode == 2
    assert out.stdout == "" and len(out.stderr.splitlines()) == 1
    assert "gnuplot not found" in out.stderr


def bad_files(tmp):
    (tmp / "empty.log").write_bytes(b"")
    (tmp / "junk.log").write_bytes(b"\xff\xfe\x00junk\nmore junk\n")
    (tmp / "corrupt.gz").write_bytes(b"\x1f\x8b" + b"\x00" * 40)
    (tmp / "short.gz").write_bytes(gzip.compress(b"\n".join(COMMON))[:30])
    (tmp / "header-only.log").write_text(HEADER + "\n")
    (tmp / "d").mkdir()


OK = ["-n", "4", "--capacity", "100", "--synthetic-day", "900"]


@pytest.mark.parametrize("args", [
    ["{tmp}/missing.log", "-n", "4", "--capacity", "100"],
    ["{tmp}/d", "-n", "4", "--capacity", "100"],
    ["{tmp}/empty.log", "-n", "4", "--capacity", "100"],
    ["{tmp}/junk.log", "-n", "4", "--capacity", "100"],
    ["{tmp}/corrupt.gz", "-n", "4", "--capacity", "100"],
    ["{tmp}/short.gz", "-n", "4", "--capacity", "100"],
    ["{tmp}/header-only.log", "-n", "4", "--capacity", "100"],
    ["{tmp}/empty.log"] + OK,                       # two inputs
    ["-n", "4", "--capacity", "100"],               # none
    ["-n", "4", "--synthetic-day", "900"],          # no capacity
    ["-n", "0", "--capacity", "100", "--synthetic-day", "900"],
    ["-n", "2.5", "--capacity", "100", "--synthetic-day", "900"],
    ["--capacity", "100", "--synthetic-day", "900"],
    ["-n", "4", "--capacity", "0", "--synthetic-day", "900"],
    ["-n", "4", "--capacity", "-5", "--synthetic-day", "900"],
    ["-n", "4", "--capacity", "inf", "--synthetic-day", "900"],
    ["-n", "4", "--capacity", "1", "--synthetic-day", "0"],
    OK + ["--level", "0"],
    OK + ["--level", "1.01"],
    OK + ["--level", "nan"],
    OK + ["--power", "100"],
    OK + ["--degraded"],
    OK + ["--power", "100,200,300"],
    OK + ["--power", "a,b"],
    OK + ["--power", "200,100"],
    OK + ["--power=-1,100"],
    OK + ["--power", "0,0"],
    OK + ["--power", "100,200", "--off-watts", "-1"],
    OK + ["--interval", "0"],
    OK + ["--interval", "-300"],
    OK + ["--interval", "1e-9"],
    OK + ["--min-on", "5"],
    OK + ["--min-on", "-1"],
    OK + ["--from-status", "http://127.0.0.1:1/"],
    OK + ["--bogus"],
    ["-n", "4", "--from-status", "http://127.0.0.1:1/",
     "--synthetic-day", "900"],
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args):
    """In the test's process (argparse's errors exit, the others
    return 2): a subprocess each would take seconds."""
    bad_files(tmp_path)
    try:
        code = P.main([a.format(tmp=tmp_path) for a in args])
    except SystemExit as e:
        code = e.code
    out = capsys.readouterr()
    assert code == 2
    assert out.out == ""
    assert len(out.err.splitlines()) == 1, out.err
    assert out.err.startswith("qosctl-plan: ")


@pytest.mark.parametrize("args", [
    ["{tmp}/missing.log", "-n", "4", "--capacity", "100"],
    ["{tmp}/short.gz", "-n", "4", "--capacity", "100"],
    ["{tmp}/junk.log", "-n", "4", "--capacity", "100"],
    ["-n", "0", "--capacity", "100", "--synthetic-day", "900"],
    OK + ["--power", "200,100"],
])
def test_bad_input_as_a_command(tmp_path, args):
    bad_files(tmp_path)
    out = run(*[a.format(tmp=tmp_path) for a in args])
    assert out.returncode == 2, out
    assert out.stdout == ""
    assert len(out.stderr.splitlines()) == 1, out.stderr
    assert out.stderr.startswith("qosctl-plan: ")
    assert "Traceback" not in out.stderr
