"""PyTorch side: hooks on every module, call order, repeated calls, flattened outputs.

Outputs are handed to a sink *inside* the forward hook, before any later in-place op
(``ReLU(inplace=True)``, ``out += identity``) can mutate them; a sink that keeps a
tensor must ``clone()`` it there and then, or check its version counter later (``TensorStore``).
"""
from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

import numpy as np
import torch
from torch.utils._pytree import tree_leaves

from drifttui.errors import InputError


def dtype_name(t: torch.Tensor) -> str:
    return str(t.dtype).replace("torch.", "")


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A CPU numpy view (float16/bfloat16 widened to float32, which numpy comparisons need)."""
    t = t.detach()
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.float()
    return t.cpu().numpy()


@dataclass
class TensorRef:
    shape: tuple[int, ...]
    dtype: str
    producer: Optional[tuple[int, int]] = None   # (call index, output position) that made it
    passthrough: bool = False                    # an output that is one of the call's own inputs
    inner: Optional[tuple[int, int]] = None      # an output: the earlier call that made this very tensor (a
                                                 # container returning its last child's output), None: its own

    @classmethod
    def of(cls, t: torch.Tensor, **kw: Any) -> "TensorRef":
        return cls(tuple(t.shape), dtype_name(t), **kw)


@dataclass
class Call:
    index: int
    module: str
    cls: str
    call: int
    depth: int
    parent: Optional[int]
    inputs: list[TensorRef] = field(default_factory=list)
    outputs: list[TensorRef] = field(default_factory=list)
    params: list[tuple[str, str, tuple[int, ...], str]] = field(default_factory=list)  # (name, kind, shape, dtype)
    end_order: int = -1     # order in which the call finished
    autocast: str = ""      # the dtype of a CPU torch.autocast region the call ran in ("float16"), "" outside one


def _autocast() -> str:
    """The dtype of the CPU ``torch.autocast`` region this runs in, "" outside one."""
    try:
        on = torch.is_autocast_enabled("cpu")
    except TypeError:      # an older torch: no device argument
        on = torch.is_autocast_cpu_enabled()
    return str(torch.get_autocast_dtype("cpu")).replace("torch.", "") if on else ""


def _version(t: torch.Tensor) -> Optional[int]:
    try:
        return int(t._version)
    except Exception:        # inference tensors have no version counter
        return None


def tensors_of(obj: Any) -> list[torch.Tensor]:
    """The plain tensors of ``obj``.  A nested tensor (``nn.TransformerEncoder``'s fast path hands one from
    layer to layer in eval with a padding mask) has no shape to compare and no ONNX value of its own: see
    ``Hooks._close_nested_scope``."""
    return [t for t in tree_leaves(obj) if isinstance(t, torch.Tensor) and not t.is_nested]


def _has_nested(obj: Any) -> bool:
    return any(isinstance(t, torch.Tensor) and t.is_nested for t in tree_leaves(obj))


def hookable(model: Any) -> tuple[bool, str]:
    if isinstance(model, torch.jit.ScriptModule):
        return False, "the model is TorchScript: forward hooks cannot be attached to scripted modules"
    if not isinstance(model, torch.nn.Module):
        return False, f"the model is a {type(model).__name__}, not an nn.Module"
    scripted = next((n for n, m in model.named_modules() if isinstance(m, torch.jit.ScriptModule)), None)
    if scripted is not None:
        return False, (f"the model holds a TorchScript submodule ({scripted}): forward hooks cannot be attached "
                       "to scripted modules")
    return True, ""


class Sink:
    """Receives module inputs/outputs during a forward pass. Override what you need."""

    wants_inputs = True     # False: on_input is called with an empty list (saves flattening args)
    wants_calls = False     # True: on_call gets the module and its arguments after on_output

    def on_call(self, call: int, module: Any, args: tuple, kwargs: dict,
                outputs: list[torch.Tensor]) -> None:  # pragma: no cover - default
        pass

    def on_input(self, call: int, tensors: list[torch.Tensor]) -> None:  # pragma: no cover - default
        pass

    def on_output(self, call: int, tensors: list[torch.Tensor]) -> None:  # pragma: no cover - default
        pass


class Hooks:
    """Installs pre/post forward hooks on every module and routes them to a sink."""

    def __init__(self, model: torch.nn.Module, routed: bool = False) -> None:
        self.model = model
        self.routed = routed        # hooks registered globally (see ``installed``): prepare decides it
        self.routed_note = ""       # why, when routed
        self.names = {id(m): n for n, m in model.named_modules(remove_duplicate=False)}
        self.sink: Optional[Sink] = None
        self.calls: list[Call] = []
        self.tracing = False
        self._stack: list[int] = []
        self._counts: dict[str, int] = {}
        self._ids: dict[int, tuple[weakref.ref, tuple[int, int]]] = {}
        self._ended = 0
        self.multi_out: dict[int, list[torch.Tensor]] = {}
        self._in_versions: dict[int, dict[int, Optional[int]]] = {}
        self._nested: set[int] = set()      # traced calls that read or return a nested tensor

    @contextlib.contextmanager
    def installed(self) -> Iterator["Hooks"]:
        """Hooks on every module of the model: on each module itself, or (``routed``) globally."""
        with (self._routed() if self.routed else self._on_modules()):
            yield self

    @contextlib.contextmanager
    def _on_modules(self) -> Iterator[None]:
        """Pre/post hooks on each module: a module that chooses its path by its own hooks takes the path it takes
        under observation (``nn.TransformerEncoderLayer`` leaves its fused fast path, so its submodules are
        called and compared); prepare routes the hooks globally when that path computes otherwise."""
        handles = []
        seen: set[int] = set()
        for name, mod in self.model.named_modules():
            if id(mod) in seen:
                continue
            seen.add(id(mod))
            handles.append(mod.register_forward_pre_hook(self._pre(name), with_kwargs=True))
            handles.append(mod.register_forward_hook(self._post(name), with_kwargs=True, always_call=False))
        try:
            yield
        finally:
            for h in handles:
                h.remove()

    @contextlib.contextmanager
    def _routed(self) -> Iterator[None]:
        """A module without hooks of its own gets them globally
        (``register_module_forward_*_hook``), routed by module: a module that inspects its own hooks to choose its
        path (``nn.TransformerEncoderLayer`` leaves its fused fast path when ``_forward_hooks`` is not empty) sees
        none, so the observed forward computes what the plain forward computes; the pre-hook is told each such
        module takes keyword arguments (its id in ``_forward_pre_hooks_with_kwargs``, which ``_call_impl`` reads for
        global hooks too).  A module with hooks of its own gets them on itself, after the user's, as before: global
        hooks run before a module's own, and drifttui must see the output a user's hook hands on."""
        names: dict[int, str] = {}
        for name, mod in self.model.named_modules():
            names.setdefault(id(mod), name)
        mods = {id(m): m for m in self.model.modules()}
        own = {k for k, m in mods.items() if len(m._forward_hooks) + len(m._forward_pre_hooks)}
        pres = {k: self._pre(n) for k, n in names.items() if k not in own}
        posts = {k: self._post(n) for k, n in names.items() if k not in own}

        def pre(module: torch.nn.Module, args: tuple, kwargs: Optional[dict] = None) -> None:
            hook = pres.get(id(module))
            if hook is not None:
                hook(module, args, kwargs if kwargs is not None else {})

        def post(module: torch.nn.Module, args: tuple, kwargs: dict, output: Any) -> None:
            hook = posts.get(id(module))
            if hook is not None:
                hook(module, args, kwargs, output)

        handles = [mods[k].register_forward_pre_hook(self._pre(names[k]), with_kwargs=True) for k in own]
        handles += [mods[k].register_forward_hook(self._post(names[k]), with_kwargs=True, always_call=False)
                    for k in own]
        pre_handle = torch.nn.modules.module.register_module_forward_pre_hook(pre)
        post_handle = torch.nn.modules.module.register_module_forward_hook(post, with_kwargs=True)
        for k, m in mods.items():
            if k not in own:
                m._forward_pre_hooks_with_kwargs[pre_handle.id] = True
        try:
            yield
        finally:
            for h in [pre_handle, post_handle, *handles]:
                h.remove()
            for m in mods.values():
                m._forward_pre_hooks_with_kwargs.pop(pre_handle.id, None)

    def begin(self, sink: Optional[Sink], tracing: bool = False) -> None:
        self.sink = sink
        self.tracing = tracing
        self._stack.clear()
        self._counts.clear()
        self._ids.clear()
        self._ended = 0
        self._next = 0
        if tracing:
            self.calls = []
            self.multi_out = {}
            self._nested = set()

    # -- hooks --------------------------------------------------------------------
    def _pre(self, name: str) -> Callable[..., None]:
        def hook(module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
            k = self._counts.get(name, 0)
            self._counts[name] = k + 1
            idx = self._next
            self._next += 1
            if self.tracing:
                parent = self._stack[-1] if self._stack else None
                call = Call(idx, name, type(module).__name__, k, len(self._stack), parent, autocast=_autocast())
                for t in tensors_of((args, kwargs)):
                    call.inputs.append(TensorRef.of(t, producer=self._producer(t)))
                for pn, p in module.named_parameters(recurse=False):
                    call.params.append((f"{name}.{pn}" if name else pn, "parameter", tuple(p.shape),
                                        dtype_name(p)))
                for bn, b in module.named_buffers(recurse=False):
                    call.params.append((f"{name}.{bn}" if name else bn, "buffer", tuple(b.shape),
                                        dtype_name(b)))
                self.calls.append(call)
                if _has_nested((args, kwargs)):
                    self._nested.add(idx)
            if self.tracing:
                self._in_versions[idx] = {id(t): _version(t) for t in tensors_of((args, kwargs))}
            self._stack.append(idx)
            sink = self.sink
            if sink is not None and idx < len(self.calls) and self.calls[idx].module == name:
                sink.on_input(idx, tensors_of((args, kwargs)) if sink.wants_inputs else [])

        return hook

    def _post(self, name: str) -> Callable[..., None]:
        def hook(module: torch.nn.Module, args: tuple, kwargs: dict, output: Any) -> None:
            idx = self._stack.pop() if self._stack else -1
            outs = tensors_of(output)
            if self.tracing and idx >= 0:
                call = self.calls[idx]
                ins = self._in_versions.pop(idx, {})
                # the same tensor object, unchanged: the module hands an input back (an in-place op
                # such as ReLU(inplace=True) returns its input too, but with a new version)
                call.outputs = [TensorRef.of(t, passthrough=id(t) in ins and ins[id(t)] is not None
                                             and ins[id(t)] == _version(t)) for t in outs]
                for ref, t in zip(call.outputs, outs):
                    ref.inner = self._inner(idx, t)
                if len(outs) > 1:
                    # kept to pair same-shaped outputs with ONNX values by content (mapping)
                    self.multi_out[idx] = [t.detach().float().clone() for t in outs]
                call.end_order = self._ended
                for pos, t in enumerate(outs):
                    self._ids[id(t)] = (weakref.ref(t), (idx, pos))
                if _has_nested(output):
                    self._nested.add(idx)
                self._close_nested_scope(idx)
            self._ended += 1
            if self.sink is not None and 0 <= idx < len(self.calls) and self.calls[idx].module == name:
                self.sink.on_output(idx, outs)
                if self.sink.wants_calls:
                    self.sink.on_call(idx, module, args, kwargs, outs)

        return hook

    def _close_nested_scope(self, idx: int) -> None:
        """``idx`` ends a scope whose calls handed nested tensors around while it reads and returns plain ones
        (a TransformerEncoder on its fast path): every call inside it is left without values, so it is
        compared as one unit.  Its children's plain values (a final norm reading the padded-back output) are
        no boundary the local run may feed torch's values into: the padding happens in its own forward."""
        if idx in self._nested or not any(k in self._nested for k in range(idx + 1, len(self.calls))):
            return
        for k in range(idx + 1, len(self.calls)):
            self.calls[k].inputs, self.calls[k].outputs = [], []
            self._nested.discard(k)
            self.multi_out.pop(k, None)

    def _inner(self, idx: int, t: torch.Tensor) -> Optional[tuple[int, int]]:
        """The call inside call ``idx`` that made its output ``t``, this very tensor: a container handing on its
        child's output.  None for a tensor made before the call (its input, changed in place or not)."""
        where = self._producer(t)
        k = where[0] if where is not None and where[0] > idx else None
        while k is not None and k < len(self.calls) and self.calls[k].parent is not None and k != idx:
            k = self.calls[k].parent
        return where if k == idx else None

    def _producer(self, t: torch.Tensor) -> Optional[tuple[int, int]]:
        entry = self._ids.get(id(t))
        if entry is None:
            return None
        ref, where = entry
        return where if ref() is t else None


