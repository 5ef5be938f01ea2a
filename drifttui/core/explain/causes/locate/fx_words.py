"""The words for a dynamo file's wrong FX node (``fx_localise``): what it computes otherwise than torch, by its own
error fed torch's values, its type, or the inf/NaN it makes or drops (a finding's message and localisation note)."""
from __future__ import annotations

from drifttui.core.explain.causes.locate.fx_localise import FxLocalisation, FxNode


def describe(fx: FxLocalisation, module: str) -> str:
    """What the wrong node computes, in words (the finding's message when no patch tells more)."""
    w = fx.wrong
    assert w is not None
    where = module or "(root)"
    ops = _nodes_said(w)
    called = f", of the call {w.call}" if w.call else ""
    if fx.amplified:
        return (f"{ops} (torch's {w.target}{called}, FX node {w.name}) compute(s) {w.target.split('.')[1]} less accurately "
                f"than torch: fed torch's values of its inputs, its own relative error is {w.own_rel:.3g} (every "
                f"other node of {where} ~1e-7), and the nodes after it amplify it past the tolerance")
    if w.folded:
        return (f"{w.folded} (torch's {w.target}{called}; read by {ops}): the first value of {where} wrong on its "
                f"own (a constant has no input to be fed)")
    err = _retyped_words(w) or _nonfinite_words(w) or f"its own error is {w.own_abs:.3g}"
    return (f"{ops} (torch's {w.target}{called}, FX node {w.name}) compute(s) something else than torch: fed torch's "
            f"values of its inputs, {err}, the first node of {where} over the tolerance on its own")


def _nodes_said(w: FxNode, most: int = 4) -> str:
    """The node's ONNX nodes, each by type and name; past ``most``, how many, the first and the last (a lowering of
    a dozen nodes would bury the words after it: the finding lists every node)."""
    said = [f"{o} {n}" for o, n in zip(w.op_types, w.nodes)]
    if len(said) <= most:
        return ", ".join(said)
    return f"{len(said)} ONNX nodes from {said[0]} to {said[-1]}"


def _retyped_words(w: FxNode) -> str:
    if not w.dtype_change:
        return ""
    was, now = w.dtype_change.split(" -> ")
    return (f"its output is {now} where torch's is {was}, and torch's values do not survive {now} "
            f"(off by up to {w.own_abs:.3g})")


def _nonfinite_words(w: FxNode) -> str:
    """How the wrong node parts from torch at inf/NaN, in the direction(s) measured ("" when it does not)."""
    drops = "it returns finite values where torch's value is NaN or inf (torch carries it through)"
    makes = "it returns inf or NaN where torch's value is finite"
    if w.drops_nonfinite and w.makes_nonfinite:
        return f"{drops}, and inf or NaN where torch's value is finite"
    if w.drops_nonfinite:
        return drops
    return makes if w.nonfinite else ""
