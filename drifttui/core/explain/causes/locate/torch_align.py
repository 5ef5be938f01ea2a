"""The torch op a drift starts in, for a file that does not say which torch op each node computes.

A dynamo file records, on each ONNX node, the FX node it translates (``fx_localise``); a TorchScript file
records nothing, so its messages could only name the ONNX nodes of a lowering (a float16 ``var`` told by its
``ReduceMean, Sub, Mul, Div``).  Here the two computations are aligned by the values they compute:

1. the origin module's forward is run again on its captured inputs under a ``TorchFunctionMode`` that records
   each torch call as the forward made it (``torch.Tensor.var``, ``torch.Tensor.__rshift__``,
   ``torch.nn.functional.cosine_similarity``; not the calls inside one), its value and the calls its inputs
   came from: one eager forward, no tracing;
2. the origin's ONNX nodes are run in ONNX Runtime on the case's torch-side feeds, every value fetched;
3. an op is *found* in the file when an ONNX value of its shape holds its value within the tolerance (the
   sampled elements first, then the whole value);
4. an op is *right* when it is found, or when a value computed from it is (a view the file never
   materialises), and its inputs are right; the first op in call order that is not right while its inputs
   are is the torch op whose ONNX nodes are the first to differ.  Its ONNX nodes are those between the values
   of its inputs and the ONNX value closest to its own (of its shape, computed from its inputs).

None (the messages keep the ONNX ops) when the forward cannot be run again, the module's inputs are not
found among the case's values, or no op is told: an honest fallback, never a guess.  ``named`` gives a
dynamo file's op from its FX localisation (the file's own record comes first), the same record either way.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from drifttui.core.explain.causes.locate.align_graph import (ancestors, call_group, closest,
                                                             constant_values, continued, fused_into,
                                                             input_values, leaked, moved_tail, producers,
                                                             state_computed)
from drifttui.core.explain.causes.locate.call_replay import amplifies
from drifttui.core.explain.causes.locate.call_structure import as_called
from drifttui.core.explain.causes.locate.causal_values import causal
from drifttui.core.explain.causes.locate.case import Case, call_io
from drifttui.core.explain.causes.locate.evaluate import node_values
from drifttui.core.explain.causes.locate.forward_record import record
from drifttui.core.explain.causes.locate.torch_call import LAYOUT_NODES, plumbing
from drifttui.core.explain.causes.locate.value_match import found_values, held_dtype, noise
from drifttui.core.model.export import quiet
from drifttui.core.onnx.edit.orphan_steps import ORPHAN

MAX_GROUPS = 32                 # calls whose values the file does not hold given their nodes (_note_groups)
_COPIES = ("torch.Tensor.detach", "torch.detach", "torch.Tensor.clone", "torch.clone", "torch.Tensor.contiguous")


@dataclass
class TorchOp:
    """The torch op a drift starts in, and the ONNX nodes that compute it."""
    target: str                 # the call as written: torch.Tensor.var (an ATen op when the call is not known)
    nodes: list[str] = field(default_factory=list)
    op_types: list[str] = field(default_factory=list)
    how: str = "values"         # "fx": the file's own record (dynamo); "values": aligned by value; "sole": the one
    #                             call of the forward; "story": the call the verified story names (a lost update)
    found: int = 0              # torch ops whose value the file holds
    aten: Optional[str] = None  # the ATen op that call is (aten.var.correction), None when it is several
    dropped: list[str] = field(default_factory=list)    # arguments its __torch_function__ dispatch drops

    @property
    def name(self) -> str:
        """The op as the forward spelled it: ``var`` for ``aten.var.dim``."""
        parts = self.target.split(".")
        if parts[0] in ("aten", "prims") and len(parts) > 1:
            return parts[1]
        return parts[-1]

    def words(self) -> str:
        """``torch's var (torch.Tensor.var, aten.var.correction; ONNX ReduceMean, Sub, Mul, Div)``."""
        types = [t for n, t in zip(self.nodes, self.op_types) if ORPHAN not in n] \
            if len(self.nodes) == len(self.op_types) else self.op_types     # drifttui's orphan Identity is not the file's
        ops = ", ".join(dict.fromkeys(types))
        aten = f", {self.aten}" if self.aten and self.aten != self.target else ""
        lost = (f"; its __torch_function__ dispatch drops {', '.join(a + '=' for a in self.dropped)}, so a trace "
                "through torch-function modes (torch.export) records the call without it") if self.dropped else ""
        return f"torch's {self.name} ({self.target}{aten}" + (f"; ONNX {ops}" if ops else "") + f"{lost})"

    def told(self, message: str) -> str:
        """``message`` opened with the torch op, unless it names it already (a dynamo story's ``torch's
        aten.logaddexp.default``)."""
        if self.target in message or f"torch's {self.name}" in message:
            return message
        return f"in {self.words()}: {message}"

    def evidence(self) -> dict[str, Any]:
        return {"torch_op": self.target, "torch_op_aten": self.aten, "torch_op_nodes": self.nodes[:20],
                "torch_op_found_by": self.how, "torch_ops_found": self.found or None,
                **({"torch_op_dropped": self.dropped} if self.dropped else {})}


