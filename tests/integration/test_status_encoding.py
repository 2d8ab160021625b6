"""The machine formats stay valid UTF-8 whatever bytes the configuration
holds: a ServerName in Latin-1 or with control characters, a content
tree whose path is not UTF-8.  JSON escapes them (U+FFFD for a byte
that is not UTF-8, \\u00XX for a control character) and Python's strict
json.loads reads the page; Prometheus label values hold U+FFFD the
same way.
"""

import json
import os

import pytest

import qcharness

# Placeholders for the hostile bytes, patched into the written file
# (the harness writes text).
E9, FF, CTL = "@E9@", "@FF@", "@CTL@"
# FF: a byte no UTF-8 has, a lead byte cut short, a surrogate's
# encoding (which UTF-8 forbids), a valid two-byte sequence, an overlong
# "/", a code point past U+10FFFF, then a valid four-byte sequence.
LOW = (b"\xff\xc3(\xed\xa0\x80\xc3\xa9\xc0\xaf\xf4\x90\x80\x80"
       b"\xf0\x9f\x98\x80")
LOW_TEXT = ("\ufffd\ufffd(\ufffd\ufffd\ufffd\u00e9\ufffd\ufffd"
            "\ufffd\ufffd\ufffd\ufffd\U0001f600")
PATCH = {E9.encode(): b"\xe9", FF.encode(): LOW,
         CTL.encode(): b"\x01\x1f\x7f"}

CONF = """QosCtl On
QosCtlContentTrees /degraded /full
<VirtualHost *:{port}>
  ServerName caf{e9}.example
  QosCtlContentTrees /low{ff}"q /full
</VirtualHost>
<VirtualHost *:{port}>
  ServerName ok{ctl}.example
</VirtualHost>
"""


@pytest.fixture
def hostile(server_factory):
    port = qcharness.free_port()
    s = server_factory(CONF.format(port=port, e9=E9, ff=FF, ctl=CTL),
                       port=port)
    with open(s.conf, "rb") as f:
        text = f.read()
    for k, v in PATCH.items():
        text = text.replace(k, v)
    with open(s.conf, "wb") as f:
        f.write(text)
    low = b'low' + LOW + b'"q'
    os.makedirs(os.path.join(s.docroot.encode(), low))
    with open(os.path.join(s.docroot.encode(), low, b"x.txt"), "w") as f:
        f.write("low\n")
    return s.start()


def test_json_is_valid_utf8_with_every_byte_escaped(hostile):
    port = hostile.port
    st, _, body = hostile.get("/qosctl-status?format=json",
                              port=hostile.sport)
    assert st == 200
    text = body.decode("utf-8")            # strict: raises on bad bytes
    assert "\x7f" not in text and "\x01" not in text
    doc = json.loads(text)
    hosts = {v["key"]: v for v in doc["vhosts"]}
    assert "caf\ufffd.example:%d" % port in hosts, list(hosts)
    assert "ok\x01\x1f\x7f.example:%d" % port in hosts, list(hosts)
    trees = hosts["caf\ufffd.example:%d" % port]["trees"]
    assert trees == ['/low' + LOW_TEXT + '"q', "/full"], trees


def test_prometheus_labels_are_valid_utf8(hostile):
    st, _, body = hostile.get("/qosctl-status?format=prometheus",
                              port=hostile.sport)
    assert st == 200
    text = body.decode("utf-8")
    assert 'vhost="caf\ufffd.example:%d"' % hostile.port in text
    assert 'tree="/low' + LOW_TEXT + '\\"q"' in text
