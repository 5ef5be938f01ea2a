"""A top-k over scores saturated at exactly 1.0 is told by its ties, not by the float64 counterfactual
(``propose/numerics/conditioning.py``, ``float64_trial``).

``sigmoid(8 x)`` holds 1.0 for every x past ~2 in float32, in torch and in ONNX Runtime alike: the top-k then picks
among equal values, and ONNX TopK's lower-index-first order is not torch's (forms43k's ``query_select``, a two-stage
DETR query selection).  Computed in float64 the scores no longer tie and both sides agree, so the counterfactual
"verifies" and told an ill-conditioned function each side rounds otherwise: both sides round alike, they order the
ties otherwise.  The counterfactual is not tried where the origin's TopK selects among tied values; the ties
story (``propose/nopatch.py``: no patch exists) heads."""
from __future__ import annotations

import torch
from torch import nn

HERE = __file__


class _Select(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.boxes = nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        top, idx = torch.sigmoid(x.view(n, 16, 2) * 8.0).amax(-1).topk(8, -1)
        picked = torch.gather(self.boxes(x).view(n, 16, 2), 1, idx.unsqueeze(-1).expand(n, 8, 2))
        return torch.cat([top, picked.flatten(1)], 1)


class _Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(32, 32)
        self.body = _Select()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x) * 3.0)


def model() -> nn.Module:
    torch.manual_seed(0)
    return _Tiny().eval()


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


def test_a_top_k_over_saturated_scores_is_told_by_its_ties(tmp_path):
    from drifttui.core.explain.causes.deliver.repair import repair_patches
    from drifttui.core.onnx.graph import full_model
    from tests.causes.conftest import explained_small

    _, _, run, result, exp = explained_small(tmp_path, HERE, model, rows)
    assert result.verdict == "drift" and result.drift_origin.module == "body"
    head = next(f for f in exp.findings if f.severity == "error")
    assert (head.check, head.verified) == ("op-compat", False), (head.check, head.message)
    assert "tied values" in head.message and "no patch exists" in head.message, head.message
    assert repair_patches(full_model(run.prepared.index), run.result, exp)[0].model is None
