"""A file that takes float16 inputs (a float16 conversion without ``keep_io_types``): every sample is
rounded to float16 once, and both models get the same numbers.

The PyTorch model is the float32 one and is fed float32; the deployed file is fed what a deployment
feeds it, the float16 values.  Were torch fed the unrounded sample, the inputs' own rounding (2^-11
relative) would count as drift of the first layer; it is the deployment's choice of input type,
not a computation, so it is taken out: the float32 sample is rounded through float16 and torch gets
that value in float32 (exact), the file the float16 one (``inputs.build_source`` rounds,
``inputs.onnx_feeds`` narrows only values float16 holds exactly and refuses anything else)."""
from __future__ import annotations

from typing import Any, Optional

HALF_TYPES = ("float16",)


def half_inputs(graph_inputs: Optional[list[tuple[str, list[Any], str]]]) -> list[str]:
    """The names of the graph's float16 inputs."""
    return [name for name, _, dtype in graph_inputs or [] if dtype in HALF_TYPES]
