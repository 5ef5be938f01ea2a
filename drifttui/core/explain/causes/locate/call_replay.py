"""One recorded torch call replayed on the file's values of its inputs: is the error its ONNX nodes show their own,
or its inputs' error amplified?

``torch_align`` names the first torch call whose value the file does not hold while its inputs' values it does.
When those inputs already carry more than rounding noise (a long float32 chain: each step adds a few ulps), the
error may be the inputs' amplified by the call (a level subtracted after a long sum) or the call's own lowering
(a ``floor_divide`` truncated).  The counterfactual tells them apart: torch's call fed the file's input values
computes the file's value when the error is the inputs'; it computes otherwise when the call is lowered otherwise.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.explain.causes.locate.fx_localise import floored_rel
from drifttui.core.explain.causes.locate.value_match import bound


class Ref:
    """An argument that was the value of recorded op ``index``."""
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def refs(func: Any, args: Any, kwargs: Any, made: dict[int, int]) -> tuple[Any, Any, Any]:
    """(func, args, kwargs) with each recorded tensor replaced by a Ref to its op (others kept as they are)."""
    import torch
    from torch.utils._pytree import tree_map

    def ref(x: Any) -> Any:
        return Ref(made[id(x)]) if isinstance(x, torch.Tensor) and id(x) in made else x
    return func, tree_map(ref, args), tree_map(ref, kwargs or {})


def replayed(call: tuple[Any, Any, Any], pos: int, ops: list[tuple], found: dict[int, str],
             vals: dict[str, np.ndarray]) -> Optional[np.ndarray]:
    """Result ``pos`` of the call with each Ref fed the file's value of that op (torch's where the file holds
    none); None when it cannot be run again."""
    import torch
    from torch.utils._pytree import tree_flatten, tree_map

    def value(x: Any) -> Any:
        if not isinstance(x, Ref):
            return x
        arr = vals[found[x.index]] if x.index in found else ops[x.index][2]
        t = torch.from_numpy(np.array(arr, copy=True))
        dtype = getattr(torch, ops[x.index][4], None) if ops[x.index][4] else None
        return t.to(dtype) if isinstance(dtype, torch.dtype) else t

    func, args, kwargs = call
    try:
        with torch.no_grad():
            out = func(*tree_map(value, args), **tree_map(value, kwargs))
        results = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        return results[pos].detach().cpu().numpy() if pos < len(results) else None
    except Exception:  # noqa: BLE001 - a call that does not run on other values: no counterfactual
        return None


def amplifies(call: Optional[tuple], pos: int, ops: list[tuple], k: int, found: dict[int, str],
              vals: dict[str, np.ndarray], file_value: Optional[np.ndarray], rtol: float) -> Optional[bool]:
    """True when torch's call ``k`` fed the file's input values computes the file's value (the error is its
    inputs', amplified), False when it computes otherwise (its own lowering), None when it cannot be told."""
    if call is None or file_value is None:
        return None
    got = replayed(call, pos, ops, found, vals)
    if got is None or np.shape(got) != np.shape(file_value) or got.dtype.kind not in "fiub":
        return None
    return floored_rel(got, np.asarray(file_value)) <= bound(ops[k][4], rtol)
