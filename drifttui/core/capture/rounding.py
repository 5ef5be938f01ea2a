"""Each reduced-precision layer computed by PyTorch in the file's precision: what the conversion does to it.

A layer's precision budget bounds what the file's format may cost it.  The worst-case bound
(``tolerance.node_budget``) is loose: a float16 weight scaled x1.05 moved its layer less than that
bound.  Here the conversion is redone on PyTorch's side, from PyTorch's own values, on sample 0:
in one hooked forward, each budgeted leaf module is run again (``module.forward``: no hook fires)
with its inputs and weights rounded as the file rounds them, and that output is compared with
the module's own output.  The measured deviation (relative to the output's scale) is what this
conversion costs this layer; decide holds the layer's own error to a safety factor times it,
capped by the worst-case bound (``tolerance.derived_budget``).

The rounding, per the layer's format (prepare/precision.py's NodePrecision):
  float16 / bfloat16: every floating input, parameter and buffer, and the output, rounded to the
    format; the sums computed in float32 (as ONNX Runtime's CPU kernels accumulate);
  int8: each floating input rounded to its quantizer's step (the file's: act_step x max|x|), each
    weight matrix (2-d or more) to the file's weight step (weight_step x max|W|, per tensor), biases
    and norms' vectors kept (the file keeps them in float or int32); the output rounded where the layer's
    own QuantizeLinear (QDQ) or QOperator node (at its output scale) quantizes it;
  int4 (any bits) weight-only, MatMulNBits: the weight K x N (a Linear's N x K) in the node's blocks of
    block_size along K, each to its block's grid (symmetric: max|block| / 2^(bits-1), the levels
    -2^(bits-1)..2^(bits-1)-1, as MatMulNBitsQuantizer rounds; with zero points: (max - min) / (2^bits - 1)
    from the block's min), activations kept (float32).
Since it starts from PyTorch's weights and PyTorch's code, a wrong weight, scale, epsilon or bias in
the file is not in it: the deviation is the clean conversion's.  A module that computes in place
(timm's ``act2``, ``ReLU(inplace=True)``) is recomputed from a copy of its inputs taken before its forward.
A layer it cannot redo keeps the worst-case bound: a container (its own error is between its children),
a module whose reduced nodes accumulate over a weight it does not hold (a Conv folded into a BatchNorm's
call), one whose local run quantizes more values than its forward takes (a QDQ file's ReLU folded into the
quantizer of the branch sum before it: the summands are rounded, which the ReLU's forward never sees), mixed
formats, or a forward that fails on rounded values.
"""
from __future__ import annotations

import contextlib
import time
from typing import Any, Iterator, Optional

import torch
from torch.utils._pytree import tree_map

from drifttui.core.onnx.nbits import NBITS_OPS
from drifttui.core.onnx.qviews import MOVES, is_view_node
from drifttui.core.prepare.precision import ACCUMULATING, QOPERATOR_PREFIX
from drifttui.core.runtime.guards import safe_forward
from drifttui.core.runtime.torch_hooks import Sink, tensors_of

_TORCH = {"float16": torch.float16, "bfloat16": torch.bfloat16}
_MAX_BACK = 4          # views and moves between a layer's mapped output and the QOperator node that made it


def _round_low(dt: torch.dtype):
    def f(t: Any) -> Any:
        if isinstance(t, torch.Tensor) and t.is_floating_point():
            return t.to(dt).to(t.dtype)
        return t
    return f


def _round_step(step: float):
    """Round to a per-tensor grid of ``step`` x max|x| (symmetric; a zero point is a whole step)."""
    def f(t: Any) -> Any:
        if not (isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel() > 1 and step > 0):
            return t
        m = float(t.detach().abs().max())
        if not m or m != m or m == float("inf"):
            return t
        s = step * m
        return torch.round(t / s) * s
    return f


def _round_blocks(w: torch.Tensor, axis: int, block: int, bits: int, symmetric: bool) -> torch.Tensor:
    """``w`` (2-d) rounded in blocks of ``block`` along ``axis``, each to its own grid (module docstring)."""
    x = w.detach().float().movedim(axis, -1)
    k = x.shape[-1]
    pad = -k % block
    xb = torch.nn.functional.pad(x, (0, pad)).reshape(*x.shape[:-1], -1, block)
    if symmetric:
        s = xb.abs().amax(-1, keepdim=True) / float(1 << (bits - 1))
        s = torch.where(s > 0, s, torch.ones_like(s))
        r = torch.clamp(torch.round(xb / s), -(1 << (bits - 1)), (1 << (bits - 1)) - 1) * s
    else:
        lo, hi = xb.amin(-1, keepdim=True).clamp(max=0), xb.amax(-1, keepdim=True).clamp(min=0)
        s = (hi - lo) / float((1 << bits) - 1)
        s = torch.where(s > 0, s, torch.ones_like(s))
        z = torch.round(-lo / s)
        r = (torch.clamp(torch.round(xb / s) + z, 0, (1 << bits) - 1) - z) * s
    return r.reshape(*x.shape[:-1], -1)[..., :k].movedim(-1, axis).to(w.dtype)


