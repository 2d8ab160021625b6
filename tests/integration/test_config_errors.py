"""Bad directives fail `httpd -t` with a message naming directive and value.

Each case is a configuration fragment and the words the error must
contain; `httpd -t` is what `apachectl -t` and `apachectl configtest`
run.
"""

import os

import pytest

import qcharness
from conftest import make_site

ON = "QosCtl On\n"

BAD = [
    # numbers and ranges
    ("QosCtlUtilizationBound 1.5", ["QosCtlUtilizationBound", "'1.5'"]),
    ("QosCtlUtilizationBound 0", ["QosCtlUtilizationBound", "'0'"]),
    ("QosCtlUtilizationBound abc", ["QosCtlUtilizationBound", "'abc'"]),
    ("QosCtlPeriod 0", ["QosCtlPeriod", "'0'"]),
    ("QosCtlPeriod -1", ["QosCtlPeriod", "'-1'"]),
    ("QosCtlPeriod 5x", ["QosCtlPeriod", "'5x'"]),
    ("QosCtlPeriod 0.01", ["QosCtlPeriod", "'0.01'"]),
    ("QosCtlGainMargin 0.5", ["QosCtlGainMargin", "'0.5'"]),
    ("QosCtlGainMargin nan", ["QosCtlGainMargin", "'nan'"]),
    ("QosCtlModel x 1", ["QosCtlModel", "'x'"]),
    ("QosCtlModel 1 -2", ["QosCtlModel", "'-2'"]),
    ("QosCtlModel 0 0", ["QosCtlModel", "cannot both be 0"]),
    ("QosCtlModel 1", ["QosCtlModel"]),
    ("QosCtlRetryAfter soon", ["QosCtlRetryAfter", "'soon'"]),
    ("QosCtlDropTolerance 0", ["QosCtlDropTolerance", "'0'"]),
    ("QosCtlDropTolerance 0.6", ["QosCtlDropTolerance", "'0.6'"]),
    ("QosCtlDropTolerance 1%", ["QosCtlDropTolerance", "'1%'"]),
    ("<VirtualHost 127.0.0.1:1>\nQosCtlDropTolerance 0.01\n</VirtualHost>",
     ["QosCtlDropTolerance", "VirtualHost"]),
    ("QosCtlPowerModel 90W 250", ["QosCtlPowerModel", "'90W'"]),
    ("QosCtlPowerModel 250 90", ["QosCtlPowerModel", "'250 90'",
                                 "at least"]),
    ("QosCtlPowerModel 0 0", ["QosCtlPowerModel", "'0 0'", "above 0"]),
    ("QosCtlPowerModel -5 100", ["QosCtlPowerModel", "'-5'"]),
    ("QosCtlPowerModel 100", ["QosCtlPowerModel", "two arguments"]),
    ("<VirtualHost 127.0.0.1:1>\nQosCtlPowerModel 90 250\n</VirtualHost>",
     ["QosCtlPowerModel", "VirtualHost"]),
    ("QosCtlRetryAfter 1.5", ["QosCtlRetryAfter", "'1.5'"]),
    ("QosCtlUser no-such-user-here", ["QosCtlUser", "'no-such-user-here'",
                                      "no such user"]),
    ("QosCtlUser root", ["QosCtlUser", "'root'", "not run as root"]),
    ("<VirtualHost 127.0.0.1:1>\nQosCtlUser nobody\n</VirtualHost>",
     ["QosCtlUser", "VirtualHost"]),
    # resources and units
    ("QosCtlResource disk", ["QosCtlResource", "'disk'"]),
    ("QosCtlResource link eth0 100Q", ["QosCtlResource", "'100Q'"]),
    ("QosCtlResource link eth0 100MB", ["QosCtlResource", "'100MB'"]),
    ("QosCtlResource link eth0", ["QosCtlResource"]),
    ("QosCtlResource link a/b 1G", ["QosCtlResource", "'a/b'"]),
    ("QosCtlResource cpu\nQosCtlResource cpu",
     ["QosCtlResource", "twice"]),
    ("QosCtlResource cpu 3-1", ["QosCtlResource", "'3-1'", "low to high"]),
    ("QosCtlResource cpu 0-99999", ["QosCtlResource", "'0-99999'"]),
    ("QosCtlResource cpu x", ["QosCtlResource", "'x'"]),
    ("QosCtlResource cpu 0,", ["QosCtlResource", "'0,'"]),
    ("QosCtlResource cpu 0 1", ["QosCtlResource", "'0 1'"]),
    ("QosCtlResource cpu 0\nQosCtlResource cpu 0",
     ["QosCtlResource", "cpu 0 is given twice"]),
    # procfs: nobody can have made it (a /nonexistent may exist)
    ("QosCtlResource cgroup /proc/no-such-group",
     ["QosCtlResource", "'/proc/no-such-group'", "not a directory"]),
    ("QosCtlResource cgroup /tmp", ["QosCtlResource", "'/tmp'", "cpu.stat"]),
    ("QosCtlResource cgroup sys/fs/cgroup",
     ["QosCtlResource", "'sys/fs/cgroup'", "absolute"]),
    ("QosCtlResource cgroup", ["QosCtlResource", "cgroup"]),
    ("QosCtlResource link nonexist0 100M",
     ["QosCtlResource", "'nonexist0'", "no such network interface"]),
    ("QosCtlGuarantee 50 13", ["QosCtlGuarantee", "'13'"]),
    ("QosCtlGuarantee 50 13Mbt", ["QosCtlGuarantee", "'13Mbt'"]),
    ("QosCtlGuarantee -5 13Mbit", ["QosCtlGuarantee", "'-5'"]),
    ("QosCtlGuarantee 0 13Mbit", ["QosCtlGuarantee", "'0'"]),
    # addresses
    ("QosCtlPremiumAddress 10.0.0.0/33", ["QosCtlPremiumAddress",
                                          "'10.0.0.0/33'"]),
    ("QosCtlPremiumAddress 1.2.3", ["QosCtlPremiumAddress", "'1.2.3'"]),
    ("QosCtlPremiumAddress 2001:db8::/129", ["QosCtlPremiumAddress",
                                             "'2001:db8::/129'"]),
    ("QosCtlPremiumAddress fe80::g", ["QosCtlPremiumAddress", "'fe80::g'"]),
    # trees, levels, prefixes
    ("QosCtlContentTrees /nonexistent /full",
     ["QosCtlContentTrees", "'/nonexistent'", "not a directory"]),
    ("QosCtlContentTrees /secret.txt /full",
     ["QosCtlContentTrees", "'/secret.txt'", "not a directory"]),
    ("QosCtlContentTrees /../etc /full", ["QosCtlContentTrees", "'/../etc'"]),
    ("QosCtlContentTrees degraded /full", ["QosCtlContentTrees",
                                           "'degraded'"]),
    ("QosCtlContentTrees /full /full", ["QosCtlContentTrees", "twice"]),
    # nested or identical trees: a URL would be under two of them
    ("QosCtlContentTrees / /full",
     ["QosCtlContentTrees", "/full is inside /;", "must not nest"]),
    ("QosCtlContentTrees /full /",
     ["QosCtlContentTrees", "/full is inside /;", "must not nest"]),
    ("QosCtlContentTrees /full/sub /full",
     ["QosCtlContentTrees", "/full/sub is inside /full;"]),
    ("QosCtlContentTrees /degraded /full/ /full/sub/",
     ["QosCtlContentTrees", "/full/sub/ is inside /full/;"]),
    ("QosCtlContentTrees /full /full/",
     ["QosCtlContentTrees", "/full/", "/full", "twice"]),
    ("<VirtualHost 127.0.0.1:1>\nQosCtlContentTrees / /degraded\n"
     "</VirtualHost>",
     ["QosCtlContentTrees", "/degraded is inside /;"]),
    ("QosCtlContentTrees", ["QosCtlContentTrees"]),
    ("QosCtlContentTrees /degraded /full\nQosCtlFixedLevel 3",
     ["QosCtlFixedLevel", "'3'", "0..2"]),
    ("QosCtlFixedLevel -1", ["QosCtlFixedLevel", "'-1'"]),
    ("QosCtlFixedLevel 1.5", ["QosCtlFixedLevel", "'1.5'", "0..1"]),
    ("QosCtlExclude status", ["QosCtlExclude", "'status'"]),
    # contexts
    ("<VirtualHost 127.0.0.1:1>\nQosCtlPeriod 1\n</VirtualHost>",
     ["QosCtlPeriod", "VirtualHost"]),
    ("<VirtualHost 127.0.0.1:1>\nQosCtl On\n</VirtualHost>",
     ["QosCtl", "VirtualHost"]),
    ("<Directory />\nQosCtlContentTrees /degraded /full\n</Directory>",
     ["QosCtlContentTrees", "not allowed"]),
    ("<Location />\nQosCtlFixedLevel 1\n</Location>",
     ["QosCtlFixedLevel", "not allowed"]),
]

