"""metrics.compare's few-pass path agrees with the element-wise reference on every input form."""
import math

import numpy as np
import pytest
import torch

from drifttui.core.base.metrics import _compare_np, compare

FIELDS = ("n", "max_abs", "max_t", "n_out", "nan_mismatch")
CLOSE = ("sum_abs", "sum_sq", "dot", "norm_t", "norm_o")


def _ref(t, o, atol=1e-4, rtol=1e-4):
    t = np.ascontiguousarray(t, dtype=np.float32).reshape(-1)
    o = np.ascontiguousarray(o, dtype=np.float32).reshape(-1)
    return _compare_np(t, o, atol, rtol)


@pytest.mark.parametrize("scale", [0.0, 1e-6, 1e-3, 1.0])
def test_fast_path_matches_reference(scale):
    rng = np.random.default_rng(1)
    t = (rng.standard_normal((3, 17, 29)) * 5).astype(np.float32)
    o = t + (rng.standard_normal(t.shape) * scale).astype(np.float32)
    fast, ref = compare(t, o, 1e-4, 1e-4), _ref(t, o)
    for f in FIELDS:
        assert getattr(fast, f) == getattr(ref, f), f
    for f in CLOSE:
        assert getattr(fast, f) == pytest.approx(getattr(ref, f), rel=1e-4, abs=1e-9), f
    assert fast.cosine == pytest.approx(ref.cosine, abs=1e-6)
    if scale == 0.0:
        assert fast.cosine == 1.0 and fast.max_abs == 0.0 and not fast.fails()


def test_torch_inputs_views_and_low_precision():
    t = torch.randn(4, 6, 5)
    view = t.transpose(0, 2)                     # non-contiguous
    o = view.contiguous().numpy() + np.float32(1e-3)
    s = compare(view, o, 1e-4, 1e-4)
    assert s.max_abs == pytest.approx(1e-3, rel=1e-2) and s.fails()
    half = t.to(torch.bfloat16)
    s2 = compare(half, half.float().numpy(), 1e-4, 1e-4)
    assert s2.max_abs == 0.0 and not s2.fails()
    ints = compare(torch.arange(6), np.arange(6, dtype=np.int64), 0, 0)
    assert ints.max_abs == 0 and not ints.fails()
    with torch.inference_mode():
        inf_t = torch.ones(3) * 2
    assert compare(inf_t, np.full(3, 2, np.float32), 0, 0).max_abs == 0.0


def test_non_finite_values_take_the_elementwise_path():
    t = np.array([1.0, np.nan, np.inf, 2.0], dtype=np.float32)
    o = np.array([1.0, np.nan, 5.0, np.nan], dtype=np.float32)
    s = compare(torch.from_numpy(t), o, 1e-4, 1e-4)
    assert s.nan_mismatch == 2 and s.fails()
    big = np.array([3e38, -3e38], dtype=np.float32)     # finite, but t - o overflows
    s2 = compare(big, -big, 1e-4, 1e-4)
    assert s2.fails() and math.isinf(s2.max_abs)