class Target:
    """What one call's recomputation needs: its format and, for int8, its steps; for a weight-only
    block format (MatMulNBits) its weight's shape (N, K), block size, bits and symmetry."""

    def __init__(self, fmt: str, act_step: float, weight_step: float, needs_weight: bool,
                 blocks: Optional[tuple[int, int, int, int, bool]] = None, out_step: float = 0.0,
                 entries: int = 0) -> None:
        self.fmt, self.act_step, self.weight_step, self.needs_weight = fmt, act_step, weight_step, needs_weight
        self.blocks, self.out_step = blocks, out_step
        self.entries = entries      # the values its local run quantizes and does not compute (QDQ)

    def inputs(self) -> Any:
        if self.blocks is not None:
            return lambda t: t          # weight-only: the activations stay float32
        return _round_low(_TORCH[self.fmt]) if self.fmt in _TORCH else _round_step(self.act_step)

    def param(self, name: str, p: torch.Tensor, module: Any = None) -> Optional[torch.Tensor]:
        """The parameter as the file holds it (None: kept as it is)."""
        if not p.is_floating_point():
            return None
        if self.fmt in _TORCH:
            return p.detach().to(_TORCH[self.fmt]).to(p.dtype)
        if self.blocks is not None:
            n, k, block, bits, symmetric = self.blocks
            if p.ndim != 2 or {tuple(p.shape)} - {(n, k), (k, n)}:
                return None
            # a Linear's weight is N x K (blocks along its dim 1); transformers' Conv1D holds it K x N
            axis = 1 if tuple(p.shape) == (n, k) and (n != k or isinstance(module, torch.nn.Linear)) else 0
            return _round_blocks(p, axis, block, bits, symmetric)
        if p.ndim >= 2 and self.weight_step > 0:
            return _round_step(self.weight_step)(p.detach())
        return None

    def output(self, t: torch.Tensor) -> torch.Tensor:
        if self.fmt in _TORCH:
            return _round_low(_TORCH[self.fmt])(t)
        return _round_step(self.out_step)(t) if self.out_step > 0 else t


def targets(pr: Any) -> dict[int, Target]:
    """The budgeted calls and how the file rounds them (from prepare's precision scan)."""
    budgets, _ = pr.budgets or ({}, 0.0)
    scan = pr.precision
    out: dict[int, Target] = {}
    for c, b in budgets.items():
        if not b.run_ids or "+" in b.fmt:
            continue
        nodes = [pr.index.nodes[k] for k in b.run_ids]     # the nodes its local run computes
        blocks = _blocks_of(nodes) if b.fmt not in _TORCH and b.fmt != "int8" else None
        if b.fmt not in _TORCH and b.fmt != "int8" and blocks is None:
            continue
        precs = [scan.nodes[k] for k in b.run_ids if k in scan.nodes]
        accumulates = any(n.op_type in ACCUMULATING or n.op_type.startswith(QOPERATOR_PREFIX) for n in nodes)
        # a QDQ layer's result quantized again by its own QuantizeLinear (a quantizer of a value its call made)
        own = set(b.run_ids)
        out_step = max((scan.nodes[n.index].act_step for n in nodes if n.op_type == "QuantizeLinear"
                        and n.index in scan.nodes and pr.index.producer.get(n.inputs[0]) in own), default=0.0)
        out_step = max(out_step, _qoperator_out_step(pr, c, own))
        entries = {n.inputs[0] for n in nodes if n.op_type == "QuantizeLinear" and n.inputs
                   and pr.index.producer.get(n.inputs[0]) not in own}
        out[c] = Target(b.fmt, max((p.act_step for p in precs), default=0.0),
                        max((p.weight_step for p in precs), default=0.0), accumulates or blocks is not None, blocks,
                        out_step, len(entries))
    return out


def _qoperator_out_step(pr: Any, call: int, own: set[int]) -> float:
    """A QOperator layer's output rounding: the relative step (1 / max|q - zero point| on sample 0) of
    the integers its own QLinear* / QGemm node outputs at the file's output scale, found from the
    call's mapped output back through the views and moves that read it (DequantizeLinear, Reshape, a
    view's round trip...)."""
    index, levels = pr.index, pr.precision.levels
    cm = next((m for m in pr.plan.calls if m.call == call), None) if pr.plan is not None else None
    step = 0.0
    for v in (cm.outputs.values() if cm is not None else ()):
        for _ in range(2 * _MAX_BACK):
            p = index.producer.get(v)
            if p is None:
                break
            n = index.nodes[p]
            if n.op_type.startswith(QOPERATOR_PREFIX):
                if p in own and levels.get(v):
                    step = max(step, 1.0 / levels[v])
                break
            if not n.inputs or not (n.op_type == "DequantizeLinear" or n.op_type in MOVES or is_view_node(n.proto)):
                break
            v = n.inputs[0]
    return step


