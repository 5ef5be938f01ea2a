"""A drift the fuzzer's source-derived pool drew in session 48's range 40000-40119 (``benchmarks/fuzz_drifts.py
--pool schema``) that the engine did not verify on its first run, kept as a small model (the fuzzer's shape: one
Linear, the call on its output times 3):

* ``aten.celu(x, -10000.0)`` (seed 40095, both exporters): ONNX Runtime's Celu kernel computes
  ``alpha * (exp(x / alpha) - 1)`` in float32; ``exp(x / alpha)`` is within 1e-3 of 1, so the difference keeps few
  digits and ``|alpha|`` scales the loss back up to 1e-3, where torch's elu kernel calls ``expm1``.  The first run
  said ``op-compat``, unverified: its float64 trial of the node could not run (ONNX Runtime has no double Celu, and
  Celu is float32-only in the schema below opset 28).  Now ``stability`` (kind ``runtime``), verified by the node
  written with the accurate expm1 form (``elu_expm1``), repair passes check.
"""
from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.causes.form_suite import cli_repair_passes_check, explained_file_form, stem_net


class Body(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten.celu.default(x.view(1, x.shape[0], 4, 8), -10000.0).reshape(x.shape[0], 32)


def celu_big_alpha() -> nn.Module:
    torch.manual_seed(0)
    return stem_net(Body)


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


@pytest.mark.drifts
@pytest.mark.parametrize("dynamo", [False, True])
def test_the_celu_kernels_cancellation_is_verified_by_the_accurate_expm1(tmp_path, dynamo):
    _, cfg, _, res, exp = explained_file_form(tmp_path, __file__, "celu_big_alpha", dynamo, globals())
    assert res.drift_origin is not None and res.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.verified and head.check == "stability", head.message
    assert head.patch.get("rewrite") == "elu_expm1" and "celu" in head.message, head.message
    assert cli_repair_passes_check(tmp_path, __file__, "celu_big_alpha", cfg.onnx)