@contextlib.contextmanager
def module_stack(model: torch.nn.Module) -> Iterator[list[str]]:
    """The names of ``model``'s modules whose forward is running, outermost first ("" for the root), kept by global
    hooks while the context is open (a check that asks whose forward made a dispatched op: ``checks/randomness``)."""
    names: dict[int, str] = {}
    for name, m in model.named_modules():
        names.setdefault(id(m), name)
    stack: list[str] = []

    def enter(m: Any, _i: Any) -> None:
        stack.append(names.get(id(m), stack[-1] if stack else ""))

    def leave(_m: Any, _i: Any, _o: Any) -> None:     # returns None: a hook's value would replace the output
        if stack:
            stack.pop()

    pre = torch.nn.modules.module.register_module_forward_pre_hook(enter)
    post = torch.nn.modules.module.register_module_forward_hook(leave)
    try:
        yield stack
    finally:
        pre.remove()
        post.remove()


def run_model(model: Any, args: tuple, kwargs: dict, versioned: bool = False) -> list[torch.Tensor]:
    """One forward without autograd.  ``versioned``: under ``no_grad`` instead of ``inference_mode``,
    so tensors keep version counters (``t._version`` grows with every in-place op)."""
    with torch.no_grad() if versioned else torch.inference_mode():
        out = model(*args, **kwargs)
    tensors = tensors_of(out)
    if not tensors:
        raise InputError(f"the PyTorch model's forward returned {returned(out)}, not a tensor: nothing to compare "
                         "with the ONNX outputs", "make forward return the tensor(s) the ONNX graph outputs")
    return tensors


