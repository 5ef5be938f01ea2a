"""An origin over its float16 budget whose float16 is the model's own (``torch.autocast``, a ``.half()`` head) is
told by the rounding ONNX Runtime drops, not by the file's precision (``causes/verify.py``, ``_precision_story``).

The precision story (``propose/numerics/precision_loss.py``) stops the search for an origin over its budget whose
reduced nodes carry a share of the output error: a converted file paying for its float16.  Where torch itself
computes the origin in float16 and ONNX Runtime's CPU drops its roundings (boxes decoded at image coordinates under
autocast, their widths cancelling: forms43k's ``box_area``), keeping the nodes in float32 cannot repair anything,
while the opmath counterfactual (each float16 node rounded at its output, as torch rounds) computes what torch
computes: that verified rewrite is the cause, and ``repair`` applies it."""
from __future__ import annotations

import torch
from torch import nn

HERE = __file__


class _Boxes(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.float16):
            d = self.lin(x).view(x.shape[0], 8, 4)
            c, wh = d[..., :2] * 4.0 + 600.0, d[..., 2:].exp() * 6.0
            b = torch.cat([c - wh / 2, c + wh / 2], -1)
        b = b.float()
        return torch.cat([(b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1]), b.flatten(1)], 1)


class _Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(32, 32)
        self.body = _Boxes()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x) * 3.0)


def model() -> nn.Module:
    torch.manual_seed(0)
    return _Tiny().eval()


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


def test_a_float16_rounding_the_runtime_drops_in_the_models_own_float16_is_told_and_repaired(tmp_path):
    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.onnx.graph import full_model
    from tests.causes.conftest import explained_small

    engine, cfg, run, result, exp = explained_small(tmp_path, HERE, model, rows, dynamo=True)
    assert result.verdict == "drift" and result.drift_origin.module == "body"
    assert result.layers[result.drift_origin.layer].budget.over        # the precision story's case
    head = exp.findings[0]
    assert (head.check, head.verified, head.severity) == ("dtype", True, "error"), (head.check, head.message)
    assert head.patch["rewrite"] == "opmath_float32" and "drops the float16 rounding" in head.message
    fixed = repair(full_model(run.prepared.index), exp)
    assert fixed.model is not None, fixed.not_applicable
    assert engine.recheck(cfg, fixed.model).verdict == "ok"


def test_no_patch_is_run_twice_on_the_same_case(tmp_path, monkeypatch):
    """The precision story's opmath counterfactual (``_rounds_as_torch``) and the search after it try the same
    patches on the same case: each is run once per diagnosis (a float16 origin paid one local run per patch twice)."""
    import collections
    import json

    from drifttui.core.explain.causes import verify as V
    from tests.causes.conftest import explained_small

    runs: collections.Counter = collections.Counter()
    real = V.verify

    def counted(case, patches, cancel=None):
        for p in patches:
            runs[(id(case), json.dumps(p.spec, sort_keys=True, default=str))] += 1
        return real(case, patches, cancel)

    monkeypatch.setattr(V, "verify", counted)
    *_, exp = explained_small(tmp_path, HERE, model, rows, dynamo=True)
    assert exp.findings[0].patch["rewrite"] == "opmath_float32"
    opmath = {k: n for k, n in runs.items() if '"opmath_float32"' in k[1]}
    assert opmath and max(opmath.values()) == 1, opmath