def _blocks_of(nodes: list[Any]) -> Optional[tuple[int, int, int, int, bool]]:
    """(N, K, block_size, bits, symmetric) of the call's one MatMulNBits node (None: none, several, or
    act-order ``g_idx``: not recomputed, the worst-case bound stays)."""
    nb = [n for n in nodes if n.op_type in NBITS_OPS]
    if len(nb) != 1 or (len(nb[0].inputs) > 4 and nb[0].inputs[4]):
        return None
    a = {x.name: x.i for x in nb[0].proto.attribute}
    if not (a.get("N") and a.get("K") and a.get("block_size")):
        return None
    return a["N"], a["K"], a["block_size"], a.get("bits", 4), not (len(nb[0].inputs) > 3 and nb[0].inputs[3])


@contextlib.contextmanager
def _as_in_file(module: torch.nn.Module, target: Target) -> Iterator[None]:
    """The module's own parameters (and, for float16, buffers) rounded as the file holds them."""
    saved: list[tuple[dict, str, Any]] = []
    try:
        for store in (module._parameters, module._buffers):
            for name, p in list(store.items()):
                if p is None or (store is module._buffers and target.fmt not in _TORCH):
                    continue
                r = target.param(name, p, module)
                if r is not None:
                    saved.append((store, name, p))
                    store[name] = r
        yield
    finally:
        for store, name, p in saved:
            store[name] = p


class RoundingSink(Sink):
    """In the hook of each target call: the module run again on rounded inputs and weights.  Its floating
    inputs are kept as they were before its forward (a copy taken in its pre-hook), so a module that
    computes in place (``Hardswish(inplace=True)``, ``ReLU(inplace=True)``) is recomputed from its input,
    not from its own output written over it."""

    wants_inputs = True
    wants_calls = True

    def __init__(self, want: dict[int, Target]) -> None:
        self.want = want
        self.rel: dict[int, float] = {}
        self._before: dict[int, dict[int, torch.Tensor]] = {}     # call -> id(input) -> its copy

    def on_input(self, call: int, tensors: list[torch.Tensor]) -> None:
        if call in self.want:
            self._before[call] = {id(t): t.detach().clone() for t in tensors if t.is_floating_point()}

    def on_output(self, call: int, tensors: list[torch.Tensor]) -> None:
        pass

    def on_call(self, call: int, module: Any, args: tuple, kwargs: dict, outputs: list[torch.Tensor]) -> None:
        t, before = self.want.get(call), self._before.pop(call, {})
        if t is None or next(module.children(), None) is not None:
            return
        if t.needs_weight and not any(p.ndim >= 2 for p in module.parameters(recurse=False)):
            return        # its reduced nodes accumulate over a weight another module holds (a folded Conv)

        def as_before(x: Any) -> Any:     # an input as it was before the forward (an in-place op overwrote it)
            return before.get(id(x), x) if isinstance(x, torch.Tensor) else x
        args, kwargs = tree_map(as_before, args), tree_map(as_before, kwargs)
        ins = tensors_of((args, kwargs))
        if any(o.data_ptr() == i.data_ptr() for o in outputs for i in ins if o.numel() and i.numel()):
            return        # in place on an input not kept (not floating): it is gone
        if t.entries > len({id(i) for i in ins if i.is_floating_point()}):
            # its local run quantizes values its forward never sees (the summands of a branch sum the QDQ file
            # put in a ReLU's nodes, the ReLU folded into the sum's quantizer): not redone, the bound stays
            return
        rounded = t.inputs()      # on the copies: an in-place forward writes over them, not over the model's values
        try:
            with torch.no_grad(), _as_in_file(module, t):
                again = tensors_of(module.forward(*tree_map(rounded, args), **tree_map(rounded, kwargs)))
        except Exception:      # a forward that refuses rounded values: the worst-case bound stays
            return
        if len(again) != len(outputs):
            return
        dev, scale = 0.0, 0.0
        for o, r in zip(outputs, again):
            if not o.is_floating_point() or o.shape != r.shape:
                return
            o32 = o.detach().float()
            dev = max(dev, float((t.output(r).float() - o32).abs().max())) if o.numel() else dev
            scale = max(scale, float(o32.abs().max())) if o.numel() else scale
        if scale > 0 and dev > 0:      # a recomputation that rounds nothing measured nothing the file does
            self.rel[call] = dev / scale


def measure(pr: Any, sample: Any, timings: Optional[dict[str, float]] = None) -> dict[int, float]:
    """call -> max |d| / max |torch| of its recomputation in the file's precision on ``sample``."""
    if pr.hooks is None or pr.precision is None or not pr.precision.reduced:
        return {}
    want = targets(pr)
    if not want:
        return {}
    t0 = time.perf_counter()
    sink = RoundingSink(want)
    try:
        with pr.hooks.installed():
            pr.hooks.begin(sink)
            safe_forward(pr.model, sample, versioned=True)
    finally:
        pr.hooks.begin(None)
    if timings is not None:
        timings["rounding"] = time.perf_counter() - t0
    return sink.rel
