"""The PyTorch model and the ONNX graph must give the same number of outputs.

Outputs are compared pairwise in order; an output on one side with no partner would never be
compared, so a run with a different count could pass without looking at it. It is refused.
"""
from __future__ import annotations

from drifttui.errors import InputError


def check_output_count(torch_outputs: int, onnx_outputs: list[str]) -> None:
    if torch_outputs == len(onnx_outputs):
        return
    listed = ", ".join(onnx_outputs[:8]) + (f" and {len(onnx_outputs) - 8} more" if len(onnx_outputs) > 8 else "")
    raise InputError(
        f"the PyTorch model returns {torch_outputs} output tensor(s) but the ONNX graph has {len(onnx_outputs)} "
        f"output(s) ({listed or 'none'}): the unmatched output(s) would never be compared",
        "pass the ONNX file exported from this model (--onnx), or make the model return what the graph returns")