def called(call: str, aten: str, target: str) -> str:
    """The op the forward called, for an FX node: its torch call as written, else the ATen op before the exporter's
    decompositions (an ATen op called directly, ``torch.ops.aten.binary_cross_entropy_with_logits``, has no call
    to read, and its FX node is a piece of its decomposition: ``aten.log_sigmoid``), else the FX node's target."""
    return call or aten or target


def named(fx: Any) -> Optional[TorchOp]:
    """A dynamo file's wrong FX node (``fx_localise``) as a TorchOp, or None."""
    w = getattr(fx, "wrong", None)
    if w is None:
        return None
    return TorchOp(called(w.call, w.aten, w.target), list(w.nodes), list(w.op_types), "fx", getattr(fx, "matched", 0),
                   w.aten or w.target)


def torch_op(ctx: Any, case: Case) -> Optional[TorchOp]:
    """The torch op whose ONNX nodes are the first to differ in ``case`` (aligned by value), or None."""
    ops = _torch_ops(ctx, case)
    vals = node_values(case) if ops else None
    if not ops or vals is None:
        return _sole_call(ctx, case, ops)
    vals = {**constant_values(case), **case.feeds, **vals}
    found, rels, others = found_values(ops, vals, case.rtol)
    found = causal(case, ops, found, others)
    rels = {k: r for k, r in rels.items() if k in found}
    _note_calls(ctx, case, ops, found)
    if not any(ops[k][0] == "placeholder" or found[k] in case.feeds for k in found):
        # neither the module's inputs nor a call fed to the case (a child's output the case starts from): nothing
        # to align against
        return None
    right = _right(ops, found, vals, producers(case), state_computed(case, vals))
    feeding = _feeding(ops)         # the calls the module's output is computed from (a nested tensor cuts the record)
    _note_groups(ctx, case, ops, found, [k for k in sorted(feeding) if k not in right], vals)
    dropped = ctx.cache.get(_dropped_key(case), {})
    wrong = _dropping(ops, dropped, right, feeding)
    wrong = wrong if wrong is not None else next((k for k, (kind, tgt, _, ins, _) in enumerate(ops) if
                                                  kind == "call_function" and k in feeding and k not in right
                                                  and all(i in right for i in ins)), None)
    if wrong is None:
        return None
    wrong = _amplified(ops, rels, wrong, case, lambda: _replay(ctx, case, ops, found, wrong, vals))
    wrong = fused_into(case, ops, found, wrong, vals, feeding)    # a call the exporter fused with later ones
    nodes = call_group(case, ops, found, wrong, vals)
    leak = leaked(case, ops, found, wrong, nodes, others)
    if leak is not None:        # its nodes read past an input's value: that input's lowering goes on after it
        wrong, nodes = leak[0], call_group(case, ops, found, leak[0], vals) + leak[1]
    atens = ctx.cache.get(_aten_key(case), [])
    rest = None if leak is not None else (continued(case, ops, found, wrong, nodes, vals) or moved_tail(
        case, ops, found, wrong, nodes, atens[wrong] if wrong < len(atens) else None))
    if rest is not None:        # its nodes compute from an input's value: that input's lowering goes on after it
        wrong, nodes = rest[0], list(dict.fromkeys(call_group(case, ops, found, rest[0], vals) + rest[1]))
    if not nodes:
        return None
    types = {n.name: n.op_type for n in case.model.graph.node}
    aten = atens[wrong] if wrong < len(atens) else None
    return TorchOp(ops[wrong][1], nodes, [types[n] for n in nodes], "values", len(found), aten,
                   list(dropped.get(wrong, ((), ()))[0]))


