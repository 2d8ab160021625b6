"""The HTML status page, in a real browser, and who may see what.

Chromium (headless) renders the page of a running server under some
load: the chart of the last ten minutes has a line for the measured
utilization, drawn in its colour where the page puts it, and one per
class for its level, and the page fits a 1,280-pixel window.  A tenant whose .htaccess names qosctl-status (with
AllowOverride FileInfo) gets its own host's view, never the server's.
"""

import html.parser
import json
import os
import shutil
import struct
import subprocess
import time

import pytest

import qcharness
from conftest import STATUS_VHOST, Server

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

HOSTS = ["www.a-rather-long-shop-name-example.com",
         "blog.example.org", "static.assets-example.net"]

SITE = "QosCtl On\nQosCtlContentTrees /degraded /full\n" + "".join(
    "<VirtualHost *:{port}>\n  ServerName %s\n</VirtualHost>\n" % h
    for h in HOSTS)

# Same origin as the page: the probe reads the width the page takes in a
# 1,280-pixel frame (the page itself runs no script).
PROBE = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="f" src="/qosctl-status" style="width:1280px;height:900px;border:0">
</iframe><pre id="out">pending</pre><script>
document.getElementById("f").onload = function () {
  var d = this.contentDocument;
  document.getElementById("out").textContent = "scrollWidth=" +
    Math.max(d.documentElement.scrollWidth, d.body.scrollWidth);
};
</script></body></html>
"""


# Where the chart's U line is drawn in a 1,280 x 900 window: points
# along it in the window's pixels (the frame sits at its top left), and
# its stroke colour, as the browser computes them.
LINE_PROBE = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="f" src="/snapshot.html" style="width:1280px;height:900px;border:0">
</iframe><pre id="out">pending</pre><script>
document.getElementById("f").onload = function () {
  var p = this.contentDocument.querySelector("path.qc-u");
  var m = p.getScreenCTM(), n = p.getTotalLength(), pts = [];
  for (var i = 0; i <= 60; i++) {
    var q = p.getPointAtLength(n * i / 60);
    var s = new DOMPoint(q.x, q.y).matrixTransform(m);
    pts.push([s.x, s.y]);
  }
  document.getElementById("out").textContent = "line=" + JSON.stringify(
    {stroke: getComputedStyle(p).stroke, points: pts}) + "=end";
};
</script></body></html>
"""


def rgb_pixels(png):
    """(width, height, bytes of R, G, B a pixel, row by row)."""
    out = subprocess.run(["convert", str(png), "-depth", "8", "rgb:-"],
                         capture_output=True, timeout=60, check=True).stdout
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", head[16:24])
    assert len(out) == 3 * w * h
    return w, h, out


def chromium(*args, timeout=90):
    """Headless chromium; its stdout (a DOM with --dump-dom)."""
    p = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars",
         "--window-size=1280,900"] + list(args),
        capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


class Paths(html.parser.HTMLParser):
    """The d attribute of every SVG path, by class."""

    def __init__(self):
        super().__init__()
        self.paths = {}
        self.refresh = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "path":
            for c in (a.get("class") or "").split():
                self.paths.setdefault(c, []).append(a.get("d") or "")
        if tag == "meta" and a.get("http-equiv") == "refresh":
            self.refresh = a.get("content")


def points(d):
    """A path's points: (x, y) of its M and L commands."""
    out = []
    for cmd in d.split():
        if cmd[0] in "ML":
            x, y = cmd[1:].split(",")
            out.append((float(x), float(y)))
    return out


@pytest.fixture(scope="module")
def loaded():
    """A server whose controller has run some periods under load."""
    port = qcharness.free_port()
    srv = Server(SITE.format(port=port), port=port)
    for tree in ("degraded", "full"):
        for name, text in (("probe.html", PROBE),
                           ("line.html", LINE_PROBE)):
            with open(os.path.join(srv.docroot, tree, name), "w") as f:
                f.write(text)
    srv.start()
    try:
        qcharness.httperf("127.0.0.1", srv.port, uri="/1k.html", rate=150,
                          num_conns=900, timeout=5)
        assert qcharness.wait_for(lambda: srv.status()["controller"]
                                  ["periods"] >= 6, limit=30)
        yield srv
    finally:
        srv.cleanup()


def page(srv, query=""):
    st, headers, body = srv.get("/qosctl-status" + query, port=srv.sport)
    assert st == 200 and headers["Content-Type"].startswith("text/html")
    return body.decode()


