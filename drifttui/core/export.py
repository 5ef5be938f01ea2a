"""Export a torch model to ONNX in a temporary directory, with either exporter."""
from __future__ import annotations

import contextlib
import io
import logging
import warnings
from pathlib import Path
from typing import Any

from drifttui.errors import ModelError

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
                 name: str = "model.onnx") -> Path:
    """Export into ``workdir`` and return the path. Raises ModelError with a one-line reason."""
    import torch

    if exporter not in EXPORTERS:
        raise ValueError(exporter)
    path = workdir / name
    with quiet() as (out, err):
        try:
            if exporter == "dynamo":
                program = torch.onnx.export(model, args, kwargs=kwargs or None, dynamo=True,
                                            verbose=False, external_data=False)
                program.save(str(path))
            else:
                if kwargs:
                    raise ModelError("the TorchScript exporter cannot take named (dict) inputs",
                                     "use --exporter dynamo or a callable that returns a tuple")
                torch.onnx.export(model, args, str(path), dynamo=False, opset_version=17)
        except ModelError:
            raise
        except Exception as exc:
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            other = "torchscript" if exporter == "dynamo" else "dynamo"
            raise ModelError(f"{exporter} export failed: {type(exc).__name__}: {msg[:300]}",
                             f"try --exporter {other}, or export yourself and pass --onnx FILE "
                             "(rerun with --debug for the traceback)") from exc
    return path
