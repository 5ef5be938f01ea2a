"""The folded-constant findings of one dynamo export (locate/folded_values.folded_groups), for the unit tests of
folded ranges, windows and resampled parameters."""
from __future__ import annotations

import io
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from types import SimpleNamespace

import torch
from torch import nn


def folded_of(m: nn.Module, x: torch.Tensor, path: Path) -> tuple[list, object]:
    """(the folded groups' findings, the file's proto) of ``m`` exported by dynamo to ``path`` on ``x``."""
    import onnx

    from drifttui.core.explain.causes.locate.folded_values import folded_groups
    from drifttui.core.explain.causes.locate.fx_localise import FxNode, _groups, _program_values
    from drifttui.core.explain.causes.locate.torch_program import program

    with warnings.catch_warnings(), redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(m, (x,), str(path), dynamo=True)
    proto = onnx.load(str(path))
    values = _program_values(program(SimpleNamespace(cache={}), "", m, [x]), [x])
    return [w for _, w in folded_groups(proto, _groups(proto), values, FxNode)], proto
