"""Which nodes ONNX Runtime's CPU makes read a float16 / bfloat16 value unrounded (microsoft/onnxruntime#8787).

Its CPU has no low-precision kernel for many ops (``Div``, ``ReduceMax``, ``ReduceMin``, ...): the always-on
InsertCastTransformer runs each through float32 Casts it inserts, and drops the inserted
``Cast(float -> float16) -> Cast(float16 -> float)`` pair between two such nodes, so the reader reads the
producer's float32 output, unrounded, where the file (and torch) round it; a reader with a float16 kernel
(``Split``) still reads the rounded value.  Between two module calls this is invisible to an own-error graph that
cuts the edge and feeds torch's (rounded) value: both calls' own nodes agree, and the whole file does not.

``unrounded_reads`` asks ONNX Runtime itself: the graph it runs (saved at ``ORT_DISABLE_ALL``; the transformer
runs at every level) names the float32 twin of value ``v`` ``InsertedPrecisionFreeCast_v``; a node reading that
twin where it is made by ``v``'s producer (not by a Cast of ``v``) reads ``v`` unrounded.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any

_TWIN = "InsertedPrecisionFreeCast_"


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
            ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
            ran = onnx.load(path, load_external_data=False)
    except Exception:                                   # noqa: BLE001 - no answer: nothing is changed
        return set()
    made_by = {o: n for n in ran.graph.node for o in n.output}
    reads = set()
    for n in ran.graph.node:
        for name in n.input:
            v = name[len(_TWIN):] if name.startswith(_TWIN) else None
            if v not in low_values:
                continue
            p = made_by.get(name)
            if p is not None and not (p.op_type == "Cast" and list(p.input) == [v]):
                reads.add((v, n.name))
    return reads
