"""ONNX Runtime side: sessions with every wanted intermediate value as a graph output."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import numpy as np

from drifttui.errors import InputError, ModelError

OPT_LEVELS = ("disable", "basic", "extended", "all")


def session_options(opt_level: str, deterministic: bool, optimized_path: Optional[Path] = None) -> Any:
    import onnxruntime as ort

    levels = {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }
    if opt_level not in levels:
        raise InputError(f"unknown --opt-level {opt_level!r}", f"use one of {', '.join(OPT_LEVELS)}")
    so = ort.SessionOptions()
    so.graph_optimization_level = levels[opt_level]
    so.log_severity_level = 3
    # ORT's idle workers busy-wait after each run by default, taking the cores the torch forward
    # that follows needs (2-4x slower torch on a small machine); they sleep instead.
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.add_session_config_entry("session.inter_op.allow_spinning", "0")
    if deterministic:
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.enable_cpu_mem_arena = False
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if optimized_path is not None:
        so.optimized_model_filepath = str(optimized_path)
    return so


def with_outputs(model: Any, names: list[str]) -> Any:
    """A copy of ``model`` whose graph also outputs ``names`` (by name only)."""
    import onnx

    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for n in names:
        if n not in have:
            m.graph.output.append(onnx.ValueInfoProto(name=n))
            have.add(n)
    return m


def make_session(model: Any, opt_level: str, deterministic: bool, provider: str, workdir: Path,
                 name: str = "session.onnx", optimized_path: Optional[Path] = None) -> Any:
    import onnx
    import onnxruntime as ort

    available = ort.get_available_providers()
    if provider not in available:
        raise InputError(f"execution provider {provider!r} is not available in this onnxruntime",
                         f"use one of {', '.join(available)}")
    so = session_options(opt_level, deterministic, optimized_path)
    try:
        if model.ByteSize() < 1_800_000_000:
            payload: Any = model.SerializeToString()
        else:
            path = workdir / name
            onnx.save(model, str(path), save_as_external_data=True, location=name + ".data")
            payload = str(path)
        return ort.InferenceSession(payload, so, providers=[provider])
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"ONNX Runtime cannot load the graph: {first[:400]}",
                         "check that every op is supported by this onnxruntime and provider "
                         "(try another --opset when exporting, or a newer onnxruntime)") from exc


def run(session: Any, feeds: dict[str, np.ndarray], names: Optional[list[str]] = None) -> dict[str, np.ndarray]:
    try:
        outs = session.run(names, feeds)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        low = first.lower()
        if "invalid_argument" in low or "got invalid dimensions" in low or "unexpected input data type" in low \
                or "invalid rank" in low or "required inputs" in low:
            raise InputError(f"the inputs do not fit the ONNX graph: {first[:300]}",
                             "give inputs with the shapes/dtypes the graph expects (--inputs)") from exc
        raise ModelError(f"ONNX Runtime failed while running the graph: {first[:300]}",
                         "check the op named above; rerun with --debug for details") from exc
    out_names = names or [o.name for o in session.get_outputs()]
    return dict(zip(out_names, outs))
