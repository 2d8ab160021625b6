"""The request path makes no system call the request would not make anyway.

strace follows a single-process httpd (-X) through one request, plain
Apache serving the file from its DocumentRoot and mod_qosctl serving it
from a tree, at the top level (no stat of ours) and at a degraded level
(our stat of the degraded file lands in r->finfo, which the directory
walk then uses instead of its own).  The sequences must be the same
call for call, paths aside.
"""

import os
import re
import shutil
import signal
import subprocess
import time

import pytest

import qcharness
from conftest import make_site

IGNORED = ("futex", "mmap", "munmap", "brk", "madvise")

pytestmark = pytest.mark.skipif(shutil.which("strace") is None,
                                reason="strace not installed")


def trace_one_request(extra, docroot_sub=None):
    # Under -X httpd is one process of its User, which cannot signal a
    # controller of the user qosctl (where the package has made it): its
    # stop would wait for it.  The controller's user is no part of what
    # is traced here, so it is the User's.
    if "QosCtl On" in extra and qcharness.run_user():
        extra += "QosCtlUser %s\n" % qcharness.run_user()
    a = qcharness.Apache(extra=extra)
    make_site(a.docroot)
    if docroot_sub:
        a.docroot = os.path.join(a.docroot, docroot_sub)
    a.write_conf()
    out = os.path.join(a.root, "strace.out")
    p = subprocess.Popen(["strace", "-f", "-o", out, qcharness.HTTPD, "-X",
                          "-f", a.conf], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 30
        while not a.listening() and time.time() < deadline:
            time.sleep(0.1)
        a.get("/x.txt", headers={"X-Forwarded-For": "10.0.0.1"})
        a.get("/x.txt", headers={"X-Forwarded-For": "10.0.0.1"})
        time.sleep(0.5)
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(30)
    with open(out) as f:
        lines = f.read().splitlines()
    a.cleanup()
    # The second request, in the thread that read it (the MPM's other
    # threads interleave), from reading it to writing the reply.  Left
    # out: futex (thread hand-over) and the allocator's mmap/munmap/brk,
    # which follow the state of APR's free lists, not the request.
    start = max(i for i, l in enumerate(lines) if "GET /x.txt" in l)
    tid = lines[start].split()[0]
    seq = []
    for l in lines[start + 1:]:
        call = re.match(r"(\d+)\s+(\w+)\(", l)
        if not call or call.group(1) != tid or call.group(2) in IGNORED:
            continue
        seq.append((call.group(2), "x.txt" in l))
        if call.group(2) in ("writev", "sendfile", "write"):
            break
    return seq


def test_top_level_adds_no_syscall():
    plain = trace_one_request("", docroot_sub="full")
    ours = trace_one_request("QosCtl On\nQosCtlContentTrees /degraded /full"
                             "\nQosCtlFixedLevel 2\n")
    assert ours == plain and plain


def test_degraded_level_adds_no_syscall():
    plain = trace_one_request("", docroot_sub="full")
    ours = trace_one_request("QosCtl On\nQosCtlContentTrees /degraded /full"
                             "\nQosCtlFixedLevel 1\n")
    assert ours == plain and plain
