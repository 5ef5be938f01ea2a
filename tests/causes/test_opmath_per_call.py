"""The opmath counterfactual's ``per_call`` form (propose/numerics/opmath.py) and the tolerance a patch is judged at
(``locate/case.judged``): a dynamo file records the FX call each node translates, so one torch op lowered to several
float16 nodes (``logcumsumexp`` as ReduceMax, Sub, Exp, CumSum, Log, Add) amid other float16 ops can be computed as
torch computes it: every node in float32, rounded where a call's nodes end.  ``per_op`` rounds inside the lowering
(its small exp terms lose their digits), ``whole`` not between the ops around it; a minGRU's log-space scan
(forms44l's ``mingru_half``) needs both.  Real ONNX Runtime against real torch."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import torch

from drifttui.core.explain.causes.locate.case_data import judged
from drifttui.core.explain.causes.propose.numerics.opmath import opmath_patches
from drifttui.core.onnx.edit.patches import apply
from tests.causes.exported_case import exported_case
from tests.causes.forms44l import MinGRU


def _run(model, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def test_a_float16_logcumsumexp_amid_other_ops_is_computed_as_torch_computes_it_per_call(tmp_path):
    torch.manual_seed(0)
    module = MinGRU(dtype=torch.float16).eval()
    with torch.no_grad():
        model, case, x, want = exported_case(module, torch.randn(2, 64, 32) * 3.0, "dynamo", tmp_path)
    errors = {p.spec["form"]: float(np.abs(_run(apply(model, p), x) - want).max()) for p in opmath_patches(case)}
    assert set(errors) == {"per_op", "grouped", "whole", "per_call"}, errors
    scale = float(np.abs(want).max())
    assert errors["per_call"] <= 4 * 2.0 ** -10 * scale, errors          # within the float16 budget
    assert all(errors["per_call"] * 10 < e for f, e in errors.items() if f != "per_call"), errors
    per_call = next(p for p in opmath_patches(case) if p.spec["form"] == "per_call")
    assert per_call.spec["rtol"] == 4 * 2.0 ** -10 and "aten.logcumsumexp.default as ReduceMax" in per_call.why
    # the call the story is about: conclude names its torch op (the last node of its lowering), and so does the fix
    last = next(n for n in reversed(model.graph.node) if n.op_type == "Add" and "logcumsumexp" in n.name)
    assert per_call.spec["decisive"] == last.name and "logcumsumexp(...)" in per_call.fix


def test_a_patch_is_judged_at_its_own_tolerance_only_where_it_names_a_wider_one(tmp_path):
    torch.manual_seed(0)
    module = MinGRU(dtype=torch.float16).eval()
    with torch.no_grad():
        _, case, _, _ = exported_case(module, torch.randn(2, 8, 32), "dynamo", tmp_path)
    forms = {p.spec["form"]: p for p in opmath_patches(case)}
    # per_op names the float16 budget too, held to its gain (locate/evaluate.judged_error; test_rounding_gain.py)
    assert judged(case, forms["per_op"]).rtol == 4 * 2.0 ** -10 and forms["per_op"].spec["gain"] == 16.0
    assert judged(case, forms["grouped"]) is case
    assert judged(case, forms["per_call"]).rtol == 4 * 2.0 ** -10 and judged(case, forms["per_call"]).atol == case.atol


def test_a_torchscript_file_records_no_call_so_it_gets_no_per_call_form(tmp_path):
    class HalfChain(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (torch.nn.functional.softplus(x.half() * 3.0) + 1.0).log().float()

    torch.manual_seed(0)
    _, case, _, _ = exported_case(HalfChain(), torch.randn(4, 32), "torchscript", tmp_path)
    assert "per_call" not in {p.spec["form"] for p in opmath_patches(case)}


def test_a_dynamo_file_with_no_call_lowered_to_several_nodes_gets_no_per_call_form(tmp_path):
    """per_call's story is a torch call lowered to several float16 nodes; where every call is one node (forms42i's
    ``half_scaled_topk``: scalars written in float16 among one-node ops) it is not offered: judged at the float16
    budget, it verified there for a Python scalar's story."""
    class OneNodeCalls(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = x.half()
            return ((h * 3.0 + 1.0) / 7.0).float()

    torch.manual_seed(0)
    _, case, _, _ = exported_case(OneNodeCalls(), torch.randn(4, 32), "dynamo", tmp_path)
    forms = {p.spec["form"] for p in opmath_patches(case)}
    assert forms and "per_call" not in forms, forms
