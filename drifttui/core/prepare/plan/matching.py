"""Which deployed value carries each reference value (transfer.py builds the plan from the matches).

The deployed file (onnxsim, onnxslim, ORT offline optimisation, onnxruntime.transformers'
optimizer) computes what the reference export (the file before the pipeline, or drifttui's own
export with the file's exporter) computes, in other nodes under other names.  The reference's
module <-> value plan is carried over by structure and content, never by name:

- anchors: the graph inputs, and the reference's float initializers matched to the deployed ones
  by content (equal, transposed, reshaped, scaled per output channel as a folded BatchNorm does,
  or, failing those, the closest of the same size: a drifted or reduced-precision copy), and
  deployed tensors that concatenate several reference ones (an Attention's packed QKV weight);
- each value's anchor set (the anchors it is computed from) and its shape on sample 0: a deployed
  value can stand for a reference value only when both agree; a value that lost an anchor (a
  Linear's MatMul whose bias went into a BiasGelu) can never stand for the module's output;
- numerics on sample 0 pick among the candidates that remain: the reference value each deployed
  value equals, else the closest (a drift injected after the pipeline changes the numbers, not
  the structure).  A reference value whose closest deployed value is taken by a value it equals
  is fused (a simplifier folded it), never paired wrongly.

The matches keep both graphs' order (a reference value upstream of another is never paired after
the other's match), and a value in another axis order is paired through the permutation that
makes it equal (ORT's transpose optimiser moved a Transpose past it), never raw.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from drifttui.core.prepare.plan.activations import (FOLDED_HOW, FOLDED_RTOL, behind_folded_relu, carried_downstream,
                                                   relu_folded)
from drifttui.core.prepare.plan.moved_weights import candidate_lists
from drifttui.core.prepare.plan.anchors import PackedBlock, anchor_bits, anchor_masks, match_weights, twin_names
from drifttui.core.prepare.plan.appended import appended_ops
from drifttui.core.prepare.plan.closeness import EQUAL_RTOL, Match, err as _err, is_blank
from drifttui.core.prepare.plan.scale_folds import SCALE_HOW, scale_folded

NEAR_TIE = 1.25            # lossy candidates this close to the closest are told apart by their op (``_best``)
NCHWC = "com.microsoft.nchwc"


@dataclass
class Transferred:
    matches: dict[str, Match] = field(default_factory=dict)    # reference value -> deployed match
    anchors: dict[str, str] = field(default_factory=dict)      # deployed initializer -> reference one
    how: dict[str, int] = field(default_factory=dict)          # anchor match kind -> count
    blocks: list[PackedBlock] = field(default_factory=list)    # packed initializers' blocks, by content
    downstream: dict[str, Match] = field(default_factory=dict)  # a reference value after a wanted one -> the
    #   deployed value that carries it instead (an activation fused into the node: FusedConv's Relu)


def _squeezed(shape: tuple) -> tuple:
    """A shape without its 1-dims: [10, 32] (a Gemm's flattened batch) carries [1, 10, 32]."""
    return tuple(int(d) for d in shape if d != 1)


def _layout_free(shape: tuple) -> tuple:
    """The key of a value's candidates: its dims in any order (a transposed value is one too)."""
    return tuple(sorted(_squeezed(shape)))


def comparable(index: Any, value: str) -> bool:
    """False for values in ORT's blocked NCHWc layout (between ReorderInput and ReorderOutput)."""
    p = index.producer.get(value)
    if p is None:
        return True
    n = index.nodes[p]
    return not (n.domain == NCHWC and n.op_type != "ReorderOutput")


def _probe(a: np.ndarray) -> np.ndarray:
    flat = a.reshape(-1)
    step = max(1, flat.size // 64)
    return flat[::step][:64].astype(np.float64)


def _best(a: np.ndarray, mask: int, cands: list[str], dep_vals: dict[str, np.ndarray], d_mask: dict[str, int],
          probes: dict[str, np.ndarray], prefer: Optional[Any] = None) -> Optional[Match]:
    """The closest candidate with the same anchors, or one with a subset of them that is equal
    (an optimiser dropped an Add of zeros, a Mul by ones): losing an anchor otherwise means the
    value is not the module's output (a Linear's MatMul whose bias a BiasGelu took).  A candidate
    in another layout (ORT's transpose optimiser moved a Transpose past it) is compared through
    the permutation that makes it equal, never raw: :func:`_permuted`.

    ``prefer(value)``: among near-equal candidates of a lossy file (none exact, within
    ``NEAR_TIE`` of the closest), the one computed by the reference value's kind of op: a
    LayerNorm that is almost the identity on its input (seeded random weights) is its own output,
    not the residual Add before it."""
    scale = float(np.max(np.abs(a))) if a.size else 0.0
    bound = EQUAL_RTOL * max(scale, 1e-12)
    pa = _probe(a)
    best: Optional[Match] = None
    liked: Optional[Match] = None
    blank = is_blank(a)
    for d in cands:
        dm = d_mask.get(d, 0)
        same = dm == mask
        if not same and (dm & ~mask or not dm or blank):
            continue
        b = dep_vals[d]
        if b.dtype.kind != a.dtype.kind and not (b.dtype.kind == "f" and a.dtype.kind == "f"):
            continue
        perm: Optional[tuple] = None
        if _squeezed(b.shape) == _squeezed(a.shape):
            if not same and (probes[d].size != pa.size or np.max(np.abs(probes[d] - pa), initial=0.0) > bound):
                continue
            err = _err(a, b, scale)
            if err > EQUAL_RTOL and same and len(set(a.shape)) < a.ndim:      # square dims: maybe transposed
                perm, err = _permuted(a, b, scale, bound) or (None, err)
        else:
            found = _permuted(a, b, scale, bound) if same else None
            if found is None:
                continue
            perm, err = found
        if not same and err > EQUAL_RTOL:
            continue
        if best is None or err < best.err:
            best = Match(d, err, err <= EQUAL_RTOL, perm)
        if prefer is not None and same and prefer(d) and (liked is None or err < liked.err):
            liked = Match(d, err, err <= EQUAL_RTOL, perm)
    if best is not None and liked is not None and not best.exact and liked.err <= NEAR_TIE * best.err:
        return liked
    return best


def _permuted(a: np.ndarray, b: np.ndarray, scale: float, bound: float) -> Optional[tuple[tuple, float]]:
    """(perm, err) when ``b`` transposed by ``perm`` (numpy's and ONNX Transpose's meaning) equals
    ``a``: the same values in another axis order.  Tried only when the two hold the same values
    (max, min, mean, mean square: a permutation keeps them), so a drifted value is never paired
    through a permutation."""
    if b.ndim != a.ndim or a.ndim > 6 or sorted(b.shape) != sorted(a.shape) or not a.size:
        return None
    x, y = a.astype(np.float64), b.astype(np.float64)
    stats = [(x.max(), y.max(), bound), (x.min(), y.min(), bound), (x.mean(), y.mean(), bound),
             ((x * x).mean(), (y * y).mean(), 2 * bound * max(scale, 1e-12))]
    if any(abs(p - q) > tol for p, q, tol in stats):
        return None
    found: Optional[tuple[tuple, float]] = None
    for p in itertools.permutations(range(a.ndim)):
        if p == tuple(range(a.ndim)) or tuple(b.shape[i] for i in p) != tuple(a.shape):
            continue
        err = _err(a, np.transpose(b, p), scale)
        if err <= EQUAL_RTOL and (found is None or err < found[1]):
            found = (p, err)
    return found


def transfer_values(ref: Any, dep: Any, wanted: list[str], ref_vals: dict[str, np.ndarray],
                    dep_vals: dict[str, np.ndarray], weights: Optional[tuple] = None) -> Transferred:
    """Match each ``wanted`` reference value to the deployed value that carries it (``weights``:
    ``match_weights`` of the two files, when the caller has it already).  ``ref_vals`` may also hold
    the values one node after the wanted ones (``activations.one_hop``): a deployed value that carries one
    of those is not the wanted value's (activations.py)."""
    anchors, how, packed, blocks = weights if weights is not None else match_weights(ref, dep)
    if blocks:
        how = {**how, "blocks of a concatenation": len(blocks)}
    twins = twin_names(ref)
    r_bits, d_bits = anchor_bits(ref, dep, anchors, packed, twins)
    r_mask, d_mask = anchor_masks(ref, r_bits), anchor_masks(dep, d_bits)
    out_folded: dict[str, int] = {}
    groups: dict[tuple, list[str]] = {}
    for v, a in dep_vals.items():
        if comparable(dep, v) and v not in dep.initializers and not dep.is_static(v):
            groups.setdefault(_layout_free(a.shape), []).append(v)
    probes = {v: _probe(a) for v, a in dep_vals.items()}
    clipped = {d for d in dep_vals if relu_folded(dep, d)}
    choice: dict[str, Match] = {}
    cands_of = candidate_lists(ref, dep, anchors, twins, lambda r: groups.get(_layout_free(ref_vals[r].shape), []))
    for r in wanted:
        a = ref_vals.get(r)
        if a is None:
            continue
        cands = cands_of(r)
        folded = bool(clipped) and behind_folded_relu(a, r_mask.get(r, 0), cands, clipped, dep_vals, d_mask)
        if folded:        # only a value the file clipped at 0 carries it closely; another one may still
            cands = [d for d in cands if d not in clipped]
        kind = op_kind(ref, r)
        best = _best(a, r_mask.get(r, 0), cands, dep_vals, d_mask, probes,
                     prefer=(lambda d, k=kind: op_kind(dep, d) == k) if kind else None)
        if folded and (best is None or best.err > FOLDED_RTOL):
            # its value is not in the file, only its ReLU's (QOperator): no match, the call is fused
            out_folded[FOLDED_HOW] = out_folded.get(FOLDED_HOW, 0) + 1
            continue
        if best is not None and not best.exact and scale_folded(ref, dep, a, r_mask.get(r, 0), cands, dep_vals,
                                                                d_mask, anchors):
            # only a constant multiple of it is in the file, its factor in the next weight: fused
            out_folded[SCALE_HOW] = out_folded.get(SCALE_HOW, 0) + 1
            continue
        if best is not None:
            choice[r] = best
    out = Transferred(anchors=anchors, how={**how, **out_folded}, blocks=blocks)
    carried_downstream(ref, set(wanted), ref_vals, dep_vals, choice, out.downstream)
    out.matches = _resolve(choice, dep_vals, lambda r, d: op_kind(ref, r) == op_kind(dep, d))
    _second_choices(ref, dep, ref_vals, dep_vals, r_mask, d_mask, cands_of, probes, choice, out.matches)
    _in_order(ref, dep, ref_vals, dep_vals, r_mask, d_mask, cands_of, probes, out.matches)
    _through_transposes(ref, wanted, ref_vals, dep_vals, out.matches)
    out.matches = appended_ops(ref, dep, out.matches, ref_vals, dep_vals)
    return out


def op_kind(index: Any, value: str) -> str:
    """The kind of op that computes ``value``, through a DequantizeLinear (a quantized file's
    float value, or a drifttui view of one) and with the quantized forms named as the float op:
    QLinearAdd -> Add, QGemm -> Gemm, MatMulInteger -> MatMul, MatMulNBits -> MatMul."""
    p = index.producer.get(value)
    if p is not None and index.nodes[p].op_type == "DequantizeLinear":
        p = index.producer.get(index.nodes[p].inputs[0])
    if p is None:
        return ""
    op = index.nodes[p].op_type
    for prefix in ("QLinear", "Q"):
        if op.startswith(prefix) and op[len(prefix):len(prefix) + 1].isupper():
            return op[len(prefix):]
    return {"MatMulInteger": "MatMul", "MatMulNBits": "MatMul", "ConvInteger": "Conv"}.get(op, op)


def _through_transposes(ref: Any, wanted: list[str], ref_vals: dict, dep_vals: dict,
                        matches: dict[str, Match]) -> None:
    """A reference value left unmatched that a Transpose of the reference links to a matched value
    (``w = Transpose(r)`` or ``r = Transpose(w)``) is that value's match read through the
    permutation: the structure says the axis order, so this holds when a drift upstream changed the
    numbers (the sample-0 search above pairs through a permutation only values that are equal).  So does
    one matched farther than that (a view of a model output, absorbed.py, whose one deployed value the
    output itself took: the search gave the view the next closest value, the norm's own input)."""
    for r in wanted:
        a = ref_vals.get(r)
        if a is None or (r in matches and matches[r].exact):
            continue
        links = []
        p = ref.producer.get(r)
        if p is not None and ref.nodes[p].op_type == "Transpose":
            links.append((ref.nodes[p].inputs[0], _perm_of(ref.nodes[p])))
        for c in ref.consumers.get(r, []):
            n = ref.nodes[c]
            if n.op_type == "Transpose" and n.outputs and _perm_of(n) is not None:
                links.append((n.outputs[0], tuple(int(i) for i in np.argsort(_perm_of(n)))))
        for w, perm in links:
            m = matches.get(w)
            if m is None or m.perm is not None or perm is None or dep_vals[m.value].shape != ref_vals[w].shape:
                continue
            b = np.transpose(dep_vals[m.value], perm)
            if b.shape == a.shape:
                err = _err(a, b, float(np.max(np.abs(a))) if a.size else 0.0)
                if r not in matches or err < matches[r].err:
                    matches[r] = Match(m.value, err, err <= EQUAL_RTOL, perm)
                break


def _perm_of(node: Any) -> Optional[tuple]:
    for at in node.proto.attribute:
        if at.name == "perm":
            return tuple(int(i) for i in at.ints)
    return None


def _resolve(choice: dict[str, Match], dep_vals: dict[str, np.ndarray],
             same_kind: Any = lambda r, d: False) -> dict[str, Match]:
    """A deployed value equal to some reference value is theirs, and so is its twin (another name
    for the same tensor: a view drifttui reads a blocked NCHWc value through, next to the
    ReorderOutput the file has); otherwise the closest one keeps it, on a tie (one tensor, two names:
    a LayerNorm's output and the Reshape a model returns) the one of its op kind (``same_kind``)."""
    exact_users = {m.value for m in choice.values() if m.exact}
    exact_users |= _twins([m for m in choice.values() if m.exact], {m.value for m in choice.values() if not m.exact},
                          dep_vals)
    closest: dict[str, tuple[float, str]] = {}
    for r, m in choice.items():
        if m.exact:
            continue
        prev = closest.get(m.value)
        if prev is None or m.err < prev[0] or (m.err == prev[0] and same_kind(r, m.value)
                                               and not same_kind(prev[1], m.value)):
            closest[m.value] = (m.err, r)
    return {r: m for r, m in choice.items()
            if m.exact or (m.value not in exact_users and closest[m.value][1] == r)}


def _twins(taken: list[Match], loose: set[str], dep_vals: dict[str, np.ndarray]) -> set[str]:
    """The values of ``loose`` that hold exactly the tensor of a match in ``taken``, read in the
    reference's axis order (a ReorderOutput to channels-last and drifttui's NCHW view of it)."""
    def key(a: np.ndarray) -> tuple:
        return (_layout_free(a.shape), a.dtype.str, float(a.max(initial=0)), float(a.min(initial=0)))

    by_key: dict[tuple, list[np.ndarray]] = {}
    for m in taken:
        a = dep_vals[m.value]
        by_key.setdefault(key(a), []).append(np.transpose(a, m.perm) if m.perm is not None else a)
    out = set()
    for v in loose - {m.value for m in taken}:
        b = dep_vals[v]
        if any(t.size == b.size and np.array_equal(b.reshape(-1), t.reshape(-1)) for t in by_key.get(key(b), [])):
            out.add(v)
    return out


def _second_choices(ref: Any, dep: Any, ref_vals: dict, dep_vals: dict, r_mask: dict, d_mask: dict,
                    cands_of: Callable, probes: dict, choice: dict[str, Match], matches: dict[str, Match]) -> None:
    """A reference value that lost its closest deployed value to a value *downstream* of it, where
    neither equals it (a drift inside the module changes both: a wrong weight in a Conv makes the
    Relu after it look as close as the Conv's own output), takes the closest free value with the
    same anchors that lies upstream of the winner's, in both graphs' order: the drift is in the
    numbers, the structure still holds.  A value folded away has no such candidate and stays fused."""
    taken = {m.value for m in matches.values()}
    winner = {m.value: r for r, m in matches.items()}
    for r, m in choice.items():
        if r in matches or m.exact:
            continue
        r2 = winner.get(m.value)
        if r2 is None or matches[r2].exact or not _upstream(ref, r, r2):
            continue
        free = [d for d in cands_of(r)
                if d not in taken and d_mask.get(d, 0) == r_mask.get(r, 0) and _upstream(dep, d, m.value)]
        alt = _best(ref_vals[r], r_mask.get(r, 0), free, dep_vals, d_mask, probes)
        if alt is not None:
            matches[r] = alt
            taken.add(alt.value)


def _in_order(ref: Any, dep: Any, ref_vals: dict, dep_vals: dict, r_mask: dict, d_mask: dict,
              cands_of: Callable, probes: dict, matches: dict[str, Match]) -> None:
    """The matches keep the reference's graph order: a reference value upstream of another is never
    paired with a deployed value downstream of the other's.  A drift makes every value
    after it differ, so the value closest to an upstream reference value can lie after a later
    module's own (the next norm's Pow of the residual sum looks closer to a drifted o_proj than the
    o_proj MatMul does); structure decides then, not numbers.  Of two matches out of order, the one
    that is not equal and is further from its reference value (the upstream one on a tie) takes
    the closest free value that fits the order of the others, or none (fused)."""
    for _ in range(32):       # each round fixes one pair (rare: a drift's downstream values)
        pair = _out_of_order(ref, dep, matches)
        if pair is None:
            return
        r1, r2 = pair          # r1 upstream of r2 in the reference; their matches are the other way
        m1, m2 = matches[r1], matches[r2]
        lose = r2 if m1.exact or (not m2.exact and m2.err > m1.err) else r1
        del matches[lose]
        alt = _fitting(ref, dep, lose, ref_vals, dep_vals, r_mask, d_mask, cands_of, probes, matches)
        if alt is not None:
            matches[lose] = alt


def _order_masks(index: Any, values: list[str]) -> tuple[dict[str, int], dict[str, int]]:
    """(bit of each value, every value's set of those it is computed from or is) as bitmasks."""
    bits = {v: 1 << k for k, v in enumerate(dict.fromkeys(values))}
    return bits, anchor_masks(index, bits)


def _out_of_order(ref: Any, dep: Any, matches: dict[str, Match]) -> Optional[tuple[str, str]]:
    """The first (upstream reference value, downstream one), not both equal, whose matches are in
    reverse order (two equal values are right whatever the order: a fold, a view)."""
    loose = {r: m for r, m in matches.items() if not m.exact}
    if not loose:
        return None
    r_bit, r_anc = _order_masks(ref, list(matches))
    d_bit, d_anc = _order_masks(dep, [m.value for m in matches.values()])
    for r2, m2 in matches.items():
        above = r_anc.get(r2, 0) & ~r_bit[r2]
        if not above:
            continue
        for r1, m1 in (loose if m2.exact else matches).items():
            if r_bit[r1] & above and m1.value != m2.value and d_anc.get(m1.value, 0) & d_bit[m2.value]:
                return r1, r2
    return None


def _fitting(ref: Any, dep: Any, r: str, ref_vals: dict, dep_vals: dict, r_mask: dict, d_mask: dict,
             cands_of: Callable, probes: dict, matches: dict[str, Match]) -> Optional[Match]:
    """The closest free candidate for ``r`` that lies after the matches of the reference values
    before ``r`` and before those of the values after it."""
    cands = [d for d in cands_of(r) if d not in {m.value for m in matches.values()}]
    if not cands:
        return None
    r_bit, r_anc = _order_masks(ref, [*matches, r])
    d_bit, d_anc = _order_masks(dep, [*cands, *(m.value for m in matches.values())])
    before = [m.value for k, m in matches.items() if r_anc.get(r, 0) & r_bit[k]]
    after = [m.value for k, m in matches.items() if r_anc.get(k, 0) & r_bit[r]]
    fit = [d for d in cands
           if not any(d_anc.get(d, 0) & d_bit[a] for a in after)
           and not any(d_anc.get(b, 0) & d_bit[d] for b in before)]
    return _best(ref_vals[r], r_mask.get(r, 0), fit, dep_vals, d_mask, probes)


def _upstream(index: Any, a: str, b: str) -> bool:
    """True when value ``a`` is one that value ``b`` is computed from."""
    seen: set[str] = set()
    stack = [b]
    while stack:
        v = stack.pop()
        p = index.producer.get(v)
        if p is None:
            continue
        for u in index.nodes[p].inputs:
            if u == a:
                return True
            if u and u not in seen:
                seen.add(u)
                stack.append(u)
    return False