def returned(out: Any) -> str:
    """What a forward returned, for a message: ``None``, ``a str ('hello')``, ``an empty tuple``."""
    if out is None:
        return "None"
    name = type(out).__name__
    article = "an" if name[:1].lower() in "aeiou" else "a"
    if isinstance(out, (list, tuple, dict)) and not out:
        return f"an empty {name}"
    if isinstance(out, (list, tuple, dict)):
        return f"{article} {name} without a tensor in it"
    return f"{article} {name} ({repr(out)[:40]})"


class TensorStore(Sink):
    """Keeps the tensors it is asked to, as they were at hook time (before in-place ops).

    By default each is cloned there and then.  With ``share=True`` a tensor that owns its whole
    storage and has a version counter (a no_grad forward) is kept as it lies, with its version:
    ``changed()`` names those an in-place op touched since (the caller keeps those keys in
    ``always``, cloned from then on, and runs the forward again).  A clone of every kept value
    cost a sixth of a per-layer pass on a 220M LLaMA; almost none is ever changed in place."""

    def __init__(self, want_out: dict[int, list[int]], want_in: dict[int, list[int]], share: bool = False,
                 always: Optional[set[tuple[str, int, int]]] = None) -> None:
        self.want_out = want_out
        self.want_in = want_in
        self.out: dict[tuple[int, int], torch.Tensor] = {}
        self.inp: dict[tuple[int, int], torch.Tensor] = {}
        self.share = share
        self.always = always if always is not None else set()      # ("in" | "out", call, pos): cloned
        self._versions: dict[tuple[str, int, int], tuple[torch.Tensor, int]] = {}

    def _keep(self, kind: str, call: int, pos: int, t: torch.Tensor) -> torch.Tensor:
        t = t.detach()
        key = (kind, call, pos)
        if self.share and key not in self.always and not t.is_inference() \
                and t.untyped_storage().nbytes() == t.numel() * t.element_size():
            self._versions[key] = (t, t._version)
            return t
        return t.clone()

    def changed(self) -> set[tuple[str, int, int]]:
        """Kept-as-they-lie tensors that an in-place op changed after their hook."""
        return {k for k, (t, v) in self._versions.items() if t._version != v}

    def on_input(self, call: int, tensors: list[torch.Tensor]) -> None:
        for pos in self.want_in.get(call, ()):
            if pos < len(tensors):
                self.inp[(call, pos)] = self._keep("in", call, pos, tensors[pos])

    def on_output(self, call: int, tensors: list[torch.Tensor]) -> None:
        for pos in self.want_out.get(call, ()):
            if pos < len(tensors):
                self.out[(call, pos)] = self._keep("out", call, pos, tensors[pos])
