"""The inspector's initializer figures (min, max, mean, std, max |ONNX - torch|) read in one tiled
pass: the same figures as a plain float64 computation, at every tile boundary and layout."""
import numpy as np
import pytest

from drifttui.core.prepare import weight_scan


def _expected(a, p=None, transposed=False):
    x = a.astype(np.float64)
    stats = (x.min(), x.max(), x.mean(), x.std())
    if p is None:
        return stats, None
    ref = (p.T if transposed else p).astype(np.float64)
    return stats, float(np.abs(x - ref.reshape(x.shape)).max())


@pytest.fixture(params=["one tile", "many tiles"])
def tiles(request, monkeypatch):
    if request.param == "many tiles":     # small tiles: ragged edges in both directions
        monkeypatch.setattr(weight_scan, "_ROWS", 8)
        monkeypatch.setattr(weight_scan, "_TILE", 8 * 13)
        monkeypatch.setattr(weight_scan, "_SIDE", 7)


@pytest.mark.parametrize("shape", [(37,), (50, 29), (6, 5, 7), (1, 300)])
def test_statistics_match_float64(tiles, shape):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(shape) * 3 + 100).astype(np.float32)   # a large mean: no cancellation allowed
    stats, diff = weight_scan.scan(a)
    assert diff is None
    assert stats == pytest.approx(_expected(a)[0], rel=1e-6)


@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.float64])
def test_other_types_are_widened(tiles, dtype):
    rng = np.random.default_rng(2)
    a = (rng.standard_normal((40, 23)) * 60).astype(dtype)      # float16 sums of this would overflow
    stats, _ = weight_scan.scan(a)
    assert stats == pytest.approx(_expected(a)[0], rel=1e-6)


def test_difference_as_stored(tiles):
    rng = np.random.default_rng(3)
    p = rng.standard_normal((50, 29)).astype(np.float32)
    a = p.copy()
    a[49, 28] += 0.25          # the last element of the last (ragged) tile
    assert weight_scan.scan(a, p)[1] == pytest.approx(0.25, rel=1e-6)
    assert weight_scan.scan(p, p.copy())[1] == 0.0


def test_difference_of_a_weight_stored_transposed(tiles):
    """A Linear's weight exported as a MatMul initializer is the torch parameter transposed."""
    rng = np.random.default_rng(4)
    p = rng.standard_normal((29, 50)).astype(np.float32)
    a = np.ascontiguousarray(p.T)
    assert weight_scan.scan(a, p, transposed=True)[1] == 0.0
    a[17, 3] -= 0.5
    stats, diff = weight_scan.scan(a, p, transposed=True)
    assert diff == pytest.approx(0.5, rel=1e-6)
    assert stats == pytest.approx(_expected(a)[0], rel=1e-6, abs=1e-6)    # a mean near 0: float32 sums


def test_difference_across_types(tiles):
    rng = np.random.default_rng(5)
    p = rng.standard_normal((20, 30)).astype(np.float32)
    a = p.astype(np.float16)
    assert weight_scan.scan(a, p)[1] == pytest.approx(_expected(a, p)[1], rel=1e-9)


def test_values_near_the_float32_limit(tiles):
    """A causal mask holds finfo(float32).min: its float32 sum overflows, the figures must not."""
    a = np.zeros((30, 30), np.float32)
    a[np.triu_indices(30, 1)] = np.finfo(np.float32).min
    with np.errstate(all="raise"):
        stats, _ = weight_scan.scan(a)
    assert stats == pytest.approx(_expected(a)[0], rel=1e-9)
