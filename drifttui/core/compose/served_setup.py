"""The served model's run, set up from a Triton model repository or a live server's config: which
file, which ONNX Runtime settings, which inputs, and the config fields that changed the run."""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from drifttui.core.onnx.graph import elem_type_name
from drifttui.core.prepare.stage import graph_inputs
from drifttui.core.result import Config
from drifttui.core.runtime.triton import boundary as bnd
from drifttui.core.runtime.triton import repository, settings
from drifttui.errors import InputError

_GPU_EPS = ("CUDAExecutionProvider", "TensorrtExecutionProvider")


@dataclass
class Setup:
    """The run's config for the served file, and what the report says about the serving."""

    config: Config
    source: str                                # "repository" | "server"
    model: str
    version: Optional[int] = None
    file: str = ""
    why_file: str = ""
    served_config: Any = None                  # the ModelConfig that serves it
    boundary: Optional[bnd.Boundary] = None
    fields: list[str] = field(default_factory=list)
    unreproducible: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    casts: list[str] = field(default_factory=list)     # dtypes the server casts at its boundary
    request_version: Optional[int] = None              # the version asked of a server (None: its default)


def _file_io(path: str) -> tuple[list, list]:
    import onnx


    try:
        proto = onnx.load(path, load_external_data=False)
    except Exception as exc:
        raise InputError(f"{path} is not a readable ONNX file ({str(exc)[:160]})",
                         "serve a valid .onnx file") from exc

    def dims(vi: Any) -> list:
        return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in vi.type.tensor_type.shape.dim]
    outs = [(o.name, dims(o), elem_type_name(o.type.tensor_type.elem_type)) for o in proto.graph.output]
    return graph_inputs(proto), outs


def apply(config: Config, served: Any, file: str, where: str, ort_backend: bool) -> Setup:
    """``config`` set up to run ``file`` as ``served`` (a ModelConfig) serves it."""
    gin, gout = _file_io(file)
    b = bnd.boundary(served)
    boundary_fields, casts = bnd.check_against_file(b, gin, gout, where, strict=ort_backend)
    changes: dict[str, Any] = {"onnx": file}
    s = Setup(config, "", served.name)
    s.casts = casts
    if ort_backend:
        tr = settings.translate(served)
        changes.update(output_opt_level=tr.settings.opt_level, session=tr.settings.entries())
        s.fields += tr.fields
        s.unreproducible = [u for u in tr.unreproducible
                            if not (u.startswith(("KIND_GPU", "GPU accelerator 'cuda'")) and config.provider in _GPU_EPS)]
        if config.output_opt_level != "all":
            s.notes.append(f"--output-opt-level {config.output_opt_level} was replaced by the served level "
                           f"{tr.settings.opt_level} (the config's)")
    else:
        s.notes.append(f"{where} is served by backend {served.backend or served.platform or 'unknown'!r}: its "
                       "ONNX Runtime settings are not in the config; the file runs with ONNX Runtime's defaults")
    s.fields += boundary_fields
    if served.HasField("dynamic_batching"):
        pref = list(served.dynamic_batching.preferred_batch_size)
        s.fields.append("dynamic_batching (requests joined into batches of up to max_batch_size "
                        f"{served.max_batch_size}" + (f", preferred {pref}" if pref else "") + ")")
    spec = _drawn_inputs(config, b, gin)
    if spec:
        changes["inputs"] = spec
        s.notes.append(f"inputs drawn from the config's inputs: {spec}")
    s.config = dataclasses.replace(config, **changes)
    s.served_config, s.boundary, s.file = served, b, file
    return s


def _drawn_inputs(config: Config, b: Any, gin: Any) -> Optional[str]:
    """The inputs spec drawn from the config, when the run takes it: no --inputs, or the very spec a
    served result's config carries (the TUI's reruns)."""
    if config.inputs is None:
        return bnd.input_spec(b, gin)
    if not config.inputs.startswith("shape:"):
        return None
    try:
        spec = bnd.input_spec(b, gin)
    except InputError:            # the user's own shapes, for a config that names no usable inputs
        return None
    return spec if spec == config.inputs else None


def from_repository(config: Config) -> Setup:
    if not config.triton_model:
        raise InputError("--triton-repo needs --model NAME", "name the model folder in the repository")
    sf = repository.resolve(config.triton_repo or "", config.triton_model, config.triton_version)
    # a served result's own config names the repository's file (the TUI's reruns run it again)
    if config.onnx and os.path.realpath(config.onnx) != os.path.realpath(str(sf.path)):
        raise InputError("--onnx and --triton-repo both name the file", "drop --onnx: the repository chooses the file")
    where = str(sf.path.parent.parent / "config.pbtxt")
    s = apply(config, sf.config, str(sf.path), where, True)
    s.source, s.model, s.version, s.why_file = "repository", sf.name, sf.version, sf.why
    if not sf.has_config:
        s.notes.append("no config.pbtxt: Triton's autocomplete fills it from the file (a variable dim 0 gets "
                       "max_batch_size 4 and dynamic batching); the file ran with the backend's defaults")
    return s


def from_server(config: Config, served: Any) -> Setup:
    """``config`` for a live server's effective config ``served`` (the local file: --onnx or the repository's)."""
    if config.triton_repo:
        s = from_repository(config)
        s.source, s.request_version = "server", config.triton_version
        return s
    if not config.onnx:
        raise InputError("--triton-url needs the file you deployed to compare with",
                         "pass --onnx FILE or --triton-repo REPO as well")
    ort_backend = served.backend == "onnxruntime" or served.platform == repository.ORT_PLATFORM
    s = apply(config, served, str(Path(config.onnx)), f"the server's config of {served.name!r}", ort_backend)
    s.source, s.model, s.version = "server", config.triton_model or served.name, config.triton_version
    s.request_version = config.triton_version
    return s
