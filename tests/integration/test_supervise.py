"""How the parent supervises the controller, on a real Apache: the files
it opens as root, a controller that hangs (period 0.25 s), and a
supervisor that is stopped with it.

The controller is replaced once its heartbeat has been still for
qc_hung_after() (qc_heartbeat.h: 10 periods, at least 15 s); a
controller stopped for less (the shaped-link test in
test_controller.py stops one for a few seconds) resumes.  httpd's parent
replaces a supervisor whose beat stood still 5 s, or whose controller
stood still 10 s beyond that, looking every ten seconds (qc_watch.c).
These servers shorten the 15 s to HUNG_AFTER and the 10 s to
CONTROLLER_EXTRA (QOSCTL_TEST_* in their environment, which only
shortens), so that the tests wait seconds, not half minutes.
"""

import functools
import os
import pwd
import re
import signal
import subprocess
import time

import pytest

import qcharness

T = 0.25
HUNG_AFTER = 5.0            # > 10 T: this minimum is the limit
CONTROLLER_EXTRA = 3.0
BASE = ("QosCtl On\nQosCtlPeriod %s\nQosCtlContentTrees /degraded /full\n"
        "QosCtlExclude /qosctl-status\n"
        "<Location /qosctl-status>\n  SetHandler qosctl-status\n"
        "</Location>\n" % T)

wait_for = qcharness.wait_for
alive = qcharness.alive


controller = qcharness.controller
fresh_controller = functools.partial(qcharness.fresh_controller, period=T)


@pytest.fixture
def apache(site_factory, monkeypatch):
    monkeypatch.setenv("QOSCTL_TEST_HUNG_MIN_SEC", str(HUNG_AFTER))
    monkeypatch.setenv("QOSCTL_TEST_CONTROLLER_EXTRA_SEC",
                       str(CONTROLLER_EXTRA))

    def make(extra="", before_start=None, **kw):
        kw.setdefault("cpus", "0")
        a = site_factory(extra=BASE + extra, **kw)
        if before_start:
            # A file planted after the admin's `apachectl -t`, which
            # refuses it (test_config_errors): what a start does.
            before_start(a)
        return a.start(config_test=before_start is None)

    return make


# -- QosCtlLog and QosCtlStateFile are not followed through a symlink --------

def refused_line(a, directive, path):
    """The error-log lines that refuse `path` for `directive`."""
    return [l for l in a.log().splitlines()
            if directive in l and path in l and "symbolic link" in l]


def test_log_symlink_is_not_followed(apache):
    def plant(a):
        with open(os.path.join(a.root, "victim"), "w"):
            pass
        os.symlink(os.path.join(a.root, "victim"),
                   os.path.join(a.root, "ctl.tsv"))

    a = apache("QosCtlLog ctl.tsv\n", before_start=plant)
    assert wait_for(lambda: controller(a)["periods"] >= 4)
    assert os.path.getsize(os.path.join(a.root, "victim")) == 0
    assert os.path.islink(os.path.join(a.root, "ctl.tsv"))
    assert len(refused_line(a, "QosCtlLog",
                            os.path.join(a.root, "ctl.tsv"))) == 1, a.log()
    # Served and controlled as before, without the log.
    assert a.get("/x.txt")[0] == 200
    assert fresh_controller(a)


def test_log_that_is_a_fifo_or_a_hard_link_is_refused(apache):
    """A FIFO would block root's open for ever (no controller); a hard
    link to another file would have root write into that file."""
    def plant(a):
        os.mkfifo(os.path.join(a.root, "ctl.tsv"))
        with open(os.path.join(a.root, "victim"), "w"):
            pass
        os.link(os.path.join(a.root, "victim"),
                os.path.join(a.root, "state"))

    a = apache("QosCtlLog ctl.tsv\nQosCtlStateFile state\n",
               before_start=plant)
    assert wait_for(lambda: controller(a)["periods"] >= 4)
    assert os.path.getsize(os.path.join(a.root, "victim")) == 0
    # (A FIFO opened for writing without a reader fails at once: ENXIO.)
    lines = [l for l in a.log().splitlines() if "going on without it" in l]
    assert len([l for l in lines if "QosCtlLog" in l]) == 1, a.log()
    assert len([l for l in lines if "QosCtlStateFile" in l
                and "not a regular file" in l]) == 1, a.log()
    assert a.get("/x.txt")[0] == 200


