"""Images: re-encoded smaller, same format, promised size class."""

import os
import subprocess

import pytest

from content_helpers import (CONVERT, IDENTIFY, identify, make_image,
                             output_files, run_tool)

SHRINKABLE = [("img/photo.jpg", "JPEG"), ("img/chart.png", "PNG"),
              ("img/anim.gif", "GIF"), ("img/banner.webp", "WEBP"),
              ("img/by-content", "JPEG")]


def test_images_become_smaller_valid_images_at_half_size(site, tmp_path):
    out = tmp_path / "out"
    result = run_tool(site, out)
    assert result.rc == 0, result
    for rel, fmt in SHRINKABLE:
        _, width, height = identify(site / rel)
        assert identify(out / rel) == (fmt, round(width / 2),
                                       round(height / 2)), rel
        assert os.path.getsize(out / rel) < os.path.getsize(site / rel), rel


def test_only_files_made_smaller_are_written(site, tmp_path):
    out = tmp_path / "out"
    assert run_tool(site, out).rc == 0
    # icons cannot shrink, CSS is not degraded, HTML has nothing to strip
    assert output_files(out) == {os.fsencode(rel) for rel, _ in SHRINKABLE}


def test_table_reports_bytes_per_type(site, tmp_path):
    result = run_tool(site, tmp_path / "out")
    for kind in ("jpeg", "png", "gif", "webp", "html", "total"):
        assert any(line.startswith(kind)
                   for line in result.out.splitlines()), result
    assert "summary:" in result.out and "% less" in result.out


def test_two_levels_are_two_trees_of_decreasing_size(site, tmp_path):
    out = tmp_path / "out"
    result = run_tool("--levels", "2", site, out)
    assert result.rc == 0, result
    for rel, fmt in SHRINKABLE[:2] + SHRINKABLE[3:]:
        low, high, full = out / "1" / rel, out / "2" / rel, site / rel
        assert (os.path.getsize(low) < os.path.getsize(high)
                < os.path.getsize(full)), rel
        assert identify(low)[1] < identify(high)[1] < identify(full)[1], rel
        assert identify(low)[0] == identify(high)[0] == fmt
    assert not (out / "img").exists()


def test_per_level_scale_quality_and_max_dim(site, tmp_path):
    out = tmp_path / "out"
    result = run_tool("--levels", "2", "--scale", "0.25,0.9",
                      "--quality", "30,60", "--max-dim", "0,100", site, out)
    assert result.rc == 0, result
    assert identify(out / "1" / "img/photo.jpg")[1:] == (80, 60)
    assert identify(out / "2" / "img/photo.jpg")[1:] == (100, 75)


def test_animated_gif_keeps_its_frames(tmp_path):
    gif = tmp_path / "full" / "anim.gif"
    os.makedirs(gif.parent)
    subprocess.run([CONVERT, "-size", "200x160", "-delay", "10", "xc:red",
                    "-seed", "1", "plasma:", "gradient:blue-white", str(gif)],
                   check=True)
    assert run_tool(tmp_path / "full", tmp_path / "out").rc == 0
    frames = subprocess.run([IDENTIFY, "-format", "%W %H\n",
                             str(tmp_path / "out" / "anim.gif")],
                            stdout=subprocess.PIPE, check=True).stdout.split()
    assert frames == [b"100", b"80"] * 3


def test_small_images_keep_their_dimensions(tmp_path):
    make_image(tmp_path / "full" / "thumb.jpg", size=(60, 45))
    assert run_tool(tmp_path / "full", tmp_path / "out").rc == 0
    assert identify(tmp_path / "out" / "thumb.jpg")[1:] == (60, 45)


@pytest.mark.parametrize("target", ["*.jpg=1/8", "bench/64k.jpg=8k"])
def test_target_gives_the_papers_64k_to_8k_pair(tmp_path, target):
    size = make_image(tmp_path / "full" / "bench" / "64k.jpg",
                      size=(800, 600), extent=65536)
    assert 60000 < size <= 65536
    result = run_tool("--target", target, tmp_path / "full", tmp_path / "out")
    assert result.rc == 0, result
    wanted = size / 8 if "1/8" in target else 8192
    assert abs(os.path.getsize(tmp_path / "out" / "bench" / "64k.jpg")
               - wanted) <= 0.15 * wanted


@pytest.mark.parametrize("args", [
    ["--levels", "0"], ["--scale", "1.5"], ["--quality", "30,40"],
    ["--quality", "x"], ["--target", "nothing"], ["--target", "*.jpg=2/3"],
    ["--strip-below", "-1k"],
])
def test_bad_options_exit_2(site, tmp_path, args):
    result = run_tool(*args, site, tmp_path / "out")
    assert result.rc == 2, result
    assert result.err.strip()


def test_help_is_usage():
    result = run_tool("--help")
    assert result.rc == 0
    assert result.out.startswith("usage: qosctl-degrade")
    for text in ("Exit status", "ImageMagick", "OUTPUT_DIR/1", "ForceType",
                 "--snapshot"):
        assert text in result.out
    assert "ms/image" not in result.out       # design notes stay in the source
