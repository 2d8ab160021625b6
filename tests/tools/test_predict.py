"""tools/qosctl-predict: Erlang C and the response-time figures against
textbook values and a simulation; bad input gets one line and exit 2."""

import json
import random
import subprocess
import sys

import pytest

from tooltest import load_tool, serve_once, tool_path

TOOL = tool_path("qosctl-predict")
P = load_tool("qosctl-predict")


def run(*args):
    return subprocess.run([sys.executable, TOOL] + list(args),
                          capture_output=True, text=True, timeout=60)


def test_erlang_c_textbook_case():
    """n = 2, lambda = 1.5, mu = 1: P(wait) = 9/14, T = 16/7."""
    out = run("--servers", "2", "--service-rate", "1", "--arrival-rate",
              "1.5", "--json")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(l) for l in out.stdout.splitlines()]
    assert [r["model"] for r in rows] == ["M/M/n", "n*M/M/1"]
    mmn, rr = rows
    assert mmn["utilization"] == pytest.approx(0.75)
    assert mmn["p_wait"] == pytest.approx(0.643, abs=5e-4)
    assert mmn["mean_response"] == pytest.approx(2.29, abs=5e-3)
    # Two M/M/1 queues at 0.75 each: P(wait) = rho, T = 1 / (mu - lam/2),
    # the 95th percentile ln(20) times that.
    assert rr["p_wait"] == pytest.approx(0.75)
    assert rr["mean_response"] == pytest.approx(4.0)
    assert rr["p95_response"] == pytest.approx(4.0 * 2.995732, rel=1e-5)
    for r in rows:
        assert set(r) >= {"model", "utilization", "p_wait",
                          "mean_response", "p95_response"}


@pytest.mark.parametrize("n,a,want", [
    (1, 0.5, 0.5),                  # M/M/1: P(wait) = rho
    (2, 1.0, 1.0 / 3.0),            # 2 servers at rho 0.5
    (10, 8.0, 0.409),               # Erlang C tables: 0.4092
])
def test_erlang_c_values(n, a, want):
    assert P.erlang_c(n, a) == pytest.approx(want, abs=5e-4)


def test_erlang_c_stays_finite_for_many_servers():
    c = P.erlang_c(2000, 1900.0)
    assert 0.0 < c < 1.0


def test_one_server_both_models_agree():
    a = P.predict("M/M/n", 1, 0.6, 1.0)
    b = P.predict("n*M/M/1", 1, 0.6, 1.0)
    for k in ("p_wait", "mean_response", "p95_response"):
        assert a[k] == pytest.approx(b[k], rel=1e-9)
    assert a["mean_response"] == pytest.approx(2.5)


def test_p95_of_m_m_2_matches_a_simulation():
    """The response-time tail (wait + service) against a FCFS M/M/2
    simulated for 200,000 requests with a fixed seed."""
    rng = random.Random(7)
    lam, mu, n = 1.5, 1.0, 2
    free = [0.0] * n
    t, times = 0.0, []
    for _ in range(200000):
        t += rng.expovariate(lam)
        k = min(range(n), key=free.__getitem__)
        start = max(t, free[k])
        free[k] = start + rng.expovariate(mu)
        times.append(free[k] - t)
    times.sort()
    want = P.predict("M/M/n", n, lam, mu)
    assert times[int(0.95 * len(times))] == pytest.approx(
        want["p95_response"], rel=0.03)
    assert sum(times) / len(times) == pytest.approx(
        want["mean_response"], rel=0.03)


