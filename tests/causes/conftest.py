"""Session-scoped exports of the drifted models (tests/causes/drifted.py) and their ONNX edits.

Each exporter exports ``Multi`` once; a variant is a copy of that file with one part edited.
``run(name, exporter)`` compares, runs the static checks and verifies them at the origin
(drifttui.core.explain.causes.explain): what ``drifttui diagnose`` does minus the six steps.
"""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from drifttui.core.onnx.edit import surgery
HERE = Path(__file__).parent
SPEC = f"{HERE / 'drifted.py'}"
SAMPLES = 2


def explained_run(cfg: Any) -> tuple:
    """(engine, cfg, run, explained result, explanation) of ``cfg`` on a fresh Pipeline: what the drift
    suites cache per form."""
    from drifttui.core.pipeline import Pipeline

    engine = Pipeline()
    run = engine.run(cfg)
    ex = engine.explain(run.result)
    return engine, cfg, run, ex.result, ex.explanation


def explained_small(tmp_dir: Any, spec: str, model: Callable, rows: Callable, dynamo: bool = False,
                    samples: int = 2) -> tuple:
    """``explained_run`` of a test file that is its own spec (``spec``, its path): ``model()`` exported on
    ``rows()`` by the TorchScript exporter (``dynamo``: the dynamo exporter) into ``tmp_dir``."""
    import torch

    from drifttui.core.result import Config

    path = Path(tmp_dir) / f"{Path(spec).stem}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model(), (rows(),), str(path), dynamo=dynamo)
    return explained_run(Config(model=f"{spec}:model", onnx=str(path), inputs=f"{spec}:rows", samples=samples))


def _attr(op: str, module: str, name: str, value: Any) -> Callable[[Any], None]:
    def edit(proto: Any) -> None:
        node = surgery._find(proto, op, module)
        keep = [a for a in node.attribute if a.name != name]
        del node.attribute[:]
        node.attribute.extend(keep + [helper.make_attribute(name, value)])
    return edit


def _pool_flip(proto: Any) -> None:
    node = surgery._find(proto, "AveragePool", "pool")
    cur = next((a.i for a in node.attribute if a.name == "count_include_pad"), 0)
    _attr("AveragePool", "pool", "count_include_pad", 1 - cur)(proto)


def _static_input(proto: Any, op: str, module: str, pos: int) -> Any:
    node = surgery._find(proto, op, module)
    name = node.input[pos]
    for t in proto.graph.initializer:
        if t.name == name:
            return t
    for n in proto.graph.node:          # TorchScript: a Constant node
        if n.op_type == "Constant" and name in n.output:
            return n.attribute[0].t
    raise RuntimeError(f"no static input {pos} of {op} in {module}")


def _edit_tensor(op: str, module: str, pos: int, fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[Any], None]:
    def edit(proto: Any) -> None:
        t = _static_input(proto, op, module, pos)
        arr = numpy_helper.to_array(t)
        t.CopyFrom(numpy_helper.from_array(fn(arr).astype(arr.dtype), t.name))
    return edit


def _gamma(proto: Any) -> None:
    node = surgery._find(proto, "Mul", "scale")
    pos = next(k for k, v in enumerate(node.input) if any(t.name == v for t in proto.graph.initializer)
               or any(n.op_type == "Constant" and v in n.output for n in proto.graph.node))
    _edit_tensor("Mul", "scale", pos, lambda g: g + np.linspace(-0.3, 0.3, g.size).reshape(g.shape))(proto)


def _weights(proto: Any) -> None:
    op = next(o for o in ("Gemm", "MatMul") if any(n.op_type == o and surgery._in_scope(n, "proj")
                                                for n in proto.graph.node))
    _edit_tensor(op, "proj", 1, lambda w: w + 0.05 * np.sign(w))(proto)


def _half(proto: Any) -> None:
    """A float16 round trip after the head Conv, attributed to the head (scope metadata copied)."""
    node = surgery._find(proto, "Conv", "head")
    out = node.output[0]
    node.output[0] = out + "__f32"
    down = helper.make_node("Cast", [out + "__f32"], [out + "__f16"], to=10, name=node.name + "_cast16")
    up = helper.make_node("Cast", [out + "__f16"], [out], to=1, name=node.name + "_cast32")
    for n in (down, up):
        n.metadata_props.extend(node.metadata_props)
    nodes = list(proto.graph.node)
    at = nodes.index(node) + 1
    nodes[at:at] = [down, up]
    del proto.graph.node[:]
    proto.graph.node.extend(nodes)


