"""Drifts the fuzzer's source-derived pool drew (``benchmarks/fuzz_drifts.py --pool schema``, seeds 23051 and
23063 of session 39's held-out range, 24102 and 25073 of session 40's) that session 40 verifies or tells, kept as
small models:

* ``aten.special_log_softmax(x, -1, dtype=torch.float16)`` at x100: torch casts the input to float16 first, both
  exporters compute ``LogSoftmax`` in float32 and narrow its result; told as the op and verified by reading its input
  rounded first (``round_first``, class ``dtype``);
* ``aten.prod`` of an int64 tensor (here of each row, ``prod.dim_int``): torch's product wraps on overflow, ONNX Runtime's ``ReduceProd`` saturates;
  verified and repaired by the product written as a tree of ``Mul`` (``int_prod_exact``, ``op-compat``/runtime);
* ``aten.bitwise_left_shift(3, n)`` then ``glu`` (TorchScript: ``3 * Cast(Pow(2, n))``, wrapping past 63 bits where
  torch's shift is 0): told as the shift, not the ``glu`` after it (``align_graph.closest``);
* ``aten.angle`` of an int64 tensor (dynamo: pi cast to int64, 3): verified and repaired by the re-trace that casts
  the integer input to torch's float result type first (``retrace._promoting_ops``).

And session 41's (range 26000-26119, TorchScript):

* ``aten.any`` of an int64 tensor (seed 26000): the exporter sums the integers (not their non-zero-ness) and
  tests the sum ``> 0``; told as ``any``, not as the ``.to`` after it (``causal_values._one_element``: torch's
  ``True`` is not held by the file's scalar constant ``1``);
* ``cosine_similarity(x, x, 1, eps=1e4)`` after a ``type_as`` of a view (seed 26063): the exporter clamps the
  product of the norms where torch clamps each; told as ``cosine_similarity``, not as the ``reshape`` back before
  it (``causal``: a call's value moves to its own later value);
* ``aten.cumsum(x, -1, dtype=torch.float16)`` (seed 26058): verified (``opmath_float32``) and now repaired, the
  repaired file no longer read as processed by ORT (``reference.processed_by``).
"""
from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.causes.form_suite import explained_file_form, stem_net


class Body(nn.Module):
    def __init__(self, form: str) -> None:
        super().__init__()
        self.form = form

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.form == "shift":          # as the fuzzer brings each call's result back to (B, 32) floats
            x = x * 10.0
            b = x.shape[0]
            shifted = torch.ops.aten.bitwise_left_shift.Scalar_Tensor(3, (x * 100).long())
            shifted = shifted.to(torch.float32).reshape(b, -1)[:, :32]
            g = torch.ops.aten.glu.default(shifted, -1).to(torch.float32).reshape(b, -1)[:, :32]
            return torch.cat([g, x[:, g.shape[1]:]], 1)
        if self.form == "any":
            x = x * 1.0                                 # as the fuzzer scales, brings back and pads its result
            n = (x * 100).long()                        # its sum < 0 with elements not 0: torch's any is True
            y = torch.ops.aten.any.default(torch.cat([n, -n - 1], 1)).to(torch.float32)
            y = y.reshape(1, -1).expand(x.shape[0], -1).reshape(x.shape[0], -1)[:, :32]
            return torch.cat([y, x[:, y.shape[1]:]], 1)
        if self.form == "cosine":
            v = torch.ops.aten.type_as.default(x.view(x.shape[0], 2, 16), x).reshape(x.shape[0], 32)
            c = torch.ops.aten.cosine_similarity.default(v, v, 1, 10000.0).reshape(-1, 1)
            return torch.cat([c, x[:, 1:]], 1)
        if self.form == "cumsum16":
            return torch.ops.aten.cumsum.default(x, -1, dtype=torch.float16).float()
        if self.form == "angle":
            return torch.ops.aten.angle.default((x * 100).long())
        if self.form == "log_softmax16":
            return torch.ops.aten.special_log_softmax.default(x * 100.0, -1, dtype=torch.float16).float()
        odd = (x * 100).long() * 2 + 1                  # no factor 0: the row's product overflows
        return torch.ops.aten.prod.dim_int(odd, -1, True).float().expand(x.shape[0], 32)


def log_softmax16() -> nn.Module:
    torch.manual_seed(0)
    return stem_net(lambda: Body("log_softmax16"))


