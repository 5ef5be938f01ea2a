import math

import numpy as np
import pytest

from drifttui.core.base.aggregate import Aggregate

from drifttui.core.base.metrics import compare


def test_compare_matches_numpy():
    rng = np.random.default_rng(0)
    t = rng.standard_normal((4, 5, 6)).astype(np.float32) * 3
    o = t + rng.standard_normal(t.shape).astype(np.float32) * 1e-3
    s = compare(t, o, atol=1e-4, rtol=1e-4)
    d = np.abs(t - o)
    assert s.max_abs == pytest.approx(d.max())
    assert s.mean_abs == pytest.approx(d.mean(), rel=1e-5)
    assert s.rmse == pytest.approx(math.sqrt((d.astype(np.float64) ** 2).mean()), rel=1e-5)
    assert s.max_rel == pytest.approx(d.max() / np.abs(t).max(), rel=1e-6)
    cos = float((t.ravel() @ o.ravel()) / np.linalg.norm(t) / np.linalg.norm(o))
    assert s.cosine == pytest.approx(cos, abs=1e-6)
    bound = 1e-4 + 1e-4 * np.abs(t).max()
    assert s.frac_out == pytest.approx((d > bound).mean())
    assert s.fails()


def test_tolerance_is_relative_to_layer_scale():
    t = np.array([1000.0, 0.0], dtype=np.float32)
    o = np.array([1000.0, 0.05], dtype=np.float32)    # 0.05 <= 1e-4 + 1e-4 * 1000
    assert not compare(t, o, 1e-4, 1e-4).fails()
    o2 = np.array([1000.0, 0.2], dtype=np.float32)
    assert compare(t, o2, 1e-4, 1e-4).fails()


def test_nan_mismatch_counts_one_sided_only():
    t = np.array([1.0, np.nan, np.inf, 2.0], dtype=np.float32)
    o = np.array([1.0, np.nan, 5.0, np.nan], dtype=np.float32)
    s = compare(t, o, 1e-4, 1e-4)
    assert s.nan_mismatch == 2
    assert s.fails()
    same = compare(t[:2], o[:2], 1e-4, 1e-4)
    assert same.nan_mismatch == 0 and not same.fails()


def test_shape_mismatch_is_a_failure_not_a_crash():
    s = compare(np.zeros((2, 3), np.float32), np.zeros((4,), np.float32), 1e-4, 1e-4)
    assert s.shape_mismatch and s.fails()
    ok = compare(np.zeros((2, 3), np.float32), np.zeros((6,), np.float32), 1e-4, 1e-4)
    assert not ok.fails()


def test_aggregate_worst_sample_and_median():
    agg = Aggregate()
    for i, scale in enumerate([1e-6, 1e-3, 1e-5]):
        t = np.ones(10, np.float32)
        agg.add(i + 10, compare(t, t + np.float32(scale), 1e-4, 1e-4))
    m = agg.to_metrics()
    assert m.max_abs.worst_sample == 11
    assert m.max_abs.worst == pytest.approx(1e-3, rel=1e-3)
    assert m.max_abs.median == pytest.approx(1e-5, rel=1e-2)
    assert m.samples == 3
    assert sum(m.histogram) == 3
    assert agg.fails(1e-4, 1e-4) and len(agg.failing(1e-4, 1e-4)) == 1
    assert not agg.fails(1e-2, 0.0)          # the same statistics, decided at another tolerance


def test_a_non_finite_mismatch_is_an_infinite_error():
    """One side inf/NaN where the other is finite: max_abs is inf (not the finite elements' max),
    the count says how many, and removing them lowers the figure a patch is judged on."""
    import math

    t = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    o = np.array([1.0, 2.0 + 7e-6, -np.inf, np.nan], dtype=np.float32)
    s = compare(t, o, 1e-4, 1e-4)
    assert math.isinf(s.max_abs) and s.nan_mismatch == 2 and s.fails()
    assert math.isinf(s.max_rel) and s.spread == 0.5
    assert s.fails_at(1e3, 1e3)                        # no tolerance passes it
    fixed = compare(t, np.array([1.0, 2.0 + 7e-6, 3.0, 4.0], dtype=np.float32), 1e-4, 1e-4)
    assert fixed.max_abs < s.max_abs and not fixed.fails()
    agg = Aggregate()
    agg.add(0, s)
    m = agg.to_metrics()
    assert math.isinf(m.max_abs.worst) and m.nan_mismatch == 2
    # both sides the same inf is agreement, not an error
    same = compare(np.array([np.inf, 1.0], np.float32), np.array([np.inf, 1.0], np.float32), 1e-4, 1e-4)
    assert same.max_abs == 0.0 and not same.fails()


