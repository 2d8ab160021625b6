"""bench/lib/qcscenarios: the testbed's judge holds the simulator's
invariants, premium's full quality only where premium fits."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench", "lib"))
import qcscenarios  # noqa: E402


def pop(host, premium, load):
    return {"host": host, "premium": premium, "load": load}


def scenario(pops, hosts=None, bound=0.8, background=0.0):
    return {"bound": bound, "background": background, "pops": pops,
            "hosts": hosts or [{"guaranteed": False, "rmax_share": 0.0}]}


def test_premium_fits_within_what_the_bound_leaves():
    assert qcscenarios.premium_fits(scenario([pop(0, True, 0.3),
                                              pop(0, False, -1)]), 0)
    assert not qcscenarios.premium_fits(
        scenario([pop(0, True, 0.3)], background=0.6), 0)


def test_a_premium_closed_loop_never_fits():
    assert not qcscenarios.premium_fits(scenario([pop(0, True, -1)]), 0)


def test_contracts_come_off_best_efforts_room_and_bound_their_host():
    hosts = [{"guaranteed": False, "rmax_share": 0.0},
             {"guaranteed": True, "rmax_share": 0.5}]
    sc = scenario([pop(0, True, 0.4), pop(1, True, 0.4)], hosts)
    assert not qcscenarios.premium_fits(sc, 0)      # 0.4 > 0.8 - 0.5
    assert qcscenarios.premium_fits(sc, 1)          # 0.4 <= 0.5


def test_best_effort_hosts_premium_counts_together():
    hosts = [{"guaranteed": False, "rmax_share": 0.0}] * 2
    sc = scenario([pop(0, True, 0.5), pop(1, True, 0.5)], hosts)
    assert not qcscenarios.premium_fits(sc, 0)


def figures(good, served=None, full=None, errors=0.0):
    served = good if served is None else served
    return {"offered": served, "sent": served, "served": served,
            "full": served if full is None else full, "refused": 0.0,
            "errors": errors, "good": good, "pages": 0.0, "mixed": 0.0}


def runs(premium_full, alone_good=1000.0):
    return {"plain": {0: figures(1000.0), 1: figures(1000.0)},
            "pinned": {0: figures(1000.0, full=0.0),
                       1: figures(1000.0, full=0.0)},
            "qosctl": {0: figures(1000.0, full=0.0),
                       1: figures(1000.0, full=premium_full)},
            "alone-h0": {1: figures(alone_good)}}


def fails(sc, r):
    return [f for f, _ in qcscenarios.judge(sc, r)[1]]


def test_judge_asks_full_quality_of_premium_that_fits():
    sc = scenario([pop(0, False, -1), pop(0, True, 0.2)])
    assert fails(sc, runs(premium_full=1000.0)) == []
    assert fails(sc, runs(premium_full=500.0)) == ["premium"]


def test_judge_asks_only_goodput_of_premium_that_fills_the_server():
    sc = scenario([pop(0, False, -1), pop(0, True, -1)])
    assert fails(sc, runs(premium_full=500.0)) == []
    assert fails(sc, runs(premium_full=500.0, alone_good=2000.0)) \
        == ["premium"]
