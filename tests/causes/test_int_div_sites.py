"""The floor division at every integer ``Div`` of the origin, as one patch (``propose/edits/int_sites.py``), told by
the torch op called (``locate/torch_op.py``), and the case judged on every child input the file gets wrong
(``locate/inner_values.py``).

Held-out batch 47D's ``grid_shift`` (multi-resolution grid hashing, ``coords >> level`` at three levels, each index
fed to its own embedding call): TorchScript lowers each ``>>`` to a truncating ``Div``.  Before, the case compared
the first wrong embedding index only, so the floor division at that one ``Div`` "verified" and ``repair`` wrote a
file that still drifted at the next level; no patch changed every ``Div`` at once."""
from __future__ import annotations

import pytest

from drifttui.core.onnx.edit.patches import Patch


def _div(node: str) -> Patch:
    return Patch({"op": "rewrite", "node": node, "rewrite": "floor_div", "to": 7}, "dtype",
                 f"Div {node} on integers truncates towards zero; torch's // (floor_divide) floors", "fix", "export",
                 module="body", nodes=[node])


def test_two_integer_divs_get_one_patch_at_both():
    from drifttui.core.explain.causes.propose.edits.int_sites import every_int_div

    cast = Patch({"op": "rewrite", "node": "/body/Cast", "rewrite": "floor_cast"}, "dtype", "w", "f", "export",
                 module="body", nodes=["/body/Cast"])
    out = every_int_div([cast, _div("/body/Div"), _div("/body/Div_1")])
    assert len(out) == 1 and out[0].spec["op"] == "sequence", out
    assert [p["node"] for p in out[0].spec["patches"]] == ["/body/Div", "/body/Div_1"]
    assert out[0].nodes == ["/body/Div", "/body/Div_1"] and "at all 2 integer Divs" in out[0].why
    assert every_int_div([cast, _div("/body/Div")]) == []


def test_the_sequence_is_told_by_the_shift_torch_called():
    from drifttui.core.explain.causes.locate.torch_op import name_torch_ops
    from drifttui.core.explain.causes.propose.edits.int_sites import every_int_div

    seq = every_int_div([_div("/body/Div"), _div("/body/Div_1")])
    told = name_torch_ops(seq, lambda prefix: ["call"] if prefix == "aten.__rshift__" else [])
    assert told[0].check == "lowering" and "torch called >> (bitwise_right_shift)" in told[0].why, told[0].why
    assert told[0].torch_op == ("torch.Tensor.__rshift__", "aten.__rshift__")


@pytest.mark.drifts
def test_the_case_compares_every_wrong_child_input(tmp_path):
    from tests.causes.form_suite import explained_forms

    class _Factory:
        def mktemp(self, name):
            d = tmp_path / name
            d.mkdir()
            return d

    _, _, _, result, exp = explained_forms(_Factory(), "forms47d", seed=7)("grid_shift", "torchscript")
    assert result.drift_origin.module == "body"
    assert len([v for v in exp.case.expected if v != exp.case.model.graph.output[0].name]) >= 2, exp.case.expected
    head = next(f for f in exp.findings if f.severity == "error")
    assert head.verified and head.patch["op"] == "sequence", (head.patch, head.message)
