"""Version alignment (``versions``): torch, onnx, onnxruntime, opset, exporter and producer
recorded in the report and the file (info); an opset newer than this onnx package knows (warning)."""
from __future__ import annotations

from drifttui.core.result import Finding
from drifttui.core.explain.context import Context, clean

CHECK = "versions"
STATIC = True


def check(ctx: Context) -> list[Finding]:
    import onnx

    env = ctx.result.environment
    ev = {"torch": env.torch, "onnx": env.onnx, "onnxruntime": env.onnxruntime, "opset": env.opset,
          "exporter": env.exporter, "producer": env.producer, "ir_version": int(ctx.index.model.ir_version),
          "onnx_max_opset": onnx.defs.onnx_opset_version()}
    out = [Finding("versions", "info", None, [],
                   f"torch {env.torch}, onnx {env.onnx}, onnxruntime {env.onnxruntime}, opset {env.opset}, "
                   f"exporter {env.exporter}, producer {env.producer or '-'}", clean(ev),
                   "keep these in the bug report; re-export after upgrading torch before comparing")]
    if env.opset is not None and env.opset > ev["onnx_max_opset"]:
        out.append(Finding("versions", "warning", None, [],
                           f"the file uses opset {env.opset} but this onnx package knows up to {ev['onnx_max_opset']}",
                           clean(ev), "upgrade onnx/onnxruntime or export with a lower opset"))
    return out
