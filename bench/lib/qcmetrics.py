"""Numbers the bench/ scripts report, computed one way everywhere.

    step_response(u, bound)    settling, overshoot, steady-state error
    highest_ok_rate(points)    the paper's Rdegrade / Rreject
    max_full_share(...)        the most full-quality replies a link allows
    held_below(xs, limit)      end of a transient above a limit
    percentile(xs, p)          nearest-rank percentile
"""

import statistics


def moving_average(xs, n):
    """Trailing mean over n values (fewer at the start)."""
    return [sum(xs[max(0, i - n + 1):i + 1]) / len(xs[max(0, i - n + 1):i + 1])
            for i in range(len(xs))]


def settling_index(xs, bound, band, hold=5):
    """First index from which every value stays within band*bound of
    bound; None unless at least `hold` values show that it stays."""
    idx = None
    for i, x in enumerate(xs):
        if abs(x - bound) > band * bound:
            idx = None
        elif idx is None:
            idx = i
    return idx if idx is not None and len(xs) - idx >= hold else None


def held_below(xs, limit, hold=5):
    """(first index from which `hold` values in a row are <= limit, how
    many later values are > limit); (None, None) if no such run.  A
    transient's end even when single noisy periods stray later."""
    for i in range(len(xs) - hold + 1):
        if all(x <= limit for x in xs[i:i + hold]):
            return i, sum(1 for x in xs[i + hold:] if x > limit)
    return None, None


def first_reach(xs, bound, band):
    """Index of the first value within the band or past the set point
    (on the other side from xs[0]); None if never."""
    side = xs[0] > bound
    for i, x in enumerate(xs):
        if abs(x - bound) <= band * bound or (x > bound) != side:
            return i
    return None


def step_response(u, bound, band=0.05, smooth=3):
    """Metrics of a utilization series u (one value per control period,
    u[0] the first period under load) against the set point bound:

    settling      periods until u enters the band and stays there (for
                  the rest of the run, at least 5 periods)
    settling_avg  the same for the smooth-period moving average (robust
                  to a single noisy sample, blind to a fast oscillation)
    peak          (max(u) - bound) / bound: the first excursion, which no
                  controller acting once per period can avoid
    overshoot     largest |u - bound| / bound after u first reached the
                  band or crossed the set point (None if it never did):
                  how far the loop swings once it has taken over
    sse           mean of the second half minus bound (steady-state error)
    sse_rel       sse / bound
    std           standard deviation of the second half
    """
    tail = u[len(u) // 2:]
    mean = sum(tail) / len(tail)
    reach = first_reach(u, bound, band)
    return {
        "settling": settling_index(u, bound, band),
        "settling_avg": settling_index(moving_average(u, smooth), bound,
                                       band),
        "peak": max(0.0, max(u) - bound) / bound,
        "overshoot": None if reach is None else
        max(abs(x - bound) for x in u[reach:]) / bound,
        "mean_tail": mean,
        "sse": mean - bound,
        "sse_rel": (mean - bound) / bound,
        "std": statistics.pstdev(tail),
    }


def highest_ok_rate(points, limit=0.001):
    """The highest rate below which every measured rate, and itself, had
    an error ratio under limit (points: (rate, ratio) pairs); None if
    even the lowest failed.  A lucky point above a failure does not
    count: the sustainable rate is the edge of a contiguous run."""
    best = None
    for rate, ratio in sorted(points):
        if ratio >= limit:
            break
        best = rate
    return best


def max_full_share(budget_bytes, replies, full_bytes, degraded_bytes):
    """The largest share f of full-quality replies such that replies
    replies, f of them costing full_bytes on the link and the rest
    degraded_bytes, fit in budget_bytes; clamped to [0, 1]."""
    if replies <= 0 or full_bytes <= degraded_bytes:
        return 1.0
    f = (budget_bytes / replies - degraded_bytes) / (full_bytes
                                                     - degraded_bytes)
    return min(1.0, max(0.0, f))


def percentile(xs, p):
    """The nearest-rank p-th percentile (0 < p <= 100) of xs; None when
    xs is empty."""
    if not xs:
        return None
    s = sorted(xs)
    return s[max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))]
