"""Fuzzing qosctl-degrade (content-trees/): its options and what it
reads: the files of FULL_TREE (HTML, image headers of every kind), its
manifest in OUTPUT_DIR, a --snapshot-list and the pages --server gives
for --snapshot.  Exit status 1 may come with one line per file it
reported.  tests/tools/fuzz runs TARGETS."""

import json
import os

from hypothesis import given, strategies as st

import fuzzlib as F

TOOL = F.load_tool("../content-trees/qosctl-degrade")
SCRATCH = F.Scratch()
PAGE = F.HttpBody()
NUM = F.number_text()

MAGIC = {"a.jpg": b"\xff\xd8\xff", "b.png": b"\x89PNG\r\n\x1a\n",
         "c.gif": b"GIF89a", "d.webp": b"RIFF\0\0\0\0WEBP",
         "e.jpg": b"", "f.webp": b"RIFF\0\0\0\0WEBPVP8 "}


def html_page():
    tag = st.tuples(
        st.sampled_from(["img", "picture", "svg", "input", "IMG", "p",
                         "/img", "/picture"]),
        st.lists(st.tuples(st.sampled_from(["class", "src", "type",
                                            "data-deco", "alt"]),
                           st.one_of(st.sampled_from(
                               ["deco", "a.jpg", "/a.jpg", "../../x.jpg",
                                "image", "http://x/a.jpg", "%00", "",
                                "b.png?x"]), st.text(max_size=6))),
                 max_size=3),
        st.booleans()).map(lambda t: "<%s %s%s>" % (
            t[0], " ".join('%s="%s"' % kv for kv in t[1]),
            "/" if t[2] else ""))
    return st.lists(st.one_of(tag, tag, st.text(max_size=10),
                              st.sampled_from(["<!--", "-->", "<![CDATA[",
                                               "&#99999999;", "<", "</"])),
                    max_size=10).map("".join)


def manifest():
    record = st.fixed_dictionaries({}, optional={
        "size": F.json_value(0), "mtime_ns": F.json_value(0),
        "kind": st.sampled_from(["html", "jpeg", "other", "snapshot"])
        | F.json_value(0),
        "sha256": F.json_value(0), "recipe": F.json_value(),
        "deps": st.dictionaries(st.text(max_size=6), F.json_value(0),
                                max_size=2) | F.json_value(0),
        "levels": st.lists(st.none() | st.fixed_dictionaries({}, optional={
            "path": st.sampled_from(["page.html", "../x", "a.jpg"])
            | F.json_value(0), "size": F.json_value(0),
            "sha256": F.json_value(0)}) | F.json_value(0), max_size=2)
        | F.json_value(0)})
    files = st.dictionaries(st.sampled_from(["page.html", "a.jpg", "x"])
                            | st.text(max_size=4), record | F.json_value(),
                            max_size=3)
    doc = st.fixed_dictionaries({"version": st.just(1) | F.json_value(0),
                                 "files": files | F.json_value(0),
                                 "snapshots": files | F.json_value(0)})
    return st.one_of(st.none(), doc.map(lambda d: json.dumps(d).encode()),
                     st.binary(max_size=30))


OPTIONS = {
    "--levels": NUM, "--scale": NUM, "--quality": NUM, "--max-dim": NUM,
    "--min-dim": NUM,
    "--target": st.tuples(st.sampled_from(["*.jpg", "*", "a*"]),
                          st.one_of(NUM, NUM.map(lambda v: "1/" + v))).map(
        "=".join) | st.text(max_size=6),
    "--strip-class": st.sampled_from(["deco", ""]) | st.text(max_size=4),
    "--strip-attr": st.sampled_from(["data-deco", "SRC"]),
    "--strip-below": NUM,
    "--snapshot": st.sampled_from(["/dyn.php", "/a/", "/../x", "/%00",
                                   "/.htqosctl-x", "http://x/y", "/p?q=1",
                                   "/\udcff"]) | st.text(max_size=6),
    "--server": st.sampled_from([PAGE.url, "ftp://x", "http://h:99999",
                                 PAGE.url + "/path", "http://a b"]),
    "--timeout": NUM, "--strict": None, "-v": None, "--verbose": None,
}


@given(html_page(), st.dictionaries(st.sampled_from(sorted(MAGIC)),
                                    st.binary(max_size=40), max_size=3),
       manifest(), st.binary(max_size=40), st.one_of(st.none(), st.text(
           max_size=30)), F.argv_of(OPTIONS, max_size=6, stray=False))
def fuzz_degrade_tree(page, images, old, snap_body, snap_list, more):
    root = SCRATCH.fresh()
    full, out = os.path.join(root, "full"), os.path.join(root, "out")
    SCRATCH.write("full/page.html", page)
    for name, data in images.items():
        SCRATCH.write("full/" + name, MAGIC[name] + data)
    if old is not None:
        SCRATCH.write("out/.htqosctl-manifest.json", old)
    PAGE.body = snap_body
    argv = ["--jobs", "1", "-q"] + more
    if snap_list is not None:
        argv += ["--snapshot-list", SCRATCH.write("list", snap_list)]
    argv += [full, out]
    code, outp, err = F.call_main(TOOL, argv)
    F.check("qosctl-degrade", code, outp, err, argv, many_lines_on=(1,))


@given(F.argv_of(dict(OPTIONS, **{"--jobs": NUM, "-q": None}),
                 extra=st.sampled_from(["FULL", "OUT", "MISSING"]),
                 max_size=8))
def fuzz_degrade_argv(argv):
    """MISSING: a directory that does not exist, in the scratch directory
    (as OUTPUT_DIR, qosctl-degrade makes it, which as root it could
    anywhere)."""
    root = SCRATCH.fresh()
    os.makedirs(os.path.join(root, "full"))
    argv = [{"FULL": os.path.join(root, "full"),
             "OUT": os.path.join(root, "out"),
             "MISSING": os.path.join(root, "missing", "dir")}.get(a, a)
            for a in argv]
    code, outp, err = F.call_main(TOOL, argv)
    F.check("qosctl-degrade", code, outp, err, argv, many_lines_on=(1,))


TARGETS = [fuzz_degrade_tree, fuzz_degrade_argv]
