"""An int8 file's verdict depends on the processor (issue 36): ORT's u8s8 kernel saturates on x86 without VNNI.

small_cnn quantized with the user's own ``quantize_dynamic`` (int8 weights, no reduce_range) is a clean
file.  Its fc is a MatMulInteger; on a CPU without VNNI, ORT multiplies uint8 x int8 with VPMADDUBSW,
whose 16-bit pair sums saturate, so fc's int32 product is not the exact one and the file is over its
budget.  The test recomputes that product itself, in numpy, from the file's integers (the activation
the file's DynamicQuantizeLinear made, marked as an output of a plain ORT session), and chooses what
drifttui must say from what this processor is (runtime/cpu.py):

- u8s8 products may saturate here: ORT's product differs from the exact one, the file is over budget,
  and the head finding is the saturation at fc, naming the missing VNNI, with reduce_range=True
  verified; the user's own reduce_range=True file is within budget;
- exact here (VNNI, ARM): ORT's product equals the exact one and the file is within budget.
"""
from __future__ import annotations

import numpy as np
import onnx

from drifttui.core.runtime.cpu import CpuFeatures, detect, parse_cpuinfo
from tests.deploy.conftest import needs
from tests.deploy.precision_models import export_local, feeds_of, int8_dynamic, local_spec

SAMPLES = 3


def _fc_product(path, feeds) -> tuple[np.ndarray, np.ndarray]:
    """(ORT's int32 output of fc's MatMulInteger, the exact product numpy computes) over the samples."""
    import onnxruntime as ort

    m = onnx.load(str(path))
    mm = next(n for n in m.graph.node if n.op_type == "MatMulInteger")
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in m.graph.initializer}
    for name in (mm.input[0], mm.input[2], mm.output[0]):
        m.graph.output.append(onnx.ValueInfoProto(name=name))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    got, exact = [], []
    for i in range(SAMPLES):
        vals = dict(zip(names, sess.run(None, feeds(i))))
        x = vals[mm.input[0]].astype(np.int64) - vals[mm.input[2]].astype(np.int64)
        w = inits[mm.input[1]].astype(np.int64) - (inits[mm.input[3]].astype(np.int64) if len(mm.input) > 3 else 0)
        exact.append(x @ w)
        got.append(vals[mm.output[0]].astype(np.int64))
    return np.concatenate(got), np.concatenate(exact)


def test_a_clean_quantize_dynamic_file_is_judged_by_this_cpus_int8_kernel(tmp_path):
    needs("onnxruntime.quantization")
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config

    raw = export_local("small_cnn", "img32", "torchscript", tmp_path / "raw")
    feeds = feeds_of("img32", onnx.load(str(raw)).graph.input[0].name)
    plain = int8_dynamic(raw, tmp_path / "dynamic.onnx")
    ort_out, exact = _fc_product(plain, feeds)
    cpu = detect()
    engine = Pipeline()
    r = engine.run(Config(model=local_spec("small_cnn"), inputs=local_spec("img32"), onnx=str(plain),
                          samples=SAMPLES)).result
    assert r.precision.kernels == cpu.int8_line() and r.environment.int8_kernel == cpu.key()
    if cpu.saturates is False or (cpu.saturates is None and np.array_equal(ort_out, exact)):
        # exact u8s8 products: the same integers, the file within its budget
        assert np.array_equal(ort_out, exact)
        assert r.precision.verdict == "within budget" and r.verdict == "ok", r.drift_origin
        return
    # x86 without VNNI: the product is not exact, the file over budget, and the cause named
    wrong = ort_out != exact
    assert wrong.any(), "ORT's u8s8 product is exact on a CPU without VNNI: the premise of this test changed"
    assert r.precision.verdict == "over budget" and r.drift_origin.module == "fc"
    head = engine.explain(r).result.findings[0]
    assert head.check == "precision" and head.kind == "saturation" and head.module == "fc", head.message
    assert "VNNI" in head.message and cpu.summary() in head.message
    row = head.evidence["saturating nodes"][0]
    # drifttui's recomputation agrees with this one, element for element
    assert row["op"] == "MatMulInteger" and row["not exact"] == int(wrong.sum())
    assert row["max |d|"] == int(np.abs(ort_out - exact).max()) and row["16-bit pair sums reproduce ORT"] is True
    assert head.evidence["exact nodes"] == ["/stem/stem.0/Conv_quant", "/b1/b1.0/Conv_quant", "/b2/b2.0/Conv_quant"]
    # the fix in the user's terms, verified on a copy; the user's own reduce_range file agrees
    assert head.verified is True and "reduce_range=True" in head.fix and "within budget" in head.fix
    assert "nodes_to_exclude=['/fc/Gemm_MatMul']" in head.fix
    rr = int8_dynamic(raw, tmp_path / "rr.onnx", reduce_range=True)
    rr_out, rr_exact = _fc_product(rr, feeds)
    assert np.array_equal(rr_out, rr_exact)            # 7-bit weights: no pair sum saturates
    fine = engine.run(Config(model=local_spec("small_cnn"), inputs=local_spec("img32"), onnx=str(rr),
                             samples=SAMPLES)).result
    assert fine.precision.verdict == "within budget" and fine.verdict == "ok"


def test_a_within_budget_int8_file_has_no_saturation_finding(tmp_path):
    """reduce_range=True: exact products on every CPU, within budget, no saturation claimed."""
    needs("onnxruntime.quantization")
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config

    raw = export_local("small_cnn", "img32", "torchscript", tmp_path / "raw")
    rr = int8_dynamic(raw, tmp_path / "rr.onnx", reduce_range=True)
    engine = Pipeline()
    r = engine.run(Config(model=local_spec("small_cnn"), inputs=local_spec("img32"), onnx=str(rr),
                          samples=SAMPLES)).result
    assert r.verdict == "ok" and r.precision.kernels.startswith("int8 kernels: ")
    assert not any(f.kind == "saturation" for f in engine.explain(r).result.findings)


def test_cpu_features_name_the_kernel_and_are_honest_when_unknown():
    avx2 = parse_cpuinfo("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse4_1 avx avx2 fma\n", "x86_64")
    assert avx2.saturates is True and avx2.kernel() == "AVX2" and avx2.summary() == "x86_64: SSE4.1, AVX2, no AVX-512, no VNNI"
    assert "may saturate" in avx2.int8_line() and avx2.model == "AMD EPYC"
    skx = parse_cpuinfo("flags : sse4_1 avx2 avx512f avx512bw\n", "x86_64")
    assert skx.saturates is True and skx.kernel() == "AVX-512BW"
    vnni = parse_cpuinfo("flags : sse4_1 avx2 avx512f avx512bw avx512_vnni\n", "x86_64")
    assert vnni.saturates is False and vnni.kernel() == "AVX-512 VNNI" and "exact" in vnni.int8_line()
    alder = parse_cpuinfo("flags : sse4_1 avx2 avx_vnni\n", "x86_64")
    assert alder.saturates is False and alder.key() != avx2.key()
    arm = parse_cpuinfo("Features : fp asimd asimddp\n", "aarch64")
    assert arm.saturates is False
    unknown = CpuFeatures("arm64")          # macOS: no /proc/cpuinfo
    assert unknown.flags is None and unknown.saturates is False
    other = CpuFeatures("x86_64")           # an x86 system whose flags were not read
    assert other.saturates is None and "not known" in other.int8_line() and other.key() == "unknown"
