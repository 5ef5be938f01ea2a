"""A ``Cast`` the dynamo exporter recorded as torch's own conversion is said as one (checks/dtype.py).

A float32 op with a float64 buffer is computed in float64 by torch (type promotion) and the dynamo file says so with a
``Cast`` to float64 recorded as ``prims.convert_element_type``: information, not "an implicit precision path" with a
fix to remove the dtype change.  A TorchScript file records no FX call: there the module's own float64 buffer is the
evidence.  A ``Cast`` the file makes where nothing says torch converts stays a warning.
"""
from __future__ import annotations

import onnx
import torch
from torch import nn

from tests.causes.conftest import explained_run, explained_small

SPEC = __file__


class Promoted(nn.Module):
    """``x + mean64`` in float64 (torch's promotion), back to float32."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.register_buffer("mean", torch.linspace(-1, 1, 8, dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (self.lin(x) - self.mean).float()


def model() -> nn.Module:
    torch.manual_seed(0)
    return Promoted().eval()


def rows() -> torch.Tensor:
    return torch.randn(4, 8)


def _casts(ex):
    return [f for f in ex.findings if f.check == "dtype" and "Cast to float64" in f.message]


def test_a_promotion_torch_makes_is_information(tmp_path):
    ex = explained_small(tmp_path, SPEC, model, rows, dynamo=True)[3]
    casts = _casts(ex)
    assert casts, [f.message for f in ex.findings]
    assert all(f.severity == "info" for f in casts), [(f.severity, f.message) for f in casts]
    assert all("torch's program makes too" in f.message and "implicit" not in f.message for f in casts)
    assert ex.verdict == "ok"


class Widened(nn.Module):
    """a float32 module (no float64 tensor) whose file computes a product in float64: ``x.double() * 3``."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (self.lin(x).double() * 3.0).float()


def widened() -> nn.Module:
    torch.manual_seed(0)
    return Widened().eval()


def test_a_torchscript_cast_with_the_modules_float64_buffer_is_information(tmp_path):
    """TorchScript records no FX node: the module's own float64 buffer is the evidence of torch's promotion."""
    ex = explained_small(tmp_path, SPEC, model, rows)[3]
    casts = _casts(ex)
    assert casts, [f.message for f in ex.findings]
    assert all(f.severity == "info" and "holds float64 tensors (mean)" in f.message for f in casts), \
        [(f.severity, f.message) for f in casts]
    # the buffer is the root module's: named as the report names the root, never an empty name
    assert all(f.module == "" and ": (root) holds" in f.message for f in casts), [f.message for f in casts]


def test_a_cast_torch_does_not_record_stays_a_warning(tmp_path):
    """a file with the FX record stripped from its nodes (what an optimiser that drops metadata leaves), in a module
    that holds no float64 tensor: nothing says torch converts there."""
    from drifttui.core.result import Config

    path = tmp_path / "widened.onnx"
    torch.onnx.export(widened(), (rows(),), str(path), dynamo=True)
    proto = onnx.load(str(path))
    for n in proto.graph.node:
        keep = [p for p in n.metadata_props if p.key != "pkg.torch.onnx.fx_node"]
        del n.metadata_props[:]
        n.metadata_props.extend(keep)
    stripped = tmp_path / "stripped.onnx"
    onnx.save(proto, str(stripped))
    ex = explained_run(Config(model=f"{SPEC}:widened", onnx=str(stripped), inputs=f"{SPEC}:rows", samples=2))[3]
    casts = _casts(ex)
    assert casts and all(f.severity == "warning" and "implicit precision path" in f.message for f in casts)
