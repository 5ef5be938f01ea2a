"""Files whose weights lie in EXTERNAL data (``onnx.save(..., save_as_external_data=True)``: any model past 2 GB,
and many pipelines for smaller ones) read as their embedded copies do.  drifttui loads a file without its weights
and reads each tensor where it lies; session 37 found readers that called ``numpy_helper.to_array`` on such a
weight-less proto.  Each test is a reader path that failed on main before (session 38):

* ``prepare/precision.py`` scanning an int8 file (ORT quantize_static QDQ, quantize_dynamic): exit 3 on ``check``;
* a QDQ unit cut out for the saturation recomputation: its scalars came back 1-d, so ONNX Runtime did not fuse
  the unit as it fuses the file's (no saturation finding where the embedded file has one);
* ``Pipeline.recheck`` of a copy made from the weight-less proto (``diagnose``'s reduce_range copy): exit 2;
* a ``replace_initializer`` patch measured in the whole file (``holds.py``): exit 3 on ``diagnose`` / ``repair``.

And the rule under them: one reader (``onnx/weights.read_tensor``), which never resolves a location from the
working directory."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, numpy_helper

from tests.compose import models as M
from tests.compose import pipelines as P

ROOT = Path(__file__).resolve().parents[2]


def _external(src: Path, dst: Path, only: set[int] | None = None) -> Path:
    """``src`` saved with its tensors in ``<dst>.data``: all of them (``size_threshold=0``), or those of the
    element types ``only`` (a converter's int8 / float16 weights, the float32 ones kept in the proto)."""
    from onnx.external_data_helper import set_external_data

    m = onnx.load(str(src))
    dst.parent.mkdir(parents=True, exist_ok=True)
    if only is None:
        onnx.save(m, str(dst), save_as_external_data=True, size_threshold=0, all_tensors_to_one_file=True,
                  location=dst.name + ".data")
        return dst
    for t in m.graph.initializer:
        if t.data_type in only:
            if not t.HasField("raw_data"):
                t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t), t.name))
            set_external_data(t, dst.name + ".data")
    onnx.save(m, str(dst))
    return dst


def _qdq(raw: Path, dst: Path) -> Path:
    from tests.deploy.precision_models import int8_qdq

    name = onnx.load(str(raw), load_external_data=False).graph.input[0].name
    return int8_qdq(raw, dst, lambda i: {name: np.random.default_rng(i).standard_normal((4, 32)).astype(np.float32)})


def _run(path: Path, name: str = "mlp"):
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config

    engine = Pipeline()
    cfg = Config(model=M.spec(name), inputs=M.INPUTS[name], onnx=str(path), samples=2)
    return engine, cfg, engine.run(cfg)


def _reading(result):
    return (result.verdict, result.drift_origin.module if result.drift_origin else None,
            max(o.metrics.max_abs.worst for o in result.outputs))


@pytest.fixture(scope="module")
def mlp_files(tmp_path_factory):
    """The MLP's TorchScript export, its QDQ int8 copy (ORT quantize_static), and that copy with all tensors, or
    its int8 tensors only, in external data, in another folder than the working directory."""
    root = tmp_path_factory.mktemp("ext")
    raw = P.raw("mlp", "torchscript", root)
    qdq = _qdq(raw, root / "qdq.onnx")
    return {"qdq": qdq, "qdq-all": _external(qdq, root / "all" / "qdq.onnx"),
            "qdq-int8": _external(qdq, root / "int8" / "qdq.onnx", {TensorProto.INT8, TensorProto.UINT8})}


@pytest.mark.parametrize("variant", ["qdq-all", "qdq-int8"])
def test_an_int8_file_with_external_weights_reads_as_its_embedded_copy(mlp_files, variant, tmp_path, monkeypatch):
    """Was: ``onnx failed: ValidationError: Data of TensorProto (fc1.weight_quantized) should be stored in
    qdq.onnx.data, but it is not regular file`` (exit 3): the precision scan read the int8 weights from the working
    directory."""
    monkeypatch.chdir(tmp_path)
    _, _, embedded = _run(mlp_files["qdq"])
    _, _, external = _run(mlp_files[variant])
    assert _reading(external.result) == _reading(embedded.result)
    assert external.result.precision is not None and embedded.result.precision is not None
    assert external.result.precision.verdict == embedded.result.precision.verdict


def test_a_qdq_unit_cut_from_external_data_keeps_its_scalars_0d(mlp_files):
    """The saturation check runs each QDQ unit alone, fused as the file's is.  Read in from external data, a
    scalar zero point came back of shape [1] beside a scalar scale, and ONNX Runtime did not fuse the unit: its
    int8 product was exact where the file's is not, and the saturation finding went missing."""
    from drifttui.core.explain.causes.locate.saturation_qdq import qdq_products, unit_model
    from drifttui.core.model.loading import load_onnx
    from drifttui.core.onnx.graph import build_index

    def unit(path: Path):
        proto, where = load_onnx(path)
        index = build_index(proto, where)
        return unit_model(index, qdq_products(index)[0], [4, 32])

    want = {t.name: (t.data_type, list(t.dims)) for t in unit(mlp_files["qdq"]).graph.initializer}
    for variant in ("qdq-all", "qdq-int8"):
        got = unit(mlp_files[variant])
        assert {t.name: (t.data_type, list(t.dims)) for t in got.graph.initializer} == want, variant
        assert not any(t.data_location == TensorProto.EXTERNAL for t in got.graph.initializer)


