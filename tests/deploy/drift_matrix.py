"""The drift matrix (issue 33, point 8): real architectures x deployment tools x planted epsilon, pads
and alpha drifts (tests/deploy/attr_plant.py), each planted AFTER the tool, judged as the issue's
private set is: the drift is named at the module the same drift has in the raw float32 export.

The architectures are the zoo's (tests/archs/zoo.py: transformers' BERT, GPT-2, ViT; timm's ResNet,
EfficientNet, ConvNeXt; seeded, nothing downloaded, no torchvision) with every 1-dim parameter
randomised (a fresh LayerNorm's scale of ones would make every norm look alike to the planter, and
ConvNeXt's layer scale of 1e-6 would hide its blocks).  Model spec targets: ``drift_matrix.py:NAME``.

``python -m tests.deploy.drift_matrix [ARCH ...]`` prints the matrix (points named / total per drift
kind and tool); test_drift_matrix.py asserts it point by point.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional


ARCHS_DIR = Path(__file__).resolve().parent.parent / "archs"
if str(ARCHS_DIR) not in sys.path:
    sys.path.insert(0, str(ARCHS_DIR))
HERE = Path(__file__).resolve()
KINDS = ("epsilon", "pads", "alpha")


def _randomised(model: Any) -> Any:
    import torch

    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim == 1:
                p.add_(torch.randn(p.shape, generator=g) * 0.1)
    return model.eval()


def _zoo(name: str) -> Any:
    import zoo  # noqa: PLC0415  (transformers first, then the torchvision shim timm needs)

    return _randomised(getattr(zoo, name)())


def bert():
    return _zoo("bert")


def gpt2():
    return _zoo("gpt2")


def vit():
    return _zoo("vit_hf")


def resnet18():
    return _zoo("resnet18")


def efficientnet_b0():
    return _zoo("efficientnet_b0")


def convnext_atto():
    return _zoo("convnext_atto")


def tokens():
    import torch

    return {"input_ids": torch.randint(0, 128, (1, 8)), "attention_mask": torch.ones(1, 8, dtype=torch.int64)}


def token_ids():
    import torch

    return {"input_ids": torch.randint(0, 128, (1, 8))}


def img32():
    import torch

    return torch.randn(1, 3, 32, 32)


def img64():
    import torch

    return torch.randn(1, 3, 64, 64)


def spec(fn: str) -> str:
    return f"{HERE}:{fn}"


def mobilenetv3():
    return _zoo("mobilenetv3")


# arch -> (inputs, exporters, {kind: target}): a norm / a Conv by its module (found in the file by its
# tensor), the k-th GELU-like constant in graph order; None: the arch has no such attribute (a CNN's
# BatchNorm is folded into its Conv by both exporters: no epsilon left in the file)
ARCHS: dict[str, tuple[str, tuple[str, ...], dict[str, Any]]] = {
    "bert": ("tokens", ("torchscript", "dynamo"), {"epsilon": "encoder.layer.1.attention.output.LayerNorm",
                                                   "pads": None, "alpha": -1}),
    "gpt2": ("token_ids", ("dynamo",), {"epsilon": "h.1.ln_2", "pads": None, "alpha": -1}),
    "vit": ("img32", ("torchscript", "dynamo"), {"epsilon": "layers.1.layernorm_after", "pads": None,
                                                 "alpha": -1}),
    "resnet18": ("img32", ("dynamo", "torchscript"), {"epsilon": None, "pads": "layer2.0.conv2", "alpha": None}),
    "efficientnet_b0": ("img64", ("torchscript", "dynamo"), {"epsilon": None, "pads": "blocks.3.0.conv_dw",
                                                             "alpha": None}),
    "convnext_atto": ("img32", ("torchscript", "dynamo"), {"epsilon": "stages.2.blocks.0.norm",
                                                           "pads": "stages.1.blocks.0.conv_dw", "alpha": -1}),
    "mobilenetv3": ("img64", ("torchscript",), {"epsilon": None, "pads": "blocks.2.0.conv_dw", "alpha": -1}),
}


def feeds_by_name(raw: Path, input_spec: str) -> Callable[[int], dict]:
    """Sample i of the input spec as drifttui draws it, by the graph's input names: the calibration data."""
    import onnx

    from drifttui.core.model.inputs import build_source
    from drifttui.core.model.spec import parse_input_spec

    names = [i.name for i in onnx.load(str(raw), load_external_data=False).graph.input]
    source = build_source(parse_input_spec(input_spec), 0, False, None, None)

    def feed(i: int) -> dict:
        args, kwargs = source.sample(i)
        return {n: t.numpy() for n, t in zip(names, list(args) + list(kwargs.values()))}
    return feed