def _note_calls(ctx: Any, case: Case, ops: list[tuple], found: dict[int, str]) -> None:
    """Each ONNX node -> (the call, its ATen op) of the first torch call whose found value it computes, in
    ``ctx.cache`` (``calls``: a verified patch's nodes named by the call they compute)."""
    producer, atens = producers(case), ctx.cache.get(_aten_key(case), [])
    owner: dict[str, tuple[str, Optional[str]]] = {}
    for k in sorted(found):
        # a node an earlier call owns was reached by that call's whole walk, its ancestors with it: stop there
        todo = [found[k]]
        while todo:
            n = producer.get(todo.pop())
            if n is None or n.name in owner:
                continue
            owner[n.name] = (ops[k][1], atens[k] if k < len(atens) else None)
            todo.extend(v for v in n.input if v in producer)
    ctx.cache[f"causes:torch_op:calls:{case.module}:{case.sample}"] = owner


def _note_groups(ctx: Any, case: Case, ops: list[tuple], found: dict[int, str], wrong: list[int],
                 vals: dict[str, np.ndarray]) -> None:
    """Each ONNX node no found call computes -> (the call, its ATen op) of the first torch call whose value the file
    does not hold (``wrong``, in call order, at most ``MAX_GROUPS``) whose nodes (``call_group``) it is among, in
    ``ctx.cache`` (``groups``): a verified patch that changed the lowering of such a call (``logit``'s clamp
    after a Sigmoid whose value the file holds) is named by that call, not by the found call before it."""
    owned, atens = calls(ctx, case), ctx.cache.get(_aten_key(case), [])
    out: dict[str, tuple[str, Optional[str]]] = {}
    types = {n.name: n.op_type for n in case.model.graph.node}
    for k in [k for k in wrong if ops[k][0] == "call_function" and ops[k][2] is not None][:MAX_GROUPS]:
        aten = atens[k] if k < len(atens) else None
        for n in call_group(case, ops, found, k, vals):
            # a layout call (``.t()`` whose value the file folded away) lowers to layout nodes only: the arithmetic
            # its group reaches back over (an ``atan2``'s quadrant test) is its input's lowering
            if n not in owned and n not in out and not (plumbing(aten) and types.get(n) not in LAYOUT_NODES):
                out[n] = (ops[k][1], aten)
    ctx.cache[f"causes:torch_op:groups:{case.module}:{case.sample}"] = out


def groups(ctx: Any, case: Case) -> dict[str, tuple[str, Optional[str]]]:
    """ONNX node -> (torch call, ATen op) whose lowering it is among, for the calls whose values the file does not
    hold (``_note_groups``; {} when none)."""
    return ctx.cache.get(f"causes:torch_op:groups:{case.module}:{case.sample}", {})


def calls(ctx: Any, case: Case) -> dict[str, tuple[str, Optional[str]]]:
    """ONNX node -> (torch call, ATen op) it computes, from the last alignment of ``case`` ({} when none)."""
    return ctx.cache.get(f"causes:torch_op:calls:{case.module}:{case.sample}", {})


def _sole_call(ctx: Any, case: Case, ops: list[tuple]) -> Optional[TorchOp]:
    """The one torch call a forward makes (``nn.EmbeddingBag``: ``F.embedding_bag``) when the file's values cannot be
    fetched (a ``Loop`` body's): the origin drifts on its own, and that call is all it computes; None otherwise."""
    calls = [k for k, op in enumerate(ops) if op[0] == "call_function"]
    if len(calls) != 1 or calls[0] not in _feeding(ops):
        return None
    types = {n.name: n.op_type for n in case.model.graph.node}
    nodes = [n for n in case.nodes if types.get(n) not in (None, "Constant")]
    atens = ctx.cache.get(_aten_key(case), [])
    return TorchOp(ops[calls[0]][1], nodes, [types[n] for n in nodes], "sole", 0,
                   atens[calls[0]] if calls[0] < len(atens) else None)


def origin_torch_op(ctx: Any, case: Case, fx: Any) -> Optional[TorchOp]:
    """A dynamo file's wrong FX node when it is an ATen op, else the call aligned by value (a TorchScript file; a
    dynamo file whose wrong node is a decomposition's prims op), else that node."""
    if fx is not None and fx.wrong is not None and fx.wrong.target.startswith("aten."):
        return named(fx)
    try:    # a prims node is a decomposition's, not a call of the forward: the call by value first
        return torch_op(ctx, case) or named(fx)
    except Exception:  # noqa: BLE001 - no alignment: the messages keep the ONNX ops
        return named(fx)


