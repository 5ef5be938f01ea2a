"""Files nobody here built (issue 33, "Judged by"): transformer families the drift matrix does not have
(LLaMA, T5's encoder, Whisper's encoder) x every deployment tool, the transformers optimizer,
``auto_mixed_precision`` and int4 included, clean and with one drift planted AFTER the tool: a weight
(x1.05 in a float file, x1.05 float16, its int8 integers x1.1), a quantized scale (x1.3), an
epsilon, a pad and a GELU-like constant.  Each drift is judged where the same drift in the raw export
is named; each clean file by the judge's rule (ok, or over budget with a keep-list, coverage >= 95%
of the raw export's).

``python -m tests.deploy.unseen_matrix [ARCH ...] [TOOL ...] [dynamo|torchscript]`` prints the points
(tab-separated); test_unseen_matrix.py asserts them.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from tests.deploy import drift_matrix as DM

HERE = Path(__file__).resolve()
KINDS = ("weight", "qscale", "epsilon", "pads", "alpha")


def llama():
    return DM._zoo("llama")


def t5():
    return DM._zoo("t5")


def whisper():
    return DM._zoo("whisper_encoder")


tokens, token_ids = DM.tokens, DM.token_ids


def mel():
    import torch

    return {"input_features": torch.randn(1, 16, 32)}


def spec(fn: str) -> str:
    return f"{HERE}:{fn}"


_HOMES: list = []   # other held-out matrices (unseen_matrix2.py): their ARCHS, factories and input specs


def register(module: Any) -> None:
    """Another matrix's architectures go through this module's tools, planters and checks."""
    if module not in _HOMES:
        _HOMES.append(module)


def home(arch: str) -> Any:
    """The module holding ``arch``'s factory, its input spec and its ARCHS entry."""
    return next((m for m in _HOMES if arch in m.ARCHS), sys.modules[__name__])


# arch -> (inputs, exporters, optimizer model_type, {kind: target module (a norm's gamma, a Conv's or
# Linear's weight) or the k-th GELU-like constant})
ARCHS: dict[str, tuple[str, tuple[str, ...], str, dict[str, Any]]] = {
    "llama": ("tokens", ("dynamo", "torchscript"), "gpt2",
              {"weight": "layers.1.mlp.up_proj", "epsilon": "layers.1.post_attention_layernorm", "pads": None,
               "alpha": None}),
    "t5": ("token_ids", ("dynamo", "torchscript"), "t5",
           {"weight": "encoder.block.1.layer.1.DenseReluDense.wi", "epsilon": "encoder.block.1.layer.0.layer_norm",
            "pads": None, "alpha": None}),
    "whisper": ("mel", ("dynamo", "torchscript"), "bert",
                {"weight": "layers.1.fc1", "epsilon": "layers.1.final_layer_norm", "pads": "conv2", "alpha": -1}),
}
TOOLS = DM.TOOLS + ("fp16-occ-io", "trf-opt", "amp", "int4")
INT8 = ("dynamic", "qdq", "qoperator")
FP16 = ("fp16", "fp16-io", "fp16-occ", "fp16-occ-io", "amp")


def _feeds(raw: Path, arch: str) -> Callable[[int], dict]:
    return DM.feeds_by_name(raw, home(arch).spec(home(arch).ARCHS[arch][0]))


def tool(name: str, arch: str, src: Path, dst: Path) -> Path:
    import onnx

    from tests.deploy import precision_models as PM

    entry = home(arch).ARCHS[arch]
    inputs = entry[0]
    if name == "fp16-occ-io":
        from onnxconverter_common import float16 as conv

        onnx.save(conv.convert_float_to_float16(onnx.load(str(src)), keep_io_types=False), str(dst))
        return dst
    if name == "trf-opt":
        from onnxruntime.transformers import optimizer

        opt = optimizer.optimize_model(str(src), model_type=entry[2], num_heads=2, hidden_size=32, opt_level=0)
        opt.save_model_to_file(str(dst))
        return dst
    if name == "amp":
        from onnxconverter_common import auto_mixed_precision

        feed = _feeds(src, arch)(0)
        m = auto_mixed_precision.auto_convert_mixed_precision(onnx.load(str(src)), feed, rtol=0.01, atol=0.001,
                                                              keep_io_types=True)
        onnx.save(m, str(dst))
        return dst
    if name == "int4":
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

        q = MatMulNBitsQuantizer(onnx.load(str(src)), block_size=32, is_symmetric=True)
        q.process()
        q.model.save_model_to_file(str(dst), False)
        return dst
    if name in ("qdq", "qoperator"):
        q = PM.int8_qdq if name == "qdq" else PM.int8_qoperator
        return q(src, dst, _feeds(src, arch), n=4)
    return DM._tool(name)(src, dst, inputs)


