"""A verified patch whose story the values contradict is said by what it changed (``conclude._said``).

``ratio = a / b`` is NaN where ``a`` and ``b`` are 0, in torch too; then ``torch.where(ratio >= 0.5, ratio, 0)``.
The TorchScript exporter at opset 11 writes ``>=`` as ``Not(Less)``, true for NaN, so the file keeps the NaN
torch's ``ge`` drops (pytorch#38226).  ``nan_compare`` rewrites that comparison and tells it.  Without it (a form
whose right patch no proposer knows), the guard ``Where(IsNaN | IsInf, 0, Div)`` still verifies, and its story
("torch defines 0/0 as 0") is false: torch's ``div`` is NaN there too.  The finding then names the call the
alignment by value finds wrong first (``ge``) and says the guard makes up for it, not the guard's story.
"""
from __future__ import annotations

import warnings

import torch
from torch import nn


class KeptRatio(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(16, 16)

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ratio = self.stem(a).relu() * (b > 0) / b
        return torch.where(ratio >= 0.5, ratio, torch.zeros_like(ratio))


def model() -> nn.Module:
    torch.manual_seed(0)
    return KeptRatio().eval()


def rows() -> tuple[torch.Tensor, torch.Tensor]:
    b = torch.rand(6, 16) * (torch.rand(6, 16) < 0.7)
    return torch.randn(6, 16), b


def _explained(tmp_path, monkeypatch, without_nan_compare: bool):
    import drifttui.core.explain.causes.propose.assemble as assemble
    from tests.causes.conftest import explained_run
    from drifttui.core.result import Config

    if without_nan_compare:
        monkeypatch.setattr(assemble, "nan_compare_patches", lambda case, loc: [])
    path = tmp_path / "kept_ratio.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model(), rows(), str(path), dynamo=False, opset_version=11)
    return explained_run(Config(model=f"{__file__}:model", onnx=str(path), inputs=f"{__file__}:rows", samples=2))[3]


def test_the_right_rewrite_tells_the_comparison(tmp_path, monkeypatch):
    head = _explained(tmp_path, monkeypatch, False).findings[0]
    assert head.verified and head.patch.get("rewrite") == "nan_compare", head.message


def test_a_compensating_guard_names_the_wrong_call_not_its_story(tmp_path, monkeypatch):
    head = _explained(tmp_path, monkeypatch, True).findings[0]
    assert head.verified and head.patch.get("rewrite") == "nonfinite_guard", head.message
    assert head.torch_op == "torch.Tensor.ge", (head.torch_op, head.message)
    assert "makes up for this call" in head.message and "torch's div" in head.message, head.message
    assert "torch defines" not in head.message, head.message


class SignOfLog(nn.Module):
    """``torch.sign(torch.log(x - 0.5))``: the log is NaN below 0.5 on both sides; torch's ``sign`` of NaN is 0, ONNX's
    ``Sign`` keeps the NaN."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sign(torch.log(x - 0.5)) + x


def sign_model() -> nn.Module:
    return SignOfLog().eval()


def unit_rows() -> torch.Tensor:
    return torch.rand(6, 16)


def test_the_guard_goes_on_the_call_the_alignment_names_not_the_first_nan(tmp_path):
    from tests.causes.conftest import explained_run
    from drifttui.core.result import Config

    path = tmp_path / "sign_of_log.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(sign_model(), (unit_rows(),), str(path), dynamo=False)
    head = explained_run(Config(model=f"{__file__}:sign_model", onnx=str(path), inputs=f"{__file__}:unit_rows",
                                samples=2))[3].findings[0]
    assert head.verified and head.patch.get("rewrite") == "nonfinite_guard", head.message
    assert head.patch["node"].endswith("Sign") and head.torch_op == "torch.sign", (head.patch, head.message)
    assert "makes up for" not in head.message, head.message
