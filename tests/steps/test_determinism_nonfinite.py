"""Step 5's run-to-run difference with non-finite outputs (issue 30 point 1): an inf or NaN both runs give at one
place is no difference (and no numpy warning on stderr); one run's NaN where the other is finite is an infinite
difference, never skipped (``max(0.0, nan)`` is 0.0)."""
from __future__ import annotations

import math
import warnings

import numpy as np

from drifttui.core.explain.steps.determinism import _max_diff


def test_the_same_inf_and_nan_in_both_runs_is_no_difference_and_warns_nothing():
    x = np.array([np.inf, -np.inf, np.nan, 1.5], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _max_diff([x], [x.copy()]) == 0.0


def test_a_nan_or_inf_in_one_run_only_is_an_infinite_difference():
    a = np.array([np.nan, 1.0], np.float32)
    b = np.array([2.0, 1.0], np.float32)
    assert math.isinf(_max_diff([a], [b])) and math.isinf(_max_diff([b], [a]))
    assert math.isinf(_max_diff([np.array([np.inf])], [np.array([-np.inf])]))
    assert _max_diff([np.array([1.0, 2.0])], [np.array([1.0, 2.5])]) == 0.5
