"""Which inner value of an origin fails first, and the case widened to compare it.

The case's own outputs can miss a drift inside the origin: a child module fed torch's value of a wrong input
computes right from it.  ``failing_inner`` reads every inner value the torch side knows (through the FX
correspondence for a dynamo file, ``fx_localise.fx_torch_values``; else the values the hooks capture) in one ONNX
Runtime run; ``first_failing_alone`` reads them one at a time, because reading a value can change what ONNX Runtime
computes (it merges a Cast pair unless the value between them is an output); ``widen`` adds the values found to
the case, so that a patch is judged on them too.
"""
from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np

from drifttui.core.base.metrics import compare
from drifttui.core.explain.causes.locate.case import Case, hooked_inner
from drifttui.core.explain.causes.locate.evaluate import run_ort
from drifttui.core.explain.causes.locate.fx_localise import as_like, fx_torch_values, has_fx
from drifttui.core.onnx.io import copy_model


WIDEN = "causes:fx:widen"        # ctx.cache: the value widen() adds to every sample's case


def innerfx_torch_values(ctx: Any, case: Case) -> dict[str, np.ndarray]:
    """Torch's values of the case's inner ONNX values: through the FX correspondence for a dynamo
    file, else those the hooks capture (a child module's input)."""
    got = fx_torch_values(ctx, case, {}) if has_fx(case.model) else None
    return got[1] if got is not None else hooked_inner(ctx, case)


MOST_INNER = 8              # inner values failing_inner returns at most


def failing_inner(ctx: Any, case: Case, most: int = MOST_INNER) -> list[str]:
    """The inner values (in node order, at most ``most``) whose ONNX Runtime values on the case's feeds fail against
    torch's: each child call fed torch's value of a wrong input hides its own share of the drift (grid hashing's
    index into each level's embedding), and a patch that rights the first alone must not pass for the whole."""
    tv = innerfx_torch_values(ctx, case)
    names = [v for n in case.model.graph.node for v in n.output if v in tv]
    if not names:
        return []
    try:
        vals = run_ort(case.model, case.feeds, names)
    except Exception:  # noqa: BLE001 - localise says why ORT cannot run the case
        return []
    out = []
    for v in names:
        want = as_like(np.asarray(tv[v]), vals[v])
        if np.shape(want) == np.shape(vals[v]) and want.dtype.kind in "fiub" and \
                compare(want, vals[v], case.atol, case.rtol).fails():
            out.append(v)
    return out[:most]


MOST_ALONE = 32             # inner values first_failing_alone reads, one ONNX Runtime run each


def first_failing_alone(case: Case, tv: dict[str, np.ndarray], most: int = MOST_ALONE) -> Optional[str]:
    """The first inner value (in node order, at most ``most``) that fails against torch's when ONNX Runtime fetches
    it alone.  Fetching every value can change what ONNX Runtime computes (it merges a Cast pair unless the value
    between them is an output: an observer effect), so a value right when all are read can be wrong as the file
    computes it; ``fx_localise``'s ``accumulated`` reads them all at once."""
    for v in [v for n in case.model.graph.node for v in n.output if v in tv][:most]:
        try:
            got = run_ort(case.model, case.feeds, [v])[v]
        except Exception:  # noqa: BLE001 - localise says why ORT cannot run the case
            return None
        want = as_like(np.asarray(tv[v]), got)
        if np.shape(want) == np.shape(got) and want.dtype.kind in "fiub" and \
                compare(want, got, case.atol, case.rtol).fails():
            return v
    return None


def widen(ctx: Any, case: Case, value: Union[str, list[str], None] = None) -> Case:
    """``case`` that also compares ``value`` (a value or several; default: those the worst sample's case got) with
    torch's value (inner_torch_values): the drift the case's outputs miss when a child module of the origin is
    fed torch's value of a wrong input.  The case unchanged when there is none or it cannot be computed."""
    import dataclasses

    import onnx

    value = value or ctx.cache.get(WIDEN)
    values = [value] if isinstance(value, str) else list(value or [])
    values = [v for v in values if v not in case.expected]
    tv = innerfx_torch_values(ctx, case) if values else {}
    values = [v for v in values if v in tv]
    if not values:
        return case
    model = copy_model(case.model)
    model.graph.output.extend(onnx.ValueInfoProto(name=v) for v in values)
    ctx.cache[WIDEN] = values
    return dataclasses.replace(case, model=model, expected={**case.expected, **{v: tv[v] for v in values}})
