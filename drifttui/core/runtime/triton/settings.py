"""The ONNX Runtime settings Triton's onnxruntime backend applies for a config, and what of the served
run this machine cannot reproduce.

Read from the backend's source (triton-inference-server/onnxruntime_backend, src/onnxruntime.cc,
``ModelState::ModelState``): ``optimization { graph { level } }`` is Triton's own scale: -1 is
ORT_ENABLE_BASIC, 1 ORT_ENABLE_EXTENDED, 2 ORT_DISABLE_ALL, and anything else (0, absent) leaves
ORT_ENABLE_ALL.  ``parameters``: ``execution_mode`` 0 sequential / 1 parallel (else the model fails to
load), ``intra_op_thread_count`` / ``inter_op_thread_count`` (> 0 sets them, 0 is ORT's default),
``enable_mem_arena`` / ``enable_mem_pattern`` (booleans).  ``execution_accelerators`` put the file
under TensorRT or CUDA on GPU instances (``precision_mode FP16`` computes in half precision) or
OpenVINO on CPU.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from drifttui.core.runtime.triton.config import parameters, pb2
from drifttui.errors import InputError

#: Triton's graph level -> drifttui's --opt-level name (src/onnxruntime.cc)
GRAPH_LEVELS = {-1: "basic", 1: "extended", 2: "disable"}
_TRUE, _FALSE = ("true", "1", "on", "yes"), ("false", "0", "off", "no")


@dataclass(frozen=True)
class OrtSettings:
    """The served session's options; ``None`` leaves ONNX Runtime's default."""

    opt_level: str = "all"
    intra_op_threads: int = 0
    inter_op_threads: int = 0
    parallel: bool = False
    mem_arena: Optional[bool] = None
    mem_pattern: Optional[bool] = None

    def entries(self) -> tuple[tuple[str, str], ...]:
        """The settings as (key, value) pairs carried by ``Config.session`` (sessions.apply_settings)."""
        out = []
        if self.intra_op_threads:
            out.append(("intra_op_threads", str(self.intra_op_threads)))
        if self.inter_op_threads:
            out.append(("inter_op_threads", str(self.inter_op_threads)))
        if self.parallel:
            out.append(("execution_mode", "parallel"))
        for key, value in (("mem_arena", self.mem_arena), ("mem_pattern", self.mem_pattern)):
            if value is not None:
                out.append((key, "1" if value else "0"))
        return tuple(out)


@dataclass(frozen=True)
class Translation:
    settings: OrtSettings
    fields: list[str] = field(default_factory=list)         # the config fields that changed the run
    unreproducible: list[str] = field(default_factory=list)  # what this machine cannot run as served


def _int_param(params: dict[str, str], key: str) -> int:
    text = params.get(key, "0").strip() or "0"
    try:
        return int(text)
    except ValueError:
        raise InputError(f"config parameter {key} is {text!r}, not a whole number",
                         "Triton fails to load this model: give a number") from None


def _bool_param(params: dict[str, str], key: str) -> Optional[bool]:
    if key not in params:
        return None
    text = params[key].strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise InputError(f"config parameter {key} is {params[key]!r}, not a boolean",
                     "Triton fails to load this model: use true or false")


def translate(config: Any) -> Translation:
    """``config`` (a ModelConfig) as the ORT settings the onnxruntime backend uses."""
    fields: list[str] = []
    level = "all"
    if config.HasField("optimization") and config.optimization.HasField("graph"):
        raw = config.optimization.graph.level
        level = GRAPH_LEVELS.get(raw, "all")
        fields.append(f"optimization.graph.level {raw} -> ONNX Runtime {level.upper()} "
                      "(Triton's scale: -1 basic, 1 basic+extended, 2 all off)")
    params = parameters(config)
    mode = _int_param(params, "execution_mode")
    if mode not in (0, 1):
        raise InputError(f"config parameter execution_mode is {mode}", "Triton accepts 0 (sequential) or 1 (parallel)")
    intra, inter = _int_param(params, "intra_op_thread_count"), _int_param(params, "inter_op_thread_count")
    arena, pattern = _bool_param(params, "enable_mem_arena"), _bool_param(params, "enable_mem_pattern")
    for key, shown in (("execution_mode", "parallel" if mode else "sequential"), ("intra_op_thread_count", intra),
                       ("inter_op_thread_count", inter), ("enable_mem_arena", _word(arena)),
                       ("enable_mem_pattern", _word(pattern))):
        if key in params:
            fields.append(f"parameters.{key} {shown}")
    settings = OrtSettings(level, max(intra, 0), max(inter, 0), mode == 1, arena, pattern)
    return Translation(settings, fields, unreproducible(config, params))


def unreproducible(config: Any, params: dict[str, str]) -> list[str]:
    """One clause per part of the served run that ONNX Runtime on this CPU cannot reproduce."""
    out = []
    eas = config.optimization.execution_accelerators
    for ea in eas.gpu_execution_accelerator:
        precision = ea.parameters.get("precision_mode", "FP32")
        if ea.name == "tensorrt":
            out.append(f"TensorRT accelerator (precision_mode {precision}"
                       + (": computes in half precision, ~1e-3 relative error per layer" if precision == "FP16"
                          else "") + ")")
        else:
            out.append(f"GPU accelerator {ea.name!r}")
    for ea in eas.cpu_execution_accelerator:
        out.append(f"CPU accelerator {ea.name!r} (OpenVINO kernels and fusions)" if ea.name == "openvino"
                   else f"CPU accelerator {ea.name!r}")
    kinds = {g.kind for g in config.instance_group}
    gpu = pb2().ModelInstanceGroup.KIND_GPU
    if gpu in kinds and not eas.gpu_execution_accelerator:
        out.append("KIND_GPU instances (the CUDA execution provider"
                   + (f", cudnn_conv_algo_search {params['cudnn_conv_algo_search']}"
                      if "cudnn_conv_algo_search" in params else "") + ")")
    return out


def _word(flag: Optional[bool]) -> str:
    return "" if flag is None else ("true" if flag else "false")
