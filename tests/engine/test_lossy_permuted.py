"""A lossy file's value in another axis order (``prepare/plan/nearest.lossy_permuted``).  ORT's quantization
pre-processing of a transformers ConvNeXt moves each block's transposes past the residual ``Add`` (computed
channels-last); at a 16x16 map of 16 channels every dim is 16, so the raw (unpermuted) closest candidate was the
layer-scale ``Mul`` at a relative error of 1.0 (nothing of the value), and the block read as a drift with a cosine of
0.  ``permuted`` pairs through a permutation only equal values, and an int8 file's never are.  Now an unrelated
closest candidate gives way to one a permutation makes clearly closer, and of near ties the reference's kind of op
wins (the ``Add``, not the LayerNorm after it that is almost the identity)."""
from __future__ import annotations

import numpy as np

from drifttui.core.prepare.plan.nearest import closest, lossy_permuted, probe


def _values():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1, 16, 16, 16)).astype(np.float32)            # NCHW, every dim 16
    nhwc = np.transpose(a, (0, 2, 3, 1))
    return a, {"mul": rng.standard_normal(a.shape).astype(np.float32) * 0.1,     # unrelated, the raw closest
               "add": nhwc + rng.standard_normal(a.shape).astype(np.float32) * 0.03,   # int8 noise, channels-last
               "norm": nhwc * 0.99 + rng.standard_normal(a.shape).astype(np.float32) * 0.029}


def test_an_unrelated_closest_gives_way_to_a_permuted_candidate():
    a, vals = _values()
    probes = {k: probe(v) for k, v in vals.items()}
    m = closest(a, 1, ["mul", "add"], vals, {"mul": 1, "add": 1}, probes)
    assert m is not None and m.value == "add" and m.perm == (0, 3, 1, 2) and 0.01 < m.err < 0.5 and not m.exact


def test_of_near_ties_the_reference_s_kind_of_op_wins():
    a, vals = _values()
    probes = {k: probe(v) for k, v in vals.items()}
    masks = dict.fromkeys(vals, 1)
    assert closest(a, 1, list(vals), vals, masks, probes).value in ("add", "norm")
    assert closest(a, 1, list(vals), vals, masks, probes, prefer=lambda d: d == "add").value == "add"
    assert closest(a, 1, list(vals), vals, masks, probes, prefer=lambda d: d == "norm").value == "norm"


def test_a_related_closest_candidate_is_kept_and_noise_is_never_permuted_into_a_match():
    a, vals = _values()
    near = {"raw": a + 0.05 * np.random.default_rng(1).standard_normal(a.shape).astype(np.float32), **vals}
    probes = {k: probe(v) for k, v in near.items()}
    assert closest(a, 1, list(near), near, dict.fromkeys(near, 1), probes).value == "raw"
    assert lossy_permuted(a, ["mul"], vals, float(np.abs(a).max()), None) is None
