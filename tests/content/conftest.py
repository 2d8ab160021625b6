"""Fixtures for the content-tree tests; the tools need ImageMagick."""

import pytest

from content_helpers import CONVERT, IDENTIFY, make_icon, make_image, write


def pytest_collection_modifyitems(config, items):
    if not (CONVERT and IDENTIFY):
        raise pytest.UsageError("ImageMagick (convert, identify) is needed: "
                                "apt-get install imagemagick")


@pytest.fixture
def site(tmp_path):
    """A small full tree: one image of each kind, icons, HTML, CSS."""
    full = tmp_path / "full"
    make_image(full / "img" / "photo.jpg", "jpeg", seed=1)
    make_image(full / "img" / "chart.png", "png", (200, 150), seed=2)
    make_image(full / "img" / "anim.gif", "gif", (160, 120), seed=3)
    make_image(full / "img" / "banner.webp", "webp", seed=4)
    make_image(full / "img" / "by-content", "jpeg", seed=5)     # no suffix
    make_icon(full / "img" / "icon.png")
    make_icon(full / "img" / "bullet.gif", "gif")
    write(full / "index.html", PAGE)
    write(full / "css" / "site.css", "body { margin: 0 }\n")
    return full


PAGE = """<!DOCTYPE html>
<html><head><title>t</title><link rel="stylesheet" href="css/site.css"></head>
<body>
<img class="deco" src="img/bullet.gif" alt=""><a href="/">home</a>
<img src="img/photo.jpg" alt="photo" width="320" height="240">
<img class="deco" src="/img/icon.png" alt="">
</body></html>
"""
