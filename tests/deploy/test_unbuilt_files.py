"""Deployed files that nobody here built (issue 33): no crash, no false alarm.

The fast tests use the suite's own small models through the real tools; the real architectures
(timm's ConvNeXt, transformers' BERT: tests/archs/zoo.py, seeded random weights) are ``deploy``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tests.deploy import processed as P
from tests.deploy.conftest import needs
from drifttui.core.result import DRIFT, OK

ZOO = Path(__file__).resolve().parent.parent / "archs" / "zoo.py"


def constantize(path: Path, dst: Path) -> Path:
    """Every float initializer of 2 elements or more as a Constant node, as onnxsim leaves the weights
    it folds (`_v_516` in a TorchScript ConvNeXt): ONNX Runtime runs the file the same."""
    import onnx

    model = onnx.load(str(path))
    keep, nodes = [], []
    for t in model.graph.initializer:
        if t.data_type == onnx.TensorProto.FLOAT and int(np.prod(t.dims)) >= 2:
            nodes.append(onnx.helper.make_node("Constant", [], [t.name], value=t, name=f"const_{t.name}"))
        else:
            keep.append(t)
    del model.graph.initializer[:]
    model.graph.initializer.extend(keep)
    rest = list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(nodes + rest)
    onnx.save(model, str(dst))
    return dst


def scale_constant(path: Path, target: np.ndarray, factor: float, dst: Path) -> Path:
    """The Constant node whose tensor has ``target``'s shape, times ``factor``."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    hits = [a for n in model.graph.node if n.op_type == "Constant" for a in n.attribute
            if a.name == "value" and tuple(a.t.dims) == target.shape]
    assert len(hits) == 1
    arr = numpy_helper.to_array(hits[0].t)
    hits[0].t.CopyFrom(numpy_helper.from_array((arr * factor).astype(arr.dtype), hits[0].t.name))
    onnx.save(model, str(dst))
    return dst


def _layer(result, module):
    return next(l for l in result.layers if l.module == module)


def test_weights_left_as_constant_nodes_are_weights(tmp_path):
    """onnxsim's folded weights as Constant nodes: no KeyError in the anchors (exit 3 before), the
    file is mapped as the initializer form is, its weights are in the inspector, and a drifted
    Constant weight is named at its module."""
    needs("onnxsim")
    src = P.export("cnn", "dynamo", tmp_path)
    dep = constantize(P.onnxsim(src, tmp_path / "sim.onnx"), tmp_path / "const.onnx")
    result = P.check("cnn", dep, samples=2)
    assert result.verdict == OK, (result.drift_origin, result.notes)
    assert P.covered(result) >= 0.95 * P.covered(P.check("cnn", src, samples=1))
    convs = [l for l in result.layers if l.module in ("b1.bn", "b2.bn")]      # the folds: Conv
    assert convs and all(any(i.dtype == "float32" and len(i.dims) == 4 and i.std > 0 for i in l.initializers) for l in convs)
    w = P.cnn().b2.conv.weight.detach().numpy()
    drifted = P.check("cnn", scale_constant(dep, w, 1.05, tmp_path / "drift.onnx"), samples=2)
    # onnxsim folds b2.bn into b2.conv's Conv: the fold's value is b2.bn's (b2.conv is fused into it)
    assert _layer(result, "b2.conv").status == "fused"
    assert drifted.verdict == DRIFT and drifted.drift_origin.module == "b2.bn", drifted.drift_origin


def _zoo_check(fn: str, inputs: str, path: Path, samples: int = 2):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    return run_once(Config(model=f"{ZOO}:{fn}", onnx=str(path), inputs=f"{ZOO}:{inputs}", samples=samples)).result


def _zoo_export(fn: str, inputs: str, exporter: str, folder: Path) -> Path:
    import onnx

    sys.path.insert(0, str(ZOO.parent))
    import zoo  # noqa: E402
    from drifttui.core.model.export import export_model

    x = getattr(zoo, inputs)()
    args, kwargs = ((), x) if isinstance(x, dict) else ((x,), {})
    path = export_model(getattr(zoo, fn)(), args, kwargs, exporter, folder, name=f"{fn}-{exporter}.onnx")
    out = folder / f"{fn}-{exporter}-embedded.onnx"
    onnx.save(onnx.load(str(path)), str(out))
    return out


