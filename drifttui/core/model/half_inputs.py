"""A file that takes float16 inputs (a float16 conversion without ``keep_io_types``): every sample is
rounded to float16 once, and both models get the same numbers.

The PyTorch model is the float32 one and is fed float32; the deployed file is fed what a deployment
feeds it, the float16 values.  Were torch fed the unrounded sample, the inputs' own rounding (2^-11
relative) would count as drift of the first layer; it is the deployment's choice of input type,
not a computation, so it is taken out: the float32 sample is rounded through float16 and torch gets
that value in float32 (exact), the file the float16 one (``inputs.onnx_feeds`` narrows only values
float16 holds exactly, and refuses anything else)."""
from __future__ import annotations

from typing import Any, Optional

import torch

HALF_TYPES = ("float16",)


def half_inputs(graph_inputs: Optional[list[tuple[str, list[Any], str]]]) -> list[str]:
    """The names of the graph's float16 inputs."""
    return [name for name, _, dtype in graph_inputs or [] if dtype in HALF_TYPES]


def round_sample(sample: tuple[tuple, dict], graph_inputs: list[tuple[str, list[Any], str]]) -> tuple[tuple, dict]:
    """``sample`` with each float32 tensor that feeds a float16 graph input rounded through float16
    (still float32), matched to the inputs as ``onnx_feeds`` matches them (by name when every
    input is a keyword, else in order)."""
    args, kwargs = sample
    dtype_of = {name: dt for name, _, dt in graph_inputs}
    order = [name for name, _, _ in graph_inputs]

    def rounded(t: Any, name: Optional[str]) -> Any:
        if name is not None and dtype_of.get(name) in HALF_TYPES and isinstance(t, torch.Tensor) \
                and t.dtype == torch.float32:
            return t.to(torch.float16).to(torch.float32)
        return t

    if kwargs and not args and set(kwargs) == set(order):
        return args, {k: rounded(v, k) for k, v in kwargs.items()}
    names = order + [None] * (len(args) + len(kwargs))
    new_args = tuple(rounded(t, names[k]) for k, t in enumerate(args))
    new_kwargs = {k: rounded(v, names[len(args) + j]) for j, (k, v) in enumerate(kwargs.items())}
    return new_args, new_kwargs