def _int_div(proto: Any) -> None:
    """The FloorDiv nodes replaced by one Div: integer division that truncates towards zero."""
    own = [n for n in proto.graph.node if surgery._in_scope(n, "fd")]
    produced = {v for n in own for v in n.output}
    consumed_outside = {v for n in proto.graph.node if n not in own for v in n.input} | \
        {o.name for o in proto.graph.output}
    out = next(v for v in produced if v in consumed_outside)
    x = next(v for n in own for v in n.input if v not in produced
             and not any(t.name == v for t in proto.graph.initializer)
             and not any(m.op_type == "Constant" and v in m.output for m in proto.graph.node))
    three = numpy_helper.from_array(np.array(3, dtype=np.int64), "fd_three")
    div = helper.make_node("Div", [x, "fd_three"], [out], name="fd_div")
    div.metadata_props.extend(own[-1].metadata_props)
    if not own[-1].metadata_props:
        div.name = "/fd/Div_trunc"
    nodes = list(proto.graph.node)
    at = nodes.index(own[0])
    rest = [n for n in nodes if n not in own]
    rest.insert(at, div)
    del proto.graph.node[:]
    proto.graph.node.extend(rest)
    proto.graph.initializer.append(three)


def _clip_max(proto: Any) -> None:
    """The Clip of ``bound`` with another upper bound (1.5 for Hardtanh's 0.75): a stale bound."""
    node = surgery._find(proto, "Clip", "bound")
    t = _static_input(proto, "Clip", "bound", 2)
    arr = numpy_helper.to_array(t)
    new = numpy_helper.from_array(np.full(arr.shape, 1.5, arr.dtype), node.name + "_stale_max")
    proto.graph.initializer.append(new)
    node.input[2] = new.name


MULTI_VARIANTS: dict[str, tuple[str, Callable[[Any], None]]] = {
    # name: (expected class, edit)
    "clean": ("", lambda p: None),
    "resize": ("interpolation", lambda p: surgery.set_resize_mode("up", "asymmetric")(p, "")),
    "pool": ("padding", _pool_flip),
    "eps": ("normalization", lambda p: surgery.set_layernorm_epsilon("norm", 1e-2)(p, "")),
    "leaky": ("op-compat", _attr("LeakyRelu", "act", "alpha", 0.01)),
    "gelu": ("op-compat", _attr("Gelu", "gelu", "approximate", "none")),
    "gamma": ("custom-module", _gamma),
    "weights": ("weights", _weights),
    "half": ("dtype", _half),
}


@pytest.fixture(scope="session")
def exports(tmp_path_factory):
    """(model, exporter[, variant]) -> path of the exported (and edited) ONNX file, made once."""
    import torch

    from drifttui.core.model.export import export_model
    from tests.causes import drifted

    root = tmp_path_factory.mktemp("causes")
    cache: dict[tuple, Path] = {}

    def get(model: str, exporter: str, variant: str = "clean") -> Path:
        key = (model, exporter, variant)
        if key in cache:
            return cache[key]
        base_key = (model, exporter, "clean")
        if base_key not in cache:
            d = root / f"{model}-{exporter}"
            d.mkdir()
            torch.manual_seed(0)
            m = getattr(drifted, model)()
            args = getattr(drifted, f"{model}_inputs" if model != "seq" else "seq_inputs_8")()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if model == "seq":            # exported at T=8 with a dynamic T, run at T=16
                    path = d / "model.onnx"
                    torch.onnx.export(m, args, str(path), dynamo=False, input_names=["x"],
                                      dynamic_axes={"x": {1: "T"}})
                elif exporter == "torchscript10":
                    path = d / "model.onnx"
                    torch.onnx.export(m, args, str(path), dynamo=False, opset_version=10)
                else:
                    path = export_model(m, args, {}, exporter, d)
            cache[base_key] = path
        if variant == "clean":
            return cache[base_key]
        proto = onnx.load(str(cache[base_key]))
        {"multi": lambda: MULTI_VARIANTS[variant][1](proto), "intdiv": lambda: _int_div(proto),
         "clip": lambda: _clip_max(proto)}[model]()
        path = root / f"{model}-{exporter}-{variant}.onnx"
        onnx.save(proto, str(path))
        cache[key] = path
        return path

    return get


@pytest.fixture(scope="session")
def run(exports):
    """(model, exporter, variant) -> (engine, result, explanation), cached per session."""
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config

    cache: dict[tuple, Any] = {}

    def go(model: str, exporter: str, variant: str = "clean") -> Any:
        key = (model, exporter, variant)
        if key not in cache:
            inputs = {"multi": "multi_inputs", "seq": "seq_inputs_16", "intdiv": "intdiv_inputs",
                      "clip": "clip_inputs"}[model]
            cfg = Config(model=f"{SPEC}:{model}", onnx=str(exports(model, exporter, variant)),
                         inputs=f"{SPEC}:{inputs}", samples=SAMPLES)
            engine = Pipeline()
            explained = engine.explain(engine.run(cfg).result)
            cache[key] = (engine, explained.result, explained.explanation)
        return cache[key]

    return go