def test_elementwise_gap_counts_equal_infinities_as_equal_and_unequal_ones_as_inf():
    """A -inf attention mask held by both sides is the same tensor (before: -inf - -inf = NaN, "differs by nan")."""
    import numpy as np

    from drifttui.core.base.metrics import elementwise_gap

    mask = np.array([0.0, -np.inf, np.nan, 1.0], dtype=np.float32)
    assert elementwise_gap(mask, mask.copy()) == 0.0
    assert elementwise_gap(mask, np.array([0.0, -np.inf, np.nan, 1.5], dtype=np.float32)) == 0.5
    assert elementwise_gap(mask, np.array([0.0, 0.0, np.nan, 1.0], dtype=np.float32)) == np.inf
    assert elementwise_gap(mask, np.array([0.0, -np.inf, 0.0, 1.0], dtype=np.float32)) == np.inf
    assert elementwise_gap(np.zeros(0), np.zeros(0)) == 0.0


def test_values_saturated_on_the_same_side_agree_whatever_their_dtypes():
    """An attention mask: torch writes float32's min, a float16 file -65504 or -inf. Both are "minus infinity"
    to the softmax that reads them: they agree and stay out of the figures (before: an own error of 3.40e+38, on
    a scale of 3.40e+38 that let any error through)."""
    import torch

    lo32 = float(torch.finfo(torch.float32).min)
    t = torch.tensor([0.5, -1.25, lo32, lo32], dtype=torch.float32)
    for file_lo in (-65504.0, -np.inf):
        o = np.array([0.5 + 1e-3, -1.25, file_lo, file_lo], dtype=np.float16)
        s = compare(t, o, 1e-4, 1e-4)
        assert s.nan_mismatch == 0 and math.isfinite(s.max_abs)
        assert s.max_abs == pytest.approx(abs(float(np.float16(0.5 + 1e-3)) - 0.5))
        assert s.max_t == 1.25                     # the scale of the values the mask leaves
        assert s.max_abs < 1e-3 and s.cosine > 0.99
    # the other sign, and the roles swapped: a float16 torch side against a float32 file
    hi16 = torch.tensor([65504.0, 2.0], dtype=torch.float16)
    assert compare(hi16, np.array([np.finfo(np.float32).max, 2.0], np.float32)).max_abs == 0.0
    assert compare(hi16, np.array([np.inf, 2.0], np.float32)).max_abs == 0.0


def test_saturation_never_hides_an_overflow_or_a_sign_flip():
    """A finite torch value short of its dtype's extreme that the file holds as inf or as its own extreme is an
    error (issue #30: non-finite values are errors); so are two extremes of opposite signs."""
    import torch

    lo32 = float(torch.finfo(torch.float32).min)
    over = compare(torch.tensor([7.8e4, 1.0]), np.array([np.inf, 1.0], np.float16), 1e-4, 1e-4)
    assert math.isinf(over.max_abs) and over.nan_mismatch == 1 and over.fails()
    clipped = compare(torch.tensor([-7.8e4, 1.0]), np.array([-65504.0, 1.0], np.float16), 1e-4, 1e-4)
    assert clipped.max_abs == pytest.approx(7.8e4 - 65504.0) and clipped.fails()
    flipped = compare(torch.tensor([lo32, 1.0]), np.array([np.inf, 1.0], np.float16), 1e-4, 1e-4)
    assert math.isinf(flipped.max_abs) and flipped.fails()
    # torch saturated, the file a large finite number short of its own extreme: measured, not excused
    short = compare(torch.tensor([lo32, 1.0]), np.array([-1e4, 1.0], np.float16), 1e-4, 1e-4)
    assert short.max_abs > 1e38


def test_an_element_finite_on_one_side_only_is_infinite_noise_in_the_sqnr():
    """A float16 file's overflowed element (inf where torch is finite) read as a small loss ("own loss 0.5 dB" on
    a row whose own error is inf): the SQNR's sums hold the finite pairs only.  It is -inf, as the error is inf."""
    t = np.array([1.0, 2.0, 3.0e5, 4.0], np.float32)
    o = np.array([1.0, 2.0, np.inf, 4.0], np.float32)
    st = compare(t, o, atol=1e-4, rtol=1e-4)
    assert st.nan_mismatch == 1 and st.sqnr_db == float("-inf")
    assert compare(t, t.copy(), atol=1e-4, rtol=1e-4).sqnr_db == float("inf")


def test_an_overflow_of_the_file_s_format_is_counted_as_one():
    """A torch value past float16's largest finite number (65504) that the float16 file holds as inf of the same
    sign is an overflow (session 38: the numbers line names it); an inf where torch is short of 65504, of the
    other sign, or a NaN, is an infinite error like any other, not an overflow."""
    t = np.array([7e4, -8e4, 100.0, 7e4, 7e4, 1.0], np.float32)
    o = np.array([np.inf, -np.inf, np.inf, -np.inf, np.nan, 1.0], np.float16)
    st = compare(t, o)
    assert st.nan_mismatch == 5 and st.max_abs == math.inf
    assert st.overflow == 2 and st.overflow_limit == 65504.0
    same = compare(t, o.astype(np.float32))          # a float32 file: no narrower format to overflow
    assert same.nan_mismatch == 5 and same.overflow == 0
    agg = Aggregate()
    agg.add(0, st)
    agg.add(1, compare(t[:1], o[:1]))
    m = agg.to_metrics()
    assert (m.nan_mismatch, m.overflow, m.overflow_limit) == (6, 3, 65504.0)
