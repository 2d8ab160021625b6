"""The admin's tools against a real Apache with the module."""

import json
import os
import subprocess
import sys

import qcharness

PREDICT = os.path.join(qcharness.TOP_SRCDIR, "tools", "qosctl-predict")


def test_predict_takes_the_service_rate_from_a_running_server():
    a = qcharness.Apache(extra="QosCtl On\nQosCtlModel 2 0 0\n"
                               "<Location /qosctl-status>\n"
                               "  SetHandler qosctl-status\n</Location>\n"
                               "QosCtlExclude /qosctl-status\n")
    try:
        a.start()
        url = "http://127.0.0.1:%d/qosctl-status" % a.port
        cost = a.status_json()["model"]["a"]
        out = subprocess.run([sys.executable, PREDICT, "-n", "3",
                              "--from-status", url, "--load", "0.5",
                              "--json"], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stderr
        mmn = json.loads(out.stdout.splitlines()[0])
        # mu = 1 / a; nearly idle, a stays near the prior (2 ms) between
        # the two reads.
        assert abs(mmn["service_rate"] * cost - 1.0) < 0.1
        assert abs(mmn["arrival_rate"] - 1.5 * mmn["service_rate"]) < 1e-9
    finally:
        a.cleanup()