def export(arch: str, exporter: str, folder: Path) -> Path:
    import onnx

    from tests.deploy.precision_models import export as pm_export

    path = pm_export(arch, home(arch).ARCHS[arch][0], exporter, folder / "export", spec_of=home(arch).spec)
    one = folder / f"{arch}-raw.onnx"
    onnx.save(onnx.load(str(path)), str(one))
    return one


def _weight_kind(path: Path) -> str:
    import onnx

    m = onnx.load(str(path), load_external_data=False)
    ops = {n.op_type for n in m.graph.node}
    if "MatMulNBits" in ops:
        return "int4"
    if ops & {"DequantizeLinear", "MatMulInteger", "QLinearMatMul", "DynamicQuantizeLinear", "QGemm", "QAttention",
              "DynamicQuantizeMatMul"}:
        return "int8"
    if any(t.data_type == 10 for t in m.graph.initializer):
        return "float16"
    return "float"


def _int4_scale(path: Path, w: np.ndarray, dst: Path, factor: float) -> Optional[Path]:
    """The MatMulNBits whose dequantized weight carries ``w`` (by content): its block scales x ``factor``."""
    import onnx
    from onnx import numpy_helper

    from drifttui.core.onnx.nbits import dequantized

    m = onnx.load(str(path))
    inits = {t.name: t for t in m.graph.initializer}
    best, best_c = None, 0.9
    for n in m.graph.node:
        arrays = {i: numpy_helper.to_array(inits[i]) for i in n.input[1:4] if i in inits}
        d = dequantized(n, arrays) if n.op_type == "MatMulNBits" else None
        if d is None or d.size != w.size:
            continue
        x, y = d.reshape(-1).astype(np.float64), w.T.reshape(-1).astype(np.float64)
        c = float(x @ y) / (np.linalg.norm(x) * np.linalg.norm(y) + 1e-30)
        if c > best_c:
            best, best_c = n, c
    if best is None:
        return None
    t = inits[best.input[2]]
    a = numpy_helper.to_array(t)
    t.CopyFrom(numpy_helper.from_array((a.astype(np.float32) * factor).astype(a.dtype), t.name))
    onnx.save(m, str(dst))
    return dst


def _int8_times(path: Path, w: np.ndarray, dst: Path, factor: float) -> Path:
    """The int8 integers carrying ``w`` times ``factor`` (rounded, clipped)."""
    import onnx
    from onnx import numpy_helper

    from tests.deploy.qkv_models import _closest

    m = onnx.load(str(path))
    t = _closest(m, w, (2, 3))
    a = numpy_helper.to_array(t)
    lo, hi = (-127, 127) if a.dtype == np.int8 else (0, 255)
    if a.dtype == np.uint8:     # around the zero point the reader uses (quantize_dynamic: 128 for uint8)
        a2 = np.clip(np.round((a.astype(np.float64) - 128) * factor) + 128, lo, hi)
    else:
        a2 = np.clip(np.round(a.astype(np.float64) * factor), lo, hi)
    t.CopyFrom(numpy_helper.from_array(a2.astype(a.dtype), t.name))
    onnx.save(m, str(dst))
    return dst