GOOD = [
    "QosCtlUtilizationBound 0.9\nQosCtlPeriod 250ms\nQosCtlGainMargin 10",
    "QosCtlModel 0.83 0.035 0.55",
    "QosCtlDropTolerance 0.001",
    "QosCtlPowerModel 90 250\nQosCtlPowerModel 0 35.5",
    "QosCtlResource cpu\nQosCtlResource link lo 1G",
    "QosCtlResource cpu 0",
    "QosCtlResource cpu\nQosCtlResource cpu 0\nQosCtlResource link lo 100Mbit",
    "QosCtlContentTrees /degraded /full\nQosCtlFixedLevel 1.5\n"
    "QosCtlGuarantee 50 13Mbit\nQosCtlPremiumAddress 10.0.0.0/8 ::1\n"
    "QosCtlExclude /status /server-status\nQosCtlRetryAfter 0",
    # relative to ServerRoot, in a directory that exists
    "QosCtlLog qosctl.tsv\nQosCtlStateFile qosctl.state",
    "QosCtlUser nobody",
    # siblings under one parent do not nest
    "QosCtlContentTrees /degraded/sub /full/sub",
]



def _present_cpus():
    """The highest CPU number the machine has, from the kernel's list."""
    with open("/sys/devices/system/cpu/present") as f:
        return int(f.read().strip().replace("-", ",").split(",")[-1])