def _feeds(raw: Path, inputs: str) -> Callable[[int], dict]:
    return feeds_by_name(raw, spec(inputs))


def _tool(name: str) -> Callable[[Path, Path, str], Path]:
    from tests.deploy import precision_models as PM
    from tests.deploy import processed as P

    def fp16(keep_io: bool, occ: bool = False):
        def run(src, dst, _inputs):
            import onnx

            if occ:
                from onnxconverter_common import float16 as conv
            else:
                from onnxruntime.transformers import float16 as conv
            onnx.save(conv.convert_float_to_float16(onnx.load(str(src)), keep_io_types=keep_io), str(dst))
            return dst
        return run

    def static(fmt: str):
        def run(src, dst, inputs):
            q = PM.int8_qdq if fmt == "qdq" else PM.int8_qoperator
            return q(src, dst, _feeds(src, inputs), n=4)
        return run

    tools = {
        "onnxsim": lambda s, d, _: P.onnxsim(s, d), "onnxslim": lambda s, d, _: P.onnxslim(s, d),
        "onnxoptimizer": lambda s, d, _: P.onnxoptimizer(s, d),
        "ort-basic": lambda s, d, _: P.ort_offline("basic")(s, d),
        "ort-extended": lambda s, d, _: P.ort_offline("extended")(s, d),
        "ort-all": lambda s, d, _: P.ort_offline("all")(s, d),
        "fp16": fp16(True), "fp16-io": fp16(False), "fp16-occ": fp16(True, occ=True),
        "dynamic": lambda s, d, _: PM.int8_dynamic(s, d), "qdq": static("qdq"), "qoperator": static("qoperator"),
    }
    return tools[name]


TOOLS = ("onnxsim", "onnxslim", "ort-basic", "ort-extended", "ort-all", "fp16", "fp16-io", "fp16-occ",
         "dynamic", "qdq", "qoperator")


def export(arch: str, exporter: str, folder: Path) -> Path:
    import onnx

    from tests.deploy.precision_models import export as pm_export

    inputs = ARCHS[arch][0]
    path = pm_export(arch, inputs, exporter, folder / "export", spec_of=spec)
    one = folder / f"{arch}-raw.onnx"
    onnx.save(onnx.load(str(path)), str(one))      # one self-contained file for the tools
    return one


def plant(arch: str, kind: str, src: Path, dst: Path) -> Optional[Path]:
    from tests.deploy import attr_plant as A

    target = ARCHS[arch][2][kind]
    if target is None:
        return None
    if kind == "alpha":
        return A.alpha(src, target, dst)
    module = globals()[arch]().get_submodule(target)
    if kind == "epsilon":
        return A.epsilon(src, module.weight.detach().numpy(), 0.1, dst)
    return A.pads(src, module.weight.detach().numpy(), dst)


def check(arch: str, path: Path, samples: int = 2) -> Any:
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    return run_once(Config(model=spec(arch), inputs=spec(ARCHS[arch][0]), onnx=str(path), samples=samples)).result


