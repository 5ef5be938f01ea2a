"""The fused fast path's reading of a float attention mask (``rewrite: bool_mask``, fast_path.py) and the patch
sequence of two mechanisms (``op: sequence``, residual.py), on real exports run in ONNX Runtime."""
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from drifttui.core.onnx.edit.patches import Patch, PatchError, apply
from tests.engine.test_hooks_unseen import _Biased


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x})[0]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    m = _Biased().eval()
    x = torch.randn(2, 4, 16)
    path = tmp_path_factory.mktemp("bool_mask") / "layer.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, (x,), str(path), dynamo=False)
    with torch.no_grad():
        fast = m(x).numpy()
    return onnx.load(str(path)), x.numpy(), fast


def _mask_add(model: onnx.ModelProto) -> tuple[str, int]:
    made = {o: n for n in model.graph.node for o in n.output}
    add = made[next(n for n in model.graph.node if n.op_type == "Softmax").input[0]]
    k = 1 - [getattr(made.get(v), "op_type", None) for v in add.input].index("MatMul")
    return add.name, k


def test_the_file_read_as_the_fast_path_reads_a_float_mask_computes_what_torch_computes(exported):
    model, x, fast = exported
    assert np.abs(_run(model, x) - fast).max() > 0.05        # the file adds the bias, torch's fast path does not
    node, k = _mask_add(model)
    patched = apply(model, Patch({"op": "rewrite", "node": node, "rewrite": "bool_mask", "input": k}, "lowering", "", ""))
    assert np.abs(_run(patched, x) - fast).max() < 1e-5


def test_a_sequence_applies_its_edits_in_order_and_refuses_a_non_graph_edit(exported):
    model, x, fast = exported
    node, k = _mask_add(model)
    first = {"op": "rewrite", "node": node, "rewrite": "bool_mask", "input": k}
    # the second edit names a node only the first one made
    made = {n.name for n in apply(model, Patch(first, "lowering", "", "")).graph.node} - {n.name for n in model.graph.node}
    second = {"op": "rewrite", "node": next(n for n in made if n.endswith("where")), "rewrite": "nonfinite_guard"}
    with pytest.raises(PatchError):
        apply(model, Patch(second, "lowering", "", ""))
    both = apply(model, Patch({"op": "sequence", "patches": [first, second]}, "lowering", "", ""))
    assert sum(n.op_type == "Where" for n in both.graph.node) > sum(n.op_type == "Where" for n in model.graph.node) + 1
    with pytest.raises(PatchError):
        apply(model, Patch({"op": "sequence", "patches": [first, {"op": "reexport", "exporter": "dynamo"}]},
                           "lowering", "", ""))
