"""ONNX <-> ONNX, no torch model: a processed file against the file it was made from, layer by
layer, the old file's modules as the layer names (`check --onnx NEW --reference-onnx OLD`).

The old file plays torch's role.  Its modules come from the exporter's own record (dynamo:
``pkg.torch.onnx.name_scopes``; TorchScript: the ``/a/a.0/conv/Conv`` node names); a module's
values are the ones its own nodes produce for nodes outside it (and the graph outputs).  The new
file's value of the same name carries it (onnxsim, onnxslim and ORT's optimizer keep the names of
the values they do not remove); a value the new file no longer has is said as such, never
guessed.  Both files run at level disable on the same samples (``--inputs``, or the old file's
static input shapes).  Each layer is compared with the tolerance rule of ``metrics.compare`` (the
rule ``core.decide`` applies); the origin is the first layer, in the old file's order, that fails
while the layers feeding it pass.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from drifttui.core.base.metrics import Stats, compare
from drifttui.core.model.inputs import build_source, onnx_feeds
from drifttui.core.model.spec import parse_input_spec
from drifttui.core.onnx.graph import DYNAMO, TORCHSCRIPT, GraphIndex, build_index
from drifttui.core.prepare.stage import graph_inputs
from drifttui.core.runtime.passes import ort_passes
from drifttui.errors import InputError


@dataclass
class PairLayer:
    module: str
    values: list[str]                 # the old file's values of this module that the new file has
    missing: list[str] = field(default_factory=list)
    max_abs: float = 0.0
    max_rel: float = 0.0
    fails: bool = False
    inherited: bool = False           # fails only because a layer feeding it fails


@dataclass
class PairResult:
    layers: list[PairLayer]
    outputs: list[dict[str, Any]]
    origin: Optional[str]
    samples: int
    flavour: str

    @property
    def drifts(self) -> bool:
        return self.origin is not None or any(o["fails"] for o in self.outputs)


def module_of(node: Any, flavour: str) -> str:
    """The innermost module of a node, qualified ("layer1.0.conv1"), "" for the root."""
    if not node.scope:
        return ""
    if flavour == DYNAMO:
        return node.scope[-1]
    q = node.scope[0]
    for seg in node.scope[1:]:
        q = seg if seg.startswith(q + ".") else f"{q}.{seg}"
    return q


def layers_of(index: GraphIndex) -> list[tuple[str, list[str], set[str]]]:
    """(module, its output values, the modules its inputs come from), in the file's order."""
    owner = {}
    for n in index.nodes:
        m = module_of(n, index.flavour)
        for v in n.outputs:
            if v:
                owner[v] = m
    order: dict[str, tuple[list[str], set[str]]] = {}
    outs = set(index.graph_outputs)
    for n in index.nodes:
        m = module_of(n, index.flavour)
        vals, feeders = order.setdefault(m, ([], set()))
        feeders.update(owner[v] for v in n.inputs if v in owner and owner[v] != m)
        for v in n.outputs:
            if v and v not in index.constant_values and (v in outs or any(
                    module_of(index.nodes[c], index.flavour) != m for c in index.consumers.get(v, []))):
                vals.append(v)
    return [(m, vals, feeders) for m, (vals, feeders) in order.items() if vals]


def _run(path: str, feeds: list[dict], names: list[str]) -> list[dict[str, np.ndarray]]:
    import onnx

    model = onnx.load(path)
    have = {o.name for o in model.graph.output}
    model.graph.output.extend(onnx.ValueInfoProto(name=n) for n in names if n not in have)
    sess = ort_passes.session(model.SerializeToString(), "disable")
    ins = {i.name for i in sess.get_inputs()}
    return [dict(zip(names, sess.run(names, {k: v for k, v in f.items() if k in ins}))) for f in feeds]


def compare_files(new: str, old: str, inputs: Optional[str], samples: int, seed: int, atol: float,
                  rtol: float) -> PairResult:
    import onnx

    old_proto = onnx.load(old)
    index = build_index(old_proto)
    if index.flavour not in (DYNAMO, TORCHSCRIPT):
        raise InputError(f"{old} carries no exporter metadata (no module names)",
                         "give the raw export as --reference-onnx (torch.onnx.export's own file)")
    new_index = build_index(onnx.load(new, load_external_data=False))
    new_values = set(new_index.producer) | set(new_index.graph_outputs)
    gi = graph_inputs(old_proto)
    src = build_source(parse_input_spec(inputs), seed, False, gi, None)
    dtypes = {name: dt for name, _, dt in gi}
    n = 1 if src.fixed else samples
    feeds = [onnx_feeds(src.sample(k), index.graph_inputs, dtypes) for k in range(n)]
    spec = layers_of(index)
    wanted = sorted({v for _, vals, _ in spec for v in vals if v in new_values})
    outs_old, outs_new = index.graph_outputs, new_index.graph_outputs
    a = _run(old, feeds, list(dict.fromkeys(wanted + outs_old)))
    b = _run(new, feeds, list(dict.fromkeys(wanted + outs_new)))
    layers, failing = [], set()
    for module, vals, feeders in spec:
        L = PairLayer(module, [v for v in vals if v in new_values], [v for v in vals if v not in new_values])
        st = Stats()
        for x, y in zip(a, b):
            for v in L.values:
                st.add(compare(x[v], y[v], atol, rtol))
        L.max_abs, L.max_rel, L.fails = st.max_abs, st.max_rel, bool(L.values) and st.fails()
        L.inherited = L.fails and bool(feeders & failing)
        if L.fails:
            failing.add(module)
        layers.append(L)
    outputs = []
    for k, (po, pn) in enumerate(zip(outs_old, outs_new)):
        st = Stats()
        for x, y in zip(a, b):
            st.add(compare(x[po], y[pn], atol, rtol))
        outputs.append({"name": po, "max_abs": st.max_abs, "max_rel": st.max_rel, "fails": st.fails()})
    origin = next((L.module for L in layers if L.fails and not L.inherited), None)
    return PairResult(layers, outputs, origin, n, index.flavour)
