"""Bad input, re-runs, and the promise never to touch the full tree."""

import os
import pathlib
import shutil
import tempfile

import pytest

import qcharness

from content_helpers import identify, make_image, run_tool, tree_state, write


def test_full_tree_is_byte_identical_after_runs(site, tmp_path):
    os.symlink("photo.jpg", site / "img" / "alias.jpg")
    before = tree_state(site)
    for args in (["--strip-class", "deco"],
                 ["--levels", "2", "--strip-below", "1k"]):
        assert run_tool(*args, site, tmp_path / "out").rc == 0
    assert tree_state(site) == before


def test_rerun_rebuilds_nothing_and_a_change_rebuilds_only_that_file(
        site, tmp_path):
    out = tmp_path / "out"
    assert run_tool("--strip-class", "deco", site, out).summary()["built"] == 8
    written = tree_state(out)
    again = run_tool("-v", "--strip-class", "deco", site, out)
    assert again.summary() == {"built": 0, "unchanged": 8, "errors": 0,
                               "removed": 0}, again
    assert tree_state(out) == written

    os.utime(site / "img" / "chart.png")              # new mtime, same bytes
    make_image(site / "img" / "photo.jpg", seed=9)    # new content
    changed = run_tool("-v", "--strip-class", "deco", site, out)
    assert [l for l in changed.out.splitlines() if l.startswith("built")] == [
        "built img/photo.jpg"], changed
    now = tree_state(out)
    assert {rel for rel in now
            if now[rel] != written.get(rel) and now[rel][0] != b"dir"} == {
        b"img/photo.jpg", b".htqosctl-manifest.json"}


def test_removed_source_removes_its_output(site, tmp_path):
    out = tmp_path / "out"
    assert run_tool(site, out).rc == 0
    os.unlink(site / "img" / "banner.webp")
    result = run_tool(site, out)
    assert result.summary()["removed"] == 1, result
    assert not (out / "img" / "banner.webp").exists()


def test_changed_options_rebuild_images(site, tmp_path):
    out = tmp_path / "out"
    run_tool(site, out)
    result = run_tool("--scale", "0.25", site, out)
    assert result.summary()["built"] == 7, result      # icons included
    assert identify(out / "img" / "photo.jpg")[1] == 80


def test_corrupt_images_are_reported_and_skipped(site, tmp_path):
    photo = (site / "img" / "photo.jpg").read_bytes()
    write(site / "bad" / "truncated.jpg", photo[:len(photo) // 2])
    write(site / "bad" / "garbage.jpg", photo[:200] + os.urandom(3000))
    write(site / "bad" / "text.png", "this is not a PNG\n")
    write(site / "bad" / "header.gif", b"GIF89a\x00\x00")
    out = tmp_path / "out"
    result = run_tool(site, out)
    assert result.rc == 0, result
    for name in ("truncated.jpg", "garbage.jpg", "text.png", "header.gif"):
        assert "bad/%s:" % name in result.err
    assert not (out / "bad").exists()
    assert (out / "img" / "photo.jpg").exists()
    assert run_tool("--strict", site, tmp_path / "strict").rc == 1


def test_nothing_done_exits_1(tmp_path):
    write(tmp_path / "full" / "broken.jpg", b"\xff\xd8\xff" + b"\0" * 100)
    result = run_tool(tmp_path / "full", tmp_path / "out")
    assert result.rc == 1 and "broken.jpg" in result.err, result


def test_symlinks_out_of_the_tree_are_not_followed(site, tmp_path):
    outside = tmp_path / "outside"
    make_image(outside / "secret.jpg", seed=7)
    os.symlink(outside / "secret.jpg", site / "img" / "link.jpg")
    os.symlink(outside, site / "linked-dir")
    os.symlink("../img/photo.jpg", site / "css" / "inside.jpg")
    out = tmp_path / "out"
    result = run_tool(site, out)
    assert result.rc == 0, result
    assert "img/link.jpg: symlink points outside the tree" in result.err
    assert "linked-dir: symlinked directory not followed" in result.err
    assert (not (out / "img" / "link.jpg").exists()
            and not (out / "linked-dir").exists())
    assert (out / "css" / "inside.jpg").exists()
    assert run_tool("--strict", site, tmp_path / "strict").rc == 1


def test_symlink_planted_in_output_never_leads_writes_out(site, tmp_path):
    out = tmp_path / "out"
    os.makedirs(out)
    os.symlink(site / "img", out / "img")
    before = tree_state(site)
    result = run_tool(site, out)
    assert "not a plain directory" in result.err, result
    assert tree_state(site) == before


def test_names_that_are_not_utf8(site, tmp_path):
    full = os.fsencode(site)
    make_image(os.path.join(full, b"caf\xe9.jpg"))
    write(os.path.join(full, b"p\xff.html"),
          b'<img class="deco" src="x.gif"><p>\xff</p>')
    out = os.fsencode(tmp_path / "out")
    result = run_tool("--strip-class", "deco", full, out)
    assert result.rc == 0, result
    assert "caf\\xe9.jpg: name is not valid UTF-8" in result.err
    assert identify(os.path.join(out, b"caf\xe9.jpg"))[0] == "JPEG"
    with open(os.path.join(out, b"p\xff.html"), "rb") as page:
        assert page.read() == b"<p>\xff</p>"
    assert run_tool("--strip-class", "deco", full, out).summary()["built"] == 0


@pytest.mark.parametrize("where", ["inside", "same", "parent", "level"])
def test_output_overlapping_input_is_refused(tmp_path, where):
    full = tmp_path / "site" / "1"
    make_image(full / "a.jpg")
    out = {"inside": full / "deg", "same": full, "parent": tmp_path,
           "level": tmp_path / "site"}[where]
    before = tree_state(full)
    result = run_tool("--levels", "2", full, out)
    assert result.rc == 2 and "overlaps FULL_TREE" in result.err, result
    assert tree_state(full) == before


def test_missing_input_is_refused(tmp_path):
    result = run_tool(tmp_path / "nope", tmp_path / "out")
    assert result.rc == 2 and "is not a directory" in result.err, result
    assert not (tmp_path / "out").exists()


def test_unreadable_file_is_reported(site):
    """Run as httpd's user (root reads any file): a tree of its own in a
    directory it can reach, one file in it mode 0."""
    top = pathlib.Path(tempfile.mkdtemp(prefix="qosctl-unreadable-"))
    try:
        os.chmod(top, 0o755)
        shutil.copytree(site, top / "full")
        qcharness.give_to_run_user(top)
        os.chmod(top / "full" / "img" / "photo.jpg", 0)
        result = run_tool(top / "full", top / "out", unprivileged=True)
        assert (result.rc == 0
                and "img/photo.jpg: cannot open" in result.err), result
        assert (top / "out" / "img" / "chart.png").exists(), result
    finally:
        shutil.rmtree(top)
