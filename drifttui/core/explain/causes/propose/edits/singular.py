"""Generic patches for a lowering that decides a singular point otherwise than torch (issue 30
point 2): no catalogue entry per op, only what the origin's values show.

* Where the file's value is NaN or inf and torch's is finite, the node that first makes the
  non-finite value (for a dynamo file the node the FX values name as wrong; for a file without FX records the last
  node of the call the alignment by value names, first, when its value holds one) gets a guard
  ``Where(IsNaN | IsInf, c, y)``: ``c`` is torch's one value at those points when the FX values
  tell it, else 0 (the value torch gives at its singular points: 0/0, an empty or fully masked set).
  A guard tells a singular point only where there is one: where the nodes the guarded node is computed by (the
  nearest ``MAX_WIDENED`` of them, fed the file's own values where that cut leaves them: ``locate/cone.py``, so an
  origin of any size is checked at a bounded cost), computed in float64 (the ONNX
  reference implementation on the widened graph, ``onnx/edit/numerics/widen.py``), give a finite value at an element the
  guarded node makes non-finite, the NaN or inf is float32's underflow or overflow (``Log(Sigmoid(x))`` of a
  confident logit: the Sigmoid rounds to 0, the exact value is not), not a point torch defines: no guard there,
  whose zeros would only be near torch's finite values (the stable form tells that drift: ``propose/edits/rewrites.py``).
* A ``Mul`` by an exact zero whose other operand holds NaN or inf (``0 * inf`` is NaN) is guarded
  first, on its own output, with 0: torch skips a term whose coefficient is 0 (``addmm``, ``addmv``,
  ``baddbmm`` with ``beta=0`` ignore their input, NaN and inf in it included), the lowering multiplies
  it in.  The zero term is the node that is wrong, not the producer of the NaN, which torch has too.
* Where the FX-named wrong node returns a finite value where torch's is NaN and one of its inputs is NaN
  there, its output gets ``Where(IsNaN(x), x, y)``: torch's elementwise ops carry a NaN through (``angle``,
  ``heaviside``, ``xlogy`` of NaN are NaN), a lowering in comparisons and Where drops it.
* The comparisons of the wrong lowering (or of the origin) are tried with the boundary on the other
  side (``Greater`` <-> ``GreaterOrEqual``): a signed zero or a tie decided otherwise than torch.
* A ``Floor(Div(a, b))``, or a float -> integer ``Cast`` of a float ``Div`` (TorchScript's float
  ``floor_divide``), is tried as torch's floor division through ``fmod`` (a quotient on a multiple of ``b``), and
  a remainder ``a - Floor(a / b) * b`` as torch's ``fmod`` with the sign moved (a large quotient, whose product
  the lowering rounds at ``a``'s magnitude: ``onnx/edit/lowerings/remainder.py``).

Both are verified on the origin's case and on fresh samples like any patch (``onnx/edit/lowerings/singular.py``).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.explain.causes.propose.edits.constants import constant_arrays
from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import float64_values, node_values
from drifttui.core.explain.causes.locate.torch_call import LAYOUT_NODES
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.onnx.edit.lowerings.remainder import remainder_of
from drifttui.core.onnx.edit.lowerings.singular import FLIP, floor_of_div

MAX_GUARDS = 3
MAX_FLIPS = 4
MAX_CALL_NODES = 4      # the nodes of an aligned call whose last node is guarded (a lowering of one call)
MAX_WIDENED = 400       # nodes before a guarded node computed in float64 to tell a singular point (the nearest)


def singular_patches(case: Case, loc: Any) -> list[Patch]:
    """The guards and boundary flips worth trying at this origin (none when nothing fits)."""
    wrong = loc.fx.wrong if loc is not None and getattr(loc, "fx", None) is not None else None
    vals = node_values(case)
    out = []
    scope = set(wrong.nodes) if wrong is not None else {n.name for n in case.model.graph.node}
    if vals is not None and _nonfinite_where_torch_is_finite(case, vals):
        zeros = _zero_terms(case, vals, scope)
        out.extend(_zero_patch(case, node, wrong) for node in zeros)
        guarded = [(node, c) for node, c in _guarded(case, vals, wrong, loc) if node not in zeros]
        # the nodes each guarded node is computed by, the nearest MAX_WIDENED of them (a bounded cost on any origin)
        wide = float64_values(case, True, [node.output[0] for node, _ in guarded], vals, MAX_WIDENED) \
            if guarded else None
        out.extend(_guard_patch(case, node, c, wrong) for node, c in guarded
                   if not _rounding_made(node, vals, wide))
    if wrong is not None and getattr(wrong, "drops_nonfinite", False) and vals is not None:
        out.extend(_nan_pass_patch(case, node, src, wrong)
                   for node, src in _nan_sources(case, vals, wrong, loc.fx.torch_values))
    flips = [n for n in case.model.graph.node if n.op_type in FLIP and n.name in scope][:MAX_FLIPS]
    out.extend(_flip_patch(case, n, wrong) for n in flips)
    floors = [n for n in case.model.graph.node if n.op_type == "Floor" and n.name in scope
              and floor_of_div(case.model, n) is not None]
    out.extend(_fmod_patch(case, n, wrong) for n in floors[:MAX_FLIPS])
    subs = [n for n in case.model.graph.node if n.name in scope and remainder_of(case.model, n) is not None]
    out.extend(_remainder_patch(case, n, wrong) for n in subs[:MAX_FLIPS])
    if loc is not None and getattr(loc, "kind", "") == "runtime":
        for p in out:       # ONNX Runtime's kernel, not the graph, decides the point otherwise
            p.check, p.kind = "op-compat", "runtime"
    return out


def truncated_quotient_patches(case: Case, loc: Any) -> list[Patch]:
    """``fmod_floor`` on a float -> integer Cast of a float Div (TorchScript's float ``floor_divide``), tried after the
    catalogue's ``floor_cast`` (a Floor before the Cast: right off the multiples of ``b``, on negative quotients)."""
    wrong = loc.fx.wrong if loc is not None and getattr(loc, "fx", None) is not None else None
    scope = set(wrong.nodes) if wrong is not None else {n.name for n in case.model.graph.node}
    casts = [n for n in case.model.graph.node if n.op_type == "Cast" and n.name in scope
             and floor_of_div(case.model, n) is not None]
    out = [_fmod_patch(case, n, wrong) for n in casts[:MAX_FLIPS]]
    if loc is not None and getattr(loc, "kind", "") == "runtime":
        for p in out:
            p.check, p.kind = "op-compat", "runtime"
    return out


def _bad(a: Any) -> np.ndarray:
    arr = np.asarray(a)
    return ~np.isfinite(arr) if arr.dtype.kind == "f" else np.zeros(arr.shape, bool)


def _nonfinite_where_torch_is_finite(case: Case, vals: dict[str, np.ndarray]) -> bool:
    for name, want in case.expected.items():
        got = vals.get(name)
        if got is not None and np.shape(got) == np.shape(want) and (_bad(got) & ~_bad(want)).any():
            return True
    return False


def _guarded(case: Case, vals: dict[str, np.ndarray], wrong: Any, loc: Any) -> list[tuple[Any, float]]:
    """(node, c) to guard: the FX-named wrong node (c: torch's one value where the file's is not
    finite), else the first nodes that make a NaN (or an inf) out of inputs that hold none, of which one at least
    is computed (a Constant holding -inf is the model's own fill value: torch's ``masked_fill`` holds it too)."""
    nodes = {n.name: n for n in case.model.graph.node}
    if wrong is not None and wrong.nodes and wrong.nodes[-1] in nodes:
        node = nodes[wrong.nodes[-1]]
        return [(node, _torch_value(loc.fx.torch_values.get(node.output[0]), vals.get(node.output[0])))]
    out = _aligned_last(loc, nodes, vals)
    consts = constant_arrays(case.model)
    known = {**consts, **case.feeds, **vals}
    for n in case.model.graph.node:
        got = vals.get(n.output[0]) if n.output else None
        if got is None or np.asarray(got).dtype.kind != "f" or all(i in consts for i in n.input if i):
            continue        # a constant's inf (a masked_fill's -inf) is the model's own number, no singular point
        ins = [np.asarray(known[i]) for i in n.input if i in known]
        for test in (np.isnan, np.isinf):
            if test(got).any() and not any(a.dtype.kind == "f" and test(a).any() for a in ins) \
                    and all(n is not m for m, _ in out):
                out.append((n, 0.0))
                break
        if len(out) >= MAX_GUARDS:
            break
    return out


def _aligned_last(loc: Any, nodes: dict[str, Any], vals: dict[str, np.ndarray]) -> list[tuple[Any, float]]:
    """The last node of the call the alignment by value names as the first wrong one (a file without FX records),
    when its float value holds a NaN or inf: the call that decides the singular point otherwise than torch (``sign``
    of a NaN is 0 in torch; its input's NaN, torch's own ``log`` of a negative, is no point to guard)."""
    op = getattr(loc, "torch_op", None) if loc is not None else None
    if op is None or op.how != "values" or not 0 < len(op.nodes) <= MAX_CALL_NODES or op.nodes[-1] not in nodes:
        return []       # a long group is an alignment that lumped several calls: no one call's value to guard
    node = nodes[op.nodes[-1]]
    if node.op_type in LAYOUT_NODES:
        return []       # a layout node moves a NaN it was given, it decides no point
    got = vals.get(node.output[0]) if node.output else None
    return [(node, 0.0)] if got is not None and _bad(got).any() else []


def _rounding_made(node: Any, vals: dict[str, np.ndarray], wide: Optional[dict[str, np.ndarray]]) -> bool:
    """``node``'s NaN or inf is float32's rounding, not a singular point: computed in float64, the value is finite at
    an element where the file's is not."""
    got = vals.get(node.output[0]) if node.output else None
    exact = wide.get(node.output[0]) if wide is not None and node.output else None
    if got is None or exact is None or np.shape(got) != np.shape(exact) or np.asarray(exact).dtype.kind != "f":
        return False
    return bool(np.isfinite(np.asarray(exact)[_bad(got)]).any())


def _zero_terms(case: Case, vals: dict[str, np.ndarray], scope: set[str]) -> list[Any]:
    """The Mul nodes in ``scope`` that multiply a NaN or inf operand by a constant exact zero."""
    consts = constant_arrays(case.model)
    known = {**consts, **case.feeds, **vals}
    out = []
    for n in case.model.graph.node:
        if n.op_type != "Mul" or n.name not in scope or len(n.input) != 2:
            continue
        zero = [i for i in n.input if i in consts and consts[i].size and not np.asarray(consts[i]).any()]
        other = [np.asarray(known[i]) for i in n.input if i not in zero and i in known]
        if zero and other and other[0].dtype.kind == "f" and _bad(other[0]).any():
            out.append(n)
    return out[:MAX_GUARDS]


def _zero_patch(case: Case, node: Any, wrong: Any) -> Patch:
    of = f" in the lowering of torch's {wrong.target}" if wrong is not None else ""
    return Patch({"op": "rewrite", "rewrite": "nonfinite_guard", "node": node.name, "value": 0.0}, "lowering",
                 f"Mul {node.name}{of} multiplies a term holding NaN or inf by 0 (0 * inf is NaN): torch skips a "
                 "term whose coefficient is 0 (addmm, addmv, baddbmm with beta=0 ignore their input, NaN and inf "
                 "included) and the exporter's lowering multiplies it in; with Where(IsNaN | IsInf, 0, ·) on its "
                 "output the file computes what torch computes",
                 "drop the zero term in the model (call `a @ b` instead of `addmm(input, a, b, beta=0)`), or report "
                 "the lowering to torch.onnx with `drifttui repro` (`drifttui repair` adds the guard to the file)",
                 "export", module=case.module, nodes=[node.name])


def _nan_sources(case: Case, vals: dict[str, np.ndarray], wrong: Any,
                 torch_values: dict[str, np.ndarray]) -> list[tuple[Any, str]]:
    """(the wrong group's last node, its input of the output's shape that is NaN wherever the output is
    finite and torch's is NaN): the NaN torch carries through and the lowering drops."""
    nodes = {n.name: n for n in case.model.graph.node}
    last = nodes.get(wrong.nodes[-1]) if wrong.nodes else None
    if last is None or not last.output:
        return []
    got, torch_val = vals.get(last.output[0]), torch_values.get(last.output[0])
    group = [nodes[n] for n in wrong.nodes if n in nodes]
    produced = {v for n in group for v in n.output}
    if got is None or torch_val is None or np.shape(torch_val) != np.shape(got):
        return []
    for n in group:
        for i in n.input:
            x = vals.get(i, case.feeds.get(i))
            if not i or i in produced or x is None or np.shape(x) != np.shape(got) or np.asarray(x).dtype.kind != "f":
                continue
            dropped = np.isnan(x) & np.isfinite(got)
            if dropped.any() and np.isnan(np.asarray(torch_val)[dropped]).all():
                return [(last, i)]
    return []


def _nan_pass_patch(case: Case, node: Any, src: str, wrong: Any) -> Patch:
    return Patch({"op": "rewrite", "rewrite": "nan_pass", "node": node.name, "source": src}, "lowering",
                 f"{node.op_type} {node.name} (the lowering of torch's {wrong.target}) returns a finite value where "
                 f"its input {src} is NaN; torch carries the NaN through (NaN in, NaN out), and with "
                 "Where(IsNaN(x), x, ·) on its output the file computes what torch computes",
                 "report the lowering to torch.onnx with `drifttui repro`; until it is fixed, keep the NaN out of "
                 "the call in the model (fill it before the call), or let `drifttui repair` carry it through in the file",
                 "export", module=case.module, nodes=[node.name])



def _torch_value(torch_val: Any, got: Any) -> float:
    """torch's one value where the file's is not finite and torch's is; 0 when there is not one."""
    if torch_val is None or got is None or np.shape(torch_val) != np.shape(got):
        return 0.0
    mask = _bad(got) & ~_bad(torch_val)
    vals = np.unique(np.asarray(torch_val)[mask])
    return float(vals[0]) if vals.size == 1 else 0.0


def _guard_patch(case: Case, node: Any, c: float, wrong: Any) -> Patch:
    where = (f"(the lowering of torch's {wrong.target}) makes NaN or inf where torch's value is finite"
             if wrong is not None else f"makes NaN or inf that torch's {case.module or 'model'} never has")
    return Patch({"op": "rewrite", "rewrite": "nonfinite_guard", "node": node.name, "value": c}, "lowering",
                 f"{node.op_type} {node.name} {where}: torch defines the singular "
                 f"points (0/0, an empty or fully masked set, NaN in) as {c:g} and the exporter's lowering leaves "
                 f"them undefined; with Where(IsNaN | IsInf, {c:g}, ·) on its output the file computes what torch "
                 "computes",
                 f"guard the value in the model (`torch.nan_to_num(y, nan={c:g}, posinf={c:g}, neginf={c:g})` after "
                 "the call, where the file and torch part) or report the lowering to torch.onnx with `drifttui repro` "
                 "(`drifttui repair` adds the guard to the file)",
                 "export", module=case.module, nodes=[node.name], own_value_story=True)


def _flip_patch(case: Case, node: Any, wrong: Any) -> Patch:
    op = f" in the lowering of torch's {wrong.target}" if wrong is not None else ""
    return Patch({"op": "rewrite", "rewrite": "boundary", "node": node.name}, "lowering",
                 f"{node.op_type} {node.name}{op} decides its boundary (a value equal to the bound: a signed zero, "
                 f"a tie) on the other side than torch; as {FLIP[node.op_type]} the file computes what torch computes",
                 "report the lowering to torch.onnx with `drifttui repro`; until it is fixed, avoid the boundary in the "
                 "model (e.g. add a signed epsilon before the call) or let `drifttui repair` flip the comparison",
                 "export", module=case.module, nodes=[node.name])


def _fmod_patch(case: Case, node: Any, wrong: Any) -> Patch:
    op = f" in the lowering of torch's {wrong.target}" if wrong is not None else ""
    return Patch({"op": "rewrite", "rewrite": "fmod_floor", "node": node.name}, "lowering",
                 f"{'Floor' if node.op_type == 'Floor' else 'Cast'} {node.name}{op} "
                 f"{'floors' if node.op_type == 'Floor' else 'truncates'} the quotient a / b rounded to float; "
                 "torch's floor division (and "
                 "its remainder, a - b * (a // b)) floors the exact quotient through fmod, so on multiples of b "
                 "(1.0 // 0.1 is 9 in torch, Floor(1.0 / 0.1) is 10) the two part by one; as torch's "
                 "(a - fmod(a, b)) / b the file computes what torch computes",
                 "report the lowering to torch.onnx with `drifttui repro`; until it is fixed, compute the value "
                 "with torch.fmod in the model (torch.fmod(a, b) plus b where its sign differs from b's), or let "
                 "`drifttui repair` rewrite the Floor",
                 "export", module=case.module, nodes=[node.name])


def _remainder_patch(case: Case, node: Any, wrong: Any) -> Patch:
    op = f" (the lowering of torch's {wrong.target})" if wrong is not None else ""
    return Patch({"op": "rewrite", "rewrite": "fmod_remainder", "node": node.name}, "stability",
                 f"Sub {node.name}{op} computes a remainder as a - Floor(a / b) * b, the unstable formula torch's "
                 "kernel dropped in pytorch/pytorch#38293 (#37743: remainder(1e9, pi) was -64): where a / b is "
                 "large the product is rounded at a's magnitude and the difference keeps only that rounding; torch "
                 "computes the stable form, fmod(a, b), exact, plus b where its sign differs from b's; so computed, "
                 "the file computes what torch computes",
                 "report the lowering to torch.onnx with `drifttui repro`; until it is fixed, write the remainder "
                 "with torch.fmod in the model (torch.fmod(a, b), plus b where its sign differs from b's: the "
                 "exporters lower fmod to an exact Mod), or let `drifttui repair` rewrite the Sub",
                 "export", module=case.module, nodes=[node.name])


ATTRIBUTE_CLASSES = ("padding", "interpolation", "normalization")


def nan_fed(case: Case, node_name: Optional[str]) -> bool:
    """``node_name``'s inputs hold NaN in the file's run of the origin: a divergence there is about how
    the ONNX op treats NaN (ONNX's MaxPool and ReduceMax skip it, torch propagates it), which no
    attribute of the op (a padding, interpolation or normalization story) can explain."""
    node = next((n for n in case.model.graph.node if n.name == node_name), None)
    vals = node_values(case) if node is not None else None
    if vals is None:
        return False
    known = {**constant_arrays(case.model), **case.feeds, **vals}
    return any(np.asarray(known[i]).dtype.kind == "f" and np.isnan(known[i]).any() for i in node.input if i in known)
