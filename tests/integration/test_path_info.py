"""Path info on a real Apache: a script followed by PATH_INFO runs from
the tree the level chose, as the script alone does.

A tree is chosen by the first segment of the path that is a file in it,
as the core's directory walk splits a path into a file and its path
info; what is not in the degraded tree at all still comes from the next
tree up.
"""

import os

import pytest

import qcharness

TREES = "QosCtl On\nQosCtlContentTrees /degraded /full\n"

SCRIPT = """#!/bin/sh
printf 'Content-Type: text/plain\\n\\n'
printf '%s path_info=[%s] script=[%s] file=[%s]\\n' \\
    {tree} "$PATH_INFO" "$SCRIPT_NAME" "$SCRIPT_FILENAME"
"""

# mod_cgid under a threaded MPM, mod_cgi under prefork, as a2enmod cgi.
CGI = [("event", "cgid"), ("prefork", "cgi")]

PATHS = [("/report.cgi", ""), ("/report.cgi/", "/"),
         ("/report.cgi/x", "/x"), ("/report.cgi/x/y", "/x/y")]


def cgi_conf(docroot, level, options="FollowSymLinks"):
    return (TREES + "QosCtlFixedLevel %s\n" % level
            + "AddHandler cgi-script .cgi\n"
            + '<Directory "%s">\n  Options %s ExecCGI\n</Directory>\n'
            % (docroot, options))


def write_script(path, tree):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(SCRIPT.format(tree=tree))
    os.chmod(path, 0o755)


def cgi_server(server_factory, level, mpm, module, **kw):
    """A server whose trees both have report.cgi and dir/deep.cgi; only
    the full tree has only-full.cgi."""
    s = server_factory("", mpm=mpm, modules=[module])
    s.write_conf(cgi_conf(s.docroot, level, **kw) + s.extra)
    for tree in ("degraded", "full"):
        write_script(os.path.join(s.docroot, tree, "report.cgi"), tree)
        write_script(os.path.join(s.docroot, tree, "dir", "deep.cgi"), tree)
    write_script(os.path.join(s.docroot, "full", "only-full.cgi"), "full")
    return s.start()


def ran(s, path):
    """(status, body) of one GET."""
    st, _, body = s.get(path)
    return st, body.decode(errors="replace")


def tree_responses(s, n):
    """Responses by tree once log_transaction has counted n (bounded)."""
    def counted():
        by_tree = s.vhost()["classes"]["basic"]["tree_responses"]
        return by_tree if sum(by_tree) >= n else None
    return qcharness.wait_for(counted) or \
        s.vhost()["classes"]["basic"]["tree_responses"]


def expect(tree, path_info, script, docroot):
    return "%s path_info=[%s] script=[%s] file=[%s]\n" % (
        tree, path_info, script,
        os.path.join(docroot, tree, script.lstrip("/")))


@pytest.mark.parametrize("mpm,module", CGI, ids=[m for _, m in CGI])
@pytest.mark.parametrize("level,tree", [("1", "degraded"), ("2", "full")])
def test_script_with_path_info_runs_in_the_chosen_tree(server_factory, mpm,
                                                       module, level, tree):
    s = cgi_server(server_factory, level, mpm, module)
    for path, path_info in PATHS:
        assert ran(s, path) == (200, expect(tree, path_info, "/report.cgi",
                                            s.docroot)), (path, s.log())
    # The same below a directory of the tree.
    assert ran(s, "/dir/deep.cgi/a/b") == (
        200, expect(tree, "/a/b", "/dir/deep.cgi", s.docroot))
    # Counted as served by that tree.
    want = [5, 0] if tree == "degraded" else [0, 5]
    assert tree_responses(s, 5) == want


def test_path_info_keeps_the_fallback_and_the_core_answers(server_factory):
    s = cgi_server(server_factory, "1", "event", "cgid")
    # Not in the degraded tree: the full tree's script, as without path
    # info.
    for path, path_info in [("/only-full.cgi", ""), ("/only-full.cgi/", "/"),
                            ("/only-full.cgi/x", "/x")]:
        assert ran(s, path) == (200, expect("full", path_info,
                                            "/only-full.cgi", s.docroot))
    # A static file takes no path info (AcceptPathInfo Default), in
    # either tree; missing everywhere stays the top tree's 404.
    assert ran(s, "/x.txt")[0] == 200
    assert ran(s, "/x.txt/y")[0] == 404
    assert ran(s, "/only-full.txt/y")[0] == 404
    assert ran(s, "/nowhere.cgi/x")[0] == 404
    assert ran(s, "/sub/nowhere/x")[0] == 404
    # A directory is not a file: its index, from the degraded tree.
    assert ran(s, "/sub/") == (200, "degraded index\n")


@pytest.mark.parametrize("options", ["SymLinksIfOwnerMatch", ""],
                         ids=["symlinks-if-owner-match", "no-symlinks"])
def test_path_info_without_followsymlinks(server_factory, options):
    """Without FollowSymLinks the core walk lstat()s every segment itself
    instead of trusting the file the module found, and still refuses a
    symlink the options do not allow, path info or not."""
    s = cgi_server(server_factory, "1", "event", "cgid", options=options)
    for path, path_info in PATHS:
        assert ran(s, path) == (200, expect("degraded", path_info,
                                            "/report.cgi", s.docroot)), path
    if options:
        return
    os.symlink(os.path.join(s.docroot, "full", "report.cgi"),
               os.path.join(s.docroot, "degraded", "link.cgi"))
    for path in ("/link.cgi", "/link.cgi/", "/link.cgi/x"):
        st, body = ran(s, path)
        assert st == 403 and "path_info" not in body, (path, st, body)


@pytest.mark.parametrize("level", ["1", "2"])
def test_path_info_never_leaves_the_tree(server_factory, level):
    s = cgi_server(server_factory, level, "event", "cgid")
    mine = b"degraded" if level == "1" else b"full"
    for uri in [b"/report.cgi/../../secret.txt",
                b"/report.cgi/%2e%2e/%2e%2e/secret.txt",
                b"/report.cgi/..%2f..%2fsecret.txt",
                b"/report.cgi%2f..%2f..%2fsecret.txt",
                b"/report.cgi/x\\..\\..\\secret.txt",
                b"/report.cgi/.", b"/report.cgi/x/..",
                b"/dir/../report.cgi/x", b"/report.cgi/x%00y"]:
        req = (b"GET " + uri + b" HTTP/1.1\r\nHost: localhost\r\n"
               b"Connection: close\r\n\r\n")
        data = s.raw_reply(req)
        assert data.startswith(b"HTTP/1.1 "), uri
        assert b"SECRET" not in data, uri
        # Whatever runs, it is the chosen tree's script.
        if data.startswith(b"HTTP/1.1 200"):
            assert (b"%s path_info" % mine) in data, (uri, data)
    assert ran(s, "/report.cgi/x")[0] == 200
