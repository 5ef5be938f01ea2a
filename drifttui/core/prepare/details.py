"""Per-layer details for the report and the inspector: ONNX nodes, initializers, torch params."""
from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any, Callable, Optional

import numpy as np

from drifttui.core.base.dtypes import SCALAR_FLOAT_ELEMS
from drifttui.core.runtime import cores
from drifttui.core.runtime.torch_hooks import Call
from drifttui.core.onnx.edit.orphan_steps import ORPHAN
from drifttui.core.onnx.weights import release_view
from drifttui.core.onnx.graph import GraphIndex, attribute_values, elem_type_name, tensor_array
from drifttui.core.prepare.plan.folding import fold_conv_bn
from drifttui.core.prepare.plan.plan import Plan
from drifttui.core.prepare.weight_scan import Scratch, scan
from drifttui.core.result import InitializerInfo, NodeInfo

MAX_NODES_PER_LAYER = 64


def _torch_params(model: Any) -> dict[str, np.ndarray]:
    import torch

    if not isinstance(model, torch.nn.Module):
        return {}
    out = {}
    for name, t in list(model.named_parameters()) + list(model.named_buffers()):
        if t.is_floating_point():
            out[name] = t.detach().float().cpu().numpy()
    return out


class LayerDetails:
    """The static per-layer details: each call's ONNX nodes, op types and node names (at once), and
    its initializers' figures (statistics, max |ONNX - torch|), computed in a background thread.

    The figures read every weight (4.2 GB on a 1B model); nothing before ``decide`` needs them, so
    they are computed in the gaps of the run: the thread waits while an ONNX Runtime run or a torch
    forward holds the cores (``runtime.cores``: taking one core from them slowed a 1B model's
    observer check by 11 s) and goes on during session builds and between runs.  Each weight's
    mapped pages are given back once read, so the thread adds one weight to the resident memory at
    most.  ``joined`` waits for the figures, and from then on the thread no longer gives way;
    ``timings["details"]`` is the thread's own time (it overlaps the others)."""

    def __init__(self, nodes: dict[int, list[NodeInfo]], op_types: dict[int, list[str]],
                 node_names: dict[int, list[str]], initializers: "Future[dict[int, list[InitializerInfo]]]",
                 urgent: threading.Event):
        self.nodes, self.op_types, self.node_names = nodes, op_types, node_names
        self._initializers, self._urgent = initializers, urgent

    def joined(self, wait: bool = True) -> tuple[dict[int, tuple[list[NodeInfo], list[InitializerInfo]]],
                                                 dict[int, list[str]], dict[int, list[str]]]:
        """-> (details {call: (nodes, initializers)}, op_types, node_names), once the figures are in;
        without ``wait`` (a partial result during capture) no initializers until they are."""
        if wait:
            self._urgent.set()           # someone waits: the figures no longer give way to the run
        inits = self._initializers.result() if wait or self._initializers.done() else {}
        return ({c: (n, inits.get(c, [])) for c, n in self.nodes.items()}, self.op_types, self.node_names)


DROPPED = "none (dropped)"     # the op type shown for the Identity prepare/plan/orphans.py puts in a call's place


def _op_type(node: Any) -> str:
    """The node's op type, or DROPPED for the Identity that stands for a call whose computation the exporter
    dropped (the file has no node of that call: the Identity is drifttui's, not the file's)."""
    return DROPPED if node.op_type == "Identity" and ORPHAN in (node.name or "") else node.op_type


def layer_details(index: GraphIndex, plan: Plan, calls: list[Call], model: Any,
                  timings: Optional[dict[str, float]] = None) -> LayerDetails:
    """The nodes, op types and node names of every call now; the initializers' figures started in a
    background thread (``LayerDetails.joined``)."""
    nodes: dict[int, list[NodeInfo]] = {}
    op_types: dict[int, list[str]] = {}
    node_names: dict[int, list[str]] = {}
    names: dict[int, list[str]] = {}          # call -> its initializers, in node order
    jobs: dict[str, tuple[Call, bool]] = {}   # initializer -> (the first call using it, folded)
    for cm in plan.calls:
        call = calls[cm.call]
        op_types[cm.call] = list(dict.fromkeys(_op_type(index.nodes[n]) for n in cm.nodes
                                               if index.nodes[n].op_type != "Constant"))
        own = [n for n in cm.own if index.nodes[n].op_type != "Constant"]
        node_names[cm.call] = [index.nodes[n].name for n in own]
        nodes[cm.call], names[cm.call] = [], []
        for n in own[:MAX_NODES_PER_LAYER]:
            node = index.nodes[n]
            shapes = {v: index.shapes[v] for v in node.inputs + node.outputs if v in index.shapes}
            nodes[cm.call].append(NodeInfo(node.name, _op_type(node), node.domain, attribute_values(node.proto),
                                           list(node.inputs), list(node.outputs), shapes))
            for v in node.inputs:
                if _is_weight(index, v) and v not in names[cm.call]:
                    names[cm.call].append(v)
                    # a folded node's weights (Conv+BatchNorm) differ from the torch parameter they
                    # are named after by design: compared through the fold
                    jobs.setdefault(v, (call, "BatchNorm" in node.fused_rule))
    future: Future = Future()
    urgent = threading.Event()

    def work() -> None:
        t = time.perf_counter()
        try:
            infos = _initializer_infos(index, model, jobs, lambda: cores.wait_idle(urgent))
            result = {c: [infos[v] for v in vs] for c, vs in names.items()}
        except BaseException as exc:         # surfaced where the figures are read (decide)
            future.set_exception(exc)
            return
        if timings is not None:
            timings["details"] = time.perf_counter() - t
        future.set_result(result)
    threading.Thread(target=work, name="drifttui-layer-details", daemon=True).start()
    return LayerDetails(nodes, op_types, node_names, future, urgent)


