"""Each drift check fires on a model that has the drift and stays quiet on the clean model."""
from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.base.dtypes import rounding_of
from drifttui.core.explain.checks import dtype, dynamic_axes, fusion, opcompat
from drifttui.core.onnx.graph import build_index

DRIFTS = {  # variant -> (check class, module the finding must name)
    "eps": ("normalization", "norm.ln"),
    "resize": ("interpolation", "up"),
    "bf16": ("dtype", "conv2"),
    "avgpool": ("padding", "pool"),
    "gamma": ("custom-module", "ls"),
    "padmode": ("padding", "pad"),
    "rmseps": ("normalization", "rms"),
}


def errors(result):
    return [f for f in result.findings if f.severity == "error"]


def test_clean_model_has_no_error_or_warning_findings(diagnosed):
    r = diagnosed("clean")
    assert errors(r) == []
    warnings = [f for f in r.findings if f.severity == "warning"]
    # the only acceptable warnings: the plain tensor attribute and its shape-derived int
    assert {f.check for f in warnings} <= {"custom-module"}, warnings
    checks = {f.check for f in r.findings}
    assert "versions" in checks and "dynamic-axes" in checks


def test_second_clean_model_has_no_findings_above_info(diagnosed):
    r = diagnosed("clean2")
    assert [f for f in r.findings if f.severity != "info"] == []
    # Linear weights are matched through their transposed initializer: nothing reported missing
    assert not any("no initializer" in f.message for f in r.findings)


@pytest.mark.parametrize("variant", sorted(DRIFTS))
def test_drift_check_names_module_and_class(diagnosed, variant):
    r = diagnosed(variant)
    check, module = DRIFTS[variant]
    errs = errors(r)
    assert errs, r.findings
    first = errs[0]
    assert (first.check, first.module) == (check, module), errs
    assert first.onnx_nodes and first.fix
    # one cause, one class: no error of another class
    assert {f.check for f in errs} == {check}


def test_findings_serialise(diagnosed):
    import json

    from drifttui.core.result import Result

    r = diagnosed("resize")
    d = r.to_dict()
    json.dumps(d, allow_nan=False)
    back = Result.from_dict(json.loads(json.dumps(d)))
    assert back.findings == r.findings and back.steps == r.steps
    for f in d["findings"]:
        assert set(f) == {"check", "severity", "module", "onnx_nodes", "message", "evidence", "fix",
                          "verified", "patch", "local_before", "local_after", "kind", "torch_op",
                          "aten_op"}


def _ctx(proto, sample=None, model=None):
    index = build_index(proto)
    return SimpleNamespace(index=index, model=model, node_module=lambda ni: None,
                           sample=lambda i: sample or ((torch.zeros(2, 4),), {}))


def test_dtype_cast_and_integer_div():
    g = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16, name="to_half"),
         helper.make_node("Div", ["i", "j"], ["q"], name="int_div")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4]),
              helper.make_tensor_value_info("i", TensorProto.INT64, [2]),
              helper.make_tensor_value_info("j", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("h", TensorProto.FLOAT16, [2, 4]),
         helper.make_tensor_value_info("q", TensorProto.INT64, [2])])
    found = dtype.check(_ctx(helper.make_model(g)))
    assert {f.onnx_nodes[0] for f in found} == {"to_half", "int_div"}
    assert all(f.check == "dtype" and f.severity == "warning" for f in found)


def _int_div_graph(nodes, inputs, out):
    return helper.make_model(helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, t, shape) for n, t, shape in inputs],
        [helper.make_tensor_value_info(out, TensorProto.INT64, None)],
        [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in
         (("zero", 0), ("one", 1), ("three", 3), ("four", 4), ("last", [-1]))]))


def test_no_integer_div_warning_where_truncation_is_floor():
    """A chunk's split size ``(Shape[-1] + 3) / 4`` (sizes are never negative) and TorchScript's integer floor
    division (the file corrects the truncated quotient: ``Where(Xor(a < 0, b < 0) And Mod(a, b) != 0, q - 1, q)``)
    truncate exactly as torch floors: no warning; a plain Div of a signed input still warns, and so does one a
    ``Where`` on the same Mod merely selects."""
    chunk = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "last"], ["d"]),
             helper.make_node("Add", ["d", "three"], ["d3"]), helper.make_node("Div", ["d3", "four"], ["size"],
                                                                                 name="chunk_div")]
    floor = [helper.make_node("Div", ["a", "three"], ["q"], name="floor_div"),
             helper.make_node("Less", ["a", "zero"], ["an"]), helper.make_node("Less", ["three", "zero"], ["bn"]),
             helper.make_node("Xor", ["an", "bn"], ["neg"]), helper.make_node("Mod", ["a", "three"], ["r"]),
             helper.make_node("Equal", ["r", "zero"], ["whole"]), helper.make_node("Not", ["whole"], ["part"]),
             helper.make_node("And", ["neg", "part"], ["fix"]), helper.make_node("Sub", ["q", "one"], ["q1"]),
             helper.make_node("Where", ["fix", "q1", "q"], ["fl"]), helper.make_node("Div", ["a", "four"], ["t"],
                                                                                      name="plain_div"),
             helper.make_node("Add", ["fl", "t"], ["y0"]),
             # a Where on a Mod of the dividend that only selects the plain quotient: not a correction
             helper.make_node("Div", ["a", "three"], ["p"], name="selected_div"),
             helper.make_node("Where", ["whole", "p", "a"], ["sel"]), helper.make_node("Add", ["y0", "sel"], ["y"])]
    found = dtype.check(_ctx(_int_div_graph(
        chunk + floor + [helper.make_node("Concat", ["size", "y"], ["out"], axis=0)],
        [("x", TensorProto.FLOAT, [2, 5]), ("a", TensorProto.INT64, [1])], "out")))
    assert [f.onnx_nodes for f in found] == [["plain_div"], ["selected_div"]], found


