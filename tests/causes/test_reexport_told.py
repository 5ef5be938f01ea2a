"""A verified re-export's story opens with the torch op whatever its class (``conclude._relowered``).

The fuzzer's source-derived pool (``benchmarks/fuzz_schema.py``, seed 20016) drew ``adaptive_max_pool2d`` of a
(B, 2, 16) view to (1, 2): the TorchScript exporter lowers it to one MaxPool whose window is not torch's.  The
re-export verified, and the finding said "MaxPool /body/MaxPool computes something else than torch" with no word of
the call: only the classes of an op's story (lowering, stability, dtype, op-compat) opened with the op, on the view
that a padding's or a resize's story names its module's attribute.  A re-export changes lowerings, not an attribute.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn


class Pooled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x) * 30.0
        p = F.adaptive_max_pool2d(h.view(h.shape[0], 2, 16), (1, 2)).flatten(1)
        return torch.cat([p, h[:, 2:]], 1)


def model() -> nn.Module:
    torch.manual_seed(0)
    return Pooled().eval()


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


@pytest.mark.drifts        # the explanation's re-exports
def test_a_verified_reexport_names_the_call(tmp_path):
    from tests.causes.conftest import explained_small

    _, _, _, res, exp = explained_small(tmp_path, __file__, model, rows)
    assert res.verdict != "ok" and res.drift_origin is not None
    head = exp.findings[0]
    assert head.verified and head.patch["op"] == "reexport", head.message
    assert head.message.startswith("in torch's adaptive_max_pool2d ("), head.message


def test_only_a_reexport_that_is_no_attributes_story_is_told():
    from drifttui.core.explain.causes.conclude import _relowered
    from drifttui.core.result import Finding

    def finding(check: str, op: str, verified: bool = True) -> Finding:
        return Finding(check=check, severity="error", module="body", onnx_nodes=[], message="m", evidence={},
                       fix="", verified=verified, patch={"op": op}, kind="export")

    assert _relowered(finding("padding", "reexport")) and _relowered(finding("interpolation", "reexport"))
    assert not _relowered(finding("normalization", "reexport"))
    assert not _relowered(finding("padding", "set_attribute")) and not _relowered(finding("padding", "reexport", False))
