"""Drifts the fuzzer's source-derived pool drew in session 46's range 36000-36119 (``benchmarks/fuzz_drifts.py --pool
schema``) that the engine missed on its first run, kept as small models (the fuzzer's shape: one Linear, the call on
its output times 3, brought back to (B, 32)):

* ``aten.vstack([x, x.abs()])`` then ``aten.__lshift_`` of int64 by int64 counts at x1e4 (seed 36018, TorchScript):
  the vstack is ``SequenceConstruct`` + ``ConcatFromSequence``, whose list value crashed ``localise``
  (``'list' object has no attribute 'dtype'``: no explanation at all); now the shift's ``a * Cast(2 ** b)`` is
  verified and repaired (``lowering``);
* ``aten.atan2(x > 0, y[0])`` at x1e4 (seed 36039, TorchScript): the mask's ``Greater`` and the atan2 lowering's
  ``Greater(Cast(mask), 0)`` both hold ``gt``'s value, and the tie went to the later one by name, so the verified
  boundary patch there was told as torch's ``gt``; now as ``atan2`` (``value_match.found_values``: the first
  computed value).
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
        s = x * 1e4
        if self.form == "vstack_lshift":
            t = _back(torch.ops.aten.vstack.default([s, s.abs()]), s)
            return _back(torch.ops.aten.__lshift__.Tensor((t * 100).long(), (t * 100).long()), t)
        y = s.flip(-1) * 0.75 - 0.1
        return _back(torch.ops.aten.atan2.default(s > 0, y[0]), s)


def vstack_lshift() -> nn.Module:
    torch.manual_seed(0)
    return stem_net(lambda: Body("vstack_lshift"))


def atan2_mask() -> nn.Module:
    torch.manual_seed(0)
    return stem_net(lambda: Body("atan2_mask"))


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


def _repaired(tmp_path, form: str, onnx: str) -> bool:
    return cli_repair_passes_check(tmp_path, __file__, form, onnx)


@pytest.mark.drifts
def test_a_sequence_among_the_origins_nodes_does_not_stop_the_explanation(tmp_path):
    _, cfg, _, res, exp = explained_file_form(tmp_path, __file__, "vstack_lshift", False, globals())
    assert res.drift_origin is not None and res.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.verified and head.check == "lowering" and head.patch.get("rewrite") == "shift_count", head.message
    assert "__lshift__" in head.message
    assert _repaired(tmp_path, "vstack_lshift", cfg.onnx)


@pytest.mark.drifts
def test_the_quadrant_test_of_an_atan2_of_a_mask_is_told_as_the_atan2(tmp_path):
    _, _, _, res, exp = explained_file_form(tmp_path, __file__, "atan2_mask", False, globals())
    assert res.drift_origin is not None and res.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.verified and head.check == "lowering", head.message
    assert "in torch's atan2 (" in head.message and "torch's gt" not in head.message, head.message