def scale_by_content(path: Path, target: np.ndarray, factor: float, dst: Path) -> Path:
    """The weight (initializer or Constant node) whose every output row points ``target``'s way
    (equal, or scaled per row as a tool folds a layer scale into it) times ``factor``."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    tensors = list(model.graph.initializer) + [a.t for n in model.graph.node if n.op_type == "Constant"
                                               for a in n.attribute if a.name == "value"]

    def rows_cos(t) -> float:
        a = numpy_helper.to_array(t).astype(np.float64)
        if a.shape != target.shape:
            return 0.0
        x, y = a.reshape(a.shape[0], -1), target.astype(np.float64).reshape(a.shape[0], -1)
        return min(abs(p @ q) / (np.linalg.norm(p) * np.linalg.norm(q) + 1e-30) for p, q in zip(x, y))

    best = max(tensors, key=rows_cos)
    assert rows_cos(best) > 0.999, "the weight is not in the file"
    a = numpy_helper.to_array(best)
    best.CopyFrom(numpy_helper.from_array((a * factor).astype(a.dtype), best.name))
    onnx.save(model, str(dst))
    return dst


def _named_at(result, module: str) -> bool:
    """The drift's origin is ``module``, or the call whose node computes it now (fused into it)."""
    from tests.deploy.test_processed_matrix import _same_origin

    return result.verdict == DRIFT and _same_origin(result, module)


@pytest.mark.parametrize("exporter", ["torchscript", pytest.param("dynamo", marks=pytest.mark.deploy)])
def test_factor_folded_into_the_next_weight_is_fused_not_a_drift(tmp_path, exporter):
    """onnxsim moves a TorchScript GELU's final ``* 0.5`` and a layer scale ``gamma`` into the next 1x1
    Conv's weight: the file holds 2 x the GELU's value and gamma x the Conv's, never the modules' own.
    Compared raw, the GELU was a false DRIFT (the closest value, x / sqrt 2, 56% off).  Both calls are
    fused into the unit whose value the Conv outputs, as a folded BatchNorm is; a weight drift after
    onnxsim is still named: in the folded weight at the unit, in the first Conv at that Conv."""
    needs("onnxsim")
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config
    from tests.deploy import unbuilt_models as U

    def check(path, samples=2):
        return run_once(Config(model=U.spec("layer_scale_cnn"), onnx=str(path), inputs="shape:1x3x16x16",
                               samples=samples)).result

    src = U.export("layer_scale_cnn", exporter, tmp_path)
    dep = P.onnxsim(src, tmp_path / "sim.onnx")
    result = check(dep)
    assert result.verdict == OK, (result.drift_origin, [(l.module, l.status, l.note) for l in result.layers])
    assert P.covered(result) >= P.covered(check(src, samples=1))
    assert _layer(result, "pw").status == "fused"
    if exporter == "torchscript":          # the dynamo export's Gelu op has no factor to move
        act = _layer(result, "act")
        assert act.status == "fused" and "Conv node" in act.note, (act.status, act.note)
        assert any("constant factor went into the next node's weight" in n for n in result.notes)
    model = U.layer_scale_cnn()
    folded = check(scale_by_content(dep, model.pw.weight.detach().numpy(), 1.05, tmp_path / "d1.onnx"))
    assert _named_at(folded, "pw"), folded.drift_origin
    first = check(scale_by_content(dep, model.conv.weight.detach().numpy(), 1.05, tmp_path / "d2.onnx"))
    assert _named_at(first, "conv"), first.drift_origin


