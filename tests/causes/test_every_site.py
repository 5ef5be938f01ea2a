"""A workaround that must be applied at every node it fits is tried there at once (``rewrites._every_site``).

``F.multilabel_soft_margin_loss`` exported by the dynamo exporter lowers ``log_sigmoid`` twice, as
``Log(Sigmoid(x))`` and ``Log(Sigmoid(-x))``, and ONNX Runtime's ``Sigmoid`` kernel returns 0 in the tail where
torch's ``log_sigmoid`` is finite: no single site's rewrite removes the -inf the other makes (the fuzzer's program
3079, ``benchmarks/fuzz_drifts.py``: 17 patches tried, none verified).  Two such combined patches were also one to
the proposal's dedup (``assemble.key`` left out a sequence's patches): only the first ever ran.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn


class MultiLabel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x) * 30.0
        loss = F.multilabel_soft_margin_loss(h, (h.flip(-1) > 0).float(), reduction="none")
        return torch.cat([loss.unsqueeze(-1), h[:, 1:]], 1)


def model() -> nn.Module:
    torch.manual_seed(0)
    return MultiLabel().eval()


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


def test_two_sequences_are_two_candidates():
    from drifttui.core.explain.causes.propose.assemble import key

    one = {"op": "sequence", "patches": [{"op": "rewrite", "rewrite": "workaround", "form": "a", "node": "n0"}]}
    two = {"op": "sequence", "patches": [{"op": "rewrite", "rewrite": "workaround", "form": "b", "node": "n0"}]}
    assert key(one) != key(two) and key(one) == key(dict(one))


@pytest.mark.drifts        # the patches and re-exports the explanation tries
def test_the_kernel_workaround_at_every_site_verifies_and_repairs(tmp_path):
    from drifttui.cli import main
    from tests.causes.conftest import explained_small

    _, cfg, _, res, exp = explained_small(tmp_path, __file__, model, rows, dynamo=True)
    assert res.drift_origin is not None and res.drift_origin.module == ""
    head = exp.findings[0]
    assert head.verified and head.patch["op"] == "sequence", head.message
    assert len({p["node"] for p in head.patch["patches"]}) >= 2 and "Sigmoid" in head.message
    fixed = tmp_path / "fixed.onnx"
    common = [f"{__file__}:model", "--inputs", f"{__file__}:rows", "--samples", "2"]
    assert main(["repair", *common, "--onnx", cfg.onnx, "--out", str(fixed)]) == 0
    assert main(["check", *common, "--onnx", str(fixed)]) == 0
