"""The drift matrix (issue 33, point 8; `make test-deploy`): real architectures (transformers' BERT,
GPT-2, ViT; timm's ResNet, EfficientNet, ConvNeXt, MobileNetV3) x every deployment tool (onnxsim,
onnxslim, ORT offline basic / extended / all, both float16 converters with and without keep_io_types,
quantize_dynamic, quantize_static QDQ and QOperator) x an epsilon, a padding and a GELU-like constant
planted AFTER the tool (tests/deploy/drift_matrix.py, attr_plant.py).  Each point is named where the
same drift in the raw float32 export is named; no clean file carries attribute evidence.  A point
whose file has no such node (a BatchNorm folded into its Conv, a GELU fused into one op) is skipped,
as is a tool's file ONNX Runtime itself refuses.  The fast subset: test_attr_evidence.py."""
from __future__ import annotations

import pytest

from drifttui.core.result import ATTRIBUTE_NOT_THE_MODELS
from tests.deploy import drift_matrix as M
from tests.deploy.conftest import needs

pytestmark = pytest.mark.deploy

NEEDS = {"onnxsim": "onnxsim", "onnxslim": "onnxslim", "fp16-occ": "onnxconverter_common"}
# (arch, exporter, tool, kind) -> why the point is not named (strict: it fails today).  Session 26 lifted the
# last two, MobileNetV3 TorchScript ORT basic / extended alpha: drifttui named act2, where the alpha was planted;
# ORT inlines every HardSwish into a HardSigmoid and a Mul, so the k-th site in graph order was conv_head's act2
# there and an SE gate in the raw export (attr_plant now plants a HardSwish as that pair: one module everywhere).
# Session 27 lifted the int8 ones (QDQ / QOperator alpha): timm's act2 computes in place, and its recomputation
# in the file's precision (capture/rounding.py) gave up on it ("its input is gone"), so it was judged with its
# output, whose budget (19%) held the planted 11.7%.  It is now recomputed from a copy of its input taken before
# its forward: its own budget is measured (1.2%), it is judged alone, and its own error (10 to 11%) names it.
XFAIL: dict[tuple[str, str, str, str], str] = {}
FILES = [(a, e) for a, (_, exps, _) in M.ARCHS.items() for e in exps]
POINTS = [(a, e, t, k) for a, e in FILES for t in M.TOOLS for k in M.KINDS if M.ARCHS[a][2][k] is not None]


def _param(*case):
    marks = [pytest.mark.xfail(reason=XFAIL[case], strict=True)] if case in XFAIL else []
    return pytest.param(*case, id="-".join(case), marks=marks)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    cache: dict = {}

    def get(*key):
        if key not in cache:
            cache[key] = _make(key, get, tmp_path_factory)
        return cache[key]
    return get


def _make(key, get, factory):
    needs("transformers")
    __import__("zoo")       # transformers first, then the torchvision shim timm needs (tests/archs/zoo.py)
    if key[0] == "raw":
        return M.export(key[1], key[2], factory.mktemp(f"{key[1]}-{key[2]}"))
    if key[0] == "truth":             # the origin the raw export's drift has
        _, arch, exporter, kind = key
        bad = M.plant(arch, kind, get("raw", arch, exporter), factory.mktemp("truth") / "raw-drift.onnx")
        r = M.check(arch, bad) if bad is not None else None
        return r.drift_origin.module if r is not None and r.drift_origin is not None else None
    _, arch, exporter, tool = key
    if tool in NEEDS:
        needs(NEEDS[tool])
    if tool in ("dynamic", "qdq", "qoperator"):
        needs("onnxruntime.quantization")
    dep = M._tool(tool)(get("raw", arch, exporter), factory.mktemp("deployed") / f"{arch}-{tool}.onnx", M.ARCHS[arch][0])
    return dep if M.loads(dep) else None


