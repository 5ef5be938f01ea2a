"""How many proposals an origin gets, and in which order (issue 30): a fixed budget of candidate patches
per origin, scaled by its size, the likeliest first; re-exports budgeted by what they cost.  ``verify``
stops at the first patch that verifies (conclude.headline_order orders the budget so that the first
one is the headline).  What is left untried is said in the finding: by the budget (``skipped``,
``skipped_exports``), and because a patch verified first (``not_tried``)."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import onnx

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import Localisation
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.onnx.graph import value_types
from drifttui.core.onnx.io import copy_model

MAX_PATCHES = 48         # candidate patches tried per origin at most (each is one small ORT session)
NODE_BUDGET = 24_000     # and at most this many node runs: a 2000-node origin gets 12 patches
MIN_PATCHES = 8
MAX_EXPORTS = 8          # re-exports of the origin module (reexport.variants) at most
EXPORT_BUDGET = 6_000    # and at most this cost (origin nodes, DYNAMO_COST per node for a dynamo export)
DYNAMO_COST = 8
RETRACE_COST = 2         # a make_fx re-trace before a TorchScript export: a second trace of the module
STEP_NODES = 21          # core ATen ops per step of one direction of an LSTM / GRU / RNN node, decomposed: torch's
RECURRENT = ("LSTM", "GRU", "RNN")     # decompositions unroll every step (an LSTM of 300 steps: 6331 ATen ops)


def budget(case: Case) -> int:
    """How many candidate patches an origin of this size gets (each runs all its nodes once)."""
    return max(MIN_PATCHES, min(MAX_PATCHES, NODE_BUDGET // max(1, len(case.model.graph.node))))


def affordable(variants: list[Any], case: Case) -> tuple[list[Any], list[str]]:
    """The re-exports this origin can pay for, in order, and the ones it cannot (their ``why``): each
    costs about its origin's node count (a TorchScript export; a dynamo export, which traces,
    decomposes and optimises, DYNAMO_COST times that: about a minute for 2000 nodes; a TorchScript
    export after a make_fx re-trace, RETRACE_COST times), within
    EXPORT_BUDGET.  A small origin gets every variant; a 2000-node origin only TorchScript ones.  A variant that
    decomposes into core ATen ops (``decompose``, ``retrace``) costs what it unrolls too: torch's decompositions of
    a recurrent layer write every step's cell (``unrolled_steps``), minutes for a few hundred steps."""
    n = max(1, len(case.model.graph.node))
    unrolled = n + unrolled_steps(case) * STEP_NODES       # what a decomposition into core ATen ops lowers
    spent, tried, skipped = 0, [], []
    for v in variants[:MAX_EXPORTS]:
        size = unrolled if getattr(v, "decompose", False) or getattr(v, "retrace", False) else n
        cost = size * (DYNAMO_COST if v.exporter == "dynamo" else RETRACE_COST if getattr(v, "retrace", False) else 1)
        if spent + cost > EXPORT_BUDGET:
            skipped.append(v.why)
            continue
        spent += cost
        tried.append(v)
    return tried, skipped


def unrolled_steps(case: Case) -> int:
    """The steps the origin's recurrent nodes (ONNX ``LSTM`` / ``GRU`` / ``RNN``) run, summed over their directions:
    the sequence length of each node's ``X`` by shape inference on the case's feeds (``layout`` 1: batch first), else
    the longest dim the case is fed."""
    recurrent = [n for n in case.model.graph.node if n.op_type in RECURRENT]
    if not recurrent:
        return 0
    shapes = _shapes(case)
    longest = max((d for v in getattr(case, "feeds", {}).values() for d in np.shape(v)), default=1)
    steps = 0
    for node in recurrent:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        direction = attrs.get("direction", b"forward")
        dims = shapes.get(node.input[0]) if node.input else None
        axis = 1 if attrs.get("layout", 0) == 1 else 0
        seq = dims[axis] if dims is not None and len(dims) > axis and isinstance(dims[axis], int) else longest
        steps += seq * (2 if direction in (b"bidirectional", "bidirectional") else 1)
    return steps


