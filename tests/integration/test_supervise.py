"""How the parent supervises the controller, on a real Apache: the files
it opens as root (period 0.25 s)."""

import os

import pytest

import qcharness
from conftest import make_site

T = 0.25
BASE = ("QosCtl On\nQosCtlPeriod %s\nQosCtlContentTrees /degraded /full\n"
        "QosCtlExclude /qosctl-status\n"
        "<Location /qosctl-status>\n  SetHandler qosctl-status\n"
        "</Location>\n" % T)

wait_for = qcharness.wait_for


def controller(a):
    return a.status_json()["controller"]


def fresh_controller(a, not_pid=None):
    c = controller(a)
    if c["pid"] and c["pid"] != not_pid and c["age_seconds"] is not None \
            and c["age_seconds"] < 2 * T and not c["fail_open"]:
        return c
    return None


@pytest.fixture
def apache():
    made = []

    def make(extra="", before_start=None, **kw):
        kw.setdefault("cpus", "0")
        a = qcharness.Apache(extra=BASE + extra, **kw)
        make_site(a.docroot)
        made.append(a)
        if before_start:
            before_start(a)
        return a.start()

    yield make
    for a in made:
        a.cleanup()


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
