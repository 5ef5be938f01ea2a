"""Which nodes ONNX Runtime's CPU makes read a float16 / bfloat16 value unrounded (microsoft/onnxruntime#8787).

Its CPU has no low-precision kernel for many ops (``Div``, ``ReduceMax``, ``ReduceMin``, ...): the always-on
InsertCastTransformer runs each through float32 Casts it inserts, and drops the inserted
``Cast(float -> float16) -> Cast(float16 -> float)`` pair between two such nodes, so the reader reads the
producer's float32 output, unrounded, where the file (and torch) round it; a reader with a float16 kernel
(``Split``) still reads the rounded value.  Between two module calls this is invisible to an own-error graph that
cuts the edge and feeds torch's (rounded) value: both calls' own nodes agree, and the whole file does not.

``unrounded_reads`` asks ONNX Runtime itself: the graph it runs (saved at ``ORT_DISABLE_ALL``; the transformer
runs at every level) keeps the file's node names; a node that reads, in place of the file's float16 value ``v``,
anything but ``v`` or a Cast of ``v`` (the float32 twin ``InsertedPrecisionFreeCast_v`` its producer makes, or the
float32 source of a file's Cast to float16 whose Cast pair ORT removed) reads ``v`` unrounded; and a file's own
widening Cast of ``v`` that ORT removed with the Cast back to float16 it inserted after a float32-run producer (an
autocast Linear's Gemm, then ``.float()`` in the caller) reads ``v`` unrounded for its readers.  The session is made and
never run: the weights are declared as graph inputs (their types and shapes; the transformer reads no value), so a
file whose weights lie in an external file, or a large one, costs no weight read.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any

from drifttui.core.base.dtypes import LOW_FLOAT_ELEMS, SCALAR_FLOAT_ELEMS

_TWIN = "InsertedPrecisionFreeCast_"
_KEY = "runtime:unrounded_reads"


def unrounded_reads_of(index: Any, values: set[str]) -> set[tuple[str, str]]:
    """``unrounded_reads`` for ``values`` of the file ``index`` holds: ONNX Runtime is asked once per file (about
    every low-precision value a node makes; kept on ``index.derived``), each caller keeps the reads of its values."""
    if not values:
        return set()
    if _KEY not in index.derived:
        low = {v for v, t in index.elem_types.items() if t in LOW_FLOAT_ELEMS and v in index.producer}
        index.derived[_KEY] = unrounded_reads(index.model, low)
    return {(v, n) for v, n in index.derived[_KEY] if v in values}


def unrounded_reads(model: Any, low_values: set[str]) -> set[tuple[str, str]]:
    """{(value, reader node name)}: the nodes ONNX Runtime's CPU makes read the low-precision ``value`` unrounded;
    empty when the session cannot be made or saved (a file over 2 GB, a custom op)."""
    if not low_values:
        return set()
    try:
        import onnx
        import onnxruntime as ort

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "ort_graph.onnx")
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            so.optimized_model_filepath = path
            so.log_severity_level = 3
            ort.InferenceSession(_weightless(model).SerializeToString(), so, providers=["CPUExecutionProvider"])
            ran = onnx.load(path, load_external_data=False)
    except Exception:                                   # noqa: BLE001 - no answer: nothing is changed
        return set()
    made_by = {o: n for n in ran.graph.node for o in n.output}
    given = {n.name: list(n.input) for n in model.graph.node if n.name}
    reads = set()
    for n in ran.graph.node:
        ins = given.get(n.name)
        if ins is None or len(ins) != len(n.input) or n.name.startswith(_TWIN):
            continue
        for v, got in zip(ins, n.input):
            if v not in low_values or got == v:         # read as the file holds it (a float16 kernel)
                continue
            p = made_by.get(got)
            if not (p is not None and p.op_type == "Cast" and list(p.input) == [v]):
                reads.add((v, n.name))                  # not a Cast of v: the producer's float32 value, or its source
    return reads | _removed_widenings(model, ran, low_values)


def _removed_widenings(model: Any, ran: Any, low_values: set[str]) -> set[tuple[str, str]]:
    """(value, Cast node) for the file's widening Casts of a low-precision value that ONNX Runtime removed with the
    Cast back to it it inserted after a float32-run producer (``Gemm -> Cast(float16) -> Cast(float)`` becomes the
    Gemm's float32 output): the Cast's readers read the producer's unrounded value, none reads the Cast's output."""
    kept = {n.name for n in ran.graph.node}
    read = {v for n in ran.graph.node for v in n.input} | {o.name for o in ran.graph.output}
    out = set()
    for n in model.graph.node:
        if n.op_type != "Cast" or not n.name or n.name in kept or not n.input or n.input[0] not in low_values:
            continue
        to = next((a.i for a in n.attribute if a.name == "to"), None)
        if to in SCALAR_FLOAT_ELEMS - LOW_FLOAT_ELEMS and n.output and n.output[0] not in read:   # widening, gone
            out.add((n.input[0], n.name))
    return out


def _weightless(model: Any) -> Any:
    """``model``'s graph with its initializers declared as graph inputs of their type and shape (no data copied)."""
    import onnx

    g = model.graph
    known = {i.name for i in g.input}
    inputs = list(g.input) + [onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                              for t in g.initializer if t.name not in known]
    graph = onnx.helper.make_graph(list(g.node), g.name or "g", inputs, list(g.output), value_info=list(g.value_info))
    m = onnx.helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    m.functions.extend(model.functions)
    return m
