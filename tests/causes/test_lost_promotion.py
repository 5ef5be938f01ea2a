"""A module whose lowering lost torch's type promotion: the file returns a bool where torch returns a float.

The fuzzer's source-derived pool (``benchmarks/fuzz_schema.py``, seed 22011) drew ``aten.multiply.Scalar(x > 0,
3.0)``: the dynamo exporter lowers it to ``And``, and the file's output is a bool of the module's shape (0/1 where
torch has 0/3).  The module's value was not paired (a bool is never a float's value), so the origin went to the
root, and ``repair``'s graft of the re-export computed a float into an output the file declares bool: ONNX Runtime
refused the repaired file.  The value the file returns and nothing reads is the module's output, compared
(``pairing.returned_otherwise``); a graft declares the graph outputs it computes of its own type
(``splice._retype_outputs``).
"""
from __future__ import annotations

import pytest
import torch
from torch import nn


class Mask(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten.multiply.Scalar(x > 0, 3.0)


class Masked(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem, self.body = nn.Linear(32, 32), Mask()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x) * 3.0)


def model() -> nn.Module:
    torch.manual_seed(0)
    return Masked().eval()


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


@pytest.mark.drifts        # the explanation's re-exports, repair and check
def test_the_module_that_lost_the_promotion_is_named_and_repaired(tmp_path):
    from drifttui.cli import main
    from tests.causes.conftest import explained_small

    _, cfg, _, res, exp = explained_small(tmp_path, __file__, model, rows, dynamo=True)
    assert res.drift_origin is not None and res.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.verified and "bool" in head.message, head.message
    fixed = tmp_path / "fixed.onnx"
    common = [f"{__file__}:model", "--inputs", f"{__file__}:rows", "--samples", "2"]
    assert main(["repair", *common, "--onnx", cfg.onnx, "--out", str(fixed)]) == 0
    assert main(["check", *common, "--onnx", str(fixed)]) == 0