def _is_weight(index: GraphIndex, v: str) -> bool:
    """An initializer, or a Constant node's float tensor of 2 elements or more (a weight a tool folded
    into a Constant node; the scalars and shapes a TorchScript export writes as Constants are not)."""
    if v in index.initializers:
        return True
    t = index.constant_tensor(v) if v in index.constant_values else None
    return t is not None and t.data_type in SCALAR_FLOAT_ELEMS and int(np.prod(t.dims)) >= 2


def _initializer_infos(index: GraphIndex, model: Any, jobs: dict[str, tuple[Call, bool]],
                       pace: Callable[[], None]) -> dict[str, InitializerInfo]:
    params = _torch_params(model)
    scratch = Scratch()        # one set of work buffers for every weight
    out = {}
    for v, (call, folded) in jobs.items():
        call_params = {p[0]: p for p in call.params}
        out[v] = _init_info(index, v, params, call_params, folded=folded,
                            through=_fold_of(model, call.module) if folded else None, pace=pace,
                            scratch=scratch)
    return out


def _fold_of(model: Any, bn_name: str) -> Any:
    """f(torch param name) -> the folded (Conv weight x BatchNorm) values, or None."""
    import torch

    mods = dict(model.named_modules()) if isinstance(model, torch.nn.Module) else {}
    bn = mods.get(bn_name)
    if not isinstance(bn, torch.nn.modules.batchnorm._BatchNorm) or bn.running_var is None:
        return None         # e.g. an unflattened ExportedProgram's InterpreterModule

    def fold(param: str) -> Any:

        conv = mods.get(param.rsplit(".", 1)[0])
        if not isinstance(conv, torch.nn.modules.conv._ConvNd) or conv.weight.shape[0] != bn.running_var.shape[0]:
            return None
        w, b = fold_conv_bn(conv, bn)
        return w if param.endswith(".weight") else b
    return fold


def _init_info(index: GraphIndex, name: str, params: dict[str, np.ndarray],
               call_params: dict[str, Any], folded: bool = False, through: Any = None,
               pace: Optional[Callable[[], None]] = None, scratch: Optional[Scratch] = None) -> InitializerInfo:
    arr = tensor_array(index, name)
    try:
        return _figures(index, name, arr, params, call_params, folded, through, pace, scratch)
    finally:
        release_view(arr)      # a view of the mapped file: its pages go back once read (4.2 GB on a 1B model)


def _figures(index: GraphIndex, name: str, arr: Optional[np.ndarray], params: dict[str, np.ndarray],
             call_params: dict[str, Any], folded: bool, through: Any,
             pace: Optional[Callable[[], None]], scratch: Optional[Scratch]) -> InitializerInfo:
    t = index.constant_tensor(name)
    dtype = elem_type_name(t.data_type)
    if arr is None or arr.size == 0:
        return InitializerInfo(name, dtype, list(t.dims), 0.0, 0.0, 0.0, 0.0)
    a = arr if arr.dtype.kind in "fiub" else np.zeros(1)
    torch_name = name if name in params else None
    if torch_name is None:
        # anonymous (folded) initializer: match by shape within the module's own parameters
        # anonymous (folded or re-laid-out) initializer: match by shape, or transposed shape for the
        # weights a Linear exports as MatMul, within the module's own parameters
        shape = tuple(arr.shape)
        same = [p for p, info in call_params.items() if p in params and
                (tuple(info[2]) == shape or (len(shape) == 2 and tuple(info[2]) == shape[::-1]))]
        if len(same) == 1:
            torch_name = same[0]
    reference, transposed = None, False
    if torch_name is not None and folded and through is not None:
        # a folded weight is compared THROUGH the fold (Conv weight x BatchNorm scale), not skipped
        f = through(torch_name)
        reference = f if f is not None and f.shape == a.shape else None
    elif torch_name is not None and not folded:
        p = params[torch_name]
        if p.shape == a.shape:
            reference = p
        elif p.ndim == 2 and p.T.shape == a.shape:
            reference, transposed = p, True      # a Linear stored transposed (MatMul)
    stats, diff = scan(a, reference, transposed, pace=pace, scratch=scratch)
    if diff and reference is not None and not transposed and reference.ndim == 2 and reference.T.shape == a.shape:
        # a square weight that differs as it is may be stored transposed; one that does not needs no
        # second read (4 GB on a 1B model)
        diff = min(diff, scan(a, reference, True, stats=False, pace=pace, scratch=scratch)[1])
    return InitializerInfo(name, dtype, list(t.dims), *stats, torch_name, diff)
