"""The origin's own nodes as a stand-alone ONNX model, fed with the PyTorch-side inputs.

``origin_case(ctx)`` is the one place that reads the engine's context (session, plan, graph
index, module calls): everything else in :mod:`drifttui.core.explain.causes` works on the
:class:`Case` it returns.  The case keeps the original value names, so a patch names nodes
and values as the user's file does and ``repro`` writes a readable test case.

Inputs of the origin's nodes come from, in this order: the PyTorch-side tensor the plan ties
to that ONNX value (hook-time clones of the module calls' inputs/outputs), the graph inputs
(the same sample's feeds), a static value (initializer or ``Constant``, copied in), and as a
last resort the full model's ONNX Runtime value (named in ``Case.onnx_fed``: shape
computations, mostly).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.onnx.io import copy_model
from drifttui.core.onnx.edit.orphan_steps import ORPHAN
from drifttui.core.onnx.graph import tensor_array, with_data
from drifttui.core.result import DRIFT, UNMAPPED
from drifttui.core.base.dtypes import LOW_FLOAT_ELEMS
from drifttui.core.prepare.local import torch_low
from drifttui.core.runtime import sessions
from drifttui.core.runtime.unrounded import unrounded_reads_of
from drifttui.core.explain.causes.locate.case_data import Case
from drifttui.core.runtime.torch_hooks import TensorStore, run_model, to_numpy


WHY = "causes:case:why"       # ctx.cache: why origin_case returned None, one line
WHOLE_MAX = 64                # nodes: an unmapped root origin's whole graph is its case up to this size


FRESH = 2                     # samples drawn fresh (past the compared ones) that a verified patch must hold on


def fresh_indices(ctx: Any) -> list[int]:
    """The fresh samples' indices: past the compared ones, within what the source holds (a listed
    ``inputs=[...]`` of the Python API has no sample past its last: then the worst sample alone)."""
    if ctx.source.fixed:
        return []
    limit = getattr(ctx.source, "count", None)
    return [k for k in (int(ctx.cfg.samples) + j for j in range(FRESH)) if limit is None or k < limit]


def why_no_case(ctx: Any) -> str:
    return ctx.cache.get(WHY, "the origin's nodes could not be cut out")


def _origin_nodes(ctx: Any, ci: int, whole: bool = False) -> list[Any]:
    """The origin's own nodes; all the nodes in its scope (its children's too) when its own nodes
    produce none of its outputs (a decoder whose output is its head Conv's), or when it is the unit of an
    absorbed orphan and its consumer (``whole``)."""
    own = [n for n in ctx.index.nodes if ctx.plan.node_call[n.index] == ci]
    produced = {v for n in own for v in n.outputs if v}
    if whole or not own or not any(v in produced for v in ctx.plan.calls[ci].outputs.values()):
        own = [ctx.index.nodes[i] for i in sorted(ctx.plan.calls[ci].nodes)]
    return own


def _needed(nodes: list[Any], produced: set[str]) -> list[str]:
    needed: list[str] = []
    for n in nodes:
        for v in n.inputs:
            if v and v not in produced and v not in needed:
                needed.append(v)
    return needed


def with_folded_producers(ctx: Any, nodes: list[Any]) -> tuple[list[Any], list[str]]:
    """The origin's nodes plus those of a module whose output value the exporter folded into the
    origin (a trailing ``.t()`` folded into the origin's Gemm as transA): that module is unmapped,
    so the value the origin reads has no torch counterpart, and feeding it ORT's (wrong) value would
    make the consumer the origin.  Both are compared as one unit, fed the producer's torch inputs."""
    folded: list[str] = []
    for _ in range(3):
        produced = {v for n in nodes for v in n.outputs if v}
        have = {n.index for n in nodes}
        extra: list[Any] = []
        for v in _needed(nodes, produced):
            if v in ctx.plan.table or ctx.index.is_static(v) or v not in ctx.index.producer:
                continue
            c = ctx.plan.node_call[ctx.index.producer[v]]
            if c is None or ctx.plan.calls[c].status != UNMAPPED:
                continue
            own = [n for n in ctx.index.nodes if ctx.plan.node_call[n.index] == c and n.index not in have]
            extra += own
            have.update(n.index for n in own)
            folded.append(ctx.calls[c].module)
        if not extra:
            break
        nodes = sorted(nodes + extra, key=lambda n: n.index)
    return nodes, folded


def with_unrounded_producers(ctx: Any, nodes: list[Any]) -> list[Any]:
    """The origin's nodes plus the producer of each low-precision value one of them reads unrounded in ONNX Runtime
    (``runtime/unrounded.py``: a float16 value made by a node ORT's CPU runs in float32, read by another such node,
    the rounding between them dropped), up to three producers deep: fed torch's rounded value, the reader would
    compute what torch computes, and the case would not hold the drift the whole file has."""
    key = "causes:case:unrounded"
    if key not in ctx.cache:
        low = {v for v, t in ctx.index.elem_types.items() if t in LOW_FLOAT_ELEMS and v in ctx.index.producer
               and (ctx.plan is None or v not in ctx.plan.table or torch_low(ctx.plan, ctx.calls, v, []))}
        ctx.cache[key] = unrounded_reads_of(ctx.index, low)
    reads = ctx.cache[key]
    for _ in range(3):
        have = {n.index for n in nodes}
        extra = {ctx.index.producer[v] for n in nodes for v in n.inputs
                 if (v, n.name) in reads and ctx.index.producer.get(v) is not None} - have
        if not extra:
            break
        nodes = sorted(nodes + [ctx.index.nodes[k] for k in extra], key=lambda n: n.index)
    return nodes


def unit_call(ctx: Any, ci: int) -> int:
    """The call whose nodes the origin's are: its own, or, for a module with no ONNX value that was compared with
    the call that absorbed it as one unit (prepare/unit_members.py), the nearest compared call holding both."""
    units = [w for w in ctx.plan.calls[ci].weights if getattr(w, "owners", None)]
    absorber = _absorbed_orphan(ctx, ci)
    if (not units or ctx.plan.calls[ci].outputs) and absorber is None:
        return ci
    mine, p = set(), ci
    while p is not None:
        mine.add(p)
        p = ctx.calls[p].parent
    o: Optional[int] = absorber if absorber is not None else units[0].owners[0]
    while o is not None and not (o in mine and ctx.plan.calls[o].outputs):
        o = ctx.calls[o].parent
    return ci if o is None else o


def _absorbed_orphan(ctx: Any, ci: int) -> Optional[int]:
    """The call that absorbed call ``ci``'s computation, when ``ci`` is an orphan (prepare/plan/orphans.py: an
    Identity stands for a call with no node, between the value its consumer reads and that consumer) whose consumer
    drifts on its own too: fed torch's output of ``ci``, the consumer's nodes do not compute torch's consumer, so
    they compute ``ci``'s function as well (the TorchScript exporter's SoftmaxCrossEntropyLoss for
    ``nn.LogSoftmax`` then ``nn.NLLLoss``), where a dropped computation (an in-place update lost through a view)
    leaves a consumer that computes right on right values.  None otherwise."""
    nodes = [ctx.index.nodes[k] for k in ctx.plan.calls[ci].nodes]
    if not nodes or not all(n.op_type == "Identity" and ORPHAN in (n.name or "") for n in nodes):
        return None
    outs = {v for n in nodes for v in n.outputs}
    readers = {ctx.plan.node_call[k] for k, n in enumerate(ctx.index.nodes) if set(n.inputs) & outs}
    status = {layer.index: layer.status for layer in ctx.result.layers}
    return next((r for r in sorted(c for c in readers if c is not None and c != ci) if status.get(r) == DRIFT), None)


def torch_values(ctx: Any, sample: Any, want_out: dict[int, list[int]],
                  want_in: dict[int, list[int]]) -> TensorStore:
    store = TensorStore(want_out, want_in)
    hooks = ctx.new_hooks()
    args, kwargs = sample
    with hooks.installed():
        hooks.begin(store)
        run_model(ctx.model, args, kwargs)
        hooks.begin(None)
    return store


def origin_case(ctx: Any, sample: Optional[int] = None) -> Optional[Case]:
    """The drift origin's own nodes with PyTorch-side feeds and expected outputs, or None."""
    import torch

    o = ctx.result.drift_origin
    if o is not None and o.module == "" and isinstance(ctx.model, torch.nn.Module) \
            and (ctx.plan is None or not ctx.plan.localized) and len(ctx.index.nodes) <= WHOLE_MAX:
        return whole_case(ctx, o, sample)
    if o is None or ctx.plan is None or not ctx.plan.localized or not isinstance(ctx.model, torch.nn.Module):
        ctx.cache[WHY] = ("no drift origin" if o is None else "the graph is not mapped to the modules"
                          + (f" ({ctx.plan.reason})" if ctx.plan is not None and ctx.plan.reason else "")
                          if ctx.plan is None or not ctx.plan.localized else
                          "the model is not a torch.nn.Module (its calls cannot be hooked)")
        return None
    key = f"causes:case:{o.layer}:{sample}"
    if key in ctx.cache:
        return ctx.cache[key]
    ci = unit_call(ctx, o.layer)
    i = o.worst_sample if sample is None else sample
    if ctx.source.fixed:
        i = 0
    whole = ci != o.layer and _absorbed_orphan(ctx, o.layer) is not None     # the unit's nodes, its members' too
    nodes, folded = with_folded_producers(ctx, _origin_nodes(ctx, ci, whole))
    case = _built(ctx, o, ci, i, with_unrounded_producers(ctx, nodes), folded)
    ctx.cache[key] = case
    return case


def _built(ctx: Any, o: Any, ci: int, i: int, nodes: list[Any], folded: list[str]) -> Optional[Case]:
    """The case of call ``ci``'s ``nodes`` on sample ``i``: torch's values fed, torch's outputs expected; None (and
    why, in ``ctx.cache[WHY]``) when it cannot be built."""
    produced = {v for n in nodes for v in n.outputs if v}
    needed = _needed(nodes, produced)
    table = ctx.plan.table
    outs = {pos: v for pos, v in ctx.plan.calls[ci].outputs.items() if v in produced}
    if not nodes or not outs:
        ctx.cache[WHY] = (f"{o.module or '(root)'} has no ONNX node of its own" if not nodes else
                          f"no ONNX value inside {o.module or '(root)'}'s scope carries its output")
        return None
    want_out: dict[int, list[int]] = {ci: sorted(outs)}
    want_in: dict[int, list[int]] = {}
    for v in needed:
        if v in table and table[v][0] != "graph_in":
            kind, c, pos = table[v]
            (want_out if kind == "out" else want_in).setdefault(c, []).append(pos)
    smp = ctx.sample(i)
    store = torch_values(ctx, smp, want_out, want_in)
    got = _feeds(ctx, needed, store, ctx.feeds(smp))
    if got is None:
        ctx.cache[WHY] = f"the torch-side values of {o.module or '(root)'}'s inputs could not be captured"
        return None
    feeds, inits, ort_needed = got
    expected = {outs[p]: to_numpy(store.out[(ci, p)]) for p in sorted(outs) if (ci, p) in store.out}
    model = _model(ctx, nodes, feeds, inits, expected)
    return Case(model, feeds, expected, ctx.calls[ci].module, ci, i, ctx.cfg.atol, ctx.cfg.rtol,
                [n.name for n in nodes], ort_needed, opset=ctx.index.opset, folded=folded,
                elem_types=ctx.index.elem_types)


def hooked_inner(ctx: Any, case: Case) -> dict[str, np.ndarray]:
    """Torch's values of the values the case's own nodes hand to other module calls (a child module's
    input: the hooks capture it), by ONNX value name; {} when there are none or no plan."""
    table = ctx.plan.table if ctx.plan is not None else {}
    mine = {v for n in case.model.graph.node for v in n.output if v}
    inner = {v: table[v] for v in mine if v in table and table[v][0] != "graph_in" and table[v][1] != case.call
             and v not in case.expected}
    if not inner:
        return {}
    want_out: dict[int, list[int]] = {}
    want_in: dict[int, list[int]] = {}
    for kind, c, pos in inner.values():
        (want_out if kind == "out" else want_in).setdefault(c, []).append(pos)
    store = torch_values(ctx, ctx.sample(case.sample), want_out, want_in)
    out = {}
    for v, (kind, c, pos) in inner.items():
        t = (store.out if kind == "out" else store.inp).get((c, pos))
        if t is not None:
            out[v] = _onnx_dtype(to_numpy(t), ctx.index.elem_types.get(v))
    return out


def whole_case(ctx: Any, o: Any, sample: Optional[int] = None) -> Optional[Case]:
    """The whole graph as the case of a root-module origin that the plan cannot map (a model with no
    child modules, e.g. an upstream one-op repro: its nodes carry no scope): the graph inputs are the
    feeds, the torch forward's outputs the expected values."""
    i = 0 if ctx.source.fixed else (o.worst_sample if sample is None else sample)
    key = f"causes:case:whole:{i}"
    if key in ctx.cache:
        return ctx.cache[key]
    outs = ctx.torch_outputs(i)
    names = ctx.index.graph_outputs
    feeds = {k: v for k, v in ctx.feeds(ctx.sample(i)).items() if k in ctx.index.graph_inputs}
    expected = {names[k]: np.asarray(t) for k, t in enumerate(outs) if k < len(names)}
    if len(outs) != len(names) or not expected:
        ctx.cache[WHY] = f"the torch forward returns {len(outs)} tensor(s) for the graph's {len(names)} output(s)"
        ctx.cache[key] = None
        return None
    nodes = list(ctx.index.nodes)
    case = Case(_model(ctx, nodes, feeds, [], expected), feeds, expected, "", 0, i, ctx.cfg.atol, ctx.cfg.rtol,
                [n.name for n in nodes], opset=ctx.index.opset, elem_types=ctx.index.elem_types)
    ctx.cache[key] = case
    return case


def _feeds(ctx: Any, needed: list[str], store: TensorStore,
           graph_feeds: dict[str, np.ndarray]) -> Optional[tuple[dict[str, np.ndarray], list[Any], list[str]]]:
    """(feeds, extra initializers, values only ONNX Runtime could give) for the case's inputs."""
    import onnx

    table = ctx.plan.table
    feeds: dict[str, np.ndarray] = {}
    inits: list[Any] = []
    ort_needed: list[str] = []
    for v in needed:
        entry = table.get(v)
        if entry is not None and entry[0] == "graph_in" and v in graph_feeds:
            feeds[v] = graph_feeds[v]
        elif entry is not None and entry[0] != "graph_in":
            kind, c, pos = entry
            t = (store.out if kind == "out" else store.inp).get((c, pos))
            if t is None:
                return None
            feeds[v] = _onnx_dtype(to_numpy(t), ctx.index.elem_types.get(v))
        elif v in graph_feeds:
            feeds[v] = graph_feeds[v]
        elif ctx.index.is_static(v):
            arr = tensor_array(ctx.index, v)
            if v not in ctx.index.initializers and arr is not None:   # initializers: copied by _model
                inits.append(onnx.numpy_helper.from_array(arr, v))
        else:
            ort_needed.append(v)
    if ort_needed:
        sess = ctx.ort_session("disable", extra=tuple(ort_needed))
        vals = sessions.run(sess, graph_feeds, ort_needed)
        feeds.update({v: vals[v] for v in ort_needed})
    return feeds, inits, ort_needed


def _onnx_dtype(arr: np.ndarray, elem: Optional[int]) -> np.ndarray:
    if elem:
        import onnx

        try:
            want = onnx.helper.tensor_dtype_to_np_dtype(elem)
        except Exception:      # noqa: BLE001 - bfloat16 and friends: keep the torch dtype
            return arr
        if arr.dtype != want:
            return arr.astype(want)
    return arr


def _model(ctx: Any, nodes: list[Any], feeds: dict[str, np.ndarray], extra_inits: list[Any],
           expected: dict[str, np.ndarray]) -> Any:
    from onnx import helper

    used = {v for n in nodes for v in n.inputs if v}
    inits = [with_data(ctx.index, t) for name, t in ctx.index.initializers.items() if name in used] + extra_inits
    g = helper.make_graph([n.proto for n in nodes], "drifttui_origin", [], [], inits)
    for name, arr in feeds.items():
        g.input.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(arr.dtype),
                                                     list(arr.shape)))
    for name in expected:
        elem = ctx.index.elem_types.get(name) or 1
        g.output.append(helper.make_tensor_value_info(name, elem, None))
    model = helper.make_model(g, opset_imports=list(ctx.index.model.opset_import),
                              ir_version=ctx.index.model.ir_version)
    model.functions.extend(ctx.index.model.functions)
    return copy_model(model)   # a deep copy: patches edit it freely


