"""Export a torch model to ONNX in a temporary directory, with either exporter."""
from __future__ import annotations

import contextlib
import io
import logging
import warnings
from pathlib import Path
from typing import Any

from drifttui.errors import ModelError, first_line

EXPORTERS = ("dynamo", "torchscript")


@contextlib.contextmanager
def quiet():
    """Silence the exporters' progress prints and warnings (kept for --debug via logging)."""
    out, err = io.StringIO(), io.StringIO()
    loggers = [logging.getLogger(n) for n in ("torch.onnx", "torch._dynamo", "torch.export", "onnxscript", "torch")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            warnings.simplefilter("ignore")
            yield out, err
    finally:
        for lg, lvl in zip(loggers, levels):
            lg.setLevel(lvl)


def export_model(model: Any, args: tuple, kwargs: dict, exporter: str, workdir: Path,
                 name: str = "model.onnx", dynamic: bool = False) -> Path:
    """Export into ``workdir`` and return the path. Raises ModelError with a one-line reason.

    ``dynamic``: dim 0 of every input is a dynamic batch dim (``--batch``)."""
    import torch

    if exporter not in EXPORTERS:
        raise ValueError(exporter)
    path = workdir / name
    dyn = dynamic
    with quiet() as (out, err):
        try:
            if exporter == "dynamo":
                extra: dict = {}
                if dyn:
                    extra["dynamic_shapes"] = _dynamic_shapes(torch, args, kwargs)
                program = torch.onnx.export(model, args, kwargs=kwargs or None, dynamo=True,
                                            verbose=False, external_data=False, **extra)
                program.save(str(path))
            else:
                if kwargs:
                    raise ModelError("the TorchScript exporter cannot take named (dict) inputs",
                                     "use --exporter dynamo or a callable that returns a tuple")
                axes: dict = {}
                if dyn:
                    names = _input_names(model, len(args))
                    axes = {"input_names": names, "dynamic_axes": {n: {0: "batch"} for n in names}}
                torch.onnx.export(model, args, str(path), dynamo=False, opset_version=17, **axes)
        except ModelError:
            raise
        except Exception as exc:
            msg = first_line(exc)
            other = "torchscript" if exporter == "dynamo" else "dynamo"
            raise ModelError(f"{exporter} export failed: {type(exc).__name__}: {msg[:300]}",
                             f"try --exporter {other}, or export yourself and pass --onnx FILE "
                             "(rerun with --debug for the traceback)") from exc
    return path


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
