"""ONNX Runtime side: sessions with every wanted intermediate value as a graph output."""
from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Sequence

import numpy as np

from drifttui.core.onnx.io import fits_inline, save_model
from drifttui.core.onnx.lacking import lacking
from drifttui.core.result import OPT_LEVELS
from drifttui.core.runtime import cores
from drifttui.core.onnx.weights import SharedWeights
from drifttui.errors import InputError, ModelError, first_line


def session_options(opt_level: str, deterministic: bool, optimized_path: Optional[Path] = None,
                    settings: Sequence[tuple[str, str]] = ()) -> Any:
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
    so.log_severity_level = 4      # fatal only: a failure is raised, and drifttui says it in one line
    # ORT's idle workers busy-wait after each run by default, taking the cores the torch forward
    # that follows needs (2-4x slower torch on a small machine); they sleep instead.
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.add_session_config_entry("session.inter_op.allow_spinning", "0")
    apply_settings(so, settings)
    if deterministic:
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.enable_cpu_mem_arena = False
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if optimized_path is not None:
        so.optimized_model_filepath = str(optimized_path)
    return so


def apply_settings(so: Any, settings: Sequence[tuple[str, str]]) -> None:
    """A served model's session options (``Config.session``: what Triton's onnxruntime backend sets
    from its config.pbtxt, runtime/triton/settings.py) applied to ``so``."""
    import onnxruntime as ort

    for key, value in settings:
        if key == "intra_op_threads":
            so.intra_op_num_threads = int(value)
        elif key == "inter_op_threads":
            so.inter_op_num_threads = int(value)
        elif key == "execution_mode":
            so.execution_mode = ort.ExecutionMode.ORT_PARALLEL if value == "parallel" else ort.ExecutionMode.ORT_SEQUENTIAL
        elif key == "mem_arena":
            so.enable_cpu_mem_arena = value == "1"
        elif key == "mem_pattern":
            so.enable_mem_pattern = value == "1"
        else:
            raise InputError(f"unknown session setting {key!r}",
                             "use intra_op_threads, inter_op_threads, execution_mode, mem_arena or mem_pattern")


def make_session(model: Any, opt_level: str, deterministic: bool, provider: str, workdir: Path,
                 name: str = "session.onnx", optimized_path: Optional[Path] = None,
                 extra_outputs: Sequence[str] = (), data_dir: Optional[Path] = None,
                 prepack: bool = True, settings: Sequence[tuple[str, str]] = (),
                 types: Optional[Mapping[str, int]] = None) -> Any:
    """An InferenceSession for ``model`` whose graph also outputs ``extra_outputs`` (by name only).

    The extra outputs are added to ``model`` for the time it takes to serialise it and removed
    again: no copy of the model per session.  Initializers stored as external data (every big
    model: see ``loading.load_onnx``) are not in the proto: the session reads them from the one
    mapping of their file in ``data_dir`` (``weights.SharedWeights``), so the serialised graph is
    small whatever the size of the weights.  ``prepack=False``: ORT uses the mapped weights as
    they lie instead of copying them into its packed layout (sessions that run a few times: the
    per-layer pass, the observer check, the local graph, the pairing run; the output pass, which
    runs every sample, packs them as a deployment does, and reads them from the file itself).  ``types``: the
    element types of ``model``'s values the caller holds (``GraphIndex.elem_types``): an extra output numpy has no
    type for is read through a float32 Cast without a shape inference per session.
    """
    import onnx
    import onnxruntime as ort

    available = ort.get_available_providers()
    if provider not in available:
        raise InputError(f"execution provider {provider!r} is not available in this onnxruntime",
                         f"use one of {', '.join(available)}")
    so = session_options(opt_level, deterministic, optimized_path, settings)
    if not prepack:
        so.add_session_config_entry("session.disable_prepacking", "1")
    shared: Any = None
    if data_dir is not None:
        so.add_session_config_entry("session.model_external_initializers_file_folder_path",
                                    utf8_folder(data_dir, workdir))
        if not prepack:
            # a packing session reads the file itself: ORT frees each raw weight once packed (the
            # 220M LLaMA's output session peaks at 0.92 GB so, 1.51 GB over the shared mapping)
            shared = SharedWeights.of(data_dir).add_to(so, model)
    outputs, nodes = model.graph.output, model.graph.node
    kept, kept_nodes = len(outputs), len(nodes)
    have = {o.name for o in outputs}
    extra = [n for n in dict.fromkeys(extra_outputs) if n not in have]
    read = _read_as_float32(model, extra, types)
    nodes.extend(onnx.helper.make_node("Cast", [n], [c], name=f"{c}/cast", to=onnx.TensorProto.FLOAT)
                 for n, c in read.items())
    outputs.extend(onnx.ValueInfoProto(name=read.get(n, n)) for n in extra)
    try:
        payload: Any = model.SerializeToString() if fits_inline(model) else str(save_model(model, workdir / name))
    finally:
        del outputs[kept:]
        del nodes[kept_nodes:]
    try:
        session = ort.InferenceSession(payload, so, providers=[provider])
    except Exception as exc:
        first = first_line(exc)
        raise ModelError(f"ONNX Runtime cannot load the graph: {first[:400]}", load_fix(first)) from exc
    session._drifttui_weights = shared      # the mapped buffers live as long as the session
    session._drifttui_read = read           # a value numpy has no type for -> the float32 Cast that reads it
    return session


