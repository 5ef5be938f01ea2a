"""The origin module as it was CALLED: a module a library calls with keyword arguments, tuples or
non-tensor options (transformers' ``self.self_attn(hidden_states=..., position_embeddings=(cos, sin),
attention_mask=...)``) cannot be exported or traced on its flat list of input tensors.

The capture pairs a call's inputs with the file by ``tensors_of((args, kwargs))`` (the tensors of the
call's pytree, in order).  ``as_called`` records the origin call's own ``(args, kwargs)`` on one torch
forward of its sample and gives a wrapper whose ``forward(*tensors)`` puts those tensors back where the
call had them (every other leaf as the call had it) and returns the tensors of the module's output: a
module that takes exactly the flat inputs the capture knows, which ``torch.export`` / ``torch.onnx.export``
can trace (the re-export of the origin, its FX program for the node-level localisation).
"""
from __future__ import annotations

from typing import Any, Optional

from drifttui.core.explain.causes.locate.case import call_io
from drifttui.core.runtime.torch_hooks import Sink, run_model, tensors_of, to_numpy

KEY = "causes:call_structure:{}"
ROOT = "inner"          # the wrapped module's attribute (its scopes in a re-export start with it)


def _plain(module: Any, args: tuple, kwargs: dict) -> bool:
    """The flat input tensors, passed positionally, bind to the parameters the call gave them: the call's
    tensors are its forward's first parameters, in order, and every other argument it passed is None (a
    keyword call of ``(hidden_states, attention_mask=mask)`` is plain; a ``(cos, sin)`` tuple or an option
    is not)."""
    import inspect

    import torch

    def tensor(v: Any) -> bool:
        return isinstance(v, torch.Tensor) and not v.is_nested

    try:
        bound = inspect.signature(module.forward).bind(*args, **kwargs).arguments
    except (TypeError, ValueError):
        return False
    params = inspect.signature(module.forward).parameters
    names = [n for n, p in params.items() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    rest = [n for n, p in params.items() if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    if any(v is not None for n in rest for v in (bound.get(n) or {}).values()
           if isinstance(bound.get(n), dict)) or any(bound.get(n) for n in rest if isinstance(bound.get(n), tuple)):
        return False            # something passed through **kwargs / *args: only the call knows where
    held = [n for n, v in bound.items() if v is not None and n not in rest]
    if not all(tensor(bound[n]) for n in held):
        return False
    return held == names[:len(held)]


def _stateful(v: Any) -> bool:
    """A leaf the call may change: an object with state of its own (transformers' ``DynamicCache``, which the
    attention ``update``s with its keys and values), not a tensor, a module or a plain value."""
    import torch

    plain = (torch.Tensor, torch.nn.Module, type, str, bytes, int, float, bool, complex, torch.dtype, torch.device)
    return v is not None and not isinstance(v, plain) and hasattr(v, "__dict__")


def _tensors_in(obj: Any, depth: int = 5) -> list:
    """The tensors an object holds (its attributes, lists, tuples and dicts, ``depth`` levels down)."""
    import torch

    if isinstance(obj, torch.Tensor):
        return [obj]
    if depth <= 0 or isinstance(obj, (str, bytes, int, float, bool, type, torch.nn.Module)):
        return []
    inner = (list(obj.values()) if isinstance(obj, dict) else list(obj) if isinstance(obj, (list, tuple))
             else list(vars(obj).values()) if hasattr(obj, "__dict__") else [])
    return [t for v in inner for t in _tensors_in(v, depth - 1)]


def _fresh(v: Any) -> Any:
    """A copy of a stateful leaf whose containers are new and whose tensors are shared: what a call changes (a cache
    rebinds its keys) leaves the recorded state as it was, and no tensor is copied (an export traces the wrapper
    with fake tensors, which cannot copy real ones)."""
    import copy

    if not _stateful(v):
        return v
    try:
        return copy.deepcopy(v, {id(t): t for t in _tensors_in(v)})
    except Exception:  # noqa: BLE001 - an object that cannot be copied is handed over as recorded
        return v


def _before(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The call's arguments with each stateful leaf copied as it is before the call changes it."""
    import copy

    from torch.utils._pytree import tree_flatten, tree_unflatten

    leaves, spec = tree_flatten((args, dict(kwargs)))
    try:
        leaves = [copy.deepcopy(v) if _stateful(v) else v for v in leaves]
    except Exception:  # noqa: BLE001 - an object that cannot be copied is left as the call had it
        pass
    return tree_unflatten(leaves, spec)


def recorded(ctx: Any, call_index: int, sample: Any, module: Any = None) -> Optional[tuple[tuple, dict]]:
    """The ``(args, kwargs)`` the call ``call_index`` received on a torch forward of ``sample`` (through the
    engine's own hooks, as every capture), or None.  With ``module`` (the call's module), a stateful argument
    is taken as it was when the call began (a cache the call updates holds this call's keys once it returns)."""

    class _Args(Sink):
        wants_inputs = False
        wants_calls = True
        got: Optional[tuple[tuple, dict]] = None
        armed, before = False, None

        def on_input(self, call: int, tensors: list) -> None:
            self.armed = call == call_index

        def on_output(self, call: int, tensors: list) -> None:
            pass

        def on_call(self, call: int, module: Any, args: tuple, kwargs: dict, outs: list) -> None:
            if call == call_index:
                self.got = self.before if self.before is not None else (args, dict(kwargs))

    sink, hooks = _Args(), ctx.new_hooks()

    def snapshot(mod: Any, args: tuple, kwargs: dict) -> None:
        if sink.armed and sink.before is None:
            sink.before, sink.armed = _before(args, kwargs), False

    try:
        with hooks.installed():
            handle = module.register_forward_pre_hook(snapshot, with_kwargs=True) if module is not None else None
            try:
                hooks.begin(sink)
                run_model(ctx.model, *sample)
                hooks.begin(None)
            finally:
                if handle is not None:
                    handle.remove()
    except Exception:  # noqa: BLE001 - no structure: the flat inputs stay the witness
        return None
    return sink.got


def as_called(ctx: Any, call_index: int, module: Any, sample: Any) -> Any:
    """``module`` itself when it was called with positional tensors only, else a wrapper taking the
    call's flat input tensors (in the capture's order) and calling ``module`` as the library did
    (one per call: ``ctx.cache``)."""
    key = KEY.format(call_index)
    if key not in ctx.cache:
        got = recorded(ctx, call_index, sample, module)
        ctx.cache[key] = None if got is None or _plain(module, *got) else got
    got = ctx.cache[key]
    return module if got is None else AsCalled(module, *got)


def _wrapper_class() -> type:
    import torch
    from torch.utils._pytree import tree_flatten, tree_unflatten


    class _AsCalled(torch.nn.Module):
        def __init__(self, module: Any, args: tuple, kwargs: dict) -> None:
            super().__init__()
            setattr(self, ROOT, module)
            self.training = module.training     # not a fresh module's training mode (export.kept_modes)
            leaves, self._spec = tree_flatten((args, kwargs))
            self._slots = [k for k, t in enumerate(leaves) if isinstance(t, torch.Tensor) and not t.is_nested]
            self._leaves = [None if k in self._slots else t for k, t in enumerate(leaves)]

        def forward(self, *tensors: Any) -> tuple:
            # a stateful argument (a cache the call updates) starts each call as the recorded call found it
            leaves = [_fresh(v) for v in self._leaves]
            for k, t in zip(self._slots, tensors):
                leaves[k] = t
            args, kwargs = tree_unflatten(leaves, self._spec)
            return tuple(tensors_of(getattr(self, ROOT)(*args, **kwargs)))

    return _AsCalled


def AsCalled(module: Any, args: tuple, kwargs: dict) -> Any:  # noqa: N802 - a class made on first use
    """The wrapper (torch is imported on first use only)."""
    global _CLASS
    if _CLASS is None:
        _CLASS = _wrapper_class()
    return _CLASS(module, args, kwargs)


_CLASS: Optional[type] = None


def same_in_samples(ctx: Any, case: Any, position: int, arr: Any) -> bool:
    """The call's input ``position`` holds ``arr`` on another sample too: a value the library makes from the
    shapes alone (transformers' ``position_ids = arange(seq)``), which the exporter folds into a constant
    with no value of its own in the file; a graft may hold it as one."""
    import dataclasses

    import numpy as np


    if getattr(ctx.source, "fixed", False):
        return False            # one sample only: nothing says the value does not depend on it
    io = call_io(ctx, dataclasses.replace(case, sample=case.sample + 1))
    if io is None or position >= len(io[0]):
        return False
    other = to_numpy(io[0][position])
    return other.shape == arr.shape and bool(np.array_equal(other, arr))


def wrapped_root(ctx: Any, call_index: int) -> str:
    """The module's attribute inside its re-export when ``as_called`` wrapped it (``inner``), else ""."""
    return ROOT if ctx.cache.get(KEY.format(call_index)) is not None else ""