@pytest.mark.deploy
def test_convnext_torchscript_onnxsim_constant_weights(tmp_path):
    """The real case: onnxsim folds a TorchScript ConvNeXt's GELU factor and layer scale into each
    fc2's weight, left as a Constant node.  The file is clean (a false DRIFT at every mlp.act before),
    maps as the raw export does, and a weight drift after onnxsim is named at its module."""
    needs("onnxsim")
    import onnx

    src = _zoo_export("convnext_atto", "img32", "torchscript", tmp_path)
    dep = P.onnxsim(src, tmp_path / "sim.onnx")
    assert any(n.op_type == "Constant" and n.attribute[0].t.dims and len(n.attribute[0].t.dims) == 4
               for n in onnx.load(str(dep)).graph.node), "onnxsim no longer leaves Constant weights"
    result = _zoo_check("convnext_atto", "img32", dep)
    assert result.verdict == OK, (result.drift_origin, result.notes)
    assert P.covered(result) >= 0.95 * P.covered(_zoo_check("convnext_atto", "img32", src, samples=1))
    assert _layer(result, "stages.2.blocks.3.mlp.act").status == "fused"
    sys.path.insert(0, str(ZOO.parent))
    import zoo  # noqa: E402

    w = zoo.convnext_atto().stages[1].blocks[0].mlp.fc1.weight.detach().numpy()
    drifted = _zoo_check("convnext_atto", "img32", scale_by_content(dep, w, 1.05, tmp_path / "d.onnx"))
    assert _named_at(drifted, "stages.1.blocks.0.mlp.fc1"), drifted.drift_origin


@pytest.mark.deploy
@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_convnext_trained_layer_scales_folded_by_onnxsim(tmp_path, exporter):
    """A ConvNeXt with a trained model's layer scales (per channel, not timm's 1e-6 everywhere): the
    block's output carries fc2's weight, so a drift in the folded weight is seen, at the block that
    computes fc2 now; a drift upstream of the fold is named at its own module."""
    needs("onnxsim")
    sys.path.insert(0, str(ZOO.parent))
    import zoo  # noqa: E402

    src = _zoo_export("convnext_atto_ls", "img32", exporter, tmp_path)
    dep = P.onnxsim(src, tmp_path / "sim.onnx")
    result = _zoo_check("convnext_atto_ls", "img32", dep)
    assert result.verdict == OK, (result.drift_origin, result.notes)
    assert P.covered(result) >= 0.95 * P.covered(_zoo_check("convnext_atto_ls", "img32", src, samples=1))
    blocks = zoo.convnext_atto_ls().stages
    for block, module, name in ((blocks[1].blocks[0], "mlp.fc2", "stages.1.blocks.0.mlp.fc2"),
                                (blocks[2].blocks[3], "mlp.fc1", "stages.2.blocks.3.mlp.fc1")):
        w = block.get_submodule(module).weight.detach().numpy()
        drifted = _zoo_check("convnext_atto_ls", "img32", scale_by_content(dep, w, 1.05, tmp_path / "d.onnx"))
        assert _named_at(drifted, name), (name, drifted.drift_origin)


@pytest.mark.deploy
def test_ort_basic_file_refused_at_all_runs_at_the_level_it_loads(tmp_path):
    """ORT's own basic-level file of a dynamo BERT: should this onnxruntime refuse it at ENABLE_ALL, the output
    pass's default level, the pass runs at the highest level ORT accepts and the report says so (exit 3 before);
    onnxruntime 1.32 loads it, and the output pass runs it at ``all``."""
    import onnxruntime as ort

    src = _zoo_export("bert", "tokens", "dynamo", tmp_path)
    dep = P.ort_offline("basic")(src, tmp_path / "basic.onnx")
    try:
        ort.InferenceSession(str(dep), providers=["CPUExecutionProvider"])
        refused = False
    except Exception:          # noqa: BLE001 - what this onnxruntime does with the file
        refused = True
    result = _zoo_check("bert", "tokens", dep)
    assert result.verdict == OK, (result.drift_origin, result.notes)
    if refused:
        assert result.environment.ort_output_opt_level in ("basic", "extended")
        assert any(n.startswith("the output pass ran at ORT level") for n in result.notes)
    else:
        assert result.environment.ort_output_opt_level == "all"


