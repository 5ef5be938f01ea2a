"""A window function the dynamo exporter folded into a constant of torch's element count but other values
(``locate/folded_values.py``; held-out batch 42H, tests/causes/forms42h.py).

torchlib lowers ``torch.hamming_window(n)`` to ONNX ``HammingWindow``, whose coefficients are 25/46 and 21/46, not
torch's 0.54 / 0.46, and the optimizer folds it into an initializer of n elements, up to 3.5e-3 off torch's window.  No
ONNX node computes it, so the node-level localisation named the ``Mul`` that reads it as the wrong lowering (and, with
the window inside an ``STFT``, the ``ReduceL2`` of the magnitude after it, nothing verified).  A folded value made from
Python numbers alone whose constant holds other numbers than torch's value is now the first wrong value, and torch's
value written into the constant is the patch.  ``hann_window`` folds to torch's numbers and is not named."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from tests.causes.folded_groups import folded_of

SPEC = str(Path(__file__))


class Windowed(nn.Module):
    """the first 16 samples of each row times a window function made in ``forward``."""

    def __init__(self, window: str = "hamming") -> None:
        super().__init__()
        self.window = window

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        make = torch.hamming_window if self.window == "hamming" else torch.hann_window
        return x[:, :16] * make(16, dtype=x.dtype) + x[:, 16:]


class WindowedStft(nn.Module):
    """a log magnitude of an STFT whose Hamming window is made in ``forward``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        spec = torch.stft(x, 8, 2, window=torch.hamming_window(8, dtype=x.dtype), return_complex=True)
        return spec.abs().clamp(min=1e-7).log()


def model() -> nn.Module:
    return Windowed().eval()


def stft_model() -> nn.Module:
    return WindowedStft().eval()


def rows() -> torch.Tensor:
    torch.manual_seed(0)
    return torch.randn(4, 32)


def _folded(m: nn.Module, tmp_path: Path) -> tuple[list, object]:
    return folded_of(m, rows(), tmp_path / "windowed.onnx")


@pytest.fixture(scope="module")
def hamming(tmp_path_factory):
    return _folded(Windowed("hamming"), tmp_path_factory.mktemp("folded"))


def test_a_folded_window_of_torch_s_count_with_other_values_is_named_by_its_factory(hamming):
    (w,), _ = hamming
    assert (w.name, w.target, w.call, w.fails) == ("hamming_window", "aten.hamming_window.default",
                                                    "torch.hamming_window", True)
    assert "holds values up to 0.00" in w.folded and "off torch's" in w.folded, w.folded


def test_torch_s_window_written_into_the_folded_constant_computes_torch_s_numbers(hamming):
    import numpy as np

    from drifttui.core.explain.causes.locate.evaluate import run_ort
    from drifttui.core.onnx.edit.patches import Patch, apply

    (w,), proto = hamming
    const, value = w.held
    assert value.shape == (16,) and value.dtype == np.float32
    x = rows()
    want = Windowed().eval()(x).detach().numpy()
    feed, out = proto.graph.input[0].name, proto.graph.output[0].name
    before = run_ort(proto, {feed: x.numpy()}, [out])[out]
    fixed = apply(proto, Patch({"op": "replace_constant", "name": const}, "lowering", "", "", payload=value))
    after = run_ort(fixed, {feed: x.numpy()}, [out])[out]
    assert np.abs(before - want).max() > 1e-3 and np.abs(after - want).max() < 1e-6


def test_a_folded_window_of_torch_s_numbers_is_not_named(tmp_path):
    assert _folded(Windowed("hann"), tmp_path)[0] == []


def test_the_window_an_stft_reads_is_found_among_the_constants_it_reads(tmp_path):
    (w,), _ = _folded(WindowedStft(), tmp_path)
    assert w.target == "aten.hamming_window.default" and "STFT" in w.op_types, (w.target, w.op_types)


@pytest.mark.drifts
def test_the_headline_names_the_folded_window_not_its_reader(tmp_path):
    from tests.causes.conftest import explained_small

    _, _, _, result, exp = explained_small(tmp_path, SPEC, model, rows, dynamo=True)
    head = exp.findings[0]
    assert result.verdict == "drift" and head.severity == "error" and head.verified, head.message
    assert head.check == "lowering" and "folded at export from aten.hamming_window" in head.message, head.message
    assert head.patch["op"] == "replace_constant", head.patch