def _torch_ops(ctx: Any, case: Case) -> list[tuple[str, str, Any, list[int], str]]:
    """(kind, target, value, input indices, dtype) of each torch op the origin module's forward calls on its
    captured inputs (``placeholder``: an input), in call order; [] when it cannot be run."""
    import torch

    key = f"causes:torch_op:ops:{case.module}:{case.sample}"
    if key in ctx.cache:
        return ctx.cache[key]
    ctx.cache[key], ctx.cache[_aten_key(case)], ctx.cache[_dropped_key(case)] = [], [], {}
    module = ctx.modules().get(case.module) if case.module else ctx.model
    io = call_io(ctx, case) if module is not None else None
    if io is None:
        return []
    try:
        module = as_called(ctx, case.call, module, ctx.sample(case.sample))
        plain = tuple(t.clone() if isinstance(t, torch.Tensor) and t.is_inference() else t for t in io[0])
        with quiet(), torch.no_grad():
            replay: dict[int, tuple] = {}
            ctx.cache[key], ctx.cache[_aten_key(case)], ctx.cache[_dropped_key(case)] = record(module, plain, replay)
            ctx.cache[_aten_key(case) + ":replay"] = replay
    except Exception:  # noqa: BLE001 - a forward that does not run again: no alignment
        ctx.cache[key] = []
    return ctx.cache[key]


def _aten_key(case: Case) -> str:
    return f"causes:torch_op:aten:{case.module}:{case.sample}"


def _dropped_key(case: Case) -> str:
    return f"causes:torch_op:dropped:{case.module}:{case.sample}"


def _dropping(ops: list[tuple], dropped: dict[int, tuple], right: set[int], feeding: set[int]) -> Optional[int]:
    """The first call the file does not compute whose dispatch dropped an argument (``dropped_args``), while the
    inputs it was dispatched with are right: the file computes it without that argument (the values the dropped
    argument is computed from are not in the file at all, so they are not the first wrong call)."""
    return next((k for k in sorted(dropped) if k in feeding and k not in right
                 and all(i in right for i in dropped[k][1])), None)


def disowns(want: Any, value: str, vals: dict[str, np.ndarray], producer: dict[str, Any],
            before: frozenset = frozenset()) -> bool:
    """Whether the node that makes the file's ``value`` reads values of ``want``'s element count and none of them
    holds torch's ``want`` (its elements sorted: a layout of its own is no other value): the file computed that input
    otherwise, and a many-to-one op after it (a clamp, a rounding) hid it.  A node that reads one of ``before``, the
    file's values of the input's own inputs, computes the input itself (a fused node: the TorchScript exporter's
    ``SoftmaxCrossEntropyLoss`` reads the scores, not the ``log_softmax`` of them): it disowns nothing."""
    node = producer.get(value)
    if node is None or want is None or not hasattr(want, "shape") or np.asarray(want).size < 2 \
            or np.asarray(want).dtype.kind not in "fiub" or set(node.input) & before:
        return False
    w = np.sort(np.asarray(want, np.float64).reshape(-1))
    got = [np.asarray(vals[v]) for v in node.input if v in vals and np.asarray(vals[v]).size == w.size]
    got = [g for g in got if g.dtype.kind in "fiub"]
    scale = float(np.abs(w[np.isfinite(w)]).max()) if np.isfinite(w).any() else 1.0
    return bool(got) and not any(np.allclose(np.sort(g.astype(np.float64).reshape(-1)), w, rtol=1e-4,
                                             atol=1e-6 * (scale or 1.0), equal_nan=True) for g in got)


