"""QosCtlResource cgroup: the controller measures the CPU a cgroup v2
group uses, not the machine's.

A private Apache measures a group the test makes under the cgroup v2
mount.  Work outside the group does not count; a process spinning inside
it does, and stops counting when it ends.  Needs root and a cgroup v2
mount where groups can be made; skipped otherwise.
"""

import os
import signal
import subprocess
import sys
import time

import pytest

import qcharness
from conftest import make_site

T = 0.25
SPIN = ("import time\nt = time.time() + 60\n"
        "while time.time() < t:\n    pass\n")


def cgroup2_mount():
    with open("/proc/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 2 and fields[2] == "cgroup2" and \
                    os.path.exists(os.path.join(fields[1], "cpu.stat")):
                return fields[1]
    return None


def wait_for(pred, limit=15.0, step=0.05):
    return qcharness.wait_for(pred, limit, step)


@pytest.fixture
def group():
    mount = cgroup2_mount()
    if os.geteuid() != 0 or mount is None:
        pytest.skip("needs root and a cgroup v2 mount")
    path = os.path.join(mount, "qosctl-test-%d" % os.getpid())
    try:
        os.mkdir(path)
    except OSError as e:
        pytest.skip("cannot make a cgroup: %s" % e)
    spinners = []

    def spin(inside):
        # The child joins the group itself, before it starts to work.
        join = ("echo $$ > %s/cgroup.procs && " % path) if inside else ""
        p = subprocess.Popen(["sh", "-c", join + 'exec "$0" -c "$1"',
                              sys.executable, SPIN], start_new_session=True)
        spinners.append(p)
        return p

    yield path, spin
    for p in spinners:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
    for _ in range(50):         # an exited process leaves the group late
        try:
            os.rmdir(path)
            break
        except OSError:
            time.sleep(0.1)


def measured(a):
    u = a.status_json()["utilization"]["measured"]
    return -1.0 if u is None else u


def periods(a):
    return a.status_json()["controller"]["periods"]


def test_cgroup_sensor_counts_the_group_only(group, tmp_path):
    path, spin = group
    a = qcharness.Apache(extra=(
        "QosCtl On\nQosCtlPeriod %s\nQosCtlResource cgroup %s\n"
        "QosCtlExclude /qosctl-status\n"
        "<Location /qosctl-status>\n  SetHandler qosctl-status\n"
        "</Location>\n" % (T, path)))
    make_site(a.docroot)
    try:
        a.start()
        assert wait_for(lambda: periods(a) >= 3)
        # Busy outside the group: nothing in it, so 0, every period.
        outside = spin(inside=False)
        start = periods(a)
        assert wait_for(lambda: periods(a) >= start + 4)
        assert measured(a) == 0.0
        os.kill(outside.pid, signal.SIGKILL)
        outside.wait(10)

        inside = spin(inside=True)
        u = wait_for(lambda: measured(a) > 0.05 and measured(a))
        assert u and 0.05 < u <= 1.0, u
        os.kill(inside.pid, signal.SIGKILL)
        inside.wait(10)
        assert wait_for(lambda: measured(a) == 0.0)
    finally:
        a.cleanup()