def _cgroup2_mount():
    """Where cgroup v2 is mounted with a cpu.stat (the root group's),
    /sys/fs/cgroup first; None without one."""
    found = []
    with open("/proc/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 2 and fields[2] == "cgroup2" and \
                    os.path.exists(os.path.join(fields[1], "cpu.stat")):
                found.append(fields[1])
    found.sort(key=lambda m: m != "/sys/fs/cgroup")
    return found[0] if found else None


@pytest.mark.parametrize("fragment,words", BAD,
                         ids=[b[0].replace("\n", " | ") for b in BAD])
def test_bad_directive_fails_configtest(apache, fragment, words):
    rc, out = apache.config_test(ON + fragment + "\n")
    assert rc != 0, out
    for w in words:
        assert w in out, (w, out)


@pytest.mark.parametrize("fragment", GOOD)
def test_good_directives_pass_configtest(apache, fragment):
    rc, out = apache.config_test(ON + fragment + "\n")
    assert rc == 0, out
    assert "Syntax OK" in out


def test_cpu_not_present_fails_configtest(apache):
    last = _present_cpus()
    if last >= 1023:
        pytest.skip("every CPU number is present")
    bad = "0-%d" % (last + 1)
    rc, out = apache.config_test(ON + "QosCtlResource cpu %s\n" % bad)
    assert rc != 0, out
    for w in ("QosCtlResource", "'%s'" % bad, "CPU %d is not present"
              % (last + 1)):
        assert w in out, (w, out)
    rc, out = apache.config_test(ON + "QosCtlResource cpu 0-%d\n" % last)
    assert rc == 0, out


def test_cgroup_v2_directory_passes_configtest(apache):
    mount = _cgroup2_mount()
    if mount is None:
        pytest.skip("no cgroup v2 mounted with cpu.stat")
    rc, out = apache.config_test(ON + "QosCtlResource cgroup %s\n"
                                 "QosCtlResource cpu\n" % mount)
    assert rc == 0, out
    assert "Syntax OK" in out


def test_a_real_interface_passes_configtest(apache):
    names = sorted(n for n in os.listdir("/sys/class/net") if n != "lo")
    if not names:
        pytest.skip("no interface besides lo")
    rc, out = apache.config_test(ON + "QosCtlResource link %s 1G\n"
                                 % names[0])
    assert rc == 0, out


# What only the whole configuration or the disk shows: each case is a
# function of the server (its ServerRoot, its Listen port) giving the
# fragment and the words the error must contain.
def _tree_link(apache, name, target):
    """A directory of the docroot that is a symbolic link to target."""
    link = os.path.join(apache.docroot, name)
    if not os.path.islink(link):
        os.symlink(target, link)
    return "/" + name


def _root_link(apache, name, target):
    """A symbolic link in the ServerRoot, for the file directives."""
    link = os.path.join(apache.root, name)
    if not os.path.islink(link):
        os.symlink(target, link)
    return link


def _planted(apache, name, make):
    """A file of the ServerRoot made by make(path) once."""
    path = os.path.join(apache.root, name)
    if not os.path.lexists(path):
        make(path)
    return path


def _unsafe_dir(apache, name, mode=0o755, uid=0, gid=0):
    """A directory of the ServerRoot that start-up's walk refuses."""
    path = os.path.join(apache.root, name)
    os.makedirs(path, exist_ok=True)
    os.chmod(path, mode)
    os.chown(path, uid, gid)
    return path


def _foreign_link(apache, name, target):
    """A symbolic link of the ServerRoot owned by another user."""
    link = _root_link(apache, name, target)
    os.lchown(link, STRANGER, -1)
    return link


# A uid no process of the test runs as.
STRANGER = 54321


def _hard_link(path):
    with open(path + ".victim", "w"):
        pass
    os.link(path + ".victim", path)


WHOLE = [
    ("agent-unresolvable",
     lambda a: ("QosCtlAgentListen no-such-host.invalid:8471",
                ["QosCtlAgentListen", "'no-such-host.invalid:8471'",
                 "cannot resolve"])),
    ("agent-not-local",
     lambda a: ("QosCtlAgentListen 192.0.2.1:8471",
                ["QosCtlAgentListen", "'192.0.2.1:8471'",
                 "not an address of this machine"])),
    ("agent-on-listen-port",
     lambda a: ("QosCtlAgentListen %d" % a.port,
                ["QosCtlAgentListen", "'%d'" % a.port,
                 "httpd itself listens on port %d" % a.port])),
    ("agent-on-listen-address",
     lambda a: ("QosCtlAgentListen 127.0.0.1:%d" % a.port,
                ["QosCtlAgentListen", "'127.0.0.1:%d'" % a.port,
                 "Listen"])),
    ("agent-on-vhost-listen",
     lambda a: ("Listen 127.0.0.1:%d\nQosCtlAgentListen localhost:%d"
                % (a.port + 1, a.port + 1),
                ["QosCtlAgentListen", "'localhost:%d'" % (a.port + 1),
                 "httpd itself listens"])),
    ("tree-is-link-to-tree",
     lambda a: ("QosCtlContentTrees %s /full"
                % _tree_link(a, "alias", os.path.join(a.docroot, "full")),
                ["QosCtlContentTrees", "'/alias'", "the same directory as",
                 "must not nest"])),
    # Followed to its end, a tree must stay inside DocumentRoot.
    ("tree-is-link-to-etc",
     lambda a: ("QosCtlContentTrees %s /full" % _tree_link(a, "etc", "/etc"),
                ["QosCtlContentTrees", "'/etc'", "resolves to /etc, outside "
                 "DocumentRoot"])),
    ("tree-is-link-out-of-docroot",
     lambda a: ("QosCtlContentTrees %s /full"
                % _tree_link(a, "up", os.path.join(a.root)),
                ["QosCtlContentTrees", "'/up'", "outside DocumentRoot"])),
    ("tree-is-link-into-tree",
     lambda a: ("QosCtlContentTrees %s /full"
                % _tree_link(a, "inner", "full/sub"),
                ["QosCtlContentTrees", "'/inner'", "inside",
                 "must not nest"])),
    # (In the server's own root: a shared machine may have a /nonexistent.)
    ("log-dir-missing",
     lambda a: ("QosCtlLog %s/missing/qosctl.tsv" % a.root,
                ["QosCtlLog", "'%s/missing/qosctl.tsv'" % a.root,
                 "directory %s/missing does not exist" % a.root])),
    ("log-is-directory",
     lambda a: ("QosCtlLog %s" % a.docroot,
                ["QosCtlLog", "'%s'" % a.docroot, "not a regular file"])),
    ("state-proc-mem",
     lambda a: ("QosCtlStateFile /proc/self/mem",
                ["QosCtlStateFile", "'/proc/self/mem'",
                 "/proc, /sys or /dev"])),
    ("state-sys",
     lambda a: ("QosCtlStateFile /sys/kernel/qosctl.state",
                ["QosCtlStateFile", "'/sys/kernel/qosctl.state'",
                 "/proc, /sys or /dev"])),
    ("state-dev-null",
     lambda a: ("QosCtlStateFile /dev/null",
                ["QosCtlStateFile", "'/dev/null'", "/proc, /sys or /dev"])),
    ("state-dir-links-to-proc",
     lambda a: ("QosCtlStateFile %s/mem" % _root_link(a, "proc-self",
                                                     "/proc/self"),
                ["QosCtlStateFile", "proc-self/mem'", "/proc, /sys or /dev"])),
    ("state-symlink",
     lambda a: ("QosCtlStateFile %s" % _root_link(a, "state-link",
                                                 "/proc/self/mem"),
                ["QosCtlStateFile", "state-link'", "symbolic link"])),
    ("state-fifo",
     lambda a: ("QosCtlStateFile %s" % _planted(a, "fifo", os.mkfifo),
                ["QosCtlStateFile", "fifo'", "not a regular file"])),
    ("log-hard-link",
     lambda a: ("QosCtlLog %s" % _planted(a, "linked.tsv", _hard_link),
                ["QosCtlLog", "linked.tsv'", "another hard link"])),
    # What the supervisor's open refuses, as root, on the way to the
    # file: a start would go on without it, so the test refuses it.
    ("log-dir-world-writable",
     lambda a: ("QosCtlLog %s/qosctl.tsv" % _unsafe_dir(a, "open", 0o777),
                ["QosCtlLog", "open/qosctl.tsv'", "open is a directory "
                 "every user may write", "a start would go on without"])),
    ("state-dir-group-writable",
     lambda a: ("QosCtlStateFile %s/qosctl.state"
                % _unsafe_dir(a, "group", 0o775, gid=STRANGER),
                ["QosCtlStateFile", "group/qosctl.state'",
                 "is a directory its group may write"])),
    ("state-dir-owned-by-another-user",
     lambda a: ("QosCtlStateFile %s/qosctl.state"
                % _unsafe_dir(a, "theirs", 0o755, uid=STRANGER),
                ["QosCtlStateFile", "theirs/qosctl.state'",
                 "is a directory owned by another user"])),
    ("log-dir-link-another-user-owns",
     lambda a: ("QosCtlLog %s/qosctl.tsv"
                % _foreign_link(a, "their-link", a.root),
                ["QosCtlLog", "their-link/qosctl.tsv'",
                 "is a symbolic link another user owns"])),
    ("state-dir-missing",
     lambda a: ("QosCtlStateFile %s/missing/qosctl.state" % a.root,
                ["QosCtlStateFile", "'%s/missing/qosctl.state'" % a.root,
                 "does not exist"])),
]


@pytest.mark.parametrize("case", [w[1] for w in WHOLE],
                         ids=[w[0] for w in WHOLE])
def test_whole_config_errors_fail_configtest(apache, case):
    fragment, words = case(apache)
    rc, out = apache.config_test(ON + fragment + "\n")
    assert rc != 0, out
    for w in words:
        assert w in out, (w, out)


def test_files_and_agent_that_are_fine_pass_configtest(apache):
    """A state file that exists, a log not yet created, an agent on a
    port of its own at a local name."""
    state = os.path.join(apache.root, "qosctl.state")
    with open(state, "w") as f:
        f.write("")
    rc, out = apache.config_test(
        ON + "QosCtlStateFile %s\nQosCtlLog %s/new.tsv\n"
        "QosCtlAgentListen localhost:%d\n" % (state, apache.root,
                                              qcharness.free_port()))
    assert rc == 0, out
    assert "Syntax OK" in out


def test_agent_address_is_checked_by_the_test_only(apache):
    """At a start the network may not be up yet (DNS, an address DHCP
    gives later): an agent address that does not bind costs the agent,
    with a log line, not the server."""
    extra = ON + "QosCtlAgentListen 192.0.2.1:%d\n" % qcharness.free_port()
    a = qcharness.Apache(extra=extra)
    try:
        make_site(a.docroot)
        assert a.config_test()[0] != 0
        a.start(config_test=False)
        assert a.get("/secret.txt")[0] == 200
        assert qcharness.wait_for(lambda: "QosCtlAgentListen" in a.log())
        assert "no agent" in a.log(), a.log()
    finally:
        a.cleanup()


def test_a_start_refusal_names_its_message_id(apache):
    rc, out = apache.config_test(ON + "QosCtlStateFile /proc/self/mem\n")
    assert rc != 0
    assert "QC10007: QosCtlStateFile: invalid value '/proc/self/mem'" in out


PREMIUM_HOSTS = """QosCtlPremiumAddress 192.0.2.0/24
<VirtualHost *:{port}>
  ServerName guaranteed.test
  QosCtlGuarantee 10 1MB
</VirtualHost>
<VirtualHost *:{port}>
  ServerName besteffort.test
</VirtualHost>
"""


def test_premium_list_on_a_best_effort_host_passes_without_a_warning(apache):
    """Premium comes first on every host, a best-effort one too (within
    best effort's share): a list a best-effort host names or inherits
    from the main server is no mistake, and the test says nothing of
    it.  QC10005, which once said the list had no effect there, is
    retired."""
    rc, out = apache.config_test(ON + PREMIUM_HOSTS.format(port=apache.port))
    assert rc == 0, out
    assert "Syntax OK" in out
    assert not [l for l in out.splitlines()
                if "QC10005" in l or "has no effect" in l], out