def call_io(ctx: Any, case: Case) -> Optional[tuple[list[Any], list[np.ndarray]]]:
    call = ctx.calls[case.call]
    store: TensorStore = torch_values(ctx, ctx.sample(case.sample), {case.call: list(range(len(call.outputs)))},
                                       {case.call: list(range(len(call.inputs)))})
    ins = [store.inp.get((case.call, k)) for k in range(len(call.inputs))]
    outs = [store.out.get((case.call, k)) for k in range(len(call.outputs))]
    if any(t is None for t in ins) or any(t is None for t in outs) or not (ins or outs):
        return None     # a module with no input (a weight module) is exported on none
    return ins, [to_numpy(t) for t in outs]


def at_export_shapes(ctx: Any) -> bool:
    """The file runs at the shapes it was exported at: every graph input's dims are static and equal
    the runtime sample's (then no constant of the file can hold a size baked in for other shapes)."""
    graph = ctx.index.model.graph
    init = {t.name for t in graph.initializer}
    declared = {i.name: [d.dim_value if d.HasField("dim_value") else None for d in i.type.tensor_type.shape.dim]
                for i in graph.input if i.name not in init}
    if any(v is None for dims in declared.values() for v in dims):
        return False
    try:
        feeds = ctx.feeds(ctx.sample(0))
    except Exception:  # noqa: BLE001 - unknown: keep the story
        return False
    return all(list(feeds[k].shape) == dims for k, dims in declared.items() if k in feeds)
