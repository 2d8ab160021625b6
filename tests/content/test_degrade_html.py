"""HTML: decorative images removed, everything else kept byte for byte."""

import html.parser

from content_helpers import DEGRADE, make_image, output_files, run_tool, write

REMOVED = [
    b'<IMG CLASS="Deco deco" SRC="a.png" ALT=\'\'/>',
    b'<img data-decorative src="b.png">',
    b'<picture class="deco"><source srcset="p.webp">'
    b'<img src="p.jpg"></picture>',
    b'<img src="img/small.png">',
    b'<svg class="deco"><svg><circle r="1"/></svg></svg>',
    b'<input type="image" class="deco" src="go.png">',
]
PAGE = b"""<!doctype html>
<html><head><script>var s = '<img class="deco" src="x">';</script></head>
<body>
<!-- <img class="deco" src="c.png"> -->
<p>Caf\xe9 &amp; %s text</p>
%s
%s
%s<img src="/img/big.jpg">
%s
%s
<img class="decoration" src="keep.png"><p class=deco>
</body></html>
""" % tuple(REMOVED)
RULES = DEGRADE.StripRules(frozenset({"deco"}), frozenset({"data-decorative"}),
                           2048)
SIZES = {b"img/small.png": 100, b"img/big.jpg": 50000}


class Tags(html.parser.HTMLParser):
    def __init__(self, data):
        super().__init__()
        self.tags = []
        self.feed(data.decode("utf-8", "surrogateescape"))
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))


def without(data, pieces):
    for piece in pieces:
        assert data.count(piece) == 1
        data = data.replace(piece, b"")
    return data


def test_strip_removes_exactly_the_decorative_elements():
    out, removed, deps = DEGRADE.strip_html(PAGE, b"index.html", RULES,
                                            SIZES.get)
    assert removed == len(REMOVED)
    assert out == without(PAGE, REMOVED)  # the rest byte for byte, even \xe9
    assert deps == {"img/small.png": 100, "img/big.jpg": 50000,
                    "keep.png": None}


def test_stripped_page_parses_and_lost_only_those_elements():
    out, _, _ = DEGRADE.strip_html(PAGE, b"index.html", RULES, SIZES.get)
    lost = [tag for piece in REMOVED for tag in Tags(piece).tags]
    kept = Tags(PAGE).tags
    for tag in lost:
        kept.remove(tag)
    assert Tags(out).tags == kept


def test_relative_sources_resolve_from_the_page_directory():
    page = (b'<img src="../img/small.png"><img src="small.png">'
            b'<img src="http://x/img/small.png">')
    rules = DEGRADE.StripRules(frozenset(), frozenset(), 2048)
    out, removed, _ = DEGRADE.strip_html(page, b"sub/page.html", rules,
                                         SIZES.get)
    assert (out, removed) == (page[len(b'<img src="../img/small.png">'):], 1)


def test_unclosed_container_is_kept():
    page = b'<p><picture class="deco"><img src="a.jpg"></p>'
    out, removed, _ = DEGRADE.strip_html(page, b"x.html", RULES, SIZES.get)
    assert (out, removed) == (page, 0)


def test_tool_strips_by_class(site, tmp_path):
    out = tmp_path / "out"
    result = run_tool("--strip-class", "deco", site, out)
    assert result.rc == 0, result
    original = (site / "index.html").read_bytes()
    assert (out / "index.html").read_bytes() == without(original, [
        b'<img class="deco" src="img/bullet.gif" alt="">',
        b'<img class="deco" src="/img/icon.png" alt="">'])


def test_tool_strips_below_size_and_follows_image_changes(site, tmp_path):
    out = tmp_path / "out"
    assert run_tool("--strip-below", "2k", site, out).rc == 0
    assert b"bullet.gif" not in (out / "index.html").read_bytes()
    make_image(site / "img" / "bullet.gif", "gif", (200, 200))   # now large
    result = run_tool("-v", "--strip-below", "2k", site, out)
    assert "built index.html" in result.out, result
    assert b"bullet.gif" in (out / "index.html").read_bytes()
    assert b"icon.png" not in (out / "index.html").read_bytes()


def test_page_with_nothing_to_strip_is_not_copied(tmp_path):
    write(tmp_path / "full" / "plain.html", "<p>no images</p>\n")
    write(tmp_path / "full" / "style.css", "p {}\n")
    assert run_tool("--strip-class", "deco", tmp_path / "full",
                    tmp_path / "out").rc == 0
    assert output_files(tmp_path / "out") == set()