def test_dangling_log_symlink_creates_nothing(apache):
    def plant(a):
        os.symlink(os.path.join(a.root, "created-by-root"),
                   os.path.join(a.root, "ctl.tsv"))

    a = apache("QosCtlLog ctl.tsv\n", before_start=plant)
    assert wait_for(lambda: controller(a)["periods"] >= 4)
    assert not os.path.lexists(os.path.join(a.root, "created-by-root"))
    assert len(refused_line(a, "QosCtlLog",
                            os.path.join(a.root, "ctl.tsv"))) == 1, a.log()


def test_state_file_symlink_is_not_followed(apache):
    # A state that seeds the model far from its defaults (as in
    # test_state_file_seeds_the_model): if it were read, it would show.
    n = 11
    p = ",".join("1" if i == j else "0"
                 for i in range(n) for j in range(i, n))
    state = ("qcrls2 %s b=3e-08 c=7e-05 d=0.01 lambda=0.98 n=100 "
             "e2=0.0001 dc=0.001 p=%s\n"
             % (" ".join("a%d=0.00025" % j for j in range(8)), p))

    def plant(a):
        with open(os.path.join(a.root, "victim"), "w") as f:
            f.write(state)
        os.symlink(os.path.join(a.root, "victim"),
                   os.path.join(a.root, "qosctl.state"))

    a = apache("QosCtlStateFile qosctl.state\n", before_start=plant)
    assert wait_for(lambda: controller(a)["periods"] >= 4)
    with open(os.path.join(a.root, "victim")) as f:
        assert f.read() == state
    assert len(refused_line(a, "QosCtlStateFile",
                            os.path.join(a.root, "qosctl.state"))) == 1, \
        a.log()
    # Not read either: the model starts from the defaults (a 1e-4 s).
    assert a.status_json()["model"]["a"] != pytest.approx(0.00025, rel=0.2)
    assert a.get("/x.txt")[0] == 200


# -- nor through any directory another user may change ----------------------

def refused(a, directive, path, why):
    return [l for l in a.log().splitlines()
            if directive in l and path in l and why in l
            and "going on without it" in l]


def as_user(a, path):
    """path (a directory) made the User's, as a site's files may be."""
    user = qcharness.run_user()
    pw = pwd.getpwnam(user)
    os.chown(path, pw.pw_uid, pw.pw_gid)


def test_log_in_a_symlinked_directory_is_not_created(apache):
    """state/ is the User's; state/sub a link it made to elsewhere: root
    must neither create nor write the log at the link's target."""
    def plant(a):
        state = os.path.join(a.root, "state")
        os.mkdir(state)
        os.mkdir(os.path.join(a.root, "elsewhere"))
        os.symlink(os.path.join(a.root, "elsewhere"),
                   os.path.join(state, "sub"))
        as_user(a, state)

    path = None
    a = apache("QosCtlLog state/sub/qosctl.log\n"
               "QosCtlStateFile state/sub/qosctl.state\n",
               before_start=plant)
    assert wait_for(lambda: controller(a)["periods"] >= 4)
    assert os.listdir(os.path.join(a.root, "elsewhere")) == []
    for directive, name in (("QosCtlLog", "qosctl.log"),
                            ("QosCtlStateFile", "qosctl.state")):
        path = os.path.join(a.root, "state", "sub", name)
        # The User's directory is refused before its link is reached.
        assert len(refused(a, directive, path, "owned by another user")) \
            == 1, a.log()
    assert a.get("/x.txt")[0] == 200
    assert fresh_controller(a)