def prod() -> nn.Module:
    torch.manual_seed(0)
    return stem_net(lambda: Body("prod"))


def shift() -> nn.Module:
    torch.manual_seed(0)
    return stem_net(lambda: Body("shift"))


def angle() -> nn.Module:
    torch.manual_seed(0)
    return stem_net(lambda: Body("angle"))


def any_() -> nn.Module:
    torch.manual_seed(0)
    return stem_net(lambda: Body("any"))


def cosine() -> nn.Module:
    torch.manual_seed(0)
    return stem_net(lambda: Body("cosine"))


def cumsum16() -> nn.Module:
    torch.manual_seed(0)
    return stem_net(lambda: Body("cumsum16"))


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


def _explained(tmp_path, form: str, dynamo: bool) -> tuple:
    return explained_file_form(tmp_path, __file__, form, dynamo, globals())


@pytest.mark.drifts
@pytest.mark.parametrize("dynamo", [False, True])
def test_a_narrowing_dtype_argument_is_told_and_verified_by_rounding_first(tmp_path, dynamo):
    _, _, _, res, exp = _explained(tmp_path, "log_softmax16", dynamo)
    assert res.drift_origin is not None and res.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.verified and head.check == "dtype" and head.patch["rewrite"] == "round_first", head.message
    assert "log_softmax" in head.message and "float16" in head.message


@pytest.mark.drifts
@pytest.mark.parametrize("dynamo", [False, True])
def test_a_wrapping_integer_product_is_verified_and_repaired(tmp_path, dynamo):
    from drifttui.cli import main

    _, cfg, _, res, exp = _explained(tmp_path, "prod", dynamo)
    assert res.drift_origin is not None and res.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.verified and (head.check, head.kind) == ("op-compat", "runtime"), head.message
    assert head.patch["rewrite"] == "int_prod_exact" and "prod" in head.message
    fixed = tmp_path / "fixed.onnx"
    common = [f"{__file__}:prod", "--inputs", f"{__file__}:rows", "--samples", "2"]
    assert main(["repair", *common, "--onnx", cfg.onnx, "--out", str(fixed)]) == 0
    assert main(["check", *common, "--onnx", str(fixed)]) == 0


@pytest.mark.drifts
def test_a_wrong_shift_before_another_call_is_told_as_the_shift(tmp_path):
    _, _, _, res, exp = _explained(tmp_path, "shift", False)
    assert res.drift_origin is not None and res.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.verified and "in torch's bitwise_left_shift" in head.message, head.message


@pytest.mark.drifts
def test_an_integer_angle_is_verified_and_repaired_by_the_promoting_retrace(tmp_path):
    from drifttui.cli import main

    _, cfg, _, res, exp = _explained(tmp_path, "angle", True)
    assert res.drift_origin is not None and res.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.verified and head.patch.get("retrace") == "make_fx_core_aten", head.message
    assert "angle" in head.message
    fixed = tmp_path / "fixed.onnx"
    common = [f"{__file__}:angle", "--inputs", f"{__file__}:rows", "--samples", "2"]
    assert main(["repair", *common, "--onnx", cfg.onnx, "--out", str(fixed)]) == 0
    assert main(["check", *common, "--onnx", str(fixed)]) == 0


@pytest.mark.drifts
@pytest.mark.parametrize("form,op", [("any_", "any"), ("cosine", "cosine_similarity")])
def test_a_wrong_torchscript_lowering_is_told_as_its_call_not_one_next_to_it(tmp_path, form, op):
    _, _, _, res, exp = _explained(tmp_path, form, False)
    assert res.drift_origin is not None and res.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.verified and f"in torch's {op} (" in head.message, head.message
    assert head.check == "lowering" and head.patch["op"] == "reexport", head.message


@pytest.mark.drifts
def test_a_float16_cumsum_repaired_by_torchscript_opmath_passes_check(tmp_path):
    from drifttui.cli import main

    _, cfg, _, res, exp = _explained(tmp_path, "cumsum16", False)
    assert res.drift_origin is not None and res.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.verified and "cumsum" in head.message, head.message
    fixed = tmp_path / "fixed.onnx"
    common = [f"{__file__}:cumsum16", "--inputs", f"{__file__}:rows", "--samples", "2"]
    assert main(["repair", *common, "--onnx", cfg.onnx, "--out", str(fixed)]) == 0
    assert main(["check", *common, "--onnx", str(fixed)]) == 0