class _Divisions(torch.nn.Module):
    def forward(self, x, a):
        parts = x.chunk(4, -1)                                   # split sizes: Shape / 4
        floor = torch.div(a - 10, 3, rounding_mode="floor")      # corrected to the floor by the file
        return parts[0].sum() + floor.float().sum() + (a // 7).float().sum()   # TorchScript: a plain Div


def test_torchscript_divisions_warn_only_where_truncation_differs(tmp_path):
    """The same three divisions in a real TorchScript export: only ``a // 7`` (a truncating Div, negative ``a``
    differ) is warned about."""
    import onnx

    path = tmp_path / "div.onnx"
    args = (torch.randn(2, 10), torch.tensor([-7, 3, 20]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(_Divisions(), args, str(path), dynamo=False)
    found = [f for f in dtype.check(_ctx(onnx.load(str(path)))) if "integer Div" in f.message]
    assert len(found) == 1, found
    proto = onnx.load(str(path))
    divs = {n.name: list(n.input) for n in proto.graph.node if n.op_type == "Div"}
    assert len(divs) == 3 and found[0].onnx_nodes[0] in divs


def test_no_integer_div_warning_for_a_shift_of_non_negative_codes():
    """TorchScript lowers ``codes >> k`` as ``codes / Cast(Pow(2, k))``: a power of a non-negative base (and an even
    power of anything) is never negative, so a Div of ``Abs``-derived codes by it truncates as torch floors: no
    warning; an odd power of a signed value may be negative, and that Div still warns."""
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    k, e3 = numpy_helper.from_array(np.array(3.0, np.float32), "k"), numpy_helper.from_array(np.array(3.0, np.float32), "e3")
    nodes = [helper.make_node("Abs", ["x"], ["ax"]), helper.make_node("Cast", ["ax"], ["codes"], to=TensorProto.INT64),
             helper.make_node("Pow", ["two", "k"], ["p"]), helper.make_node("Cast", ["p"], ["pi"], to=TensorProto.INT64),
             helper.make_node("Div", ["codes", "pi"], ["shifted"], name="shift_div"),
             helper.make_node("Pow", ["x", "two"], ["sq"]), helper.make_node("Cast", ["sq"], ["sqi"], to=TensorProto.INT64),
             helper.make_node("Div", ["sqi", "pi"], ["sq_div"], name="square_div"),
             helper.make_node("Pow", ["x", "e3"], ["cube"]),
             helper.make_node("Cast", ["cube"], ["cubei"], to=TensorProto.INT64),
             helper.make_node("Div", ["cubei", "pi"], ["cube_div"], name="cube_div"),
             helper.make_node("Concat", ["shifted", "sq_div", "cube_div"], ["out"], axis=0)]
    model = _int_div_graph(nodes, [("x", TensorProto.FLOAT, [4])], "out")
    model.graph.initializer.extend([two, k, e3])
    found = [f for f in dtype.check(_ctx(model)) if "integer Div" in f.message]
    assert [f.onnx_nodes for f in found] == [["cube_div"]], found


class _Shifts(torch.nn.Module):
    def forward(self, x):
        codes = (x.abs() * 1000).long()
        return ((codes >> 3) + ((x * 1000).long() >> 2)).float()


def test_torchscript_shifts_warn_only_on_signed_values(tmp_path):
    """A real TorchScript export of ``codes >> 3`` (codes from ``abs``) and ``signed >> 2``: only the signed
    shift's Div (a truncation where torch's arithmetic shift floors) is warned about."""
    import onnx

    path = tmp_path / "shift.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(_Shifts(), (torch.randn(2, 5),), str(path), dynamo=False)
    proto = onnx.load(str(path))
    divs = [n.name for n in proto.graph.node if n.op_type == "Div"]
    found = [f for f in dtype.check(_ctx(proto)) if "integer Div" in f.message]
    assert len(divs) == 2 and len(found) == 1, (divs, found)


def test_no_integer_div_warning_for_the_row_and_column_of_topk_indices():
    """``torch.unravel_index`` of ``topk`` indices (DETR-style post-processing) divides the indices: TopK's second
    output is never negative, so the Div truncates as torch floors: no warning; a Div of TopK's values (cast to
    int64, any sign) still warns."""
    nodes = [helper.make_node("TopK", ["x", "kk"], ["vals", "idx"], axis=-1),
             helper.make_node("Div", ["idx", "four"], ["row"], name="index_div"),
             helper.make_node("Cast", ["vals"], ["vi"], to=TensorProto.INT64),
             helper.make_node("Div", ["vi", "four"], ["vq"], name="value_div"),
             helper.make_node("Concat", ["row", "vq"], ["out"], axis=0)]
    model = _int_div_graph(nodes, [("x", TensorProto.FLOAT, [8])], "out")
    model.graph.initializer.append(numpy_helper.from_array(np.array([3], np.int64), "kk"))
    found = [f for f in dtype.check(_ctx(model)) if "integer Div" in f.message]
    assert [f.onnx_nodes for f in found] == [["value_div"]], found


class _TopkCells(torch.nn.Module):
    def forward(self, x):
        row, col = torch.unravel_index(x.flatten().topk(5).indices, (6, 8))
        return (row * 8 + col).float()


def test_torchscript_unravel_index_of_topk_draws_no_integer_div_warning(tmp_path):
    import onnx

    path = tmp_path / "unravel.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(_TopkCells(), (torch.randn(6, 8),), str(path), dynamo=False)
    proto = onnx.load(str(path))
    assert any(n.op_type == "Div" for n in proto.graph.node)
    assert [f for f in dtype.check(_ctx(proto)) if "integer Div" in f.message] == []


def test_rounded_kind():
    rng = np.random.default_rng(0)
    w = rng.standard_normal(256).astype(np.float32)
    assert rounding_of(w) is None
    assert rounding_of(w.astype(np.float16).astype(np.float32)) == "float16"
    assert rounding_of((w.view(np.uint32) & 0xFFFF0000).view(np.float32)) == "bfloat16"
    assert rounding_of(np.full(64, 0.5, np.float32)) is None
    assert rounding_of(np.arange(64, dtype=np.float32)) is None


def _reshape_graph(batch):
    shape = numpy_helper.from_array(np.array([3, 8], np.int64), "target")
    g = helper.make_graph([helper.make_node("Reshape", ["x", "target"], ["y"], name="baked")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 8])], [shape])
    return helper.make_model(g)


def test_dynamic_axes_baked_reshape():
    sample = ((torch.zeros(3, 2, 4),), {})
    found = dynamic_axes.check(_ctx(_reshape_graph("N"), sample))
    assert [(f.severity, f.onnx_nodes) for f in found] == [("warning", ["baked"])]
    static = dynamic_axes.check(_ctx(_reshape_graph(3), sample))
    assert [f.severity for f in static] == ["info"]
    wrong = dynamic_axes.check(_ctx(_reshape_graph(5), sample))
    assert "error" in {f.severity for f in wrong}


def test_fusion_from_sweep():
    def sweep(all_fails):
        levels = {lv: {"final_max_abs": 1e-6, "final_fails": False, "new_op_types": []}
                  for lv in ("disable", "basic", "extended")}
        levels["all"] = {"final_max_abs": 3e-2 if all_fails else 1e-6, "final_fails": all_fails,
                         "new_op_types": ["com.microsoft.FusedConv"]}
        return {"levels": levels, "fused_op_types": ["com.microsoft.FusedConv"], "origin_error_changes_at": []}

    bad = fusion.from_sweep(sweep(True), None, [])
    assert [(f.check, f.severity) for f in bad] == [("fusion", "warning")]
    assert "FusedConv" in bad[0].message
    good = fusion.from_sweep(sweep(False), None, [])
    assert all(f.severity == "info" for f in good)


def test_opcompat_flags_custom_domain_and_risky_ops():
    g = helper.make_graph(
        [helper.make_node("GridSample", ["x", "grid"], ["y"], name="gs"),
         helper.make_node("FusedGelu", ["y"], ["z"], domain="com.example", name="custom")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4]),
              helper.make_tensor_value_info("grid", TensorProto.FLOAT, [1, 4, 4, 2])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 1, 4, 4])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid("com.example", 1)])
    ctx = _ctx(model)
    found = opcompat.check(ctx)
    nodes = {n for f in found for n in f.onnx_nodes}
    assert {"gs", "custom"} <= nodes
    assert all(f.check == "op-compat" for f in found)
