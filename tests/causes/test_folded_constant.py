"""The dynamo exporter's ONNX optimizer folds a parameter-only subgraph with ONNX's reference implementation, in
the parameter's own type: a float16 parameter's ``F.normalize`` sums its squares in float16, and a row whose squares
pass 65504 folds to 0 (held-out batch X, session 37).  When the export without the optimizer verifies and the two
graphs compute with the same ops, ``folded_change`` tells the folded constant that differs from what ONNX Runtime
computes from the lowering's own nodes; before it, the story said only "an op taken for an identity, a constant
folded otherwise".  The bare graph's test is fast; the two on real exports sit behind ``drifts``."""
from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from drifttui.core.explain.causes.propose.reexport.optimizer_diff import folded_change, optimizer_change

_W = (np.random.default_rng(0).standard_normal((8, 32)) * 60).astype(np.float16)


def _graph(folded: bool):
    """x (4, 32) @ the rows of a float16 weight normalised, in float32: the lowering's nodes on the constant, or
    (``folded``) one constant holding them computed as the reference implementation does, in float16."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []
    if folded:
        with np.errstate(over="ignore"):          # float16 sums: inf past 65504
            norm = np.sqrt(np.sum(np.square(_W), axis=1, keepdims=True))
        inits.append(numpy_helper.from_array((_W / norm).astype(np.float32).T, "t"))
    else:
        inits += [numpy_helper.from_array(_W, "w"), numpy_helper.from_array(np.array([1], np.int64), "axes")]
        nodes += [helper.make_node("ReduceL2", ["w", "axes"], ["n"], keepdims=1),
                  helper.make_node("Div", ["w", "n"], ["wn"]), helper.make_node("Cast", ["wn"], ["wf"], to=1),
                  helper.make_node("Transpose", ["wf"], ["t"], perm=[1, 0])]
    nodes.append(helper.make_node("MatMul", ["x", "t"], ["y"]))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def test_a_constant_folded_in_float16_is_told_on_a_bare_graph():
    feeds = {"x": np.ones((4, 32), np.float32)}
    said = folded_change(_graph(True), _graph(False), feeds)
    assert said.startswith("the optimizer's constant folding computed t (ReduceL2, Div of constants)"), said
    assert "float16" in said, said


class Normed(nn.Module):
    """rows scored against a float16 parameter's normalised rows, in float32."""

    def __init__(self, scale: float) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.w = nn.Parameter((torch.randn(8, 32) * scale).half())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ F.normalize(self.w, dim=-1).float().t()


def _exports(tmp_path, scale: float) -> tuple:
    m, x = Normed(scale).eval(), torch.randn(4, 32)
    out = []
    for optimize in (True, False):
        path = tmp_path / f"m{scale}-{optimize}.onnx"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(m, (x,), str(path), dynamo=True, optimize=optimize)
        out.append(onnx.load(str(path)))
    feeds = {out[1].graph.input[0].name: x.numpy()}
    return out[0], out[1], feeds


@pytest.mark.drifts
@pytest.mark.parametrize("scale", [60.0])
def test_a_float16_norm_the_optimizer_folded_otherwise_is_told(tmp_path, scale):
    optimized, unoptimized, feeds = _exports(tmp_path, scale)
    assert optimizer_change(optimized, unoptimized) == ""          # the same ops: no rewrite to tell
    said = folded_change(optimized, unoptimized, feeds)
    assert said.startswith("the optimizer's constant folding computed "), said
    assert "ReduceL2" in said and "float16" in said and "values differ" in said, said


@pytest.mark.drifts
def test_a_fold_that_computes_what_onnx_runtime_computes_is_not_told(tmp_path):
    optimized, unoptimized, feeds = _exports(tmp_path, 1.0)        # norms near 6: no overflow in float16
    assert folded_change(optimized, unoptimized, feeds) == ""