def _read_as_float32(model: Any, extra: list[str], types: Optional[Mapping[str, int]] = None) -> dict[str, str]:
    """Each of ``extra`` whose element type numpy lacks (bfloat16, float8: ONNX Runtime cannot hand it to numpy,
    and the whole run fails) -> the name of an exact Cast to float32 that reads it (``onnx/lacking.py``: the types
    ``types`` gives, the index's, else shape inference of a graph that holds such a type at all)."""
    return {n: f"{n}/drifttui_float32" for n in lacking(model, extra, types)} if extra else {}


# ORT's type inference refusing a node whose output the file declares in another element type than the
# node computes ("Type (tensor(float16)) of output arg (select) of node (node_select) does not match
# expected type (tensor(float))"): the file is inconsistent, as a float16 converter that retyped a value
# but not the node making it leaves it (onnxconverter-common's float16 on a dynamo export's Where)
_MISTYPED = re.compile(r"Type \(tensor\((\w+)\)\) of (?:output|input) arg \(([^)]*)\) of node \(([^)]*)\) does not "
                       r"match expected type \(tensor\((\w+)\)\)")

_MIXED = re.compile(r"bound to different types \(tensor\((\w+)\) and tensor\((\w+)\) in node \(([^)]*)\)")


def load_fix(message: str) -> str:
    """The fix for ONNX Runtime refusing a graph: a mistyped node is the converter's defect (the file
    says one element type, the node computes another), anything else an op this onnxruntime lacks."""
    m = _MISTYPED.search(message)
    if m:
        declared, value, node, computed = m.groups()
        return (f"the file itself is inconsistent: it declares {value!r} as {declared} where node {node!r} "
                f"computes {computed}, a defect of the converter that wrote it (onnxconverter-common's float16 "
                f"conversion of a dynamo export does this); convert again with onnxruntime.transformers.float16, "
                f"or keep node {node!r} in float32 (the converter's node_block_list)")
    m = _MIXED.search(message)
    if m:
        a, b, node = m.groups()
        return (f"the file itself is inconsistent: node {node!r} reads {a} and {b} where its op needs one type, a "
                f"defect of the converter that wrote it (onnxconverter-common's float16 conversion leaves an input "
                f"unconverted); convert again with onnxruntime.transformers.float16, or keep node {node!r} in "
                f"float32 (the converter's node_block_list)")
    if "Cannot parse data from external tensors" in message:
        return ("ONNX Runtime itself cannot load this file: a constant it must read to infer shapes (axes, a "
                "shape) lies in external data; save the file with its small tensors inline (onnx.save(..., "
                "save_as_external_data=True) with the default size_threshold=1024, not 0)")
    return ("check that every op is supported by this onnxruntime and provider "
            "(try another --opset when exporting, or a newer onnxruntime)")


def session_at_or_below(model: Any, opt_level: str, deterministic: bool, provider: str, workdir: Path,
                        name: str, data_dir: Optional[Path] = None,
                        settings: Sequence[tuple[str, str]] = ()) -> tuple[Any, str, str]:
    """(session, level, why): a plain session of ``model`` at ``opt_level``, or, when ONNX Runtime
    refuses the file at that level, at the highest lower level it accepts, and why the level was
    lowered ("" when it was not).  Files ORT saved itself (``optimized_model_filepath`` at basic)
    can fail ORT's own re-optimisation at ``all`` ("Attempt to replace the existing tensor" in
    AddInitializerWithOrtValue, onnxruntime 1.32) while running as given at a lower level: such a
    file is deployed at that level, and drifttui's output pass runs it there."""
    order = list(OPT_LEVELS)
    levels = [lv for lv in reversed(order[:order.index(opt_level) + 1])] if opt_level in order else [opt_level]
    first: Optional[ModelError] = None
    for level in levels:
        try:
            session = make_session(model, level, deterministic, provider, workdir, name, data_dir=data_dir,
                                   settings=settings)
        except ModelError as exc:
            first = first or exc
            continue
        why = "" if first is None else first.problem.removeprefix("ONNX Runtime cannot load the graph: ")
        return session, level, why
    assert first is not None
    raise first


