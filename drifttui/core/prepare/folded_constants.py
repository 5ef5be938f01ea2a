"""The constants an exporter folds out of a model: tensors its forward computes from parameters and buffers alone.

The dynamo exporter folds ``self.r_w_bias * self.scale`` (Funnel's attention) into one initializer: the file's
weight is then no parameter of the model but a function of one, in the same direction.  Compared with the
parameter itself (prepare/qweight_check.py, a float16 or int8 weight against the model's tensors), every element
was "more than one rounding step off": a false weight evidence, a false genuine DRIFT at a layer within its budget
(Funnel through ORT's float16 converter).  One forward under a dispatch mode records each result whose inputs are
all parameters, buffers or such results: what any exporter may fold, with the op that made it."""
from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from drifttui.core.runtime.guards import safe_forward

MAX_CONSTANTS = 4096        # a bound on what one forward records (a model that folds more is rare)


class _Folding(TorchDispatchMode):
    def __init__(self, sources: list[torch.Tensor], sizes: set[int]) -> None:
        super().__init__()
        self.sizes = sizes
        self.const: dict[int, Any] = {}               # id -> a weak reference: an id is the tensor's while it lives
        self.found: list[tuple[str, np.ndarray]] = []
        for t in sources:
            self._add(t)

    def _add(self, t: torch.Tensor) -> None:
        self.const[id(t)] = weakref.ref(t)

    def _is_const(self, t: torch.Tensor) -> bool:
        ref = self.const.get(id(t))
        return ref is not None and ref() is t

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        tensors = [a for a in tree_flatten((args, kwargs or {}))[0] if isinstance(a, torch.Tensor)]
        if tensors and all(self._is_const(t) for t in tensors) and len(self.found) < MAX_CONSTANTS:
            for o in tree_flatten(out)[0]:
                if isinstance(o, torch.Tensor) and o.is_floating_point() and o.numel() > 1:
                    self._add(o)
                    if o.numel() in self.sizes:         # only the sizes asked for are copied out
                        self.found.append((f"{func.__name__} of the model's parameters",
                                           o.detach().float().cpu().numpy().copy()))
        return out


def folded_constants(model: Any, sample: Any, sizes: set[int]) -> list[tuple[str, np.ndarray]]:
    """(label, tensor) of every floating tensor of one of ``sizes`` elements (more than one) that ``model``'s
    forward on ``sample`` computes from its parameters and buffers alone; [] when the forward cannot run so (a
    refusal is no evidence)."""
    if not isinstance(model, torch.nn.Module) or not sizes:
        return []
    sources = [*model.parameters(), *model.buffers()]
    mode = _Folding(sources, sizes)
    try:
        with torch.no_grad(), mode:
            safe_forward(model, sample, versioned=False)
    except Exception:  # noqa: BLE001 - no folded constant known: the weights are compared with the parameters only
        return []
    return mode.found