@pytest.mark.parametrize("arch,exporter,tool,kind", [_param(*p) for p in POINTS])
def test_a_planted_attribute_drift_is_named_at_its_module(files, tmp_path, arch, exporter, tool, kind):
    truth = files("truth", arch, exporter, kind)
    if truth is None:
        pytest.skip("the raw export has no such node, or that drift is within the tolerance there")
    dep = files("deployed", arch, exporter, tool)
    if dep is None:
        pytest.skip(f"ONNX Runtime refuses {tool}'s own file")
    bad = M.plant(arch, kind, dep, tmp_path / "drift.onnx")
    if bad is None:
        pytest.skip(f"{tool} left no node of that kind (folded or fused)")
    assert M.outcome(M.check(arch, bad), truth) == "named"


@pytest.mark.parametrize("arch,exporter,tool", [pytest.param(a, e, t, id=f"{a}-{e}-{t}") for a, e in FILES
                                                for t in M.TOOLS])
def test_a_clean_deployed_file_has_no_attribute_evidence(files, arch, exporter, tool):
    dep = files("deployed", arch, exporter, tool)
    if dep is None:
        pytest.skip(f"ONNX Runtime refuses {tool}'s own file")
    result = M.check(arch, dep)
    assert not [L.module for L in result.layers if ATTRIBUTE_NOT_THE_MODELS in L.note]


def test_a_clean_vit_qdq_file_is_over_budget_for_its_precision_not_a_genuine_drift(files):
    """Its first LayerNorm normalises an int8-quantized input: its own error is what its recomputation
    in the file's precision loses (over the worst-case bound), a precision story (session 25; before:
    "genuine drift" at layers.0.layernorm_before, because its share of the outputs is small)."""
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config

    dep = files("deployed", "vit", "torchscript", "qdq")
    engine = Pipeline()
    result = engine.run(Config(model=M.spec("vit"), inputs=M.spec("img32"), onnx=str(dep), samples=2)).result
    p = result.precision
    assert result.verdict == "ok" or (p.verdict == "over budget" and p.cause == "precision"), (p, result.drift_origin)
    if p.verdict == "over budget":      # and step 4 keeps it: its error is its precision (not "a genuine drift")
        step = engine.step(4, result)
        assert "brings the int8 file within its budget" in step.summary and "genuine" not in step.summary, step.summary


def test_a_clean_gpt2_qdq_file_pairs_ln_f_with_its_own_output(files):
    """GPT-2 returns ``ln_f``'s output through a Reshape: in the reference the LayerNorm's value and the
    Reshape's are one tensor, equally close to the file's LayerNorm output; the LayerNorm keeps it (before:
    the Reshape did, ln_f got the residual Add's value before it and the clean file a "genuine drift")."""
    dep = files("deployed", "gpt2", "dynamo", "qdq")
    result = M.check("gpt2", dep)
    ln_f = next(L for L in result.layers if L.module == "ln_f")
    assert "LayerNormalization" in ln_f.op_types and ln_f.status == "ok", (ln_f.onnx_values, ln_f.status)
    p = result.precision
    assert result.verdict == "ok" or (p.verdict == "over budget" and p.cause == "precision"), (p, result.drift_origin)


def test_a_clean_gpt2_qoperator_file_reads_each_gelu_at_its_own_output(files):
    """In the QOperator file the GELU's last QLinearMul reaches c_proj's QGemm through the Conv1D's
    Reshape: read through a view at the scale of the reader after that Reshape, ``act`` is paired with
    its own output (before: with its first Mul, 0.5 x, for want of a float view of the last one:
    "genuine drift" at h.0.mlp.act, 14 dB) and c_proj is mapped, held to a recomputation that rounds
    its output at its QGemm's scale (before that: "genuine drift" at h.1.mlp.c_proj)."""
    dep = files("deployed", "gpt2", "dynamo", "qoperator")
    result = M.check("gpt2", dep)
    by = {L.module: L for L in result.layers}
    for b in ("h.0", "h.1"):
        act, proj = by[f"{b}.mlp.act"], by[f"{b}.mlp.c_proj"]
        assert act.status == "ok" and "Tanh" in act.op_types, (act.onnx_values, act.op_types)
        assert proj.status == "ok" and "QGemm" in proj.op_types, (proj.status, proj.onnx_values)
    p = result.precision
    assert result.verdict == "ok" or (p.verdict == "over budget" and p.cause == "precision"), (p, result.drift_origin)
