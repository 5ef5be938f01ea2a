"""Sample inputs: from a callable, a file, shapes, an example, or the ONNX graph's own inputs.

For sample ``i`` torch, numpy and ``random`` are seeded with ``seed + i`` before a callable runs
(``seeded``: the one seeding rule, for the CLI's callables and the Python API's), so a callable that
draws random numbers yields different samples and a sample drawn again is the same sample; the
caller's generator states are restored afterwards.  Inputs are matched to the ONNX graph
in order (initializer inputs excluded) or, for a dict, by name.
"""
from __future__ import annotations

import contextlib
import random
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import numpy as np
import torch

from drifttui.core.base.dtypes import SPEC_ALIASES
from drifttui.core.model import memory
from drifttui.core.model.half_inputs import HALF_TYPES, half_inputs
from drifttui.core.model.loading import import_callable
from drifttui.core.base.units import human
from drifttui.core.model.spec import InputSpec, ShapeInput
from drifttui.errors import InputError, first_line, folded

_DT = {alias: getattr(torch, name) for alias, name in SPEC_ALIASES.items()}
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
    """Produces sample ``i`` as ``(args, kwargs)``; ``fixed`` sources give one sample only.
    Every sample is checked to hold at least one element per tensor (an empty input would
    compare nothing and pass)."""

    def __init__(self, make: Callable[[int], Sample], fixed: bool, description: str,
                 count: Optional[int] = None) -> None:
        self._make = make
        self.fixed = fixed
        self.description = description
        self.count = count          # how many distinct samples it holds (a listed set); None: any index

    def sample(self, i: int) -> Sample:
        """Sample ``i``; an error making it names the sample (issue 34: "... on sample 7")."""
        try:
            sample = self._make(i)
            check_not_empty(sample, self.description)
        except InputError as exc:
            if f"sample {i}" in exc.problem:
                raise
            raise type(exc)(f"{exc.problem} on sample {i}", exc.fix) from exc
        return sample


def check_not_empty(sample: Sample, description: str) -> None:
    args, kwargs = sample
    named = [(f"input {k}", t) for k, t in enumerate(args)] + [(f"input {k!r}", t) for k, t in kwargs.items()]
    if not named:
        raise InputError(f"the inputs ({description}) hold no tensor", "give at least one input tensor")
    for name, t in named:
        if t.numel() == 0:
            shape = "x".join(map(str, t.shape)) or "scalar"
            raise InputError(f"{name} of the inputs ({description}) has shape {shape}, which holds no element: "
                             "there would be nothing to compare", "give inputs with at least one element per dim")


def memory_limit() -> int:
    """Bytes of memory this process may use: the machine's RAM, or a smaller cgroup limit."""
    import os

    limit = 0
    try:
        limit = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        pass
    for cgroup in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(cgroup).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < (limit or int(text) + 1):
            limit = int(text)
    return limit or 16 * 2**30


def check_shapes_fit(shapes: list[tuple[tuple[int, ...], str]], where: str) -> None:
    """Refuse, before allocating, shapes with no element or whose one sample needs more than
    half the memory this process may use (the two models' activations need the rest)."""

    total, limit = 0, memory_limit()
    for shape, dt in shapes:
        text = f"{dt}:{'x'.join(map(str, shape))}"
        if any(d == 0 for d in shape):
            raise InputError(f"{where}: shape {text} holds no element, so there would be nothing to compare",
                             "give every dim a size of 1 or more")
        numel = 1
        for d in shape:
            numel *= d
        total += numel * torch.empty((), dtype=_DT[dt]).element_size()
        if total > limit // 2:
            raise InputError(f"{where}: shape {text} needs {human(total)} for one sample, more than half of the "
                             f"{human(limit)} of memory available", "give smaller shapes (or fewer inputs)")


