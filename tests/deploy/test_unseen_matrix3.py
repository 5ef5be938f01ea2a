"""Session 32's held-out files (tests/deploy/unseen_matrix3.py): transformers ALBERT and DeBERTa-v2, timm
LeViT-128S, seeded, through the tools where the survey found a defect.  Each clean file is ok with no call
unmapped and coverage >= 95% of the raw export's; a weight x1.05 planted after the tool is named where the raw
export's same drift is (or at the call whose fused node swallowed it).

Before the fixes: ALBERT's TorchScript export (and every tool's file mapped through it) was a false DRIFT at
the second call of ``attention``; ALBERT through the transformers optimizer (dynamo) a false DRIFT at ``ffn``
(call 2), then ``ffn_output`` (call 2); DeBERTa's dynamo export exit 3 (the local graph fed an int64 mask as a
bool value); ALBERT through quantize_dynamic (TorchScript) a false DRIFT IN THE INT8 FILE at ``ffn_output``
(call 2), 15 of 34 calls mapped (the shared weight's float copy, which TorchScript's Identity hands to the second
call, anchored and its int8 copy did not); DeBERTa through quantize_dynamic (TorchScript) a false DRIFT IN THE
INT8 FILE at ``layer.1.attention.output``, layer 0 fused (its constant left operand quantized, the float copy
anchored); LeViT through the ONNX Optimizer (TorchScript) 13 calls unmapped, then 2 (``q.ln``: the view of the
value ``q`` and ``q.ln`` hand on went in the container's scope); LeViT's dynamo export 2 unmapped (the same), and
through onnxsim (as every tool) 15 (the reference export's absorbed outputs were never looked for); PoolFormer
through quantize_static (QDQ, TorchScript) a false DRIFT IN THE INT8 FILE at ``stages.3.blocks.1`` (its zeros
paired with the previous block's).

ALBERT's and DeBERTa's quantize_dynamic copies (TorchScript) depend on the processor (as test_precision_rnn.py):
on x86 without VNNI, ORT's u8s8 MatMulInteger adds pairs of products into 16 bits with saturation, and the
deployed file really differs (session 35, AMD EPYC with AVX2 and no VNNI: ALBERT's ``attention.query`` product
off the exact integer product by 4196 of 30708, DeBERTa's ``layer.0 ... value_proj`` by up to 4627 of 36463; both
over budget for precision, the origin the first saturating product). Quantized with reduce_range=True, both are
ok within budget on this CPU and every product exact. There the clean file may be over budget for precision,
never a DRIFT of another cause; a planted weight is still named."""
from __future__ import annotations

import pytest

from drifttui.core.runtime.cpu import detect
from tests.deploy import unseen_matrix as U
from tests.deploy import unseen_matrix3 as M  # noqa: F401  (registers the architectures)
from tests.deploy.drift_matrix import outcome

pytestmark = [pytest.mark.deploy, pytest.mark.transformers]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return U.file_getter(tmp_path_factory, lambda arch: ("transformers",) + (("timm",) if arch in ("levit", "poolformer") else ()))


def _clean(arch: str, path, saturating: bool = False) -> int:
    """``saturating``: an int8 file ORT's u8s8 kernels may saturate on this CPU: over budget for precision too."""
    r = U.check(arch, path)
    p = r.precision
    over = saturating and p is not None and p.verdict == "over budget" and p.cause == "precision"
    assert r.verdict == "ok" or over, (r.verdict, r.drift_origin)
    assert r.coverage.unmapped == 0, [(L.module, L.call, L.note) for L in r.layers if L.status == "unmapped"]
    return U.covered(r)


@pytest.mark.parametrize("arch,exporter,tool", [
    ("albert", "torchscript", None), ("albert", "torchscript", "onnxsim"), ("albert", "dynamo", "trf-opt"),
    ("albert", "torchscript", "trf-opt"), ("albert", "torchscript", "dynamic"), ("deberta", "dynamo", None),
    ("deberta", "torchscript", "onnxoptimizer"),
    ("levit", "torchscript", "onnxoptimizer"), ("levit", "dynamo", "onnxsim"), ("poolformer", "torchscript", "qdq"),
    ("deberta", "torchscript", "dynamic"),
])
def test_clean_file_and_a_planted_weight(files, tmp_path, arch, exporter, tool):
    raw = files(arch, exporter)
    raw_cov = _clean(arch, raw)
    dep = raw if tool is None else files(arch, exporter, tool)
    if dep is None:
        pytest.skip(f"ONNX Runtime refuses {tool}'s own file")
    assert _clean(arch, dep, tool == "dynamic" and detect().saturates is not False) >= 0.95 * raw_cov
    truth = U.check(arch, U.plant(arch, "weight", raw, tmp_path / "raw-weight.onnx", raw=True)).drift_origin
    assert truth is not None
    bad = U.plant(arch, "weight", dep, tmp_path / "weight.onnx")
    assert outcome(U.check(arch, bad), truth.module) == "named"


@pytest.mark.skipif(detect().saturates is not True, reason="ORT's u8s8 products are exact on this CPU (VNNI)")
def test_the_saturation_finding_names_the_origin_and_its_fix_verifies(files):
    """DeBERTa's quantize_dynamic file on a CPU whose u8s8 kernel saturates: the finding names the module over
    its budget (the origin, ``value_proj`` of layer 0), not the product that saturates most (a later layer's
    ``key_proj``: a consumer of values already off); and reduce_range's copy, which keeps the relative
    embeddings' shared scale, verifies (it re-quantized the weights by that scale before session 35)."""
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config

    h = U.home("deberta")
    cfg = Config(model=h.spec("deberta"), inputs=h.spec("tokens"), onnx=str(files("deberta", "torchscript", "dynamic")),
                 samples=2)
    engine = Pipeline()
    run = engine.run(cfg)
    origin = run.result.precision_origin or run.result.drift_origin
    if origin is None:
        pytest.skip("no product saturates on these samples here")
    head = engine.explain(run.result).result.findings[0]
    assert (head.check, head.kind) == ("precision", "saturation")
    assert head.module == origin.module
    assert head.verified is True and "reduce_range=True" in head.fix
