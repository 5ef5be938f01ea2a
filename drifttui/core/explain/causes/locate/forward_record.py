"""One forward of a module, recorded call by call as the forward made it (``torch_align``'s step 1).

A ``TorchFunctionMode`` records each torch call (``Tensor.var``, ``F.cosine_similarity``, ``Tensor.__rshift__``:
not the calls inside one), its tensor outputs' values and the calls its inputs came from; a ``TorchDispatchMode``
records which ATen op each call dispatched.  One eager forward, no tracing.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.base.dtypes import name_of
from drifttui.core.explain.causes.locate.call_replay import refs
from drifttui.core.explain.causes.locate.dropped_args import completed
from drifttui.core.explain.causes.locate.torch_call import aten_name, aten_of, call_name
from drifttui.core.runtime.torch_hooks import to_numpy

MAX_OPS = 4000                  # torch ops recorded per forward (a deep block's forward is ~2000)


def record(module: Any, ins: tuple, replay: Optional[dict[int, tuple]] = None
         ) -> tuple[list[tuple[str, str, Any, list[int], str]], list[Optional[str]], dict]:
    """The forward run under a TorchFunctionMode that records each torch call as the forward made it
    (``Tensor.var``, ``F.cosine_similarity``, ``Tensor.__rshift__``: the calls inside one are not seen), its
    tensor outputs' values copied at once (an in-place op changes them later) and the calls its inputs came from;
    and, per record, the ATen op that call is (a TorchDispatchMode sees what each call dispatched).  A call whose
    dispatch dropped arguments is made with them (``dropped_args``), as the plain forward makes it: per record,
    (the dropped names, the inputs it was dispatched with)."""
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    out: list[tuple[str, str, Any, list[int], str]] = []
    atens: list[Optional[str]] = []
    made: dict[int, int] = {}
    keep: list[Any] = []            # the recorded tensors stay alive: their ids are not reused
    calls: list[list[str]] = []     # the ATen ops the call being made has dispatched so far
    dropped: dict[int, tuple[list[str], list[int]]] = {}

    def note(kind: str, target: str, t: Any, ins: list[int], aten: Optional[str] = None) -> None:
        if len(out) < MAX_OPS and isinstance(t, torch.Tensor) and t.layout == torch.strided:
            made[id(t)] = len(out)
            keep.append(t)
            out.append((kind, target, np.array(to_numpy(t.detach()), copy=True), ins, name_of(t) or ""))
            atens.append(aten)

    class Dispatched(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if calls:
                calls[-1].append(aten_name(func))
            return func(*args, **(kwargs or {}))

    class Record(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            full, lost = completed(func, args, kwargs or {})[1:]
            calls.append([])
            try:
                val = func(*args, **full)
            finally:
                seen = calls.pop()
            results = [t for t in tree_flatten(val)[0] if isinstance(t, torch.Tensor)]
            if results:
                ins = made_from(made, (args, full))
                name, call = call_name(func), refs(func, args, full, made) if replay is not None else None
                if lost:
                    dropped[len(out)] = (lost, made_from(made, (args, kwargs or {})))
                for pos, t in enumerate(results):
                    n = len(out)
                    note("call_function", name, t, own_inputs(made, (args, full), t, ins, results), aten_of(name, seen))
                    if replay is not None and len(out) > n:     # the call, to replay on the file's values
                        replay[n] = (call, pos)
            return val

    for t in ins:
        note("placeholder", "input", t, [])
    with Dispatched(), Record():
        result = module(*ins)
    ends = [made[id(t)] for t in tree_flatten(result)[0] if isinstance(t, torch.Tensor) and id(t) in made]
    return out + [("output", "", None, ends, "")], atens + [None], dropped


def own_inputs(made: dict[int, int], tree: Any, t: Any, ins: list[int], results: list[Any]) -> list[int]:
    """The records one output ``t`` of a call with several outputs came from: when ``t`` is a view of exactly one of
    the call's tensor inputs (``torch.broadcast_tensors``, ``meshgrid``: output i is input i expanded), that input's
    record alone (none when that input is not a recorded value: a buffer), so a found output vouches for its own
    input only, not for the other inputs the call was given; ``ins`` (every input's record) otherwise."""
    import torch
    from torch.utils._pytree import tree_flatten

    if len(results) < 2:
        return ins
    try:
        own = [x for x in tree_flatten(tree)[0] if isinstance(x, torch.Tensor) and x.layout == torch.strided
               and x.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()]
    except Exception:  # noqa: BLE001 - a tensor without storage (a fake or nested one): every input
        return ins
    if len(own) != 1:
        return ins
    return [made[id(own[0])]] if id(own[0]) in made else []


def made_from(made: dict[int, int], tree: Any) -> list[int]:
    """The records the tensors of ``tree`` came from, in order."""
    import torch
    from torch.utils._pytree import tree_flatten

    return list(dict.fromkeys(made[id(t)] for t in tree_flatten(tree)[0]
                              if isinstance(t, torch.Tensor) and id(t) in made))