_IDS_BERT = """
import torch
from transformers import BertConfig, BertModel


class Ids(torch.nn.Module):      # a BERT fed token ids only (no attention mask input)
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.m = BertModel(BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                      intermediate_size=64, max_position_embeddings=64))

    def forward(self, ids):
        return self.m(input_ids=ids).last_hidden_state


def model():
    return Ids().eval()


def ids():
    return torch.randint(0, 100, (1, 16), generator=torch.Generator().manual_seed(0))
"""


@pytest.mark.deploy
def test_output_pass_runs_the_file_as_given_not_drifttuis_views(tmp_path):
    """ORT's quantization pre-processing (``quant_pre_process``: symbolic shapes, basic optimisation) of a dynamo
    BERT fed token ids only: its Linears are Reshape, Gemm, Reshape, read through drifttui's Reshape views to the
    module's shape.  With the views in, ONNX Runtime refused the graph at ENABLE_ALL ("Attempt to replace the
    existing tensor"), so the output pass ran at basic and the note said ORT refuses *this file* at all: false, ORT
    loads the file there.  The output pass runs the file as given, at all."""
    import onnxruntime as ort
    from onnxruntime.quantization import quant_pre_process

    from drifttui.core.model.export import export_model
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    spec = tmp_path / "ids_bert.py"
    spec.write_text(_IDS_BERT)
    sys.path.insert(0, str(tmp_path))
    try:
        import ids_bert  # noqa: E402
    finally:
        sys.path.remove(str(tmp_path))
    src = export_model(ids_bert.model(), (ids_bert.ids(),), {}, "dynamo", tmp_path, name="bert.onnx")
    dep = tmp_path / "pre.onnx"
    quant_pre_process(str(src), str(dep))
    ort.InferenceSession(str(dep), providers=["CPUExecutionProvider"])      # ORT loads the file at all
    result = run_once(Config(model=f"{spec}:model", onnx=str(dep), inputs=f"{spec}:ids", samples=2)).result
    assert result.verdict == OK, (result.drift_origin, result.notes)
    assert result.environment.ort_output_opt_level == "all", result.notes
    assert not any(n.startswith("the output pass ran at ORT level") for n in result.notes), result.notes
    assert P.covered(result) >= 30, P.covered(result)
    assert any("processed by ONNX Runtime's quantization pre-processing" in n for n in result.notes), result.notes


@pytest.mark.parametrize("exporter", ["torchscript", pytest.param("dynamo", marks=pytest.mark.deploy)])
def test_gelu_inside_an_nchwc_region_is_read_back_not_compared_raw(tmp_path, exporter):
    """ORT ENABLE_ALL leaves a Gelu (default or com.microsoft domain) between two NCHWc Convs: its
    value is stored blocked.  It was compared raw (a false DRIFT on a clean ConvNeXt); it is read
    through ReorderOutput with the region's channel count, and a weight drift after it keeps its origin."""
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config
    from tests.deploy import unbuilt_models as U

    def check(path):
        return run_once(Config(model=U.spec("gelu_cnn"), onnx=str(path), inputs="shape:1x3x16x16", samples=2)).result

    src = U.export("gelu_cnn", exporter, tmp_path)
    dep = P.ort_offline("all")(src, tmp_path / "all.onnx")
    result = check(dep)
    assert result.verdict == OK, (result.drift_origin, result.notes)
    for module in ("act", "act2"):
        layer = _layer(result, module)
        assert layer.status == OK and layer.metrics is not None, (module, layer.status, layer.note)
        assert layer.onnx_values[0].endswith("::nchw")        # read through ReorderOutput, never raw
    w = U.gelu_cnn().head.weight.detach().numpy()
    drifted = check(P.scale_weight(dep, w, 1.05, tmp_path / "drift.onnx"))
    assert drifted.verdict == DRIFT and drifted.drift_origin.module == "head", drifted.drift_origin


