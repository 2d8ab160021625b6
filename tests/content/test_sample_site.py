"""make-sample-site: the demo/benchmark site and its degraded tree."""

import glob
import os
import stat
import subprocess
import sys

import pytest

from content_helpers import GENERATOR, identify, output_files

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "harness"))
import qcharness  # noqa: E402


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    outdir = tmp_path_factory.mktemp("sample")
    result = subprocess.run(
        [sys.executable, GENERATOR, "--photos", "3", outdir],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    assert result.returncode == 0, result.stdout.decode()
    return outdir


def size(path):
    return os.path.getsize(path)


def test_bench_files_have_their_nominal_sizes(sample):
    bench = sample / "full" / "bench"
    assert size(bench / "1k.html") == 1024
    assert abs(size(bench / "64k.jpg") - 65536) <= 0.03 * 65536
    assert abs(size(bench / "32k.jpg") - 32768) <= 0.03 * 32768
    assert (identify(bench / "64k.jpg")[0] == identify(bench / "32k.jpg")[0]
            == "JPEG")


def test_degraded_64k_is_the_papers_8k(sample):
    degraded = sample / "degraded" / "bench" / "64k.jpg"
    assert abs(size(degraded) - 8192) <= 0.15 * 8192
    assert identify(degraded)[0] == "JPEG"


def test_photos_icons_and_pages(sample):
    full = sample / "full"
    photos = glob.glob(str(full / "img" / "photos" / "*.jpg"))
    assert len(photos) == 3
    for photo in photos:
        assert (60000 <= size(photo) <= 68 * 1024
                and identify(photo)[1:] == (800, 600))
    for product in glob.glob(str(full / "img" / "products" / "*.jpg")):
        assert 28 * 1024 <= size(product) <= 33000
    for icon in glob.glob(str(full / "img" / "icons" / "*")):
        assert size(icon) < 2048
    for page in ("index.html", "article.html", "products.html",
                 "css/site.css"):
        assert (full / page).is_file()
    assert b'class="deco"' in (full / "index.html").read_bytes()


def test_degraded_tree_is_made_by_the_tool(sample):
    degraded = sample / "degraded"
    assert (degraded / ".htqosctl-manifest.json").is_file()
    files = output_files(degraded)
    assert b"index.html" in files and b"css/site.css" not in files
    assert b'class="deco"' not in (degraded / "index.html").read_bytes()


def test_cgi_and_its_static_snapshot(sample):
    cgi = sample / "full" / "dynamic" / "report.cgi"
    assert os.access(cgi, os.X_OK)
    page = subprocess.run([cgi], stdout=subprocess.PIPE, check=True,
                          timeout=30).stdout
    assert page.startswith(b"Content-Type: text/html")
    snapshot = sample / "degraded" / "dynamic" / "report.cgi"
    assert page.split(b"\n\n", 1)[1] == snapshot.read_bytes()
    assert stat.S_IMODE(snapshot.stat().st_mode) & 0o111 == 0


def test_cpu_cgi_and_its_snapshot(sample):
    cgi = sample / "full" / "dynamic" / "cpu.cgi"
    env = dict(os.environ, QUERY_STRING="probe=7")
    live = subprocess.run([cgi], stdout=subprocess.PIPE, check=True,
                          timeout=30, env=dict(env, QUERY_STRING="")).stdout
    snapshot = (sample / "degraded" / "dynamic" / "cpu.cgi").read_bytes()
    assert live.split(b"\n\n", 1)[1] == snapshot
    assert b"after 10000 iterations" in snapshot and b"Query:" not in snapshot
    probed = subprocess.run([cgi], stdout=subprocess.PIPE, check=True,
                            timeout=30, env=env).stdout
    assert b"Query: probe=7" in probed


def test_php_page_and_its_snapshot(sample):
    page = sample / "full" / "dynamic" / "report.php"
    if not qcharness.php_fpm_binary():
        assert not page.exists()
        pytest.skip("php-fpm not installed (apt-get install php8.2-fpm)")
    snapshot = (sample / "degraded" / "dynamic" / "report.php").read_bytes()
    assert b"<?" not in snapshot and b"after 200000 iterations" in snapshot
    with qcharness.PhpFpm(children=1) as fpm:
        headers, live = fpm.get(str(page))
        _, probed = fpm.get(str(page), "probe=7")
    assert headers["content-type"].startswith("text/html")
    assert live == snapshot
    assert b"Query: probe=7" in probed