def test_headings_an_admin_reads_and_a_legend(loaded):
    text = page(loaded)
    for internal in ("m_own", "r_rej", "u_target", "spread_buckets"):
        assert internal not in text, internal
    for heading in ("Level", "Req/s", "503/s", "Load target",
                    "Split groups", "Served by tree"):
        assert "<th>%s</th>" % heading in text or heading in text
    assert 'class="legend">Level: ' in text
    # The machine formats keep their names.
    doc = loaded.status()
    cls = doc["vhosts"][0]["classes"]["basic"]
    assert {"m_own", "r_rej", "u_target", "spread_buckets"} <= set(cls)
    prom = loaded.get("/qosctl-status?format=prometheus",
                      port=loaded.sport)[2].decode()
    assert "\nqosctl_utilization_target_ratio{" in prom \
        and "\nqosctl_loop_level{" in prom


def test_refresh_at_the_control_period_when_asked(loaded):
    p = Paths()
    p.feed(page(loaded))
    assert p.refresh is None
    p = Paths()
    p.feed(page(loaded, "?refresh=1"))
    assert p.refresh == "1"     # QosCtlPeriod's default, 1 s
    assert "?refresh=1" not in page(loaded, "?refresh=1")   # "stop" link


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed "
                    "(./dev packages lists it)")