def test_range_gives_a_list_per_model_and_a_plot(tmp_path):
    png = str(tmp_path / "p.png")
    out = run("-n", "4", "--service-rate", "120", "--range", "50:450:100",
              "--json", "--plot", png)
    assert out.returncode == 0, out.stderr
    lists = [json.loads(l) for l in out.stdout.splitlines()]
    assert [len(x) for x in lists] == [5, 5]
    assert [r["arrival_rate"] for r in lists[0]] == [50, 150, 250, 350, 450]
    # Sharing one queue never waits more than n separate ones.
    for a, b in zip(*lists):
        assert a["mean_response"] <= b["mean_response"]
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_delay_shifts_mean_and_p95_alone():
    """A fixed latency outside the queue moves the whole distribution:
    mean and every quantile by exactly the delay, nothing else."""
    base = P.predict("M/M/n", 2, 1.5, 1.0)
    out = run("-n", "2", "--service-rate", "1", "--arrival-rate", "1.5",
              "--delay", "0.25", "--json")
    assert out.returncode == 0, out.stderr
    mmn = json.loads(out.stdout.splitlines()[0])
    assert mmn["delay"] == 0.25
    assert mmn["mean_response"] == pytest.approx(base["mean_response"]
                                                 + 0.25)
    assert mmn["p95_response"] == pytest.approx(base["p95_response"] + 0.25)
    assert mmn["p_wait"] == base["p_wait"]


def test_table_by_default():
    out = run("-n", "2", "--service-rate", "1", "--load", "0.75")
    assert out.returncode == 0
    assert "M/M/n" in out.stdout and "0.6429" in out.stdout


@pytest.mark.parametrize("args", [
    ["-n", "0", "--service-rate", "1", "--load", "0.5"],
    ["-n", "two", "--service-rate", "1", "--load", "0.5"],
    ["-n", "2", "--service-rate", "0", "--load", "0.5"],
    ["-n", "2", "--service-rate", "-3", "--load", "0.5"],
    ["-n", "2", "--service-rate", "nan", "--load", "0.5"],
    ["-n", "2", "--service-rate", "1", "--arrival-rate", "0"],
    ["-n", "2", "--service-rate", "1", "--arrival-rate", "2"],
    ["-n", "2", "--service-rate", "1", "--load", "1"],
    ["-n", "2", "--service-rate", "1", "--range", "1:3:1"],
    ["-n", "2", "--service-rate", "1", "--range", "1:x:1"],
    ["-n", "2", "--service-rate", "1"],
    ["--service-rate", "1", "--load", "0.5"],
    ["-n", "2", "--from-status", "http://127.0.0.1:1/", "--load", "0.5"],
    ["-n", "2", "--service-rate", "1", "--load", "0.5", "--bogus"],
    ["-n", "2", "--service-rate", "1", "--load", "0.5", "--delay", "-1"],
    ["-n", "2", "--service-rate", "1", "--load", "0.5", "--delay", "inf"],
])
def test_bad_input_is_one_line_and_exit_2(args):
    out = run(*args)
    assert out.returncode == 2
    assert out.stdout == ""
    assert len(out.stderr.splitlines()) == 1, out.stderr
    assert out.stderr.startswith("qosctl-predict: ")
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("status, want", [
    # An overload measured the capacity: it is the service rate.
    ({"capacity": {"lower_bound": False, "full_quality": 250.0},
      "model": {"a": 0.002}}, 250.0),
    # Still a lower bound (no overload seen): 1 / a.
    ({"capacity": {"lower_bound": True, "full_quality": 40.0},
      "model": {"a": 0.002}}, 500.0),
    # No estimate yet (NaN is not JSON's; null is what the page gives).
    ({"capacity": {"lower_bound": False, "full_quality": None},
      "model": {"a": 0.004}}, 250.0),
    ({"model": {"a": 0.004}}, 250.0),
])
def test_service_rate_from_a_status_page(status, want):
    """Served over HTTP on loopback as mod_qosctl's page would be."""
    srv, t, seen = serve_once(status)
    try:
        rate, source = P.service_rate_from_status(
            "http://127.0.0.1:%d/qosctl-status" % srv.server_port)
    finally:
        t.join(10)
        srv.server_close()
    assert seen == ["/qosctl-status?format=json"]
    assert rate == pytest.approx(want)
    assert source