def test_directory_links_only_root_could_make_are_followed(apache):
    """The admin's own link to a directory (Debian's /var/run is one) is
    followed, and its target checked in turn; a link the User made, in
    a sticky directory, is not."""
    def plant(a):
        os.mkdir(os.path.join(a.root, "elsewhere"))
        os.symlink(os.path.join(a.root, "elsewhere"),
                   os.path.join(a.root, "sub"))
        sticky = os.path.join(a.root, "sticky")
        os.mkdir(sticky)
        os.chmod(sticky, 0o1777)
        os.symlink("../elsewhere", os.path.join(sticky, "sub"))
        pw = pwd.getpwnam(qcharness.run_user())
        os.lchown(os.path.join(sticky, "sub"), pw.pw_uid, pw.pw_gid)

    a = apache("QosCtlLog sub/qosctl.log\n"
               "QosCtlStateFile sticky/sub/qosctl.state\n",
               before_start=plant)
    assert wait_for(lambda: controller(a)["periods"] >= 4)
    assert os.listdir(os.path.join(a.root, "elsewhere")) == ["qosctl.log"]
    lines = refused(a, "QosCtlStateFile",
                    os.path.join(a.root, "sticky", "sub"),
                    "symbolic link another user owns")
    assert len(lines) == 1, a.log()
    assert len([l for l in a.log().splitlines()
                if "going on without it" in l]) == 1, a.log()


@pytest.mark.parametrize("mode,gid,why", [
    (0o777, 0, "every user may write"),
    (0o775, 33, "its group may write"),
])
def test_log_in_a_directory_others_may_write_is_refused(apache, mode, gid,
                                                         why):
    def plant(a):
        d = os.path.join(a.root, "logs")
        os.mkdir(d)
        os.chown(d, 0, gid)
        os.chmod(d, mode)

    a = apache("QosCtlLog logs/ctl.tsv\n", before_start=plant)
    assert wait_for(lambda: controller(a)["periods"] >= 4)
    assert not os.path.exists(os.path.join(a.root, "logs", "ctl.tsv"))
    assert len(refused(a, "QosCtlLog", os.path.join(a.root, "logs"),
                       why)) == 1, a.log()


def test_log_in_roots_own_and_in_a_sticky_directory_is_written(apache):
    """What is safe stays allowed: root's 0755 directories, and a sticky
    one like /tmp, where no one can replace root's names."""
    def plant(a):
        d = os.path.join(a.root, "sticky")
        os.mkdir(d)
        os.chmod(d, 0o1777)
        os.mkdir(os.path.join(a.root, "logs"))

    a = apache("QosCtlLog logs/ctl.tsv\nQosCtlStateFile sticky/state\n",
               before_start=plant)
    assert wait_for(lambda: controller(a)["periods"] >= 4)
    assert wait_for(lambda: os.path.getsize(
        os.path.join(a.root, "logs", "ctl.tsv")) > 0)
    assert os.path.isfile(os.path.join(a.root, "sticky", "state"))
    assert "going on without it" not in a.log(), a.log()


# -- a hung controller is replaced -------------------------------------------

def hung_lines(a):
    return re.findall(r"controller pid (\d+) hung for ([0-9.]+) s; replaced",
                      a.log())


def test_stopped_controller_is_replaced(apache):
    a = apache()
    old = wait_for(lambda: fresh_controller(a))["pid"]
    os.kill(old, signal.SIGSTOP)
    try:
        assert wait_for(lambda: controller(a)["fail_open"], limit=5)
        stopped = time.time()
        new = wait_for(lambda: fresh_controller(a, not_pid=old), limit=40,
                       step=0.1)
        took = time.time() - stopped
    finally:
        if alive(old):
            os.kill(old, signal.SIGCONT)
    assert new and new["pid"] != old, a.log()
    assert not new["fail_open"]
    assert wait_for(lambda: not alive(old), limit=5)
    lines = hung_lines(a)
    assert len(lines) == 1, a.log()
    assert int(lines[0][0]) == old
    assert HUNG_AFTER - 1 <= float(lines[0][1]) < 15, a.log()
    print("stopped controller replaced %.1f s after the request path "
          "failed open" % took)
    # The new one serves on, and is left alone.
    time.sleep(2)
    assert controller(a)["pid"] == new["pid"]
    assert not controller(a)["fail_open"]
    assert len(hung_lines(a)) == 1


