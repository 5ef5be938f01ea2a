"""Sample inputs: from a callable, a file, shapes, an example, or the ONNX graph's own inputs.

For sample ``i`` torch is seeded with ``seed + i`` before the callable runs, so a callable
that draws random numbers yields different samples.  Inputs are matched to the ONNX graph
in order (initializer inputs excluded) or, for a dict, by name.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import torch

from drifttui.core.spec import InputSpec, ShapeInput
from drifttui.errors import InputError

_DT = {
    "float32": torch.float32, "float": torch.float32, "float16": torch.float16, "half": torch.float16,
    "float64": torch.float64, "double": torch.float64, "bfloat16": torch.bfloat16,
    "int64": torch.int64, "long": torch.int64, "int32": torch.int32, "int": torch.int32,
    "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}
Sample = tuple[tuple, dict]


def _random(shape: tuple[int, ...], dtype: torch.dtype, gen: torch.Generator, zero: bool) -> torch.Tensor:
    if zero:
        return torch.zeros(shape, dtype=dtype)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen, dtype=torch.float32).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    return torch.randint(0, 10, shape, generator=gen, dtype=torch.int64).to(dtype)


def _normalise(value: Any, where: str) -> Sample:
    if isinstance(value, torch.Tensor):
        return (value,), {}
    if isinstance(value, np.ndarray):
        return (torch.from_numpy(value),), {}
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(v, np.ndarray):
                v = torch.from_numpy(v)
            if not isinstance(v, torch.Tensor):
                raise InputError(f"{where} returned a dict whose {k!r} is a {type(v).__name__}",
                                 "return tensors only (a tensor, a tuple of tensors or a dict of tensors)")
            out[str(k)] = v
        return (), out
    if isinstance(value, (tuple, list)):
        args = []
        for v in value:
            if isinstance(v, np.ndarray):
                v = torch.from_numpy(v)
            if not isinstance(v, torch.Tensor):
                raise InputError(f"{where} returned a sequence holding a {type(v).__name__}",
                                 "return tensors only (a tensor, a tuple of tensors or a dict of tensors)")
            args.append(v)
        return tuple(args), {}
    raise InputError(f"{where} returned a {type(value).__name__}",
                     "return a tensor, a tuple of tensors or a dict of named tensors")


class InputSource:
    """Produces sample ``i`` as ``(args, kwargs)``; ``fixed`` sources give one sample only."""

    def __init__(self, make: Callable[[int], Sample], fixed: bool, description: str) -> None:
        self._make = make
        self.fixed = fixed
        self.description = description

    def sample(self, i: int) -> Sample:
        return self._make(i)


def from_shapes(shapes: list[ShapeInput] | list[tuple[tuple[int, ...], str]], seed: int, zero: bool,
                names: Optional[list[str]] = None) -> InputSource:
    norm = [(s.shape, s.dtype) if isinstance(s, ShapeInput) else s for s in shapes]

    def make(i: int) -> Sample:
        gen = torch.Generator().manual_seed(seed + i)
        tensors = [_random(tuple(shape), _DT[dt], gen, zero) for shape, dt in norm]
        return tuple(tensors), {}

    desc = ";".join(f"{dt}:{'x'.join(map(str, shape))}" for shape, dt in norm)
    return InputSource(make, zero, f"{'zeros' if zero else 'random normal'} {desc}")


def build_source(spec: InputSpec, seed: int, zero: bool, graph_inputs: Optional[list[tuple[str, list[Any], str]]],
                 example: Any = None) -> InputSource:
    """``graph_inputs``: (name, dims, dtype) of the ONNX graph's inputs, when an ONNX file is known."""
    if spec.kind == "shapes":
        return from_shapes(list(spec.shapes), seed, zero)
    if spec.kind == "memory":
        from drifttui.core import memory

        return memory.source(spec.text, seed, zero)
    if spec.kind == "callable":
        from drifttui.core.loading import import_callable

        assert spec.callable is not None
        fn = import_callable(spec.callable, "--inputs")

        def make(i: int) -> Sample:
            torch.manual_seed(seed + i)
            np.random.seed((seed + i) % (2**32))
            try:
                value = fn()
            except Exception as exc:
                raise InputError(f"--inputs {spec.text!r} raised {type(exc).__name__}: {exc}",
                                 "fix the inputs callable (rerun with --debug for the traceback)") from exc
            args, kwargs = _normalise(value, f"--inputs {spec.text!r}")
            if zero:
                args = tuple(torch.zeros_like(a) for a in args)
                kwargs = {k: torch.zeros_like(v) for k, v in kwargs.items()}
            return args, kwargs

        return InputSource(make, zero, f"callable {spec.text}")
    if spec.kind == "file":
        assert spec.path is not None
        sample = _load_file(spec.path)
        if zero:
            sample = (tuple(torch.zeros_like(a) for a in sample[0]),
                      {k: torch.zeros_like(v) for k, v in sample[1].items()})
        return InputSource(lambda i: sample, True, f"file {spec.path}")
    if example is not None:
        return InputSource(lambda i: _normalise(example.make_inputs(seed + i, zero), "example"), zero,
                           f"example inputs {'(zeros)' if zero else f'(seed {seed} + i)'}")
    if graph_inputs:
        shapes = []
        for name, dims, dtype in graph_inputs:
            if dtype not in _DT:
                raise InputError(f"ONNX input {name!r} has dtype {dtype}, which drifttui cannot generate",
                                 "pass --inputs with a callable or a file")
            shapes.append((tuple(d if isinstance(d, int) and d > 0 else 1 for d in dims), dtype))
        return from_shapes(shapes, seed, zero)
    raise InputError("cannot tell the model's input shapes",
                     "pass --inputs shape:1x3x224x224 (or a callable/file), or --onnx FILE to read them from")


