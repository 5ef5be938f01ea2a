"""The server boundary: the config's inputs and outputs (names, ``data_type``, ``dims``, ``reshape``,
``max_batch_size``) against the file's graph, and the samples they describe.

With ``max_batch_size > 0`` every tensor at the boundary has a leading batch dim that ``dims`` leave
out; ``reshape`` gives the shape the model sees (without that batch dim) where it differs from
``dims``.  drifttui's samples have the model's shape (batch 1); the server gets each reshaped to
``[1] + dims``.  A ``TYPE_FP16`` input of a float16 file keeps the file's rule
(model/half_inputs.py): each sample is drawn in float32, rounded once through float16, and torch gets
those values in float32, the server and the file the float16 ones.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from drifttui.core.runtime.triton.config import dtype_name
from drifttui.errors import InputError


@dataclass(frozen=True)
class Tensor:
    name: str
    dtype: str
    dims: tuple[int, ...]          # at the boundary, without the batch dim (-1: variable)
    model_dims: tuple[int, ...]    # what the model sees (reshape), without the batch dim


@dataclass(frozen=True)
class Boundary:
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    max_batch_size: int

    @property
    def batched(self) -> bool:
        return self.max_batch_size > 0

    def wire_shape(self, t: Tensor, model_shape: Sequence[int]) -> tuple[int, ...]:
        """The shape sent for a tensor of the model's ``model_shape`` (batch dim included when batched)."""
        lead = tuple(model_shape[:1]) if self.batched else ()
        if t.dims == t.model_dims:
            return tuple(model_shape)
        known = [d for d in t.dims if d > 0]
        rest = 1
        for d in model_shape[len(lead):]:
            rest *= int(d)
        free = rest
        for d in known:
            free //= d
        return lead + tuple(d if d > 0 else free for d in t.dims)


def _tensor(io: Any) -> Tensor:
    dims = tuple(int(d) for d in io.dims)
    model = tuple(int(d) for d in io.reshape.shape) if io.HasField("reshape") else dims
    return Tensor(io.name, dtype_name(io.data_type), dims, model)


def boundary(config: Any) -> Boundary:
    return Boundary(tuple(_tensor(i) for i in config.input), tuple(_tensor(o) for o in config.output),
                    int(config.max_batch_size))


def _fits(want: Sequence[Any], have: Sequence[int]) -> bool:
    return len(want) == len(have) and all(not isinstance(w, int) or w <= 0 or h <= 0 or w == h
                                          for w, h in zip(want, have))


def check_against_file(b: Boundary, graph_inputs: list[tuple[str, list[Any], str]],
                       graph_outputs: list[tuple[str, list[Any], str]], where: str,
                       strict: bool = True) -> tuple[list[str], list[str]]:
    """Refuse a config whose inputs or outputs disagree with the file (name, dtype, shape) in one
    line; return the config fields that shape the boundary (for the report) and, when not
    ``strict`` (a server whose backend casts, not the onnxruntime backend), the dtype casts at the
    boundary instead of refusing them."""
    casts: list[str] = []
    for side, tensors, graph in (("input", b.inputs, graph_inputs), ("output", b.outputs, graph_outputs)):
        known = {name: (dims, dt) for name, dims, dt in graph}
        for t in tensors:
            if t.name not in known:
                raise InputError(f"{where} {side} {t.name!r} is not an {side} of the ONNX file "
                                 f"(its {side}s: {', '.join(list(known)[:8])})",
                                 f"make the config's {side} names the file's")
            dims, dt = known[t.name]
            if dt != t.dtype and not strict:
                casts.append(f"{side} {t.name}: {t.dtype} at the server, {dt} in the file")
            elif dt != t.dtype:
                raise InputError(f"{where} {side} {t.name!r} is {t.dtype}, the ONNX file's is {dt}",
                                 "make data_type the file's type (Triton refuses the model otherwise)")
            full = ((-1,) if b.batched else ()) + t.model_dims
            if not _fits(dims, full):
                raise InputError(f"{where} {side} {t.name!r} has dims {list(full)} (with the batch dim), "
                                 f"the ONNX file's are {dims}", "fix dims/reshape/max_batch_size in the config")
    fields = []
    if b.batched:
        fields.append(f"max_batch_size {b.max_batch_size} (a leading batch dim on every input and output)")
    for t in b.inputs + b.outputs:
        if t.model_dims != t.dims:
            fields.append(f"{t.name}: dims {list(t.dims)} reshaped to {list(t.model_dims)} at the boundary")
        if t.dtype == "float16":
            fields.append(f"{t.name}: TYPE_FP16 at the boundary")
    return fields + [f"boundary cast: {c}" for c in casts], casts


def input_spec(b: Boundary, graph_inputs: list[tuple[str, list[Any], str]]) -> Optional[str]:
    """An ``--inputs shape:...`` spec for one sample (batch 1) in the file's input order, built from the
    config; None when the config names no inputs.  A variable dim (-1) takes the file's size when the
    file fixes it, else 1."""
    if not b.inputs:
        return None
    by_name = {t.name: t for t in b.inputs}
    parts = []
    for name, dims, dt in graph_inputs:
        t = by_name.get(name)
        if t is None:
            raise InputError(f"the ONNX file's input {name!r} is not in the config",
                             "list every input of the file in config.pbtxt (or pass --inputs)")
        lead = (1,) if b.batched else ()
        file_dims = list(dims)[len(lead):]
        shape = [d if d > 0 else (f if isinstance(f, int) and f > 0 else 1)
                 for d, f in zip(t.model_dims, file_dims + [0] * len(t.model_dims))]
        prefix = "" if t.dtype in ("float32", "float16") else f"{t.dtype}:"
        parts.append(prefix + "x".join(str(d) for d in lead + tuple(shape)))
    return "shape:" + ";".join(parts)
