"""Drifts the fuzzer's source-derived pool drew in session 45's range 34000-34119 (``benchmarks/fuzz_drifts.py --pool
schema``) that the engine found at ``body`` on its first run but did not verify or told by the wrong op, kept as small
models (the fuzzer's shape: one Linear, the call on its output times 3, brought back to (B, 32)):

* ``aten.topk(x.view(B, 2, 16), 2, 1, largest=True, sorted=False)`` at x1e4 (seed 34031, both exporters):
  ``TopK(sorted=0)``, whose order ONNX Runtime chooses otherwise than torch's kernel; verified and repaired as
  ``sorted=1`` (``propose/edits/topk_order.py``, ``op-compat``/runtime);
* ``aten.__lshift__`` of int64 by int64 counts (seed 34101, TorchScript: ``a * Cast(Pow(2, b))``, INT64_MIN where a
  count reaches 64 and torch's shift is 0): verified and repaired with the factor 0 there
  (``propose/edits/shift_count.py``, ``lowering``);
* ``pairwise_distance(v, v, 1.0, 1e-6)`` then ``sign`` (seed 34115, TorchScript drops the eps: 0 where torch's norm
  is 8e-6, which ``Sign`` makes 0 where torch makes 1): told as ``pairwise_distance``, not as the ``sign``
  (``locate/localise_nodes._before_step``).
"""
from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.causes.form_suite import cli_repair_passes_check, explained_file_form, stem_net


def _back(y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    b = x.shape[0]
    y = y.to(torch.float32)
    if y.numel() % b:
        y = y.reshape(1, -1).expand(b, -1)
    y = y.reshape(b, -1)[:, :32]
    return y if y.shape[1] == 32 else torch.cat([y, x[:, y.shape[1]:]], 1)


class Body(nn.Module):
    def __init__(self, form: str) -> None:
        super().__init__()
        self.form = form

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        if self.form == "topk":
            s = x * 1e4
            return _back(torch.ops.aten.topk.default(s.view(b, 2, 16), 2, 1, True, False)[0], s)
        if self.form == "lshift":
            s = x * 1e4
            y = torch.flip(s, [0])
            return _back(torch.ops.aten.__lshift__.Tensor((s * 100).long(), (y * 100).long()), s)
        s = x * 100.0
        v = s.view(1, b, 4, 8)
        d = _back(torch.ops.aten.pairwise_distance.default(v, v, 1.0, 1e-06, False), s)
        return _back(torch.ops.aten.sign.default(d.view(b, 2, 16)), d)


def topk() -> nn.Module:
    torch.manual_seed(0)
    return stem_net(lambda: Body("topk"))


def lshift() -> nn.Module:
    torch.manual_seed(0)
    return stem_net(lambda: Body("lshift"))


def pairwise_sign() -> nn.Module:
    torch.manual_seed(0)
    return stem_net(lambda: Body("pairwise_sign"))


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


def _explained(tmp_path, form: str, dynamo: bool) -> tuple:
    return explained_file_form(tmp_path, __file__, form, dynamo, globals())


def _repaired(tmp_path, form: str, onnx: str) -> bool:
    return cli_repair_passes_check(tmp_path, __file__, form, onnx)


@pytest.mark.drifts
@pytest.mark.parametrize("dynamo", [False, True])
def test_an_unsorted_topk_is_verified_and_repaired_as_sorted(tmp_path, dynamo):
    _, cfg, _, res, exp = _explained(tmp_path, "topk", dynamo)
    assert res.drift_origin is not None and res.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.verified and (head.check, head.kind) == ("op-compat", "runtime"), head.message
    assert head.patch == {**head.patch, "op": "set_attribute", "name": "sorted", "value": 1} and "topk" in head.message
    assert _repaired(tmp_path, "topk", cfg.onnx)


@pytest.mark.drifts
def test_a_shift_count_past_the_width_is_verified_and_repaired(tmp_path):
    _, cfg, _, res, exp = _explained(tmp_path, "lshift", False)
    assert res.drift_origin is not None and res.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.verified and head.check == "lowering" and head.patch.get("rewrite") == "shift_count", head.message
    assert "__lshift__" in head.message
    assert _repaired(tmp_path, "lshift", cfg.onnx)


@pytest.mark.drifts
def test_a_dropped_eps_under_a_sign_is_told_as_the_norm(tmp_path):
    _, _, _, res, exp = _explained(tmp_path, "pairwise_sign", False)
    assert res.drift_origin is not None and res.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.verified and head.check == "lowering", head.message
    assert "in torch's pairwise_distance (" in head.message and "Sign /body" not in head.message, head.message
