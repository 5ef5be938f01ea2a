"""Export a torch model to ONNX in a temporary directory, with either exporter.

``auto`` (the default) tries the dynamo exporter, then the TorchScript one, and says which one
produced the file and why the first failed; an explicit choice is strict.  Named (dict) inputs
are passed as keyword arguments to both exporters.
"""
from __future__ import annotations

import contextlib
import io
import logging
import warnings
from pathlib import Path
from typing import Any, Callable, Optional

from drifttui.errors import ModelError, environment_failure, first_line
from drifttui.core.model.peephole import without_onnx_peephole
from drifttui.core.model.retrace import retrace as trace

EXPORTERS = ("dynamo", "torchscript")
AUTO = "auto"
CHOICES = (AUTO,) + EXPORTERS
TORCHSCRIPT_OPSET = 17      # the TorchScript exporter's opset unless another is asked for
TORCHSCRIPT_MAX_OPSET = 20  # the last opset it writes (torch.onnx._constants.ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET)


@contextlib.contextmanager
def quiet():
    """Silence the exporters' progress prints and warnings (kept for --debug via logging)."""
    import torch

    out, err = io.StringIO(), io.StringIO()
    loggers = [logging.getLogger(n) for n in ("torch.onnx", "torch._dynamo", "torch.export", "onnxscript", "torch")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    # torch's TorchScript exporter turns its ONNX log on by mistake (setup_onnx_logging tests the
    # function _jit_is_onnx_log_enabled, not its result) and, when an export fails, C++ prints the
    # whole TorchScript graph to file descriptor 1, past redirect_stdout: it corrupted
    # `diagnose --json -` and the TUI's screen.  The log call is a no-op while drifttui exports.
    log = getattr(torch._C, "_jit_onnx_log", None)
    was_on = torch._C._jit_is_onnx_log_enabled() if hasattr(torch._C, "_jit_is_onnx_log_enabled") else None
    if log is not None:
        torch._C._jit_onnx_log = _no_log
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            warnings.simplefilter("ignore")
            yield out, err
    finally:
        for lg, lvl in zip(loggers, levels):
            lg.setLevel(lvl)
        if log is not None:
            torch._C._jit_onnx_log = log
        if was_on is False:
            torch._C._jit_set_onnx_log_enabled(False)


@contextlib.contextmanager
def kept_modes(model: Any):
    """Every submodule of ``model`` left in the train/eval mode it had: the TorchScript exporter puts the
    module in eval mode and then back in the mode of the module it was handed, recursively, so a wrapper
    in training mode (a fresh ``nn.Module``) around an eval-mode submodule of the user's model left that
    submodule in training mode, and every later torch forward ran its dropout."""
    modules = list(model.modules()) if hasattr(model, "modules") else []
    modes = [m.training for m in modules]
    try:
        yield
    finally:
        for m, mode in zip(modules, modes):
            m.training = mode


def _no_log(*_: Any) -> None:
    return None


def export_model(model: Any, args: tuple, kwargs: dict, exporter: str, workdir: Path,
                 name: str = "model.onnx", dynamic: bool = False, opset: Optional[int] = None,
                 decompose: bool = False, retrace: bool = False, optimize: bool = True, script: bool = False,
                 dims: Optional[list[list[int]]] = None, peephole: bool = True, training: bool = False,
                 relower: tuple = ()) -> Path:
    """Export into ``workdir`` and return the path. Raises ModelError with a one-line reason.  ``dynamic``: dim 0
    of every input is a dynamic batch dim (``--batch``).  ``opset``: another opset than the exporter's default.
    ``decompose`` (dynamo): the program is decomposed with torch's own core ATen table (``ExportedProgram.
    run_decompositions``) before the exporter lowers it, so the ops torchlib lowers by hand go through torch's
    decompositions instead.  ``retrace``: the module is
    first re-traced into core ATen by ``make_fx`` (``retrace.py``: torch's core table, the definitions of the ops
    torch decomposes nowhere, and torch's own decomposition of the ``relower`` ops), and that GraphModule is exported.
    ``optimize=False`` (dynamo): the exporter's ONNX optimizer is not run on the translated graph.
    ``script`` (TorchScript): the module is compiled by ``torch.jit.script`` first, so a Python ``if`` or a
    number taken from a tensor is exported as the graph's own ``If`` / computation instead of the example's
    path.  ``dims``: per positional input, the dims exported dynamic (a file's dynamic length).  ``peephole=False``
    (TorchScript): its ONNX peephole pass is left out (peephole.py); ``training``: TRAINING mode."""
    import torch

    if exporter not in EXPORTERS:
        raise ValueError(exporter)
    path, dyn = workdir / name, dynamic
    with quiet() as (out, err), kept_modes(model):
        try:
            if retrace:
                model = trace(model, tuple(args), relower)
            if script:
                model = torch.jit.script(model)
            if exporter == "dynamo":
                extra: dict = {}
                if dyn:
                    extra["dynamic_shapes"] = _dynamic_shapes(torch, args, kwargs)
                elif dims and any(dims) and not kwargs:
                    extra["dynamic_shapes"] = tuple({j: torch.export.Dim.DYNAMIC for j in d} or None for d in dims)
                if opset is not None:
                    extra["opset_version"] = opset
                target = model
                if decompose:
                    target = torch.export.export(model, args, kwargs=kwargs or None,
                                                 dynamic_shapes=extra.pop("dynamic_shapes", None))
                    target = target.run_decompositions(torch.export.default_decompositions())
                program = torch.onnx.export(target, args, kwargs=kwargs or None, dynamo=True, optimize=optimize,
                                            verbose=False, external_data=False, **extra)
                program.save(str(path), external_data=True)     # weights read where they lie
            else:
                with contextlib.nullcontext() if peephole else without_onnx_peephole():
                    _torchscript_at_its_opset(torch, model, args, kwargs, path, dyn, opset, dims,
                                              {"training": torch.onnx.TrainingMode.TRAINING} if training else {})
        except ModelError:
            raise
        except Exception as exc:
            refused = environment_failure(exc, str(path))     # a full disk, a file-size limit: exit 2
            if refused is not None:
                raise refused from exc
            msg = _reason(exc)
            other = "torchscript" if exporter == "dynamo" else "dynamo"
            raise ModelError(f"{exporter} export failed: {type(exc).__name__}: {msg[:300]}",
                             f"try --exporter {other}, or export yourself and pass --onnx FILE "
                             "(rerun with --debug for the traceback)") from exc
    return path


def _torchscript_at_its_opset(torch: Any, model: Any, args: tuple, kwargs: dict, path: Path, dyn: bool,
                              opset: Optional[int], dims: Optional[list[list[int]]], mode: dict) -> None:
    """The TorchScript export at ``opset``, or at the default and, when torch refuses an op there, at the opset its
    refusal names (``_needed_opset``)."""
    try:
        _export_torchscript(torch, model, args, kwargs, path, dyn, opset or TORCHSCRIPT_OPSET, dims, mode)
    except torch.onnx.errors.UnsupportedOperatorError as exc:
        needed = _needed_opset(exc) if opset is None else None
        if needed is None:
            raise
        _export_torchscript(torch, model, args, kwargs, path, dyn, needed, dims, mode)


def _needed_opset(exc: BaseException) -> Optional[int]:
    """The opset the TorchScript exporter says an op it refused at the default opset needs ("Support for this
    operator was added in version 18": ``aten::bitwise_and``, GPTQ's nibble unpacking), up to the last opset it
    writes; None otherwise."""
    import re

    found = re.search(r"added in version (\d+)", str(exc))
    needed = int(found.group(1)) if found else None
    return needed if needed is not None and TORCHSCRIPT_OPSET < needed <= TORCHSCRIPT_MAX_OPSET else None


def opset_note(exporter: str, opset: Optional[int]) -> str:
    """Why a file drifttui exported with the TorchScript exporter is not at its default opset (a refused op
    needed a later one: ``_needed_opset``), or ""."""
    if exporter != "torchscript" or opset is None or opset <= TORCHSCRIPT_OPSET:
        return ""
    return (f"the TorchScript exporter lowers an op of the model only from opset {opset}: the file was exported at "
            f"opset {opset} (drifttui's default is {TORCHSCRIPT_OPSET})")


def _reason(exc: BaseException) -> str:
    """The informative line of an export failure: torch.export wraps the real error as the cause."""
    seen = exc
    for _ in range(5):
        cause = seen.__cause__ or seen.__context__
        if cause is None:
            break
        seen = cause
    msg = first_line(seen)
    if seen is not exc:
        msg = f"{type(seen).__name__}: {msg}"
    return msg


def _export_torchscript(torch: Any, model: Any, args: tuple, kwargs: dict, path: Path, dyn: bool,
                        opset: int = TORCHSCRIPT_OPSET, dims: Optional[list[list[int]]] = None,
                        mode: Optional[dict] = None) -> None:
    """TorchScript export; named inputs become keyword arguments of ``forward``.

    The TorchScript tracer calls ``model(*args)``: for named inputs the instance's ``forward`` is
    replaced, for the export only, by one taking them positionally and calling the original with
    keywords (no wrapper module, so node names keep the model's own scopes), and the graph
    inputs are named after the keys.
    """
    axes: dict = {}
    if kwargs:
        if args:
            raise ModelError("the TorchScript exporter cannot take mixed positional and named inputs",
                             "return either a tuple or a dict of tensors from --inputs")
        names = list(kwargs)
        orig = model.forward

        def positional(*vals: Any) -> Any:
            return orig(**dict(zip(names, vals)))
        model.forward = positional
        try:
            if dyn:
                axes = {"dynamic_axes": {n: {0: "batch"} for n in names}}
            torch.onnx.export(model, tuple(kwargs.values()), str(path), dynamo=False, opset_version=opset,
                              input_names=names, **axes, **(mode or {}))
        finally:
            del model.forward
        return
    if dyn:
        names = _input_names(model, len(args))
        axes = {"input_names": names, "dynamic_axes": {n: {0: "batch"} for n in names}}
    elif dims and any(dims):
        names = [f"input_{i}" for i in range(len(args))]
        axes = {"input_names": names, "dynamic_axes": {n: {j: f"{n}_d{j}" for j in d} for n, d in zip(names, dims) if d}}
    torch.onnx.export(model, args, str(path), dynamo=False, opset_version=opset, **axes, **(mode or {}))


def export_auto(do_export: Callable[[str], Path], exporter: str) -> tuple[Path, str, str]:
    """Run ``do_export(name)`` for ``exporter``; ``auto``: dynamo, then TorchScript.

    Returns (path, the exporter that produced it, a note: why the first one failed, or "").
    """
    if exporter != AUTO:
        return do_export(exporter), exporter, ""
    try:
        return do_export("dynamo"), "dynamo", ""
    except ModelError as exc:
        why = exc.problem
    try:
        path = do_export("torchscript")
    except ModelError as second:
        raise ModelError(f"both exporters failed: {why}; {second.problem}",
                         "export yourself and pass --onnx FILE (rerun with --debug for the traceback)") from second
    return path, "torchscript", f"--exporter auto: {why}; the file was exported with the TorchScript exporter instead"


def _dynamic_shapes(torch: Any, args: tuple, kwargs: dict) -> Any:
    batch = torch.export.Dim("batch")
    if args and kwargs:
        raise ModelError("a dynamic batch export of mixed positional and named inputs is not supported", "")

    def dims(t: Any) -> Any:
        return {0: batch} if getattr(t, "ndim", 0) else None
    if kwargs:
        return {k: dims(v) for k, v in kwargs.items()}
    return tuple(dims(a) for a in args)


def _input_names(model: Any, n: int) -> list[str]:
    import inspect

    try:
        params = [p.name for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError, AttributeError):
        params = []
    return params[:n] if len(params) >= n else [f"input_{i}" for i in range(n)]
