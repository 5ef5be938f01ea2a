"""Re-trace a module into core ATen through another route than the exporters' (issue 30 point 2).

``make_fx`` runs the module's torch computation on real inputs and records it as an FX graph of core
ATen ops, decomposed by torch's core ATen table and, for the ops that table and the exporters leave
opaque (no decomposition anywhere in torch, and a lowering that computes otherwise or none at all),
by their *definition* in core ATen ops (``reference_table``).  The GraphModule is then exported like any
module, by either exporter: a route that never reaches the failing lowering.

The definitions are of ops, not drift forms: each entry is the op's mathematical definition, written
so that every exporter lowers it from ops it lowers right (exact comparisons, ``logsumexp``'s
max-shifted form), for every argument the op takes.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from drifttui.core.model import (dof_forms, histc_forms, margin_forms, pool_forms, resize_forms, scatter_forms,
                                 special_forms)
from drifttui.core.model.op_definition import OpDefinition

# drifttui's own definitions with a story (op_definition.py), in the order a story is looked up: one module each
DEFINITIONS: tuple[OpDefinition, ...] = (special_forms.DEFINITION, scatter_forms.DEFINITION, dof_forms.DEFINITION,
                                         pool_forms.DEFINITION, resize_forms.DEFINITION, margin_forms.DEFINITION,
                                         histc_forms.DEFINITION)


def _cdist(x1: Any, x2: Any, p: float, compute_mode: Any = None) -> Any:
    """torch.cdist by its definition: the p-norm of every row difference (p=0 counts, p=inf takes the max)."""
    d = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if p == 0:
        return (d != 0).to(x1.dtype).sum(-1)
    if p == 1:
        return d.abs().sum(-1)
    if p == 2:
        return (d * d).sum(-1).sqrt()
    if p == float("inf"):
        return d.abs().amax(-1)
    return d.abs().pow(p).sum(-1).pow(1.0 / p)


def _signbit(x: Any) -> Any:
    """torch.signbit: negative, or a negative zero (1/-0.0 is -inf), never a comparison alone."""
    if not x.is_floating_point():
        return x < 0
    return (x < 0) | ((x == 0) & ((1.0 / x) < 0))


def _logcumsumexp(x: Any, dim: int) -> Any:
    """torch.logcumsumexp: each prefix's logsumexp (max-shifted, so no overflow), over a lower-triangular
    mask of the dimension."""
    import torch

    dim = dim % max(1, x.dim())
    xt = x.movedim(dim, -1)
    n = xt.shape[-1]
    keep = torch.ones(n, n, dtype=torch.bool).tril()
    full = xt.unsqueeze(-2).expand(*xt.shape[:-1], n, n)
    masked = torch.where(keep, full, torch.tensor(float("-inf"), dtype=x.dtype))
    return torch.logsumexp(masked, -1).movedim(-1, dim)


def _clamp(x: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002 - aten's argument names
    """torch.clamp with torch's type promotion: an integer tensor clamped by a float bound is a float
    (the exporters cast the bound to the tensor's type instead)."""
    import torch

    dtype = x.dtype
    for b in (min, max):
        if b is not None:
            dtype = torch.promote_types(dtype, torch.result_type(x, b))
    y = x.to(dtype)
    if min is not None:
        y = torch.maximum(y, torch.full((), min, dtype=dtype))
    if max is not None:
        y = torch.minimum(y, torch.full((), max, dtype=dtype))
    return y


def reference_table() -> dict[Any, Callable[..., Any]]:
    """torch's core ATen decompositions, the definitions of the ops torch decomposes nowhere (here), and every
    definition of ``DEFINITIONS`` (the special functions by their stable forms; scatter_reduce's mean; the
    degrees-of-freedom reductions var / var_mean with torch's max(0, N - correction); average pooling with
    divisor_override; the bilinear resize of uint8 images; the multi-label margin loss, whose torch decomposition
    keeps the target slots after the first -1; histc's bins as torch's kernel truncates them)."""
    import torch
    from torch._decomp import core_aten_decompositions

    aten = torch.ops.aten
    table = {**core_aten_decompositions(), aten._cdist_forward.default: _cdist, aten.signbit.default: _signbit,
             aten.logcumsumexp.default: _logcumsumexp, aten.clamp.default: _clamp}
    for d in DEFINITIONS:
        table.update(d.table())
    return table


def defined_ops() -> set[str]:
    """The ATen ops ``reference_table`` defines by their definition (their names as FX targets print them)."""
    return {"aten._cdist_forward.default", "aten.cdist.default", "aten.signbit.default",
            "aten.logcumsumexp.default", "aten.clamp.default", *(t for d in DEFINITIONS for t in d.lowered)}


def definition_of(target: str) -> Optional[OpDefinition]:
    """The definition with a story that ``target`` (an ATen op as FX prints it) reaches, None when none does."""
    return next((d for d in DEFINITIONS if d.key(target) is not None), None)


def _to_copy_symbolic() -> None:
    """The TorchScript exporter's lowering of ``aten::_to_copy`` (a dtype conversion, which make_fx
    records for every ``.to(dtype)``): a Cast; and of ``aten::lift_fresh_copy`` (a constant tensor):
    the constant.  Registered once; the exporter has none of its own."""
    import torch
    from torch.onnx import symbolic_helper as sh

    @sh.parse_args("v", "i", "none", "none", "none", "none", "none")
    def to_copy(g: Any, x: Any, dtype: int, *_: Any) -> Any:
        return g.op("Cast", x, to_i=sh._type_utils.JitScalarType(dtype).onnx_type())

    torch.onnx.register_custom_op_symbolic("aten::_to_copy", to_copy, 9)
    # a constant tensor a definition builds (resize_forms' weights) is recorded as lift_fresh_copy(constant)
    torch.onnx.register_custom_op_symbolic("aten::lift_fresh_copy", lambda g, x: x, 9)


_REGISTERED: list[bool] = []


def _integer(t: Any) -> bool:
    """An integer tensor (a bool is a mask: ``where``'s condition stays one)."""
    import torch

    return not (t.is_floating_point() or t.is_complex() or t.dtype == torch.bool)


def _promoting_ops(gm: Any) -> dict[Any, Any]:
    """The elementwise ATen ops of ``gm`` that torch computes in a float type on integer tensors (and masks): op ->
    the float type of its result (``angle`` of an int64 tensor is float32 in torch, pi where it is negative)."""
    import torch

    out: dict[Any, Any] = {}
    for n in gm.graph.nodes:
        op, val = n.target, n.meta.get("val")
        if n.op != "call_function" or not isinstance(op, torch._ops.OpOverload) or torch.Tag.pointwise not in op.tags \
                or not isinstance(val, torch.Tensor) or not val.is_floating_point():
            continue
        ins = [a.meta.get("val") for a in n.all_input_nodes]
        ins = [t for t in ins if isinstance(t, torch.Tensor)]
        if any(_integer(t) for t in ins) and not any(t.is_floating_point() or t.is_complex() for t in ins):
            out[op] = val.dtype
    return out


def _promoted(op: Any, dtype: Any) -> Callable[..., Any]:
    """``op`` on its integer tensors (not its masks) cast to torch's result type first (torch's type promotion);
    NotImplemented, so make_fx records the op itself, once no input is an integer."""
    import torch

    def run(*args: Any, **kwargs: Any) -> Any:
        ints = [a for a in args if isinstance(a, torch.Tensor) and _integer(a)]
        if not ints:
            return NotImplemented
        return op(*[a.to(dtype) if any(a is t for t in ints) else a for a in args], **kwargs)

    return run


def torch_decomposition(target: str) -> Optional[Any]:
    """The ATen op ``target`` names (``aten.elu.default``, as FX prints it) when torch decomposes it
    (``torch._decomp.decomposition_table``: ``elu``'s ``where(x > 0, x * scale, expm1(x * input_scale) * alpha *
    scale)``) and neither its core ATen table nor ``reference_table`` does (a core ATen op an exporter lowers by hand);
    None otherwise."""
    import torch
    from torch._decomp import decomposition_table

    parts = target.split(".")
    if len(parts) != 3 or parts[0] != "aten":
        return None
    op = getattr(getattr(torch.ops.aten, parts[1], None), parts[2], None)
    return op if op in decomposition_table and op not in reference_table() else None


def _relowered(module: Any, args: tuple, table: dict, relower: tuple) -> tuple[Any, list[Any]]:
    """(``module`` traced on ``table`` and torch's own decomposition of each op of ``relower`` that reaches no prims,
    those ops)."""
    from torch._decomp import decomposition_table
    from torch.fx.experimental.proxy_tensor import make_fx

    gm, applied = make_fx(module, decomposition_table=table, tracing_mode="real")(*args), []
    for op in dict.fromkeys(op for op in map(torch_decomposition, relower) if op is not None):
        more = {**table, **{a: decomposition_table[a] for a in applied}, op: decomposition_table[op]}
        tried = make_fx(module, decomposition_table=more, tracing_mode="real")(*args)
        if not any(str(n.target).startswith("prims.") for n in tried.graph.nodes if n.op == "call_function"):
            gm = tried
            applied.append(op)
    return gm, applied


def relowerable(module: Any, args: tuple, relower: tuple) -> tuple:
    """The ops of ``relower`` (as FX prints them) that ``retrace`` decomposes by torch's own decomposition."""
    _, applied = _relowered(module, args, reference_table(), relower)
    return tuple(t for t in relower if torch_decomposition(t) in applied)


def retrace(module: Any, args: tuple, relower: tuple = ()) -> Any:
    """``module`` on ``args`` as a GraphModule of core ATen ops (make_fx, the reference table; ``relower``: ATen ops,
    as FX prints them, also decomposed by torch's own decomposition, ``torch_decomposition``, unless that reaches
    prims, which no exporter lowers: torch's reference ``add``).  An elementwise op torch computes in a float type on
    integer inputs is traced on those inputs cast to that type (``_promoting_ops``): a lowering that computes it in
    the input's type (torchlib's ``angle``: ``Where(x < 0, pi, 0)`` with pi cast to int64, 3) is never reached."""
    from torch._decomp import decomposition_table
    from torch.fx.experimental.proxy_tensor import make_fx

    if not _REGISTERED:
        _to_copy_symbolic()
        _REGISTERED.append(True)
    table = reference_table()
    gm, applied = _relowered(module, args, table, relower)
    table.update({op: decomposition_table[op] for op in applied})
    promoting = _promoting_ops(gm)
    if not promoting:
        return gm
    table.update({op: _promoted(op, dtype) for op, dtype in promoting.items()})
    return make_fx(module, decomposition_table=table, tracing_mode="real")(*args)