def from_shapes(shapes: list[ShapeInput] | list[tuple[tuple[int, ...], str]], seed: int, zero: bool,
                names: Optional[list[str]] = None, where: str = "--inputs") -> InputSource:
    norm = [(s.shape, s.dtype) if isinstance(s, ShapeInput) else s for s in shapes]
    check_shapes_fit(norm, where)

    def make(i: int) -> Sample:
        gen = torch.Generator().manual_seed(seed + i)
        tensors = [_random(tuple(shape), _DT[dt], gen, zero) for shape, dt in norm]
        return tuple(tensors), {}

    desc = ";".join(f"{dt}:{'x'.join(map(str, shape))}" for shape, dt in norm)
    return InputSource(make, zero, f"{'zeros' if zero else 'random normal'} {desc}")


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """torch, numpy and ``random`` seeded with ``seed`` inside; the caller's states restored after."""
    np_state, py_state = np.random.get_state(), random.getstate()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        np.random.seed(seed % (2**32))
        random.seed(seed)
        try:
            yield
        finally:
            np.random.set_state(np_state)
            random.setstate(py_state)


def _zeroed(sample: Sample) -> Sample:
    args, kwargs = sample
    return tuple(torch.zeros_like(a) for a in args), {k: torch.zeros_like(v) for k, v in kwargs.items()}


def _seeded_source(call: Callable[[int], Any], seed: int, zero: bool, where: str, fixed: bool,
                   description: str) -> InputSource:
    """Sample i = ``call(i)`` under ``seeded(seed + i)``, normalised (and zeroed for the zero-input step)."""
    def make(i: int) -> Sample:
        with seeded(seed + i):
            value = call(i)
        sample = _normalise(value, where)
        return _zeroed(sample) if zero else sample

    return InputSource(make, fixed or zero, description)


def build_source(spec: InputSpec, seed: int, zero: bool, graph_inputs: Optional[list[tuple[str, list[Any], str]]],
                 example: Any = None) -> InputSource:
    """``graph_inputs``: (name, dims, dtype) of the ONNX graph's inputs, when an ONNX file is known.
    A file that takes float16 inputs gets each sample rounded to float16, torch the same values
    (``half_inputs``)."""
    source = _source(spec, seed, zero, graph_inputs, example)
    if not graph_inputs or not half_inputs(graph_inputs):
        return source
    return InputSource(lambda i: _rounded(source.sample(i), graph_inputs), source.fixed,
                       source.description + " (rounded to float16 for the file's float16 inputs)", source.count)


def _rounded(sample: Sample, graph_inputs: list[tuple[str, list[Any], str]]) -> Sample:
    """``sample`` with each float32 tensor that feeds a float16 graph input rounded through float16
    (still float32: torch gets the value the file gets), paired as ``onnx_feeds`` pairs them; a
    sample that does not pair is left for ``onnx_feeds`` to refuse."""
    try:
        pairs = input_pairs(sample, [name for name, _, _ in graph_inputs])
    except InputError:
        return sample
    dtype_of = {name: dt for name, _, dt in graph_inputs}
    swap = {id(t): t.to(torch.float16).to(torch.float32) for name, t in pairs
            if dtype_of.get(name) in HALF_TYPES and isinstance(t, torch.Tensor) and t.dtype == torch.float32}
    args, kwargs = sample
    return tuple(swap.get(id(t), t) for t in args), {k: swap.get(id(t), t) for k, t in kwargs.items()}


