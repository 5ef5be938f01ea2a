"""The real-architecture suite: timm and transformers models, seeded, nothing downloaded.

Needs the ``models`` extra (``make install-models``); skipped without it.  The default run is a
small fast subset; ``make test-models`` (``-m models``) runs the long tail.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ZOO = HERE / "zoo.py"
sys.path.insert(0, str(HERE))


def spec(fn: str) -> str:
    return f"{ZOO}:{fn}"


@pytest.fixture(scope="session")
def arch_exports(tmp_path_factory):
    """(model fn, exporter) -> exported ONNX path, once per session."""
    cache: dict[tuple[str, str], Path] = {}

    def get(fn: str, inputs: str, exporter: str) -> Path:
        key = (fn, exporter)
        if key not in cache:
            from drifttui.core.model.export import export_model
            from drifttui.core.model.inputs import build_source
            from drifttui.core.model.spec import parse_input_spec, parse_model_spec
            from drifttui.core.model.loading import load_torch_model

            model = load_torch_model(parse_model_spec(spec(fn)))
            args, kwargs = build_source(parse_input_spec(spec(inputs)), 0, False, None, None).sample(0)
            d = tmp_path_factory.mktemp(f"{fn}-{exporter}")
            cache[key] = export_model(model, args, kwargs, exporter, d)
        return cache[key]
    return get


@pytest.fixture(scope="session")
def arch_run():
    from drifttui.core.result import Config
    from drifttui.core.pipeline import run_once

    def run(fn: str, inputs: str, onnx: Any = None, **kw) -> Any:
        t = time.perf_counter()
        r = run_once(Config(model=spec(fn), inputs=spec(inputs), onnx=str(onnx) if onnx else None,
                           samples=kw.pop("samples", 2), **kw)).result
        r.timings["wall"] = time.perf_counter() - t
        return r
    return run


def pytest_collection_modifyitems(config, items):
    for lib in ("timm", "transformers"):
        try:
            __import__("zoo")       # transformers first, then the torchvision shim (see zoo.py)
            __import__(lib)
        except ImportError:      # only a missing library skips; any other import failure is a bug
            skip = pytest.mark.skip(reason=f"{lib} is not installed (pip install -e '.[models]', see Makefile)")
            for item in items:
                if "archs" in str(item.fspath) and lib in item.keywords:
                    item.add_marker(skip)