def test_briefly_stopped_controller_and_graceful_restart_kill_nothing(
        apache):
    a = apache()
    old = wait_for(lambda: fresh_controller(a))["pid"]
    # As the shaped-link test does, for less than HUNG_AFTER: fails
    # open, resumes.
    os.kill(old, signal.SIGSTOP)
    try:
        assert wait_for(lambda: controller(a)["fail_open"], limit=5)
        time.sleep(HUNG_AFTER / 2)
        assert alive(old) and controller(a)["pid"] == old
    finally:
        os.kill(old, signal.SIGCONT)
    assert wait_for(lambda: fresh_controller(a))["pid"] == old
    # A graceful restart replaces it the ordinary way; the new one then
    # lives longer than HUNG_AFTER, unkilled.
    a.graceful()
    new = wait_for(lambda: fresh_controller(a, not_pid=old), limit=15)
    assert new, a.log()
    time.sleep(HUNG_AFTER + 3)
    assert controller(a)["pid"] == new["pid"]
    assert fresh_controller(a)
    assert hung_lines(a) == [], a.log()
    assert "ended (status" not in a.log() and "died" not in a.log()


# -- httpd's parent restarts a stopped supervisor ---------------------------

def supervisor_of(a, ctl):
    sup = qcharness.parent_pid(ctl)
    assert qcharness.parent_pid(sup) == a.pid, (ctl, sup, a.pid)
    return sup


def kill_as_user(sig, *pids):
    """kill(1) as the User: what any CGI or PHP script may do."""
    subprocess.run(["runuser", "-u", qcharness.run_user(), "--", "kill",
                    "-%s" % sig] + [str(p) for p in pids], check=True)


@pytest.mark.parametrize("mpm", ["event", "prefork"])
def test_stopped_supervisor_and_controller_are_replaced_by_httpd(apache,
                                                                 mpm):
    """Each MPM runs the monitor hook in its own maintenance loop.  The
    controller as the User (not qosctl, where that user exists), which
    is what can stop it."""
    a = apache("QosCtlUser %s\n" % qcharness.run_user(), mpm=mpm,
               loglevel="warn qosctl:trace2")
    ctl = wait_for(lambda: fresh_controller(a))["pid"]
    sup = supervisor_of(a, ctl)
    kill_as_user("STOP", sup, ctl)
    stopped = time.monotonic()
    try:
        assert wait_for(lambda: controller(a)["fail_open"], limit=5)
        # Served meanwhile: the request path fails open.
        assert a.get("/x.txt")[0] == 200
        new = wait_for(lambda: fresh_controller(a, not_pid=ctl), limit=40,
                       step=0.2)
        took = time.monotonic() - stopped
    finally:
        for pid in (sup, ctl):
            if alive(pid):
                os.kill(pid, signal.SIGCONT)
    assert new, a.log()
    assert took < 30, (took, [l for l in a.log().splitlines()
                              if "QosCtl: supervisor" in l])
    # Both stopped ones were killed, by the pid httpd started.
    assert wait_for(lambda: not alive(sup) and not alive(ctl), limit=5)
    assert supervisor_of(a, new["pid"]) != sup
    lines = re.findall(r"supervisor %d killed by httpd's parent: its "
                       r"supervisor stood still \(stopped or hung\) for "
                       r"([0-9.]+) s" % sup, a.log())
    assert len(lines) == 1 and float(lines[0]) >= 5, a.log()
    restarted = controller(a)["restarted_by_parent"]
    assert restarted["count"] == 1 and "supervisor stood still" \
        in restarted["reason"], restarted
    assert "Controller restarted by httpd's parent at" \
        in a.get("/qosctl-status")[2].decode()
    print("supervisor and controller stopped: control back after %.1f s"
          % took)
    # The new pair is left alone: httpd's parent looks at it (every ten
    # seconds) and finds nothing wrong.
    new_sup = supervisor_of(a, new["pid"])
    assert wait_for(lambda: re.search(
        r"supervisor %d looked at: still for [0-9.]+ s, reason 0"
        % new_sup, a.log()), limit=25), a.log()
    assert controller(a)["pid"] == new["pid"]
    assert controller(a)["restarted_by_parent"]["count"] == 1