def outcome(result: Any, expected: str) -> str:
    """"named", "elsewhere (MODULE)", or "not found".  Named: the raw export's origin, or the call whose
    fused node swallowed it (ORT computes Conv + BatchNorm + ReLU in one node: the ReLU's value is the
    first the file has; test_processed_matrix._same_origin's rule)."""
    from drifttui.core.result import FUSED

    o = result.drift_origin
    if result.verdict != "drift" or o is None:
        return "not found"
    if o.module == expected:
        return "named"
    lost = next((L for L in result.layers if L.module == expected), None)
    owner = result.layers[o.layer]
    if lost is not None and lost.status == FUSED and (f"outputs {o.module}'s value" in lost.note
                                                      or (expected in owner.note and "also computes" in owner.note)):
        return "named"
    return f"elsewhere ({o.module})"


def loads(path: Path) -> bool:
    import onnxruntime as ort

    try:
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        return True
    except Exception:       # noqa: BLE001 - the tool's file is not one ORT runs: no point
        return False


def measure(arch: str, exporter: str, tools: tuple[str, ...] = TOOLS, kinds: tuple[str, ...] = KINDS,
            folder: Optional[Path] = None, say: Callable[[str], None] = lambda _: None) -> dict[tuple[str, str], str]:
    """(tool, kind) -> outcome for one architecture ("n/a": nothing of that kind in the file, or the
    raw export does not drift with it: below the tolerance)."""
    folder = folder or Path(tempfile.mkdtemp(prefix=f"matrix-{arch}-{exporter}-"))
    raw = export(arch, exporter, folder)
    truth: dict[str, Optional[str]] = {}
    for kind in kinds:
        bad = plant(arch, kind, raw, folder / f"raw-{kind}.onnx")
        r = check(arch, bad) if bad is not None else None
        truth[kind] = r.drift_origin.module if r is not None and r.drift_origin is not None else None
        say(f"raw\t{kind}\t{'n/a' if bad is None else truth[kind] or 'not found in the raw export'}")
    out: dict[tuple[str, str], str] = {}
    for tool in tools:
        try:
            dep = _tool(tool)(raw, folder / f"{tool}.onnx", ARCHS[arch][0])
        except Exception as exc:        # noqa: BLE001 - the tool itself refuses the model
            out.update({(tool, k): f"n/a: the tool failed ({type(exc).__name__})" for k in kinds})
            continue
        if not loads(dep):
            out.update({(tool, k): "n/a: ONNX Runtime refuses the tool's file" for k in kinds})
            continue
        for kind in kinds:
            if truth[kind] is None:
                out[(tool, kind)] = "n/a"
                continue
            bad = plant(arch, kind, dep, folder / f"{tool}-{kind}.onnx")
            if bad is None:
                out[(tool, kind)] = "n/a"
                continue
            try:
                out[(tool, kind)] = outcome(check(arch, bad), truth[kind])
            except Exception as exc:    # noqa: BLE001 - an exit drifttui must not make
                out[(tool, kind)] = f"error ({type(exc).__name__}: {str(exc)[:80]})"
            say(f"{tool}\t{kind}\t{out[(tool, kind)]}")
    return out


def main(argv: list[str], archs_known: Optional[dict] = None, tools_known: tuple = (), run: Any = None) -> None:
    """``python -m`` entry of a matrix: the archs, tools and exporters named in ``argv`` (all by default)."""
    archs_known, tools_known, run = archs_known or ARCHS, tools_known or TOOLS, run or measure
    archs = [a for a in argv if a in archs_known] or list(archs_known)
    tools = tuple(t for t in argv if t in tools_known) or tools_known
    exporters = [e for e in argv if e in ("dynamo", "torchscript")]
    for arch in archs:
        for exporter in [e for e in archs_known[arch][1] if not exporters or e in exporters]:
            run(arch, exporter, tools, say=lambda line, a=arch, e=exporter: print(f"{a}\t{e}\t{line}", flush=True))


if __name__ == "__main__":
    main(sys.argv[1:])