def _right(ops: list[tuple], found: dict[int, str], vals: dict[str, np.ndarray],
           producer: Optional[dict[str, Any]] = None, state: Optional[list[np.ndarray]] = None) -> set[int]:
    """Ops the file computes as torch does: found, or an ancestor of a found value that is neither constant nor
    boolean (a value the file never materialises; ``zeros_like(y)`` says nothing of ``y``, nor ``y == 0`` of a ``y``
    that is 1 where torch's is 66), a copy of a right value
    (``detach``, ``clone``), every op with no tensor value whose inputs are right (a size, a scalar), and every op
    computed from the module's state alone (``self.prototypes * 3 + offset``: no input of the module reaches it).
    Such an op is a constant of the forward, which the exporters fold into an initializer of their own layout
    (a ``cdist``'s ``[1, 32, 32]`` prototypes; the dynamo file's ``[-2 b, 1, |b|^2]``): not finding its value
    says nothing of it, and naming it would name the first constant, not the call its readers' nodes lower (the
    file's constants are the weights and custom-module checks' to compare).  Unless the file computes it
    otherwise (``state``: values its nodes compute from constants alone, ``_unfolded_otherwise``: an int32
    ``qweight >> shifts`` the TorchScript exporter left as a truncating Div on the initializer).  A found value vouches for no input
    whose value the node making it reads otherwise (``disowns``: ``count.clamp(min=1)`` is found where torch's count
    is 0 and the file's 1)."""
    right = set(found)
    for k in sorted(found, reverse=True):
        got = np.asarray(vals[found[k]])
        if got.size < 2 or got.dtype.kind == "b" or bool(np.all(got == got.reshape(-1)[0])):
            continue            # a constant, or a comparison's mask: which side of 0 a value is says nothing of it
        todo = [i for i in ops[k][3] if not disowns(ops[i][2], found[k], vals, producer or {},
                                                     frozenset(found[j] for j in ops[i][3] if j in found))]
        while todo:
            i = todo.pop()
            if i not in right:
                right.add(i)
                todo.extend(ops[i][3])
    fed: set[int] = set()          # the ops computed from the module's inputs (the rest: from its state alone)
    for k, (kind, tgt, val, ins, _) in enumerate(ops):
        if kind == "placeholder" or any(i in fed for i in ins):
            fed.add(k)
        if k not in right and (kind == "placeholder" or (k not in fed and not _unfolded_otherwise(val, state))
                               or ((val is None or tgt.startswith(_COPIES)) and all(i in right for i in ins))):
            right.add(k)
    return right


def _unfolded_otherwise(want: Any, state: Optional[list[np.ndarray]]) -> bool:
    """Whether the file computes, from its constants alone, values of ``want``'s shape and kind (not folded into an
    initializer of its own layout) and none of them holds ``want``: the file computes that constant otherwise."""
    if not state or want is None or not hasattr(want, "shape") or np.asarray(want).size < 2:
        return False
    w = np.asarray(want)
    same = [g for g in state if g.shape == w.shape and g.dtype.kind == w.dtype.kind]
    return bool(same) and not any(np.array_equal(g, w) if w.dtype.kind in "iub" else
                                  np.allclose(g, w, rtol=1e-4, atol=0, equal_nan=True) for g in same)


def _feeding(ops: list[tuple]) -> set[int]:
    """The calls the recorded output is computed from (none when the output is not a recorded tensor)."""
    seen: set[int] = set()
    todo = list(ops[-1][3]) if ops and ops[-1][0] == "output" else []
    while todo:
        i = todo.pop()
        if i not in seen:
            seen.add(i)
            todo.extend(ops[i][3])
    return seen


def _replay(ctx: Any, case: Case, ops: list[tuple], found: dict[int, str], wrong: int,
            vals: dict[str, np.ndarray]) -> Optional[bool]:
    """Does torch's call ``wrong``, fed the file's values of its inputs, compute the file's value (call_replay)?"""
    call, pos = ctx.cache.get(_aten_key(case) + ":replay", {}).get(wrong, (None, 0))
    before = ancestors(producers(case), [found[i] for i in input_values(ops, found, wrong)])
    best = closest(case, ops, found, wrong, vals, before)
    return amplifies(call, pos, ops, wrong, found, vals, vals.get(best) if best else None, case.rtol)


def _amplified(ops: list[tuple], rels: dict[int, float], wrong: int, case: Case,
               amplifies: Callable[[], Optional[bool]]) -> int:
    """``wrong``, or, when a value it reads already holds more than rounding noise of error (an error the op
    amplifies: a level subtracted after a long sum), the first op before it whose own value does while the
    values it reads do not.  A widening conversion (``c.float()`` of a float16 ``c``) carries its input's rounding
    unchanged: the error it shows is its input's, which is named.  Not when ``wrong`` replayed in torch on the
    file's input values computes otherwise than the file (``amplifies()`` False: a ``floor_divide`` the file
    truncates, after 200 float32 steps whose noise is no cause)."""
    noisy = {k for k, r in rels.items() if r > noise(ops[k][4])}
    feeding = input_values(ops, rels, wrong)
    if not any(i in noisy for i in feeding) or amplifies() is False:
        return wrong
    for k in sorted(noisy):
        if k < wrong and ops[k][0] == "call_function" and not any(i in noisy for i in input_values(ops, rels, k)):
            while held_dtype(ops, k, case.rtol) != ops[k][4] and len(ops[k][3]) == 1 and \
                    ops[ops[k][3][0]][0] == "call_function":
                k = ops[k][3][0]
            return k
    return wrong