def test_chromium_draws_the_last_minutes_within_1280_pixels(loaded,
                                                            tmp_path):
    url = "http://127.0.0.1:%d/qosctl-status" % loaded.sport
    dom = chromium("--dump-dom", url)
    p = Paths()
    p.feed(dom)
    (u,) = p.paths["qc-u"]
    pts = points(u)
    # Six periods or more, a second apart at least: several pixels wide
    # (a flat run is drawn as its two ends).
    assert len(pts) >= 2 and pts[-1][0] - pts[0][0] > 5, u
    # x within the plot, later samples further right; y above the axis
    # somewhere (the load made U non-zero) and within the plot.
    assert all(44 <= x <= 1150 and 12 <= y <= 176 for x, y in pts), pts
    assert [x for x, _ in pts] == sorted(x for x, _ in pts)
    assert min(y for _, y in pts) < 176
    doc = loaded.status()
    assert len(p.paths["qc-m"]) == 2 * len(doc["vhosts"])
    for d in p.paths["qc-m"]:
        pts = points(d)
        assert len(pts) >= 2 and pts[-1][0] - pts[0][0] > 0.5, d

    probe = "http://127.0.0.1:%d/probe.html" % loaded.sport
    out = chromium("--virtual-time-budget=10000", "--dump-dom", probe)
    width = int(out.split("scrollWidth=")[1].split("<")[0])
    assert width <= 1280, width

    # The U line is drawn where the page puts it, in its colour: the
    # browser's own geometry of one snapshot of the page, and the pixels
    # of a screenshot of that same snapshot.
    snapshot = page(loaded)
    for tree in ("degraded", "full"):
        with open(os.path.join(loaded.docroot, tree, "snapshot.html"),
                  "w") as f:
            f.write(snapshot)
    out = chromium("--virtual-time-budget=10000", "--dump-dom",
                   "http://127.0.0.1:%d/line.html" % loaded.sport)
    line = json.loads(out.split("line=")[1].split("=end")[0])
    stroke = tuple(int(v) for v in
                   line["stroke"].strip("rgb()").split(","))
    assert stroke == (0x1f, 0x77, 0xb4), line["stroke"]
    shot = tmp_path / "status.png"
    chromium("--screenshot=%s" % shot,
             "http://127.0.0.1:%d/snapshot.html" % loaded.sport)
    keep = os.environ.get("QOSCTL_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)
    w, h, rgb = rgb_pixels(shot)
    assert (w, h) == (1280, 900)

    def near_stroke(x, y):
        i = 3 * (y * w + x)
        return sum(abs(a - b) for a, b in zip(rgb[i:i + 3], stroke)) < 90

    pts = [(round(x), round(y)) for x, y in line["points"]]
    assert all(0 <= x < w and 0 <= y < h for x, y in pts), pts
    # Antialiased, 2 px wide: a pixel of its colour within 2 px.
    hits = [any(near_stroke(min(max(x + dx, 0), w - 1),
                            min(max(y + dy, 0), h - 1))
                for dx in range(-2, 3) for dy in range(-2, 3))
            for x, y in pts]
    assert sum(hits) >= 0.9 * len(hits), list(zip(pts, hits))
    # And not a page painted all over in it.
    drawn = sum(near_stroke(x, y) for y in range(0, h, 2)
                for x in range(0, w, 2))
    assert 0 < drawn < 0.05 * (w * h / 4), drawn


# -- scope: a tenant's .htaccess does not see the server ------------------

TENANTS = """QosCtl On
QosCtlContentTrees /degraded /full
<Directory "{docroot}">
  AllowOverride FileInfo
</Directory>
<Directory "{docroot}/full/rw">
  SetHandler default-handler
</Directory>
<VirtualHost *:{port}>
  ServerName tenant.example
</VirtualHost>
<VirtualHost *:{port}>
  ServerName other.example
</VirtualHost>
"""

HTACCESS = {
    "sh": "SetHandler qosctl-status\n",
    "ah": "AddHandler qosctl-status .st\n",
    # The server's SetHandler is in effect here; the tenant's rewrite
    # names ours.
    "rw": "RewriteEngine On\nRewriteRule ^ - [H=qosctl-status]\n",
}


def test_htaccess_gets_its_own_host_only(server_factory):
    port = qcharness.free_port()
    s = server_factory("", port=port, modules=["rewrite"])
    s.write_conf(TENANTS.format(docroot=s.docroot, port=port)
                 + STATUS_VHOST.format(sport=s.sport))
    for tree in ("degraded", "full"):
        for d, text in HTACCESS.items():
            os.makedirs(os.path.join(s.docroot, tree, d), exist_ok=True)
            with open(os.path.join(s.docroot, tree, d, ".htaccess"),
                      "w") as f:
                f.write(text)
            with open(os.path.join(s.docroot, tree, d, "x.st"), "w") as f:
                f.write("not the status\n")
    s.start()
    tenant = "tenant.example:%d" % port
    for d in HTACCESS:
        st, headers, body = s.get("/%s/x.st?format=json" % d,
                                  headers={"Host": "tenant.example"})
        assert st == 200 and headers["Content-Type"] == "application/json", (
            d, st, body[:200])
        got = json.loads(body)
        assert got["scope"] == "host", d
        assert [v["key"] for v in got["vhosts"]] == [tenant], d
        assert set(got) == {"enabled", "scope", "fail_open", "vhosts"}, d
        st, _, body = s.get("/%s/x.st" % d,
                            headers={"Host": "tenant.example"})
        text = body.decode()
        assert st == 200 and "tenant.example" in text, d
        for leak in ("other.example", "status.test", "Controller: pid",
                     "model a", 'class="qc-u"'):
            assert leak not in text, (d, leak)
        assert "SetHandler qosctl-status" in text, d   # why one host
        prom = s.get("/%s/x.st?format=prometheus" % d,
                     headers={"Host": "tenant.example"})[2].decode()
        assert "qosctl_model_request_seconds" not in prom, d
        assert "other.example" not in prom, d
    # httpd's own <Location> still shows the whole server.
    doc = s.status()
    assert doc["scope"] == "server" and "controller" in doc
    assert {tenant, "other.example:%d" % port} <= {
        v["key"] for v in doc["vhosts"]}
    assert 'class="qc-u"' in s.get("/qosctl-status", port=s.sport)[2].decode()


# -- the chart across a graceful restart that grows the segment -----------

def test_the_chart_keeps_its_past_when_the_hosts_outgrow_the_segment(
        server_factory):
    conf = "QosCtl On\nQosCtlContentTrees /degraded /full\n"
    s = server_factory(conf).start()
    assert qcharness.wait_for(
        lambda: s.status()["controller"]["periods"] >= 5, limit=30)
    p = Paths()
    p.feed(page(s))
    first = min(x for x, _ in points(p.paths["qc-u"][0]))

    # 40 hosts need more slots than a segment made for two holds.
    s.graceful(extra=conf + "".join(
        "<VirtualHost *:%d>\n  ServerName h%d.example\n</VirtualHost>\n"
        % (s.port, i) for i in range(40))
               + STATUS_VHOST.format(sport=s.sport))
    assert "outgrew the shared segment" in s.log()
    p = Paths()
    p.feed(page(s))
    # The samples from before the restart are still drawn (they moved
    # left as time went on), not only those since.
    assert min(x for x, _ in points(p.paths["qc-u"][0])) <= first + 0.5
