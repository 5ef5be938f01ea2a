"""Session-scoped fixtures: the tiny model is exported once; drifted variants are ONNX edits of that file."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from drifttui.core.result import Config
from drifttui.core.explain.steps import STEP_NUMBERS
from drifttui.core.pipeline import Pipeline
from drifttui.core.onnx.edit import surgery
HERE = Path(__file__).parent
MODEL = f"{HERE / 'tiny.py'}:build"
INPUTS = f"{HERE / 'tiny.py'}:inputs"
MODEL2 = f"{HERE / 'tiny.py'}:build2"
INPUTS2 = f"{HERE / 'tiny.py'}:inputs2"
SAMPLES = 3


def _init(proto: Any, name: str) -> Any:
    return next(t for t in proto.graph.initializer if t.name == name)


def _set_init(proto: Any, name: str, fn: Callable[[np.ndarray], np.ndarray]) -> None:
    t = _init(proto, name)
    t.CopyFrom(numpy_helper.from_array(fn(numpy_helper.to_array(t).astype(np.float32)).astype(np.float32), name))


def _bf16(w: np.ndarray) -> np.ndarray:
    bits = w.view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)


def _avgpool_flip(proto: Any) -> None:
    node = next(n for n in proto.graph.node if n.op_type == "AveragePool")
    for a in node.attribute:
        if a.name == "count_include_pad":
            a.i = 1 - a.i
            return
    node.attribute.append(helper.make_attribute("count_include_pad", 0))


def _conv_weight_of(proto: Any, module: str) -> str:
    node = surgery._find(proto, "Conv", module)
    return node.input[1]


VARIANTS: dict[str, Callable[[Any], None]] = {
    "clean": lambda p: None,
    "eps": lambda p: surgery.set_layernorm_epsilon("norm.ln", 1e-2)(p, "dynamo"),
    "resize": lambda p: surgery.set_resize_mode("up", "asymmetric")(p, "dynamo"),
    "bf16": lambda p: _set_init(p, "conv2.weight", _bf16),
    "avgpool": _avgpool_flip,
    "gamma": lambda p: _set_init(p, next(n for n in p.graph.node if n.op_type == "Mul").input[1], lambda g: g + np.linspace(-0.3, 0.3, g.size).reshape(g.shape)),
    # a small early error (conv1 folded weight, 3e-5 relative) and a big later one (LayerNorm eps)
    "twodrift": lambda p: (_set_init(p, "conv1.weight", lambda w: w * (1 + 3e-5)),
                           surgery.set_layernorm_epsilon("norm.ln", 1e-2)(p, "dynamo")),
}


def _pad_mode(proto: Any) -> None:
    node = next(n for n in proto.graph.node if n.op_type == "Pad")
    for a in node.attribute:
        if a.name == "mode":
            a.s = b"edge"
            return
    node.attribute.append(helper.make_attribute("mode", "edge"))


def _rms_eps(proto: Any) -> None:
    """Change the scalar added before Sqrt in the decomposed norm."""
    sqrt = next(n for n in proto.graph.node if n.op_type == "Sqrt")
    add = next(n for n in proto.graph.node if sqrt.input[0] in n.output)
    inits = {t.name for t in proto.graph.initializer}
    name = next(v for v in add.input if v in inits)
    _set_init(proto, name, lambda e: np.full_like(e, 1e-1))


VARIANTS2: dict[str, Callable[[Any], None]] = {
    "clean2": lambda p: None,
    "padmode": _pad_mode,
    "rmseps": _rms_eps,
}


@pytest.fixture(scope="session")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import torch

    from drifttui.core.model.export import export_model
    from tests.steps.tiny import build, build2

    d = tmp_path_factory.mktemp("tiny")
    return {"1": export_model(build(), (torch.randn(1, 3, 16, 16),), {}, "dynamo", d, "tiny.onnx"),
            "2": export_model(build2(), (torch.randn(1, 3, 15, 15),), {}, "dynamo", d, "tiny2.onnx")}


@pytest.fixture(scope="session")
def variant_path(exported: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], str]:
    cache: dict[str, str] = {}

    def get(name: str) -> str:
        if name not in cache:
            second = name in VARIANTS2
            proto = onnx.load(str(exported["2" if second else "1"]))
            (VARIANTS2 if second else VARIANTS)[name](proto)
            path = tmp_path_factory.mktemp(name) / f"{name}.onnx"
            onnx.save(proto, str(path))
            cache[name] = str(path)
        return cache[name]
    return get


@pytest.fixture(scope="session")
def run(variant_path: Callable[[str], str]) -> Callable[[str], tuple[Pipeline, Any]]:
    """variant name -> (engine, result) after the check (cached per test session)."""
    cache: dict[str, tuple[Pipeline, Any]] = {}

    def get(name: str) -> tuple[Pipeline, Any]:
        if name not in cache:
            model, inputs = (MODEL2, INPUTS2) if name in VARIANTS2 else (MODEL, INPUTS)
            engine = Pipeline()
            cache[name] = (engine, engine.run(Config(model=model, onnx=variant_path(name), inputs=inputs,
                                                     samples=SAMPLES)).result)
        return cache[name]
    return get


@pytest.fixture(scope="session")
def diagnosed(run: Callable[[str], tuple[Pipeline, Any]]) -> Callable[[str], Any]:
    """variant name -> result with all six steps and all findings."""
    cache: dict[str, Any] = {}

    def get(name: str) -> Any:
        if name not in cache:
            engine, r = run(name)
            cache[name] = engine.explain(r, STEP_NUMBERS).result
        return cache[name]
    return get