def _load_file(path: Path) -> Sample:
    if not path.is_file():
        raise InputError(f"inputs file {str(path)!r} does not exist", "check the --inputs path")
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            return _normalise(np.load(path, allow_pickle=False), f"inputs file {path}")
        if suffix == ".npz":
            with np.load(path, allow_pickle=False) as data:
                keys = list(data.keys())
                if all(k.startswith("arr_") for k in keys):
                    return _normalise(tuple(data[k] for k in sorted(keys, key=lambda s: int(s[4:]))),
                                      f"inputs file {path}")
                return _normalise({k: data[k] for k in keys}, f"inputs file {path}")
        value = torch.load(str(path), map_location="cpu", weights_only=True)
        return _normalise(value, f"inputs file {path}")
    except InputError:
        raise
    except Exception as exc:
        raise InputError(f"inputs file {str(path)!r} cannot be read ({type(exc).__name__}: {exc})",
                         "save a tensor, a tuple or a dict of tensors (.pt), or arrays (.npy/.npz)") from exc


def flatten(sample: Sample) -> list[torch.Tensor]:
    args, kwargs = sample
    return list(args) + list(kwargs.values())


def onnx_feeds(sample: Sample, graph_inputs: list[str], input_dtypes: dict[str, str]) -> dict[str, np.ndarray]:
    args, kwargs = sample
    tensors = flatten(sample)
    if kwargs and not args and set(kwargs) == set(graph_inputs):
        pairs = [(name, kwargs[name]) for name in graph_inputs]
    else:
        if len(tensors) != len(graph_inputs):
            raise InputError(
                f"the inputs give {len(tensors)} tensor(s) but the ONNX graph takes {len(graph_inputs)} "
                f"({', '.join(graph_inputs)})",
                "give one tensor per ONNX input (extra inputs such as recurrent state must be fed too)")
        pairs = list(zip(graph_inputs, tensors))
    feeds = {}
    for name, t in pairs:
        arr = t.detach().cpu()
        if arr.dtype == torch.bfloat16:
            raise InputError(f"input {name!r} is bfloat16, which numpy cannot carry to ONNX Runtime",
                             "give float32 inputs")
        a = arr.numpy()
        want = input_dtypes.get(name)
        if want and want != a.dtype.name:
            raise InputError(f"input {name!r} is {a.dtype.name} but the ONNX graph expects {want}",
                             f"give {want} inputs (e.g. --inputs shape:{want}:...)")
        feeds[name] = a
    return feeds
