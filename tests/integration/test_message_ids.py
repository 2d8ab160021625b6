"""Every error-log line of the module and the controller carries a
message ID (QC_LOGNO, common/qc_logno.h), no two calls share one, and
doc/messages.md has a row for each ID and no row for an ID the sources
do not use.  Read from the sources: no server is started."""

import glob
import os
import re

TOP = os.environ.get("QOSCTL_TOP_SRCDIR",
                     os.path.join(os.path.dirname(__file__), "..", ".."))

CALL = re.compile(r"\b(ap_log_error|ap_log_rerror|ap_log_perror"
                  r"|ap_log_cerror|fprintf)\s*\(")
# The message format's place among the call's arguments.
FMT_ARG = {"ap_log_error": 4, "ap_log_rerror": 4, "ap_log_perror": 4,
           "ap_log_cerror": 4, "fprintf": 1}
LOGNO = re.compile(r"QC_LOGNO\((\d{5})\)")


def blank_comments(src):
    """src with comments blanked (offsets kept), strings left alone."""
    out, i, n = list(src), 0, len(src)
    while i < n:
        c = src[i]
        if c in "\"'":
            j = i + 1
            while src[j] != c:
                j += 2 if src[j] == "\\" else 1
            i = j + 1
        elif src.startswith("/*", i):
            j = src.index("*/", i) + 2
            out[i:j] = [ch if ch == "\n" else " " for ch in src[i:j]]
            i = j
        else:
            i += 1
    return "".join(out)


def top_level(src, start, end, seps):
    """Offsets of separators in src[start:end] outside brackets and
    string literals."""
    found, depth, i = [], 0, start
    while i < end:
        c = src[i]
        if c in "\"'":
            i += 1
            while src[i] != c:
                i += 2 if src[i] == "\\" else 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and c in seps:
            found.append(i)
        i += 1
    return found


def close_paren(src, i):
    depth = 0
    while True:
        c = src[i]
        if c in "\"'":
            i += 1
            while src[i] != c:
                i += 2 if src[i] == "\\" else 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1


def messages(src):
    """(line, text) of each message format an error-log call writes: the
    format argument, or both branches of a `cond ? a : b` there."""
    src = blank_comments(src)
    for m in CALL.finditer(src):
        name, op = m.group(1), m.end() - 1
        end = close_paren(src, op)
        commas = top_level(src, op + 1, end, ",")
        if name == "fprintf" and (not commas or
                                  src[op + 1:commas[0]].strip() != "stderr"):
            continue
        k = FMT_ARG[name]
        start, stop = commas[k - 1] + 1, commas[k] if len(commas) > k else end
        q = top_level(src, start, stop, "?")
        spans = [(start, stop)]
        if q:
            colon = top_level(src, q[0] + 1, stop, ":")
            spans = [(q[0] + 1, colon[0]), (colon[0] + 1, stop)]
        for a, b in spans:
            yield src.count("\n", 0, m.start()) + 1, src[a:b].strip()


def sources():
    return sorted(glob.glob(os.path.join(TOP, "mod_qosctl", "*.c"))
                  + glob.glob(os.path.join(TOP, "controller", "*.c")))


def catalogue():
    with open(os.path.join(TOP, "doc", "messages.md")) as f:
        return f.read()


def test_the_sources_have_log_calls():
    # A parser that found nothing would pass the tests below.
    found = [m for p in sources() for m in messages(open(p).read())]
    assert len(found) >= 40, len(found)


def test_every_log_line_starts_with_an_id():
    missing = []
    for path in sources():
        for line, text in messages(open(path).read()):
            if not re.match(r"QC_LOGNO\(\d{5}\)\s*\"", text):
                missing.append("%s:%d: %s" % (os.path.relpath(path, TOP),
                                               line, text[:60]))
    assert not missing, "\n".join(missing)


def test_ids_are_unique_and_in_the_catalogue():
    doc = catalogue()
    rows = set(re.findall(r"^\| QC(\d{5}) \|", doc, re.M))
    used = {}
    for path in sources():
        for n in LOGNO.findall(blank_comments(open(path).read())):
            used.setdefault(n, []).append(os.path.relpath(path, TOP))
    twice = {n: p for n, p in used.items() if len(p) > 1}
    assert not twice, twice
    assert not set(used) - rows, sorted(set(used) - rows)
    assert not rows - set(used), sorted(rows - set(used))
    assert all(10001 <= int(n) <= 10149 for n in used), sorted(used)


def test_the_id_reaches_the_error_log_as_documented():
    # QC_LOGNO(10001) gives "QC10001: ", as APLOGNO gives "AH00001: ".
    with open(os.path.join(TOP, "common", "qc_logno.h")) as f:
        assert '#define QC_LOGNO(n) "QC" #n ": "' in f.read()