def test_supervisor_stopped_on_and_off_is_replaced_for_its_controller(
        apache):
    """Stopped 3 s at a time, continued for a moment: such a supervisor
    beats often enough for httpd's parent, and each gap in its own looks
    makes it count the controller's silence afresh, so it never replaces
    a stopped controller.  The parent does, once the controller has been
    still for HUNG_AFTER + CONTROLLER_EXTRA."""
    a = apache()
    ctl = wait_for(lambda: fresh_controller(a))["pid"]
    sup = supervisor_of(a, ctl)
    os.kill(ctl, signal.SIGSTOP)
    t0 = time.monotonic()
    new = None
    try:
        while new is None and alive(sup) and time.monotonic() - t0 < 70:
            os.kill(sup, signal.SIGSTOP)
            time.sleep(3)
            if alive(sup):
                os.kill(sup, signal.SIGCONT)
            time.sleep(0.3)
            new = fresh_controller(a, not_pid=ctl)
        new = new or wait_for(lambda: fresh_controller(a, not_pid=ctl),
                              limit=10)
    finally:
        for pid in (sup, ctl):
            if alive(pid):
                os.kill(pid, signal.SIGCONT)
    assert new, a.log()
    assert "the controller stood still and its supervisor did not " \
        "replace it" in controller(a)["restarted_by_parent"]["reason"]
    assert hung_lines(a) == [], a.log()
    assert wait_for(lambda: not alive(sup) and not alive(ctl), limit=5)
    print("controller back %.1f s after it was stopped"
          % (time.monotonic() - t0))


def test_graceful_restart_ends_a_stopped_supervisor_and_controller(apache):
    a = apache()
    ctl = wait_for(lambda: fresh_controller(a))["pid"]
    sup = supervisor_of(a, ctl)
    os.kill(sup, signal.SIGSTOP)
    os.kill(ctl, signal.SIGSTOP)
    try:
        a.graceful()
        new = wait_for(lambda: fresh_controller(a, not_pid=ctl), limit=20)
        assert new, a.log()
        assert wait_for(lambda: not alive(sup) and not alive(ctl), limit=10)
    finally:
        for pid in (sup, ctl):
            if alive(pid):
                os.kill(pid, signal.SIGCONT)
    assert "restarted_by_parent" not in controller(a)


# -- the controller runs ahead of the workers --------------------------------

def uid_of(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"^Uid:\s+(\d+)", f.read(), re.M).group(1))


def test_a_controller_user_of_its_own_cannot_be_stopped_by_the_user(apache):
    """QosCtlUser: the supervisor and the controller run as a user that
    is not httpd's, so a CGI or mod_php script, running as httpd's User,
    cannot signal them; the files opened as root still work."""
    own = "nobody" if qcharness.run_user() != "nobody" else "daemon"
    a = apache("QosCtlUser %s\nQosCtlLog qosctl.tsv\n" % own)
    ctl = wait_for(lambda: fresh_controller(a))["pid"]
    sup = supervisor_of(a, ctl)
    assert uid_of(ctl) == uid_of(sup) == pwd.getpwnam(own).pw_uid
    for pid in (sup, ctl):
        stop = subprocess.run(["runuser", "-u", qcharness.run_user(), "--",
                               "kill", "-STOP", str(pid)],
                              capture_output=True)
        assert stop.returncode != 0, "the User stopped pid %d" % pid
    periods = controller(a)["periods"]
    assert wait_for(lambda: controller(a)["periods"] >= periods + 8)
    assert not controller(a)["fail_open"] and controller(a)["pid"] == ctl
    with open(os.path.join(a.root, "qosctl.tsv")) as f:
        assert len(f.read().splitlines()) > 8


def test_controller_runs_at_a_raised_priority(apache):
    a = apache()
    ctl = wait_for(lambda: fresh_controller(a))["pid"]
    sup = qcharness.parent_pid(ctl)
    workers = [p for p in a.children() if p not in (ctl, sup)]
    # Raised below the workers' nice, which is httpd's (0 here): when
    # the CPU is saturated it still senses and decides every period.
    nice = lambda pid: os.getpriority(os.PRIO_PROCESS, pid)
    assert nice(ctl) == -10
    assert workers and all(nice(p) == nice(a.pid) == 0 for p in workers)
