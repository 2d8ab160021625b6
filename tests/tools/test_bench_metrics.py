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
