"""Drifts the fuzzer's source-derived pool drew in session 47's range 38000-38119 (``benchmarks/fuzz_drifts.py --pool
schema``) that the engine told wrongly on its first run, kept as small models (the fuzzer's shape: one Linear, the
call on its output times 3):

* ``aten.elu(x, alpha, scale=0.0, input_scale=1.0)`` (seed 38080, TorchScript, there with a ``min`` after it): the
  TorchScript symbolic tests ``if scale and scale != 1.0`` before refusing a scale, so ``scale=0.0`` passes as no
  scale and the file computes ``Elu(x)`` where torch computes zeros.  The dynamo re-export of ``body`` computes
  torch's values and verifies; its scalars were then diffed against the file's (``witness_constant_patches``), and
  replacing the ``x * 1.0`` Mul's 1 by the re-export's 0 (elu's scale) zeroes the input, so it "verified" too and
  headed as ``custom-module``: "a number of the forward was changed in the file or since its export".  The file is
  what its own exporter writes; another exporter's numbers say where the two lowerings part, not an edit
  (``variants.unedited_witness``): now ``lowering``, in torch's elu, the dynamo re-export grafted.
"""
from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.causes.form_suite import cli_repair_passes_check, explained_file_form, stem_net


class Body(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten.elu.default(x * 1.0, -1.0, 0.0, 1.0)


def elu_no_scale() -> nn.Module:
    torch.manual_seed(0)
    return stem_net(Body)


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


@pytest.mark.drifts
def test_another_exporters_number_is_not_told_as_an_edit_of_a_file_its_exporter_writes(tmp_path):
    _, cfg, _, res, exp = explained_file_form(tmp_path, __file__, "elu_no_scale", False, globals())
    assert res.drift_origin is not None and res.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.verified and head.check == "lowering", head.message
    assert head.patch.get("op") == "reexport" and "in torch's elu (" in head.message, head.message
    assert cli_repair_passes_check(tmp_path, __file__, "elu_no_scale", cfg.onnx)