def test_a_copy_of_the_weightless_proto_is_rechecked_with_its_weights(mlp_files):
    """``diagnose`` checks copies made from the loaded proto (the reduce_range copy of an int8 file): written to a
    temporary folder, it pointed at a ``.data`` file that is not there (exit 2)."""
    engine, cfg, run = _run(mlp_files["qdq-all"])
    proto = run.prepared.proto
    assert any(t.data_location == TensorProto.EXTERNAL for t in proto.graph.initializer)
    assert _reading(engine.recheck(cfg, proto)) == _reading(run.result)


def test_a_weight_patch_applies_to_the_weightless_proto(tmp_path, monkeypatch):
    """A file whose ``fc2.weight`` is not the model's (a stale row), all of its tensors external: the verified
    ``replace_initializer`` patch is measured in the whole file, applied to the weight-less proto.  Was: exit 3
    (the patch read the old weight to learn its dtype); now the repaired file passes."""
    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.onnx.graph import full_model

    raw = P.raw("mlp", "torchscript", tmp_path)
    m = onnx.load(str(raw))
    w = next(t for t in m.graph.initializer if t.name == "fc2.weight")
    stale = numpy_helper.to_array(w).copy()
    stale[0] *= 1.5
    w.CopyFrom(numpy_helper.from_array(stale, w.name))
    onnx.save(m, str(tmp_path / "stale.onnx"))
    path = _external(tmp_path / "stale.onnx", tmp_path / "ext" / "stale.onnx")
    monkeypatch.chdir(tmp_path)
    engine, cfg, run = _run(path)
    assert run.result.verdict == "drift" and run.result.drift_origin.module == "fc2"
    exp = engine.explain(run.result).explanation
    head = exp.findings[0]
    assert head.verified and head.patch["op"] == "replace_initializer", head.message
    fixed = repair(full_model(run.prepared.index), exp)
    assert engine.recheck(cfg, fixed.model).verdict == "ok"


def test_the_one_reader_never_reads_from_the_working_directory(tmp_path, monkeypatch):
    """An external tensor read without its file's folder is refused, even when the working directory holds a
    file of that name (``numpy_helper.to_array`` would read it: another model's weights)."""
    from drifttui.core.onnx.weights import ExternalTensorError, read_tensor, with_array

    t = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    m = onnx.helper.make_model(onnx.helper.make_graph([], "g", [], [], [t]))
    (tmp_path / "model").mkdir()
    onnx.save(m, str(tmp_path / "model" / "m.onnx"), save_as_external_data=True, size_threshold=0,
              location="w.data")
    (tmp_path / "w.data").write_bytes(np.full(6, 7, np.float32).tobytes())      # a decoy in the cwd
    monkeypatch.chdir(tmp_path)
    weightless = onnx.load(str(tmp_path / "model" / "m.onnx"), load_external_data=False).graph.initializer[0]
    with pytest.raises(ExternalTensorError):
        read_tensor(weightless)
    assert read_tensor(weightless, tmp_path / "model").tolist() == [[0, 1, 2], [3, 4, 5]]
    assert list(with_array(weightless, np.float32(2)).dims) == []        # a 0-d array stays 0-d


def test_no_reader_of_the_engine_calls_to_array_itself():
    """The rule the tests above stand on: every tensor read of the engine goes through ``read_tensor`` (the one
    place that knows where an external tensor lies); ``numpy_helper.to_array`` appears nowhere else."""
    found = []
    for path in (ROOT / "drifttui").rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        if rel in ("drifttui/core/onnx/weights.py", "drifttui/core/explain/causes/deliver/repro.py"):
            continue        # the reader itself; repro's script text runs in the user's shell, not here
        found += [f"{rel}:{k}" for k, line in enumerate(path.read_text().splitlines(), 1) if "to_array(" in line]
    assert not found, found


def test_a_file_onnx_runtime_itself_cannot_load_is_said_so():
    """``size_threshold=0`` also moves a dynamo export's axes and shapes into the .data file; ONNX Runtime then
    refuses the file itself (``Cannot parse data from external tensors``), loaded from its path too.  The exit
    stays 3 (the runtime failed); the fix names the cause, not "an op this onnxruntime lacks"."""
    from drifttui.core.runtime.sessions import load_fix

    said = load_fix("[ShapeInferenceError] Cannot parse data from external tensors. Please load external data "
                    "into raw data for tensor: val_16")
    assert "ONNX Runtime itself cannot load this file" in said and "size_threshold" in said


def test_a_converter_s_mixed_types_are_said_as_the_file_s_defect():
    """Found in the session 38 survey: onnxconverter-common's float16 copy of a TorchScript wav2vec2 leaves one input
    of a MatMul float32 (ONNX Runtime refuses the file by path too).  The fix says so instead of "an op this
    onnxruntime lacks"."""
    from drifttui.core.runtime.sessions import load_fix

    said = load_fix("Type Error: Type parameter (T) of Optype (MatMul) bound to different types (tensor(float) and "
                    "tensor(float16) in node (/feature_projection/projection/MatMul).")
    assert "the file itself is inconsistent" in said and "'/feature_projection/projection/MatMul'" in said
    assert "node_block_list" in said
