"""A value the dynamo exporter's optimizer folded into a constant, with another element count than torch's
(``locate/folded_values.py``; held-out batch 41B, tests/causes/forms41b.py).

``torch.arange(0, 3, 0.01)`` has 300 elements in torch (its count is computed in double); torchlib lowers it as an
ONNX ``Range`` of float32 bounds, whose count from ``float32(0.01) < 0.01`` is 301, and the optimizer folds it into an
initializer of 301.  No ONNX node computes it, so before ``folded_values`` the node-level localisation named the first
node that read it (a ``Slice``, an ``ArgMin``) as the wrong lowering.  A 1/64 step (exact in float32) folds to torch's
count and is not named."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from tests.causes.folded_groups import folded_of

SPEC = str(Path(__file__))


class Horizon(nn.Module):
    """a running sum over the grid ``arange(0, 3, step)`` read at its last element."""

    def __init__(self, step: float = 0.01) -> None:
        super().__init__()
        self.step = step

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = torch.arange(0.0, 3.0, self.step)
        return x + torch.cumsum(x[:, :1] * t, -1)[:, -1:] * self.step


def model() -> nn.Module:
    return Horizon().eval()


def rows() -> torch.Tensor:
    torch.manual_seed(0)
    return torch.randn(4, 8)


def _folded(step: float, tmp_path: Path) -> tuple[list, object]:
    return folded_of(Horizon(step).eval(), rows(), tmp_path / "horizon.onnx")


@pytest.fixture(scope="module")
def hundredths(tmp_path_factory):
    return _folded(0.01, tmp_path_factory.mktemp("folded"))


def test_a_folded_range_with_another_element_count_is_named_by_its_factory(hundredths):
    (w,), _ = hundredths
    assert (w.name, w.target, w.call, w.fails) == ("arange", "aten.arange.start_step", "torch.arange", True)
    assert "holds 301 elements where torch's value has 300" in w.folded, w.folded
    assert w.nodes and "arange" in w.folded


@pytest.mark.drifts
def test_a_folded_range_of_torch_s_element_count_is_not_named(tmp_path):
    assert _folded(1 / 64, tmp_path)[0] == []


def test_torch_s_value_written_into_the_folded_constant_computes_torch_s_numbers(hundredths):
    import numpy as np

    from drifttui.core.explain.causes.locate.evaluate import run_ort
    from drifttui.core.onnx.edit.patches import Patch, apply

    (w,), proto = hundredths
    const, value = w.held
    assert (const, value.shape, value.dtype) == ("arange", (300,), np.float32)
    x = rows()
    want = Horizon().eval()(x).detach().numpy()
    feed, out = proto.graph.input[0].name, proto.graph.output[0].name
    before = run_ort(proto, {feed: x.numpy()}, [out])[out]
    fixed = apply(proto, Patch({"op": "replace_constant", "name": const}, "lowering", "", "", payload=value))
    after = run_ort(fixed, {feed: x.numpy()}, [out])[out]
    assert np.abs(before - want).max() > 1e-2 and np.abs(after - want).max() < 1e-5


@pytest.mark.drifts
def test_the_headline_names_the_folded_range_not_its_reader(tmp_path):
    from tests.causes.conftest import explained_small

    _, _, _, result, exp = explained_small(tmp_path, SPEC, model, rows, dynamo=True)
    head = exp.findings[0]
    assert result.verdict == "drift" and head.severity == "error" and head.verified, head.message
    assert head.check == "lowering" and "folded at export from aten.arange.start_step" in head.message, head.message
    assert head.patch["op"] == "replace_constant" and head.patch["name"] == "arange", head.patch
    assert "the exporter's lowering of torch's aten.arange.start_step is wrong" in head.message, head.message


def test_torch_s_value_is_put_in_the_folded_constant_s_layout():
    import numpy as np

    from drifttui.core.explain.causes.locate.folded_values import _in_layout

    name, value = _in_layout("val_13", np.arange(40), np.zeros((41, 1), np.int64))     # an index unsqueezed
    assert (name, value.shape, value.dtype) == ("val_13", (40, 1), np.int64) and value[-1, 0] == 39
    assert _in_layout("c", np.arange(40), np.zeros((41, 3), np.float32)) is None        # 40 does not fill rows of 3


def test_another_value_the_reader_reads_is_not_a_folded_count():
    """forms40b's empty memory: the reader of a folded ``view`` also reads a (2, 4, 1, 6) float mask, the one
    non-scalar constant it reads; that mask is not the view held with another count (four axes differ)."""
    import numpy as np

    from drifttui.core.explain.causes.locate.folded_values import _broadcast_equal, _one_axis_apart

    assert not _one_axis_apart(np.zeros((2, 4, 1, 6)), np.ones((2, 4, 6, 8)))
    assert _one_axis_apart(np.zeros(401), np.ones(400)) and _one_axis_apart(np.zeros((1, 41)), np.ones(40))
    assert _broadcast_equal(np.full((1, 8), 2.0), np.full((6, 8), 2.0))
    assert not _broadcast_equal(np.arange(401.0), np.arange(400.0))
