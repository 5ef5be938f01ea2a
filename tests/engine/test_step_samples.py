"""A step's reruns capture the first samples; they must reach the origin's worst sample when it lies past
them, or a drift one sample shows is rerun on samples without it and the step contradicts the run
("no drift with or without determinism" under a DRIFT headline: the new-user review of session 36)."""
from __future__ import annotations

from types import SimpleNamespace

from drifttui.core.explain.context import WORST_REACH, Context


def _ctx(samples: int, worst, fixed: bool = False):
    origin = None if worst is None else SimpleNamespace(worst_sample=worst)
    return SimpleNamespace(source=SimpleNamespace(fixed=fixed), cfg=SimpleNamespace(samples=samples),
                           result=SimpleNamespace(drift_origin=origin))


def test_the_reruns_reach_the_worst_sample():
    assert Context.n_samples(_ctx(20, 7), 3) == 8          # samples 0..7: the worst among them
    assert Context.n_samples(_ctx(20, 1), 3) == 3          # already among the first three
    assert Context.n_samples(_ctx(5, 4), 2) == 5


def test_no_origin_a_fixed_source_or_a_far_worst_sample_keep_the_cap():
    assert Context.n_samples(_ctx(20, None), 2) == 2
    assert Context.n_samples(_ctx(20, 7, fixed=True), 3) == 1
    assert Context.n_samples(_ctx(200, WORST_REACH + 3), 2) == 2      # too far: the cost would be the run's
