"""The median CI: exact ranks for known n, coverage checked by simulation."""

from __future__ import annotations

import numpy as np
import pytest

from flagsweep import stats


def test_too_few_samples_have_no_95_percent_interval():
    assert stats.median_ci([1, 2, 3, 4, 5]) is None      # [min, max] covers only 93.75%
    assert stats.median_ci([]) is None


def test_known_ranks():
    # n = 6: [x(1), x(6)] covers 1 - 2/64 = 96.9%.
    ci = stats.median_ci([6, 1, 5, 2, 4, 3])
    assert (ci.low, ci.median, ci.high) == (1, 3.5, 6)
    assert ci.conf == pytest.approx(1 - 2 / 64)
    # n = 20: ranks 6 and 15 (a textbook value, e.g. Conover's table A3).
    x = list(range(1, 21))
    ci = stats.median_ci(x)
    assert (ci.low, ci.high) == (6, 15)
    assert ci.conf >= 0.95


def test_relative_half_width():
    ci = stats.median_ci([99, 100, 100, 100, 100, 101, 100, 100])
    assert ci.half_width_rel == pytest.approx(0.01)


def test_coverage_by_simulation():
    """Seeded: skewed (log-normal) timings; the true median must be inside >= ~95% of the time."""
    rng = np.random.default_rng(2003)
    true_median = 1.0  # median of lognormal(0, s) is e^0
    hits = 0
    trials = 2000
    for _ in range(trials):
        ci = stats.median_ci(rng.lognormal(0.0, 0.05, size=15))
        hits += ci.low <= true_median <= ci.high
    assert 0.94 <= hits / trials <= 0.995
