"""The pipelines the compose tests run: a raw export, then the real tools, each into a temp dir."""
from __future__ import annotations

from pathlib import Path

import onnx
import torch

from tests.compose import models as M
from tests.deploy.processed import onnxsim, onnxslim  # noqa: F401  (the same tool calls as the deploy suite)


def raw(name: str, exporter: str, folder: Path) -> Path:
    """The model exported once, saved as one self-contained file (the tools write elsewhere)."""
    from drifttui.core.model.export import export_model

    x = torch.randn(*[int(d) for d in M.INPUTS[name].split(":")[1].split("x")])
    path = export_model(getattr(M, name)(), (x,), {}, exporter, folder, name=f"{name}-{exporter}.onnx")
    out = folder / f"{name}-{exporter}-raw.onnx"
    onnx.save(onnx.load(str(path)), str(out))
    return out


def ort_offline(level: str, src: Path, dst: Path, disabled: tuple = ()) -> Path:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = {"basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                                   "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                                   "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}[level]
    so.optimized_model_filepath = str(dst)
    so.log_severity_level = 3
    ort.InferenceSession(str(src), so, providers=["CPUExecutionProvider"], disabled_optimizers=list(disabled))
    return dst


def float16(src: Path, dst: Path) -> Path:
    from onnxconverter_common import float16 as f16

    onnx.save(f16.convert_float_to_float16(onnx.load(str(src)), keep_io_types=True), str(dst))
    return dst
