"""Op-compatibility pass (``op-compat``).

* ``onnx.checker`` errors: error;
* ops outside the standard domains: info (they need a runtime that implements them);
* ops whose semantics are known to differ between frameworks for some attributes: info;
"""
from __future__ import annotations

from drifttui.core.result import Finding
from drifttui.errors import first_line
from drifttui.core.explain.context import Context, clean

CHECK = "op-compat"
STATIC = True
_RISKY = {
    "GridSample": "align_corners and padding_mode must match torch's grid_sample",
    "RoiAlign": "coordinate_transformation_mode (half_pixel vs output_half_pixel) must match torchvision's aligned",
    "Einsum": "some runtimes reorder the contraction (reduction order)",
    "ScatterND": "duplicate indices are undefined in ONNX (torch keeps the last write)",
    "ScatterElements": "duplicate indices and reduction differ between runtimes",
    "Mod": "fmod=0 follows Python's sign, fmod=1 C's: must match torch.remainder vs torch.fmod",
    "TopK": "ties may be ordered differently",
    "ArgMax": "ties: select_last_index must match",
    "ArgMin": "ties: select_last_index must match",
    "NonMaxSuppression": "box format and tie order differ from torchvision.ops.nms",
    "Unique": "sorted order and output ordering can differ",
}


def check(ctx: Context) -> list[Finding]:
    import onnx

    out: list[Finding] = []
    try:
        # by path: the proto holds no external weights (and may be over protobuf's 2 GiB)
        onnx.checker.check_model(str(ctx.index.path) if ctx.index.path else ctx.index.model, full_check=False)
    except Exception as exc:  # the checker's message is the evidence
        first = first_line(exc)
        out.append(Finding(CHECK, "error", None, [], f"onnx.checker rejects the file: {first[:300]}",
                           {"error": first[:1000]}, "re-export with a supported opset; do not edit the graph by hand"))
    by_type: dict[str, list[int]] = {}
    for node in ctx.index.nodes:
        by_type.setdefault((node.domain + "::" if node.domain not in ("", "ai.onnx") else "") + node.op_type,
                           []).append(node.index)
    for key, idx in sorted(by_type.items()):
        names = [ctx.index.nodes[i].name for i in idx]
        module = ctx.node_module(idx[0])
        if "::" in key:
            out.append(Finding(CHECK, "info", module, names[:10],
                               f"{len(idx)} node(s) of custom-domain op {key}: the deployment runtime must implement it",
                               clean({"op": key, "count": len(idx)}), "check the target runtime's op support"))
        elif key in _RISKY:
            out.append(Finding(CHECK, "info", module, names[:10], f"{len(idx)} {key} node(s): {_RISKY[key]}",
                               clean({"op": key, "count": len(idx)}), "compare these nodes' attributes with the torch call"))
    return out
