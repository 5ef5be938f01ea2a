"""The story of a verified re-export when the file was exported from the module in TRAINING mode.

drifttui compares a file with the model in ``eval()`` (a deployer's checkpoint).  A file exported with
``torch.onnx.export(..., training=TrainingMode.TRAINING)`` (or ``PRESERVE`` of a model left in ``train()``), or by the
dynamo exporter from a model left in ``train()``, computes the module's training-mode forward: a
``BatchNormalization`` with ``training_mode=1`` (the batch's own statistics; the export's trace also moved the running
statistics it holds), a ``Dropout`` drawing masks, an instance norm by each instance's statistics, a spectral norm's
power iteration (Samsung/ONE#12087, pytorch/pytorch#52867, microsoft/onnxscript#1791).  The eval re-export of the
origin verifies; this tells why, by structure and without reading the model's code:

* some module of the origin has a forward that reads its ``training`` flag (the cheap gate: no export otherwise);
* the origin exported again by the file's exporter in training mode (on a copy: a train-mode trace moves buffers)
  writes nodes (op type and attributes; constants left out) that its export in eval mode does not, and the file's
  origin holds every one of them (class by those nodes: a ``BatchNormalization``'s is ``normalization``, a
  ``Dropout``'s ``lowering``); a ``Dropout``'s random masks are told this way, no value can;
* else (a parametrisation whose weight both exports fold into a constant: no node of its own) that training-mode
  export computes the file's values of the origin on the case's torch inputs (``custom-module``: the file holds
  the module's values in another state than the model compared).

Neither: no story of its own (the re-export's story stands).
"""
from __future__ import annotations

import copy
import functools
import inspect
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Optional

import numpy as np

from drifttui.core.explain.causes.locate.evaluate import run_ort
from drifttui.core.explain.causes.propose.reexport.definitions import Told
from drifttui.core.explain.causes.propose.reexport.story import lowering_class
from drifttui.core.model.export import export_model
from drifttui.core.prepare.reference import run_exporter
from drifttui.core.result import display_name

_QUIET = {"Constant", "Identity"}


def reads_training(module: Any) -> bool:
    """Some module of ``module`` whose class (or a base below ``nn.Module``: ``_InstanceNorm``, ``_BatchNorm``)
    reads its ``training`` flag: a forward that computes otherwise in train() and in eval()."""
    import torch

    return any(_reads(cls) for m in (module.modules() if hasattr(module, "modules") else ())
               for cls in type(m).__mro__ if cls not in (torch.nn.Module, object))


@functools.lru_cache(maxsize=None)
def _reads(cls: type) -> bool:
    try:
        return "self.training" in inspect.getsource(cls)
    except (TypeError, OSError):
        return False


def _attrs(node: Any) -> tuple:
    from onnx import helper

    out = []
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, float):
            out.append((a.name, float(f"{v:.6g}")))
        elif isinstance(v, (int, bytes, str)) or (isinstance(v, list) and all(isinstance(x, (int, float)) for x in v)):
            out.append((a.name, v if not isinstance(v, list) else tuple(v)))
    return tuple(sorted(out))


def signature(model: Any) -> Counter:
    """The nodes of ``model`` as (op type, attributes), constants and identities left out."""
    return Counter((n.op_type, _attrs(n)) for n in model.graph.node if n.op_type not in _QUIET)


def _export(module: Any, ins: list[Any], exporter: str, training: bool) -> Any:
    """A copy of ``module`` exported alone by ``exporter``, in training mode or in eval mode."""
    import onnx

    with tempfile.TemporaryDirectory(prefix="drifttui-mode-") as d:
        path = export_model(copy.deepcopy(module).train(training), tuple(ins), {}, exporter, Path(d), "mode.onnx",
                            training=training)
        return onnx.load(str(path))


def trained_story(ctx: Any, case: Any, module: Any, ins: list[Any]) -> Optional[Told]:
    """The training-mode story of the origin, or None (see the module docstring)."""
    made_by = run_exporter(ctx.index, ctx.cfg)
    if made_by not in ("dynamo", "torchscript") or not reads_training(module):
        return None
    try:
        evald, trained = (_export(module, ins, made_by, mode) for mode in (False, True))
    except Exception:  # noqa: BLE001 - a module that does not export alone, or not in training mode
        return None
    name = display_name(case.module)
    only = signature(trained) - signature(evald)
    if only and not (only - signature(case.model)):
        ops = sorted({op for op, _ in only})
        shown = ", ".join(_shown(op, at) for op, at in sorted(only))
        return Told(lowering_class("", ops), _why(name, f"its nodes hold {shown}, which the {made_by} export of "
                                                 f"{name} writes in training mode and not in eval mode"), _FIX)
    try:
        mine = run_ort(case.model, case.feeds)
    except Exception:  # noqa: BLE001 - a file ORT cannot run alone
        return None
    gap = _file_values(case, mine, trained, ins)
    # no node of its own (a parametrisation folded into constants): the values tell, where the eval-mode export by the
    # same exporter does not compute the file's values too (a drift its lowering makes in either mode is no mode's)
    if gap is not None and _file_values(case, mine, evald, ins) is None:
        return Told("custom-module", _why(name, f"the {made_by} export of {name} in training mode computes the "
                                                f"file's values (within {gap:.2g}), its export in eval mode "
                                                "torch's"), _FIX)
    return None


_FIX = ("call model.eval() before torch.onnx.export and keep training=torch.onnx.TrainingMode.EVAL (the default); a "
        "train-mode trace also moves running statistics and power-iteration vectors, so export from the checkpoint, "
        "not from the model the trace ran")


def trained(told: Optional[Told]) -> bool:
    """Whether ``told`` is this module's story (the re-export's source fix is then ``model.eval()``)."""
    return told is not None and told.fix is _FIX


def _why(name: str, witness: str) -> str:
    return (f"the file computes {name}'s training-mode forward: {witness} (the file was exported from the model in "
            "train(): torch.onnx.export(..., training=TrainingMode.TRAINING or PRESERVE), or a model left in train() "
            "given to the dynamo exporter), where the model compared is in eval(); ")


def _file_values(case: Any, mine: dict[str, Any], export: Any, ins: list[Any]) -> Optional[float]:
    """The largest difference between the file's origin outputs (``mine``: its nodes run on the case) and
    ``export``'s outputs on the same torch inputs, when every output is within the case's tolerance; else None."""
    inits = {t.name for t in export.graph.initializer}
    names = [i.name for i in export.graph.input if i.name not in inits]
    try:
        theirs = run_ort(export, {n: t.detach().cpu().numpy() for n, t in zip(names, ins)})
    except Exception:  # noqa: BLE001 - an export ORT cannot run alone
        return None
    outs, gap = [o.name for o in export.graph.output], 0.0
    for want, got in zip(case.expected, outs):
        a, b = np.asarray(mine[want], np.float64), np.asarray(theirs[got], np.float64)
        if a.shape != b.shape or not np.allclose(a, b, atol=case.atol, rtol=case.rtol):
            return None
        gap = max(gap, float(np.max(np.abs(a - b))) if a.size else 0.0)
    return gap if case.expected else None


def _shown(op: str, attrs: tuple) -> str:
    said = ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in attrs if k != "domain")
    return f"{op} ({said})" if said else op


__all__ = ["reads_training", "signature", "trained", "trained_story"]
