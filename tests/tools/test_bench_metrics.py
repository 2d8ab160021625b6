"""bench/lib/qcmetrics: the settling figures bench/robustness reports."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench", "lib"))
import qcmetrics  # noqa: E402


def test_held_below_ends_the_transient_and_counts_later_strays():
    us = [0.77, 0.05, 0.95, 0.5, 0.6, 0.65, 0.6, 0.55, 0.8, 0.6, 0.72]
    assert qcmetrics.held_below(us, 0.7) == (3, 2)


def test_held_below_needs_a_whole_run_of_periods():
    assert qcmetrics.held_below([0.9, 0.5, 0.5, 0.5, 0.5], 0.7) \
        == (None, None)
    assert qcmetrics.held_below([0.5] * 5, 0.7) == (0, 0)
    assert qcmetrics.held_below([], 0.7) == (None, None)


def test_settling_index_is_reset_by_one_period_outside_the_band():
    us = [0.9, 0.6, 0.6, 0.6, 0.6, 0.6, 0.75, 0.6, 0.6, 0.6]
    assert qcmetrics.settling_index(us, 0.6, 0.1 / 0.6, hold=3) == 7
    assert qcmetrics.settling_index(us + [0.8], 0.6, 0.1 / 0.6,
                                    hold=3) is None


def _cgi():
    import qcrobust
    return qcrobust, qcrobust.BOUNDS["cpu"]


def test_ideal_at_run_costs_is_the_run_itself_at_the_bound():
    """A run held exactly at the bound with no other load served the
    most full pages its own costs allowed."""
    qcrobust, kind = _cgi()
    cal = {"cost_deg": 0.0003}
    n = 750 * 40
    ideal = qcrobust.ideal_at_run_costs(kind, cal, [(0, 40, 750)], 0.6,
                                        0.6, 0.2 * n, 0.8 * n, 40)
    assert abs(ideal - 0.2) < 1e-9


def test_ideal_at_run_costs_counts_what_the_bound_left():
    """Held under the bound (or beside others' load that the bound
    leaves room for), more was allowed than served.  A ramp's segment
    below capacity serves everything full and cannot lend what it leaves
    of the budget to a later one: less is allowed than the whole
    window's rate would say."""
    qcrobust, kind = _cgi()
    cal = {"cost_deg": 0.0003}
    n = 750 * 40
    under = qcrobust.ideal_at_run_costs(kind, cal, [(0, 40, 750)], 0.55,
                                        0.55, 0.2 * n, 0.8 * n, 40)
    assert under > 0.2
    ramp = qcrobust.ideal_at_run_costs(
        kind, cal, [(0, 20, 100), (20, 20, 1400)], 0.6, 0.6, 0.2 * n,
        0.8 * n, 40)
    # 2,000 full in the light segment, then (budget per reply - cost of
    # a snapshot) / (difference of costs) of the 28,000 after it.
    heavy = (0.6 / 1400 - 0.0003) / (0.0028 - 0.0003)
    assert abs(ramp - (2000 + 28000 * heavy) / 30000) < 1e-9
    assert ramp < 0.2
    assert qcrobust.ideal_at_run_costs(kind, cal, [(0, 40, 750)], None,
                                       0.6, 0.2 * n, 0.8 * n, 40) is None
    assert qcrobust.ideal_at_run_costs(kind, cal, [(0, 40, 750)], 0.6,
                                       0.6, 0, n, 40) is None