def plant(arch: str, kind: str, src: Path, dst: Path, raw: bool = False) -> Optional[Path]:
    """One drift in ``src``; ``raw``: the raw export's counterpart (the truth's file)."""
    from tests.deploy import arch_drifts as AD
    from tests.deploy import attr_plant as A
    from tests.deploy import qkv_models as Q

    targets = home(arch).ARCHS[arch][3]
    model = getattr(home(arch), arch)()
    if kind in ("weight", "qscale"):
        w = model.get_submodule(targets["weight"]).weight.detach().numpy()
        wk = "float" if raw else _weight_kind(src)
        if kind == "qscale":
            if wk == "int4":
                return _int4_scale(src, w, dst, 1.3)
            if wk != "int8":
                return AD.weight(src, w, dst, 1.3) if raw else None
            return Q.plant_weight(src, dst, w, "scale", 1.3)
        factor = 1.1 if wk in ("int8", "int4") else 1.05
        if raw:
            return AD.weight(src, w, dst, factor)
        if wk == "int4":
            return None
        if wk == "int8":
            return _int8_times(src, w, dst, 1.1)
        if wk == "float16":
            return Q.plant_weight(src, dst, w, "float16", 1.05)
        return AD.weight(src, w, dst, 1.05)
    target = targets[kind]
    if target is None:
        return None
    if kind == "alpha":
        return A.alpha(src, target, dst)
    module = model.get_submodule(target)
    if kind == "epsilon":
        out = A.epsilon(src, module.weight.detach().numpy(), 0.1, dst)
        return out if out is not None else _rms_epsilon(src, module.weight.detach().numpy(), dst)
    return A.pads(src, module.weight.detach().numpy(), dst)


def _rms_epsilon(src: Path, gamma: np.ndarray, dst: Path) -> Optional[Path]:
    """An unfused RMSNorm (Pow, ReduceMean, Add eps, Sqrt, Div / Reciprocal, Mul gamma): the Add before the
    Sqrt whose chain reaches a Mul by ``gamma``, gets 0.1."""
    import onnx
    from onnx import numpy_helper

    from tests.deploy import attr_plant as A
    from tests.deploy.arch_drifts import _rms_adds

    model = onnx.load(str(src))
    g = A._Graph(model)
    for add, const in _rms_adds(model):
        frontier, seen = [add.output[0]], 0
        while frontier and seen < 8:
            v = frontier.pop(0)
            seen += 1
            for u in g.users.get(v, []):
                arrays = [g.array(i) for i in u.input]
                if u.op_type == "Mul" and any(a is not None and a.size == gamma.size
                                              and np.allclose(a.reshape(-1), gamma.reshape(-1), rtol=2e-2, atol=1e-3)
                                              for a in arrays):
                    name = "planted_rms_eps"
                    dtype = np.float16 if g.tensor(const).data_type == onnx.TensorProto.FLOAT16 else np.float32
                    model.graph.initializer.append(numpy_helper.from_array(np.array(0.1, dtype), name))
                    add.input[list(add.input).index(const)] = name
                    onnx.save(model, str(dst))
                    return dst
                frontier.extend(u.output)
    return None


def check(arch: str, path: Path, samples: int = 2) -> Any:
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    h = home(arch)
    return run_once(Config(model=h.spec(arch), inputs=h.spec(h.ARCHS[arch][0]), onnx=str(path), samples=samples)).result


def covered(result: Any) -> int:
    return result.coverage.mapped + result.coverage.fused


def clean_outcome(result: Any, raw_covered: int) -> str:
    cov = covered(result) / max(raw_covered, 1)
    p = result.precision
    if result.verdict == "ok":
        state = "ok"
    elif p is not None and p.verdict == "over budget" and p.cause == "precision":
        state = "over budget (precision)"
    else:
        origin = result.drift_origin.module if result.drift_origin is not None else None
        state = f"FALSE {result.verdict} at {origin} ({getattr(p, 'verdict', None)}, {getattr(p, 'cause', None)})"
    return f"{state}; coverage {cov:.0%}"


