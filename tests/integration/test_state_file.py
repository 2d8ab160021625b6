"""A QosCtlStateFile the controller did not write is reported once in
the error log, with the reason, and not used at all: the model starts
from its prior (the defaults: a 1e-4 s), not from the file (a 2.5e-4 s),
and not half from each.  Hostile files (cut short, huge, binary, NaN,
negative or out-of-range numbers, owned by another user or writable by
others) are each named, and Apache keeps serving."""

import os

import pytest

import qcharness

T = 0.25
BASE = ("QosCtl On\nQosCtlPeriod %s\nQosCtlContentTrees /degraded /full\n"
        "QosCtlExclude /qosctl-status\n"
        "<Location /qosctl-status>\n  SetHandler qosctl-status\n"
        "</Location>\n" % T)
NP = 11
GOOD = ("qcrls2 %s b=3e-08 c=7e-05 d=0.01 lambda=0.98 n=100 e2=0.0001 "
        "dc=0.001 p=%s\n" % (" ".join("a%d=0.00025" % j for j in range(8)),
                             ",".join("1" if i == j else "0"
                                      for i in range(NP)
                                      for j in range(i, NP))))

BAD = [
    ("negative-cost", GOOD.replace("c=7e-05", "c=-7e-05"),
     "c=-7e-05: out of range"),
    ("hex-float", GOOD.replace("b=3e-08", "b=0x1p-25"), "b=0x1p-25"),
    ("infinite", GOOD.replace("d=0.01", "d=inf"), "d=inf: not a number"),
    ("trailing-junk", GOOD.replace("\n", " junk\n"), "after p"),
    # A good fit beside a bad second line: nothing of it is used.
    ("bad-capacity-line", GOOD + "capacity -4 cpus\n",
     "line 2: capacity \"-4 cpus\""),
    # A capacity no machine has rescaled every cost to its ceiling.
    ("huge-capacity", GOOD + "capacity 1e308 cpus\n",
     "capacity 1e+308 cpus: out of range 0.001 to 8192"),
    ("link-capacity", GOOD + "capacity 1e20 bit/s\n",
     "capacity 1e+20 bit/s: out of range"),
    ("nan", GOOD.replace("a3=0.00025", "a3=nan"), "a3=nan"),
    ("negative-count", GOOD.replace("n=100", "n=-100"), "n=-100"),
    ("truncated", GOOD[:len(GOOD) // 2], "line 1"),
    ("huge-file", GOOD + " " * 100000, "longer than"),
    ("binary", bytes(range(1, 256)) * 4, "line 1"),
]


@pytest.fixture
def apache(site_factory):
    def make(extra):
        return site_factory(extra=BASE + extra, cpus="0").start()

    return make


def write(tmp_path, text, uid=None, mode=0o644):
    path = os.path.join(str(tmp_path), "qosctl.state")
    with open(path, "wb") as f:
        f.write(text if isinstance(text, bytes) else text.encode())
    os.chmod(path, mode)
    if uid is not None:
        os.chown(path, uid, -1)
    os.chmod(str(tmp_path), 0o755)
    return path


def the_one_complaint(a, reason):
    """After 8 periods, the error log's one line that the state file was
    not used, naming reason."""
    assert qcharness.wait_for(
        lambda: a.status_json()["controller"]["periods"] >= 8)
    lines = [l for l in a.log().splitlines()
             if "QosCtlStateFile not used" in l]
    assert len(lines) == 1, a.log()
    assert reason in lines[0], (reason, lines[0])
    return lines[0]


@pytest.mark.parametrize("text,reason", [b[1:] for b in BAD],
                         ids=[b[0] for b in BAD])
def test_bad_state_file_is_reported_once_and_not_used(apache, tmp_path,
                                                      text, reason):
    a = apache("QosCtlStateFile %s\n" % write(tmp_path, text))
    line = the_one_complaint(a, reason)
    assert line.startswith("QC10061: "), line
    model = a.status_json()["model"]
    # Nearly idle: a stays near its default, far from the file's.
    assert model["a"] == pytest.approx(1e-4, rel=0.2), model
    assert a.get("/x.txt")[0] == 200


def test_good_state_file_is_used_without_a_word(apache, tmp_path):
    a = apache("QosCtlStateFile %s\n" % write(tmp_path, GOOD))
    assert qcharness.wait_for(
        lambda: a.status_json()["controller"]["periods"] >= 4)
    assert "QosCtlStateFile not used" not in a.log()
    assert a.status_json()["model"]["a"] == pytest.approx(0.00025, rel=0.2)


# A uid no process of the test runs as: neither root nor the
# controller's user (the server's User, as no QosCtlUser is set).
STRANGER = 54321


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
@pytest.mark.parametrize("uid,mode,reason", [
    (STRANGER, 0o644, "owned by uid %d, neither root nor the "
     "controller's user" % STRANGER),
    (0, 0o664, "mode 0664: writable by its group"),
    (0, 0o646, "mode 0646: writable by every user"),
], ids=["wrong-owner", "group-writable", "world-writable"])
def test_state_file_others_may_write_is_not_used(apache, tmp_path, uid, mode,
                                                 reason):
    path = write(tmp_path, GOOD, uid=uid, mode=mode)
    a = apache("QosCtlStateFile %s\n" % path)
    line = the_one_complaint(a, reason)
    assert "neither read nor written" in line
    assert line.startswith("QC10060: "), line
    assert a.status_json()["model"]["a"] == pytest.approx(1e-4, rel=0.2)
    assert a.get("/x.txt")[0] == 200
    # Not written either: the file is as its owner left it.
    with open(path) as f:
        assert f.read() == GOOD


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_state_file_of_the_controllers_own_user_is_used(apache, tmp_path):
    """The controller runs as the user qosctl where it exists, else as
    the server's User (no QosCtlUser): a file that user owns, writable
    by it alone, is its own.  The package test may make or remove
    qosctl meanwhile: the lock holds it still."""
    import pwd
    with qcharness.user_lock():
        try:
            uid = pwd.getpwnam("qosctl").pw_uid
        except KeyError:
            uid = pwd.getpwnam(qcharness.run_user()).pw_uid
        a = apache("QosCtlStateFile %s\n" % write(tmp_path, GOOD, uid=uid,
                                                   mode=0o600))
        assert qcharness.wait_for(
            lambda: a.status_json()["controller"]["periods"] >= 4)
        assert "QosCtlStateFile not used" not in a.log()
        assert a.status_json()["model"]["a"] == pytest.approx(0.00025,
                                                              rel=0.2)
        a.stop()