def utf8_folder(folder: Path, workdir: Path) -> str:
    """``folder`` as text ONNX Runtime takes: UTF-8 only, so a folder whose name holds a non-UTF-8
    byte is reached through a link of a UTF-8 name in ``workdir`` (the folder itself is untouched)."""
    import hashlib
    import os

    text = str(folder)
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    link = Path(workdir) / f"folder-{hashlib.sha1(os.fsencode(text)).hexdigest()[:12]}"
    if not link.is_symlink():
        os.symlink(os.path.abspath(folder), link, target_is_directory=True)
    return str(link)


class RunFailure(ModelError):
    """ONNX Runtime failed while running the graph on feeds that fit it (exit 3); ``detail`` is its
    line, for the caller that knows the sample (``on_sample``)."""

    FIX = ("the feeds fit the graph's inputs, so the file holds a node ONNX Runtime cannot run on them (the node "
           "named above): re-export with the other exporter (torch.onnx.export(..., dynamo=True / False)) or "
           "without the tool that wrote that node; rerun with --debug for ONNX Runtime's whole message")

    def __init__(self, detail: str, where: str = "while running the graph") -> None:
        self.detail = detail
        super().__init__(f"ONNX Runtime failed {where}: {detail}", self.FIX)


@contextlib.contextmanager
def on_sample(which: str) -> Iterator[None]:
    """ONNX Runtime failing on a sample is said as such, naming it: "ONNX Runtime failed on sample
    7 of 20: ..." (exit 3), not as the inputs not fitting the graph."""
    try:
        yield
    except RunFailure as exc:
        raise RunFailure(exc.detail, f"on {which}") from exc


def run(session: Any, feeds: dict[str, np.ndarray], names: Optional[list[str]] = None) -> dict[str, np.ndarray]:
    read = getattr(session, "_drifttui_read", None) or {}
    try:
        with cores.foreground():
            outs = session.run([read.get(n, n) for n in names] if names and read else names, feeds)
    except Exception as exc:
        first = first_line(exc)
        low = first.lower()
        if "invalid_argument" in low or "got invalid dimensions" in low or "unexpected input data type" in low \
                or "invalid rank" in low or "required inputs" in low:
            mismatch, spec = feed_mismatch(session, feeds)
            if mismatch:        # feeds that fit the graph's inputs: a node failed at run time (exit 3)
                raise InputError(f"the inputs do not fit the ONNX graph: {mismatch}",
                                 "give inputs with the shapes/dtypes the graph expects ("
                                 + (f"--inputs {spec}" if spec else "--inputs") + ")") from exc
        raise RunFailure(first[:300]) from exc
    back = {c: n for n, c in read.items()}
    out_names = names or [back.get(o.name, o.name) for o in session.get_outputs()]
    return dict(zip(out_names, outs))


# ONNX Runtime's input type names -> the dtype names of --inputs specs
_ORT_TYPES = {"tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16",
              "tensor(bfloat16)": "bfloat16", "tensor(int64)": "int64", "tensor(int32)": "int32",
              "tensor(int16)": "int16", "tensor(int8)": "int8", "tensor(uint8)": "uint8", "tensor(bool)": "bool"}


def _dims(shape: Sequence[Any]) -> str:
    return "x".join(str(d) if isinstance(d, int) and d >= 0 else str(d or "?") for d in shape) or "scalar"


def feed_mismatch(session: Any, feeds: dict[str, np.ndarray]) -> tuple[str, str]:
    """(which graph input does not fit the feeds and how: expected vs given shape and dtype, one
    clause per input; an ``--inputs shape:...`` spec that fits the graph when every dim is
    known, else ""), or ("", "") when the inputs' shapes and dtypes match (the error is elsewhere)."""
    clauses: list[str] = []
    specs: list[str] = []
    for inp in session.get_inputs():
        want_dt = _ORT_TYPES.get(inp.type, inp.type)
        shape = list(inp.shape or [])
        static = all(isinstance(d, int) and d > 0 for d in shape)
        specs.append(("" if want_dt == "float32" else f"{want_dt}:") + _dims(shape) if static else "")
        if inp.name not in feeds:
            clauses.append(f"input {inp.name} ({_dims(shape)} {want_dt}) is not given")
            continue
        got = feeds[inp.name]
        got_dt = str(got.dtype)
        fits = len(got.shape) == len(shape) and all(
            not (isinstance(d, int) and d >= 0) or d == g for d, g in zip(shape, got.shape))
        if not fits or (want_dt in _ORT_TYPES.values() and got_dt != want_dt):
            clauses.append(f"input {inp.name}: the graph expects {_dims(shape)} {want_dt}, "
                           f"the inputs give {_dims(list(got.shape))} {got_dt}")
    spec = "shape:" + ";".join(specs) if clauses and all(specs) else ""
    return "; ".join(clauses), spec