def measure(arch: str, exporter: str, tools: tuple[str, ...] = TOOLS, kinds: tuple[str, ...] = KINDS,
            folder: Optional[Path] = None, say: Callable[[str], None] = print) -> dict:
    folder = folder or Path(tempfile.mkdtemp(prefix=f"unseen-{arch}-{exporter}-"))
    raw = export(arch, exporter, folder)
    rr = check(arch, raw)
    raw_cov = covered(rr)
    say(f"raw\tclean\t{rr.verdict}; {raw_cov} covered")
    truth: dict[str, Optional[str]] = {}
    for kind in kinds:
        bad = plant(arch, kind, raw, folder / f"raw-{kind}.onnx", raw=True)
        r = check(arch, bad) if bad is not None else None
        truth[kind] = r.drift_origin.module if r is not None and r.drift_origin is not None else None
        say(f"raw\t{kind}\t{'n/a' if bad is None else truth[kind] or 'not found in the raw export'}")
    out: dict = {}
    for t in tools:
        try:
            dep = tool(t, arch, raw, folder / f"{t}.onnx")
        except Exception as exc:  # noqa: BLE001
            out[(t, "clean")] = f"n/a: the tool failed ({type(exc).__name__}: {str(exc)[:60]})"
            say(f"{t}\tclean\t{out[(t, 'clean')]}")
            continue
        if not DM.loads(dep):
            out[(t, "clean")] = "n/a: ONNX Runtime refuses the tool's file"
            say(f"{t}\tclean\t{out[(t, 'clean')]}")
            continue
        try:
            out[(t, "clean")] = clean_outcome(check(arch, dep), raw_cov)
        except Exception as exc:  # noqa: BLE001
            out[(t, "clean")] = f"error ({type(exc).__name__}: {str(exc)[:100]})"
        say(f"{t}\tclean\t{out[(t, 'clean')]}")
        for kind in kinds:
            if truth[kind] is None:
                continue
            bad = plant(arch, kind, dep, folder / f"{t}-{kind}.onnx")
            if bad is None:
                continue
            try:
                out[(t, kind)] = DM.outcome(check(arch, bad), truth[kind])
            except Exception as exc:  # noqa: BLE001
                out[(t, kind)] = f"error ({type(exc).__name__}: {str(exc)[:100]})"
            say(f"{t}\t{kind}\t{out[(t, kind)]}")
    return out


def file_getter(tmp_path_factory: Any, libraries: Callable[[str], tuple[str, ...]] = lambda arch: ("transformers",)
                ) -> Callable[..., Optional[Path]]:
    """A test module's cached files: ``get(arch, exporter)`` the raw export, ``get(arch, exporter, by)`` the
    file the tool ``by`` made (None where ONNX Runtime refuses it); skips where ``libraries(arch)`` or the tools are missing."""
    from tests.deploy.conftest import needs

    cache: dict = {}

    def get(arch: str, exporter: str, by: Optional[str] = None) -> Optional[Path]:
        key = (arch, exporter, by)
        if key not in cache:
            first, *more = libraries(arch)
            needs(first)
            __import__("zoo")       # after transformers: the torchvision shim timm imports through
            for lib in more:
                needs(lib)
            if by is None:
                cache[key] = export(arch, exporter, tmp_path_factory.mktemp(f"{arch}-{exporter}"))
            else:
                needs("onnxruntime.quantization")
                dep = tool(by, arch, get(arch, exporter), tmp_path_factory.mktemp("dep") / f"{by}.onnx")
                cache[key] = dep if DM.loads(dep) else None
        return cache[key]
    return get


def assert_clean(result: Any, raw_covered: int) -> None:
    """A clean file's judgement: ok, or over budget for its precision alone; coverage >= 95% of the raw export's."""
    p = result.precision
    assert result.verdict == "ok" or (p.verdict == "over budget" and p.cause == "precision"), \
        (result.verdict, p.verdict, p.cause, result.drift_origin)
    assert covered(result) >= 0.95 * raw_covered, (covered(result), raw_covered)


def main(argv: list[str]) -> None:
    DM.main(argv, ARCHS, TOOLS, measure)


if __name__ == "__main__":
    main(sys.argv[1:])
