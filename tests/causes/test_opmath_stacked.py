"""Two float16 mechanisms stacked at one origin (causes/propose/numerics/opmath_stacked.py): a QAT quantiser
``floor(x / 0.05 + 0.5) * 0.05`` in float16 after ``x.half()`` and a Linear.  The file holds 0.05 as float16 (torch
divides by the float32 number) and ONNX Runtime drops the rounding of ``x.half()`` into the Gemm; the floor turns a
last-bit difference into a whole step.  Neither the scalar patch nor ``per_op`` alone removes it; their sequence
gives torch's values to the bit, with both exporters (forms45s ``floor_half``)."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch

from drifttui.core.explain.causes.propose.numerics.opmath import opmath_patches
from drifttui.core.explain.causes.propose.numerics.opmath_scalar import opmath_scalar_patches
from drifttui.core.explain.causes.propose.numerics.opmath_stacked import with_scalars
from drifttui.core.onnx.edit.patches import apply
from tests.causes.exported_case import exported_case
from tests.causes.forms45s import FloorQuant, QatBlock


def _run(model, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_the_scalar_and_the_dropped_rounding_are_put_back_together(exporter, tmp_path):
    torch.manual_seed(0)
    module = QatBlock(FloorQuant()).eval().requires_grad_(False)
    torch.manual_seed(5)
    model, case, x, want = exported_case(module, torch.randn(6, 32) * 3, exporter, tmp_path)
    assert np.abs(_run(model, x) - want).max() > 0.04           # a step of 0.05
    scalars = opmath_scalar_patches(case, lambda t: [[None, 0.05]] if t in ("aten.div", "aten.mul") else [])
    alone = opmath_patches(case)
    assert all(np.abs(_run(apply(model, p), x) - want).max() > 0.04 for p in [*scalars, *alone])
    chain = with_scalars(case, scalars, alone)[-1]
    assert chain.check == "dtype" and chain.spec["op"] == "sequence"
    assert "0.05" in chain.why and "drops" in chain.why
    assert np.array_equal(_run(apply(model, chain), x), want)


def test_a_zero_dim_float32_operand_is_read_unrounded(tmp_path):
    """forms45s ``lsq_amp``: an LSQ quantiser under autocast divides the float16 activation by its float32 learned
    step (a 0-dim tensor): torch divides by the float32 value, the TorchScript file by ``Cast(step, float16)``."""
    from drifttui.core.explain.causes.propose.numerics.wrapped_operand import with_wrapped
    from tests.causes.forms45s import LsqQuant

    torch.manual_seed(0)
    module = QatBlock(LsqQuant(8), "amp").eval().requires_grad_(False)
    torch.manual_seed(5)
    model, case, x, want = exported_case(module, torch.randn(6, 32) * 3, "torchscript", tmp_path)
    assert np.abs(_run(model, x) - want).max() > 0.04
    alone = opmath_patches(case)
    assert all(np.abs(_run(apply(model, p), x) - want).max() > 0.04 for p in alone)
    wrapped = with_wrapped(case, alone)[-1]
    assert wrapped.check == "dtype" and "0-dim float32" in wrapped.why and "Div" in wrapped.why
    assert np.array_equal(_run(apply(model, wrapped), x), want)
    from drifttui.core.explain.causes.propose.assemble import key
    assert key(wrapped.spec) != key(alone[0].spec)          # not deduplicated with per_op among the candidates


def test_a_learned_step_folded_into_a_float16_constant_is_read_at_float32(tmp_path):
    """forms45s ``lsq_amp``, dynamo: the exporter folds ``step.abs().clamp_min(1e-5)`` (a float32 parameter) into a
    float16 initializer of the Div and Mul; torch's number is the parameter (``held_numbers``), stacked with the
    rounding ONNX Runtime drops."""
    from drifttui.core.explain.causes.propose.numerics.opmath_scalar import held_numbers
    from drifttui.core.explain.causes.propose.numerics.opmath_stacked import stacked_opmath
    from tests.causes.forms45s import LsqQuant

    torch.manual_seed(0)
    module = QatBlock(LsqQuant(8), "amp").eval().requires_grad_(False)
    torch.manual_seed(5)
    model, case, x, want = exported_case(module, torch.randn(6, 32) * 3, "dynamo", tmp_path)
    assert np.abs(_run(model, x) - want).max() > 0.04
    assert opmath_scalar_patches(case, lambda t: []) == []           # no Python number in torch's calls
    scalars = opmath_scalar_patches(case, lambda t: [], held_numbers(module))
    chain = stacked_opmath(case, scalars, opmath_patches(case))[-1]
    assert chain.spec["op"] == "sequence" and "0.05" in chain.why
    assert np.array_equal(_run(apply(model, chain), x), want)
    # the number is the module's parameter, said as such (not as a Python scalar)
    said = next(p.why for p in scalars if p.spec["op"] == "rewrite")
    assert "torch's float32 parameter " in said and "Python scalar" not in said, said
