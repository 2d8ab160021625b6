"""Premium clients come first on a best-effort host (no QosCtlGuarantee),
on a real Apache: while an open-loop overload of basic clients holds
basic below the top level, a paced premium client that fits in best
effort's share is served from the full tree.

The overload is the controller's own, on loopback declared a 2 Mbit/s
link (as test_agent.py's HAProxy test): with a bound of 0.5 best effort
may send about 1 Mbit/s.  Basic offers 64 KB files at 20 req/s (about
10 Mbit/s full, 1.3 Mbit/s even degraded to 8 KB), open loop (httperf:
a refused client goes away, so refusing relieves the link).  Premium
asks one 64 KB file a second (0.5 Mbit/s), well inside the share, from
an address in QosCtlPremiumAddress (X-Forwarded-For from loopback,
which mod_remoteip trusts here).  Other traffic on loopback only adds
to the overload.

The same run with the trickle left basic (no X-Forwarded-For), as a
control: it was served from the full tree in 0 of 15 samples, twice
(8 KB replies, and 503s while basic was refused), against 15 of 15
marked premium.  Until the controller served best effort's premium
first, a best-effort host served both classes at the one level, and
marking changed nothing.

Nothing here is timed: the controller is polled until basic is below
the top, and then the samples are counted.
"""

import os
import signal
import subprocess
import time

import qcharness

T = 0.25
PREMIUM_IP = "192.0.2.7"
CONF = ("QosCtl On\nQosCtlPeriod %s\nQosCtlContentTrees /degraded /full\n"
        "QosCtlResource link lo 2Mbit\nQosCtlUtilizationBound 0.5\n"
        "QosCtlPremiumAddress 192.0.2.0/24\n" % T)
FULL, DEGRADED = 65536, 8192
BASIC_RATE = 20
SAMPLES = 15

wait_for = qcharness.wait_for


def with_files(s):
    """The 64 KB file at full quality, an 8 KB one in the degraded tree."""
    for tree, size in (("full", FULL), ("degraded", DEGRADED)):
        with open(os.path.join(s.docroot, tree, "64k.bin"), "wb") as f:
            f.write(tree[0].encode() * size)


def basic(s):
    """(basic's level, the host's top level) from the status JSON."""
    v = s.vhost("localhost")
    return v["classes"]["basic"]["m"], v["levels"]


def overload(s, seconds):
    """httperf offering BASIC_RATE 64 KB requests a second for at most
    `seconds`, open loop, as basic: its Popen (the caller stops it)."""
    return subprocess.Popen(
        [qcharness.HTTPERF, "--server", "127.0.0.1", "--port", str(s.port),
         "--uri", "/64k.bin", "--rate", str(BASIC_RATE),
         "--num-conns", str(BASIC_RATE * seconds), "--timeout", "5",
         "--hog"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def stop(proc):
    """End httperf by its pid (SIGINT: it reports and exits), bounded;
    its report, parsed."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate(timeout=10)
    rep = qcharness.parse_httperf(out or "")
    rep["raw"] = out or ""
    return rep


def trickle(s, headers):
    """Under basic's overload, once basic is below the top: SAMPLES
    requests for the 64 KB file, one a second, sent with `headers`.
    Returns ([(status, body size, basic's level then)], httperf's
    report, whether basic went below the top)."""
    load = overload(s, 60)
    samples = []
    try:
        settled = wait_for(lambda: basic(s)[0] < basic(s)[1], limit=20,
                           step=T)
        if settled:
            for _ in range(SAMPLES):
                start = time.time()
                code, _, body = s.get("/64k.bin", headers=headers)
                samples.append((code, len(body), basic(s)[0]))
                time.sleep(max(0.0, 1.0 - (time.time() - start)))
    finally:
        rep = stop(load)
    return samples, rep, settled


def test_premium_comes_first_on_a_best_effort_host(server_factory):
    s = server_factory(CONF)
    with_files(s)
    s.start()
    assert wait_for(lambda: s.status()["controller"]["periods"] >= 2,
                    limit=20)
    v = s.vhost("localhost")
    assert not v["guaranteed"] and v["levels"] == 2, v
    samples, rep, settled = trickle(s, {"X-Forwarded-For": PREMIUM_IP})
    why = (samples, s.vhost("localhost")["classes"], rep["raw"][-600:])
    assert settled, why
    # Basic was overloaded: degraded (below the top) while premium was
    # asked, in most samples; and refused or served degraded replies.
    assert sum(1 for _, _, m in samples if m < 2) > SAMPLES // 2, why
    cls = s.vhost("localhost")["classes"]
    assert cls["basic"]["tree_responses"][0] + cls["basic"]["rejected"] > 0, \
        why
    # Premium, meanwhile, was served from the full tree in nearly all.
    full = sum(1 for code, size, _ in samples if (code, size) == (200, FULL))
    assert full >= SAMPLES - 2, why
    # ... and counted as premium, at the full tree (the second).
    assert cls["premium"]["tree_responses"][1] >= full, why