def test_float16_inputs_through_a_reference_export(tmp_path):
    """A float16 file without keep_io_types that a tool then processed (onnxsim: mapped through
    drifttui's own float32 export): the reference export is fed the same rounded sample in float32.
    Before: "the graph expects 1x3x32x32 float32, the inputs give ... float16", exit 2."""
    needs("onnxsim")
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    src = P.export("cnn", "dynamo", tmp_path)
    half = convert_float_to_float16(onnx.load(str(src)), keep_io_types=False)
    assert half.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT16
    onnx.save(half, str(tmp_path / "half.onnx"))
    dep = P.onnxsim(tmp_path / "half.onnx", tmp_path / "half-sim.onnx")
    result = P.check("cnn", dep, samples=2)
    assert result.verdict == OK, (result.drift_origin, result.notes)
    assert any("mapped through a reference export" in n for n in result.notes)
    assert any("float16 inputs" in n for n in result.notes)


@pytest.mark.deploy
def test_convnext_ort_all_blocked_weights_and_channels_last_twin(tmp_path):
    """ORT ENABLE_ALL on a TorchScript ConvNeXt: the Conv weights are stored blocked (ReorderWeights),
    so no weight was anchored ("1 equal") and fc2 (its layer scale folded in by ConvMulFusion, the
    residual Add fused as the NCHWc Conv's Sum) was paired with drifttui's NCHW view of the block's
    value, whose channels-last ReorderOutput the block itself had: a false DRIFT.  The weights are
    read back in OIHW to anchor, the view is the same tensor as the block's value, and a weight drift
    after ORT is named (trained layer scales, so fc2's weight shows at the block's output)."""
    sys.path.insert(0, str(ZOO.parent))
    import zoo  # noqa: E402
    from tests.deploy import arch_drifts as D

    src = _zoo_export("convnext_atto", "img32", "torchscript", tmp_path)
    dep = P.ort_offline("all")(src, tmp_path / "all.onnx")
    result = _zoo_check("convnext_atto", "img32", dep)
    assert result.verdict == OK, (result.drift_origin, result.notes)
    assert P.covered(result) >= 0.95 * P.covered(_zoo_check("convnext_atto", "img32", src, samples=1))
    assert any("29 equal" in n for n in result.notes), result.notes
    ls = P.ort_offline("all")(_zoo_export("convnext_atto_ls", "img32", "torchscript", tmp_path), tmp_path / "ls.onnx")
    state = zoo.convnext_atto_ls().state_dict()
    for name in ("stages.2.blocks.3.mlp.fc1", "stages.1.blocks.0.mlp.fc2"):
        drifted = _zoo_check("convnext_atto_ls", "img32", D.weight(ls, state[f"{name}.weight"].numpy(), tmp_path / "d.onnx"))
        assert _named_at(drifted, name), (name, drifted.drift_origin)


def test_functions_inlined_by_ort_are_mapped_through_a_reference(tmp_path):
    """ORT ENABLE_BASIC inlines a TorchScript file's HardSwish into nameless HardSigmoid and Mul nodes:
    mapped by the exporter's scopes, the conv adopted the HardSigmoid and was paired with its value (a
    false DRIFT at every MobileNetV3 conv, 77% of the raw export's calls).  A TorchScript file with
    nameless nodes was processed: it is mapped through a reference export."""
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config
    from tests.deploy import unbuilt_models as U

    def check(path, samples=2):
        return run_once(Config(model=U.spec("hardswish_cnn"), onnx=str(path), inputs="shape:1x3x16x16",
                               samples=samples)).result

    import onnx

    src = U.export("hardswish_cnn", "torchscript", tmp_path)
    dep = P.ort_offline("basic")(src, tmp_path / "basic.onnx")
    if all(n.name for n in onnx.load(str(dep)).graph.node if n.op_type != "Constant"):
        pytest.skip("this onnxruntime no longer inlines HardSwish at ENABLE_BASIC")
    result = check(dep)
    assert result.verdict == OK, (result.drift_origin, [(l.module, l.status, l.onnx_values) for l in result.layers])
    assert any("functions inlined" in n and "reference export" in n for n in result.notes), result.notes
    assert P.covered(result) >= P.covered(check(src, samples=1))
    drifted = check(P.scale_weight(dep, U.hardswish_cnn().conv2.weight.detach().numpy(), 1.05, tmp_path / "d.onnx"))
    assert _named_at(drifted, "conv2"), drifted.drift_origin