def _shapes(case: Case) -> dict[str, list[Any]]:
    """Every value's inferred dims (``graph.value_types``), the case's graph inputs set to its feeds' shapes."""
    model = copy_model(case.model)
    feeds = getattr(case, "feeds", {})
    for vi in model.graph.input:
        if vi.name in feeds and vi.type.HasField("tensor_type"):
            shape = vi.type.tensor_type.shape
            shape.ClearField("dim")
            for d in np.shape(feeds[vi.name]):
                shape.dim.add().dim_value = int(d)
    return value_types(model)[0]


def by_likelihood(patches: list[Patch], loc: Optional[Localisation], checks: int) -> list[Patch]:
    """The checks' own patches first (the budget never drops them), then the patches at the nodes the
    localisation names (the first divergent node, the FX node's group), then the rest one of each
    kind in turn (``_spread``)."""
    suspect = set()
    if loc is not None:
        suspect |= {loc.first_node} if loc.first_node else set()
        if loc.fx is not None and loc.fx.wrong is not None:
            suspect |= set(loc.fx.wrong.nodes)
    head, rest = patches[:checks], patches[checks:]
    named = [p for p in rest if suspect and not suspect.isdisjoint(p.nodes)]
    return head + named + _spread([p for p in rest if not suspect or suspect.isdisjoint(p.nodes)])


def _spread(patches: list[Patch]) -> list[Patch]:
    """One patch of each kind (class, edit, rewrite or workaround form, attribute) in turn, in the given
    order: where nothing names the wrong node, the same edit at 400 like nodes (a workaround at every
    Tanh) would fill the budget before the one edit of another kind that removes the drift."""
    kinds: dict[tuple[Any, ...], list[Patch]] = {}
    for p in patches:
        s = p.spec
        kinds.setdefault((p.check, s.get("op"), s.get("rewrite"), s.get("form"),
                          s.get("name") if s.get("op") == "set_attribute" else None), []).append(p)
    rounds = max((len(v) for v in kinds.values()), default=0)
    return [ps[k] for k in range(rounds) for ps in kinds.values() if k < len(ps)]


def left_untried(skipped: int, skipped_exports: Optional[list[str]]) -> str:
    """What the budgets left untried, in words for a finding's message ("" when nothing)."""
    untried = ([f"{skipped} more candidate patch(es)"] if skipped else []) + \
        [f"the re-export with {w}" for w in (skipped_exports or [])]
    return f" ({'; '.join(untried)} left untried by the budget)" if untried else ""


def label(spec: dict[str, Any]) -> str:
    """A patch in a few words: what it does and where (``rewrite floor_div at /body/Div``)."""
    what = spec.get("rewrite") or spec.get("op", "patch")
    inner = spec.get("patches") or []
    if spec.get("op") == "sequence" and inner:      # the same edit at several nodes, or edits in turn
        said = {label({k: v for k, v in p.items() if k != "node"}) for p in inner}
        return f"{said.pop()} at {len(inner)} nodes" if len(said) == 1 else " then ".join(label(p) for p in inner)
    if spec.get("op") == "set_attribute":
        value = spec.get("value")
        what = f"{spec.get('name')}={value:.4g}" if isinstance(value, float) else f"{spec.get('name')}={value}"
    elif spec.get("op") == "reexport":
        what = f"the re-export with {spec.get('exporter', 'the other exporter')}"
    where = spec.get("node") or spec.get("name") or spec.get("module")
    return f"{what} at {where}" if where and spec.get("op") != "reexport" else str(what)


def not_tried(count: int, spec: Optional[dict[str, Any]]) -> str:
    """The candidates left untried because ``spec`` verified first, in words ("" when none)."""
    return f" ({count} candidate patch(es) not tried: {label(spec)} verified first)" if count and spec else ""
