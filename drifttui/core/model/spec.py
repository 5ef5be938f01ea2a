"""Parse the user's MODEL and --inputs specs into typed descriptions (no loading here)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from drifttui.core.base.dtypes import SPEC_ALIASES
from drifttui.errors import InputError

_DTYPES = SPEC_ALIASES


@dataclass(frozen=True)
class CallableSpec:
    """``path/to/file.py:fn`` or ``package.module:fn``."""

    target: str          # file path or dotted module
    attr: str
    is_file: bool

    def __str__(self) -> str:
        return f"{self.target}:{self.attr}"


@dataclass(frozen=True)
class ModelSpec:
    kind: str            # "callable" | "torchscript" | "exported_program" | "example" | "memory"
    callable: Optional[CallableSpec] = None
    path: Optional[Path] = None
    example: Optional[str] = None
    text: str = ""


@dataclass(frozen=True)
class ShapeInput:
    dtype: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class InputSpec:
    kind: str            # "callable" | "file" | "shapes" | "default" | "memory"
    callable: Optional[CallableSpec] = None
    path: Optional[Path] = None
    shapes: tuple[ShapeInput, ...] = ()
    text: str = ""


def parse_callable(text: str, what: str) -> CallableSpec:
    if ":" not in text:
        raise InputError(
            f"{what} {text!r} is not a callable spec",
            "write it as path/to/file.py:function or package.module:function",
        )
    target, attr = text.rsplit(":", 1)
    if not attr.isidentifier():
        raise InputError(f"{what} {text!r}: {attr!r} is not a Python name",
                         "write it as path/to/file.py:function or package.module:function")
    is_file = target.endswith(".py") or "/" in target or "\\" in target
    if not is_file and not all(part.isidentifier() for part in target.split(".")):
        raise InputError(f"{what} {text!r}: {target!r} is neither a .py file nor a module name",
                         "write it as path/to/file.py:function or package.module:function")
    return CallableSpec(target, attr, is_file)


def parse_model_spec(text: str) -> ModelSpec:
    if text.startswith("example:"):
        return ModelSpec("example", example=text.split(":", 1)[1], text=text)
    if text.startswith("python-object:"):     # an object registered by the Python API (core/model/memory.py)
        return ModelSpec("memory", text=text)
    lower = text.lower()
    if lower.endswith(".pt2"):
        return ModelSpec("exported_program", path=Path(text), text=text)
    if lower.endswith((".pt", ".pth", ".ts", ".torchscript", ".jit")):
        return ModelSpec("torchscript", path=Path(text), text=text)
    if lower.endswith(".onnx"):
        raise InputError(f"MODEL {text!r} is an ONNX file",
                         "pass the PyTorch model as MODEL and the ONNX file with --onnx")
    return ModelSpec("callable", callable=parse_callable(text, "MODEL"), text=text)


_SHAPE_RE = re.compile(r"^(?:(?P<dtype>[a-z0-9]+):)?(?P<dims>\d+(?:x\d+)*)$")


def parse_shapes(body: str, text: str) -> tuple[ShapeInput, ...]:
    shapes = []
    for part in body.split(";"):
        part = part.strip()
        if not part:
            continue
        m = _SHAPE_RE.match(part)
        if not m:
            raise InputError(f"--inputs {text!r}: cannot read {part!r} as a shape",
                             "write shapes like shape:1x3x224x224 or shape:int64:1x16;1x16")
        dtype = m.group("dtype") or "float32"
        if dtype not in _DTYPES:
            raise InputError(f"--inputs {text!r}: unknown dtype {dtype!r}",
                             f"use one of {', '.join(sorted(_DTYPES))}")
        dims = tuple(int(d) for d in m.group("dims").split("x"))
        shapes.append(ShapeInput(dtype, dims))
    if not shapes:
        raise InputError(f"--inputs {text!r} names no shape", "write e.g. shape:1x3x224x224")
    return tuple(shapes)


def parse_input_spec(text: Optional[str]) -> InputSpec:
    if not text:
        return InputSpec("default")
    if text.startswith("python-object:"):     # samples registered by the Python API (core/model/memory.py)
        return InputSpec("memory", text=text)
    if text.startswith("shape:"):
        return InputSpec("shapes", shapes=parse_shapes(text[len("shape:"):], text), text=text)
    lower = text.lower()
    if lower.endswith((".npz", ".npy", ".pt", ".pth")):
        return InputSpec("file", path=Path(text), text=text)
    return InputSpec("callable", callable=parse_callable(text, "--inputs"), text=text)
