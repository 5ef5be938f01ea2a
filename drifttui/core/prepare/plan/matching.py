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

By job: nearest.py (the closest candidate of one value), claims.py (one deployed value claimed by
several), match_order.py (both graphs' order), transposed.py (a value a Transpose links to a match).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from drifttui.core.prepare.plan.activations import (FOLDED_HOW, FOLDED_RTOL, behind_folded_relu, carried_downstream,
                                                   relu_folded)
from drifttui.core.prepare.plan.moved_weights import candidate_lists
from drifttui.core.prepare.plan.anchors import PackedBlock, anchor_bits, anchor_masks, match_weights, twin_names
from drifttui.core.prepare.plan.appended import appended_ops
from drifttui.core.prepare.plan.claims import identity_copies, resolve
from drifttui.core.prepare.plan.closeness import Match
from drifttui.core.prepare.plan.match_order import in_order, second_choices
from drifttui.core.prepare.plan.nearest import closest, layout_free, op_kind, preferring, probe
from drifttui.core.prepare.plan.scale_folds import SCALE_HOW, scale_folded
from drifttui.core.prepare.plan.transposed import through_transposes
from drifttui.core.prepare.plan.value_order import upstream

NCHWC = "com.microsoft.nchwc"


@dataclass
class Transferred:
    matches: dict[str, Match] = field(default_factory=dict)    # reference value -> deployed match
    anchors: dict[str, str] = field(default_factory=dict)      # deployed initializer -> reference one
    how: dict[str, int] = field(default_factory=dict)          # anchor match kind -> count
    blocks: list[PackedBlock] = field(default_factory=list)    # packed initializers' blocks, by content
    downstream: dict[str, Match] = field(default_factory=dict)  # a reference value after a wanted one -> the
    #   deployed value that carries it instead (an activation fused into the node: FusedConv's Relu)


def comparable(index: Any, value: str) -> bool:
    """False for values in ORT's blocked NCHWc layout (between ReorderInput and ReorderOutput)."""
    p = index.producer.get(value)
    if p is None:
        return True
    n = index.nodes[p]
    return not (n.domain == NCHWC and n.op_type != "ReorderOutput")


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
            groups.setdefault(layout_free(a.shape), []).append(v)
    probes = {v: probe(a) for v, a in dep_vals.items()}
    clipped = {d for d in dep_vals if relu_folded(dep, d)}
    choice: dict[str, Match] = {}
    cands_of = candidate_lists(ref, dep, anchors, twins, lambda r: groups.get(layout_free(ref_vals[r].shape), []))
    for r in wanted:
        a = ref_vals.get(r)
        if a is None:
            continue
        cands = cands_of(r)
        folded = bool(clipped) and behind_folded_relu(a, r_mask.get(r, 0), cands, clipped, dep_vals, d_mask)
        if folded:        # only a value the file clipped at 0 carries it closely; another one may still
            cands = [d for d in cands if d not in clipped]
        best = closest(a, r_mask.get(r, 0), cands, dep_vals, d_mask, probes, prefer=preferring(ref, dep, r))
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
    out.matches = resolve(choice, dep_vals, lambda r, d: op_kind(ref, r) == op_kind(dep, d),
                          lambda r1, r2: upstream(ref, r1, r2))
    identity_copies(ref, dep, choice, out.matches, cands_of, dep_vals)
    second_choices(ref, dep, ref_vals, dep_vals, r_mask, d_mask, cands_of, probes, choice, out.matches)
    in_order(ref, dep, ref_vals, dep_vals, r_mask, d_mask, cands_of, probes, out.matches)
    through_transposes(ref, wanted, ref_vals, dep_vals, out.matches)
    out.matches = appended_ops(ref, dep, out.matches, ref_vals, dep_vals)
    return out
