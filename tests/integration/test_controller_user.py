"""The controller's user, on a real Apache: the system user qosctl (the
Debian package creates it) by default, httpd's User only without it, and
`apachectl -t` warns whenever the controller would run as the User,
whose scripts could stop it with a signal.

Run as root (the only case where anything is dropped).  A test that
needs the user qosctl creates it when this machine has none, and
removes it again: a package's user is left alone.
"""

import os
import pwd
import re
import subprocess

import pytest

import qcharness

T = 0.25
BASE = ("QosCtl On\nQosCtlPeriod %s\nQosCtlContentTrees /degraded /full\n"
        "QosCtlExclude /qosctl-status\n"
        "<Location /qosctl-status>\n  SetHandler qosctl-status\n"
        "</Location>\n" % T)
DEFAULT_USER = "qosctl"

wait_for = qcharness.wait_for

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or qcharness.run_user() is None,
    reason="the controller drops to a user only when httpd starts as root")


def uid_of(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"^Uid:\s+(\d+)", f.read(), re.M).group(1))


def warnings(out):
    """The lines of `httpd -t` output (or an error log) that warn about
    the controller's user."""
    return [l for l in out.splitlines()
            if re.search(r"QC1009[01]: ", l) and "[qosctl:warn]" in l]


def has_user(name):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


@pytest.fixture
def qosctl_user():
    """The user qosctl: this machine's, or one made for the test as the
    package's postinst makes it, and removed after (list this fixture
    before `apache`, whose servers must be gone by then)."""
    with qcharness.user_lock():
        made = False
        if not has_user(DEFAULT_USER):
            qcharness.make_system_user(DEFAULT_USER)
            made = True
        try:
            yield pwd.getpwnam(DEFAULT_USER)
        finally:
            if made:
                qcharness.remove_system_user(DEFAULT_USER)


# What kill(2) says to the User: the errno's name, or "sent".
KILL = ("import errno, os, signal, sys\n"
        "try:\n"
        "    os.kill(int(sys.argv[1]), getattr(signal, sys.argv[2]))\n"
        "    print('sent')\n"
        "except OSError as e:\n"
        "    print(errno.errorcode[e.errno])\n")


def signal_as_user(pid, sig):
    """kill(pid, sig) by a process of httpd's User, as its scripts run."""
    p = subprocess.run(["runuser", "-u", qcharness.run_user(), "--",
                        "/usr/bin/python3", "-c", KILL, str(pid), sig],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


@pytest.fixture
def apache(site_factory):
    def make(extra="", **kw):
        kw.setdefault("cpus", "0")
        return site_factory(extra=BASE + extra, **kw)

    return make


def started(a):
    """(controller pid, supervisor pid) of a started Apache."""
    a.start()
    ctl = wait_for(lambda: qcharness.fresh_controller(a, period=T))["pid"]
    sup = qcharness.parent_pid(ctl)
    assert qcharness.parent_pid(sup) == a.pid
    return ctl, sup


def test_controller_runs_as_qosctl_by_default(qosctl_user, apache):
    """No QosCtlUser: the supervisor and the controller take the user
    qosctl, which the User cannot signal; nothing to warn about."""
    a = apache()
    rc, out = a.config_test()
    assert rc == 0 and "Syntax OK" in out, out
    assert warnings(out) == [], out
    ctl, sup = started(a)
    assert uid_of(ctl) == uid_of(sup) == qosctl_user.pw_uid
    # A script of the User's stopping and continuing both, as a loop
    # would: every signal refused with EPERM, none delivered.
    for _ in range(3):
        for sig in ("SIGSTOP", "SIGCONT"):
            for pid in (sup, ctl):
                assert signal_as_user(pid, sig) == "EPERM", (sig, pid)
    periods = qcharness.controller(a)["periods"]
    assert wait_for(lambda: qcharness.controller(a)["periods"]
                    >= periods + 4)
    assert not qcharness.controller(a)["fail_open"]


def test_qosctluser_still_wins_over_the_default(qosctl_user, apache):
    own = "nobody" if qcharness.run_user() != "nobody" else "daemon"
    a = apache("QosCtlUser %s\n" % own)
    rc, out = a.config_test()
    assert rc == 0 and warnings(out) == [], out
    ctl, sup = started(a)
    assert uid_of(ctl) == uid_of(sup) == pwd.getpwnam(own).pw_uid


def test_qosctluser_equal_to_user_warns_and_runs(qosctl_user, apache):
    """Allowed (the server still runs, controlled), but protects
    nothing: `apachectl -t` says so in a warning that names both."""
    user = qcharness.run_user()
    a = apache("QosCtlUser %s\n" % user)
    rc, out = a.config_test()
    assert rc == 0 and "Syntax OK" in out, out
    lines = warnings(out)
    assert len(lines) == 1, out
    assert "QC10091: " in lines[0]
    assert "QosCtlUser %s is httpd's User" % user in lines[0]
    ctl, sup = started(a)
    assert uid_of(ctl) == uid_of(sup) == pwd.getpwnam(user).pw_uid
    # What the warning is about: the User's scripts reach it.
    assert signal_as_user(ctl, "SIGCONT") == "sent"


@pytest.fixture
def user_stays():
    """No one makes or removes the user qosctl meanwhile."""
    with qcharness.user_lock():
        yield


def test_without_qosctl_the_controller_runs_as_user_and_it_warns(
        user_stays, apache):
    if has_user(DEFAULT_USER):
        pytest.skip("this machine has a user %s (the package's?): not "
                    "removing it" % DEFAULT_USER)
    user = qcharness.run_user()
    a = apache()
    rc, out = a.config_test()
    assert rc == 0 and "Syntax OK" in out, out
    lines = warnings(out)
    assert len(lines) == 1 and "QC10090: " in lines[0], out
    assert "runs as httpd's User %s" % user in lines[0]
    ctl, sup = started(a)
    assert uid_of(ctl) == uid_of(sup) == pwd.getpwnam(user).pw_uid


def test_no_warning_while_qosctl_is_off(apache):
    """Off (the shipped default): no controller, nothing to warn about."""
    a = apache()
    rc, out = a.config_test(BASE.replace("QosCtl On", "QosCtl Off"))
    assert rc == 0 and warnings(out) == [], out