def _source(spec: InputSpec, seed: int, zero: bool, graph_inputs: Optional[list[tuple[str, list[Any], str]]],
            example: Any) -> InputSource:
    if spec.kind == "shapes":
        return from_shapes(list(spec.shapes), seed, zero)
    if spec.kind == "memory":
        make, fixed, description = memory.samples(spec.text)
        source = _seeded_source(make, seed, zero, "inputs=", fixed,
                                f"Python inputs: {description}{' (zeros)' if zero else ''}")
        source.count = memory.sample_count(spec.text)
        return source
    if spec.kind == "callable":
        assert spec.callable is not None
        fn = import_callable(spec.callable, "--inputs")

        def call(i: int) -> Any:
            try:
                return fn()
            except Exception as exc:
                raise InputError(f"--inputs {spec.text!r} raised {type(exc).__name__}: {folded(exc)}",
                                 "fix the inputs callable (rerun with --debug for the traceback)") from exc

        return _seeded_source(call, seed, zero, f"--inputs {spec.text!r}", False, f"callable {spec.text}")
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
            # a float16 input is drawn in float32, the PyTorch model's type, and rounded (half_inputs)
            shapes.append((tuple(d if isinstance(d, int) and d > 0 else 1 for d in dims),
                           "float32" if dtype in HALF_TYPES else dtype))
        return from_shapes(shapes, seed, zero, where="the ONNX graph's inputs (no --inputs given)")
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
        raise InputError(f"inputs file {str(path)!r} cannot be read ({type(exc).__name__}: "
                         f"{_short_reason(exc)})",
                         "save a tensor, a tuple or a dict of tensors (.pt), or arrays (.npy/.npz)") from exc


def _short_reason(exc: BaseException) -> str:
    """torch's refusal of a pickle is a page of advice; its one useful line names the global."""
    text = str(exc)
    for line in text.splitlines():
        if "Unsupported global" in line or "Unsupported operand" in line:
            return "weights_only refused it: " + " ".join(line.split())[:200]
    return first_line(exc)[:200]


def flatten(sample: Sample) -> list[torch.Tensor]:
    args, kwargs = sample
    return list(args) + list(kwargs.values())


def input_pairs(sample: Sample, graph_inputs: list[str]) -> list[tuple[str, Any]]:
    """(ONNX input name, tensor) for each graph input: by name when every input is a keyword that
    names one, else in order (the one pairing rule: feeds, float16 rounding)."""
    args, kwargs = sample
    tensors = flatten(sample)
    if kwargs and not args and set(kwargs) == set(graph_inputs):
        return [(name, kwargs[name]) for name in graph_inputs]
    if len(tensors) != len(graph_inputs):
        raise InputError(
            f"the inputs give {len(tensors)} tensor(s) but the ONNX graph takes {len(graph_inputs)} "
            f"({', '.join(graph_inputs)})",
            "give one tensor per ONNX input (extra inputs such as recurrent state must be fed too)")
    return list(zip(graph_inputs, tensors))


def onnx_feeds(sample: Sample, graph_inputs: list[str], input_dtypes: dict[str, str]) -> dict[str, np.ndarray]:
    pairs = input_pairs(sample, graph_inputs)
    feeds = {}
    for name, t in pairs:
        arr = t.detach().cpu()
        if arr.dtype == torch.bfloat16:
            raise InputError(f"input {name!r} is bfloat16, which numpy cannot carry to ONNX Runtime",
                             "give float32 inputs")
        a = arr.numpy()
        want = input_dtypes.get(name)
        if want in HALF_TYPES and a.dtype == np.float32 and np.array_equal(a.astype(want).astype(np.float32), a,
                                                                          equal_nan=True):
            a = a.astype(want)       # a sample rounded for a float16 input (half_inputs): exact
        if want and want != a.dtype.name:
            raise InputError(f"input {name!r} is {a.dtype.name} but the ONNX graph expects {want}",
                             f"give {want} inputs (e.g. --inputs shape:{want}:...)")
        feeds[name] = a
    return feeds


def cat_samples(samples: list[Sample]) -> Sample:
    """The samples concatenated along dim 0 of every input tensor."""
    first_args, first_kwargs = samples[0]
    args = tuple(torch.cat([s[0][k] for s in samples], 0) for k in range(len(first_args)))
    kwargs = {name: torch.cat([s[1][name] for s in samples], 0) for name in first_kwargs}
    return args, kwargs
