"""Session-scoped runs for the CI-gate tests: each engine run happens once and is shared.

- ``variants``: the tiny classifier (tests/ci/classifier.py) exported once, plus ONNX edits of
  that file: ``stale`` (fc2.bias off by 2e-5: outputs agree, the weights check reports an error),
  ``flip`` (fc2.bias perturbed: drift at fc2, some top-1 predictions flip), ``worse`` (the same
  perturbation x3), ``other`` (fc1.bias perturbed: drift at fc1).
- ``unet_drift`` / ``unet_clean``: ``drifttui check --example unet-resize|unet`` with every report.
"""
from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional

import numpy as np
import pytest

HERE = Path(__file__).parent
MODEL = f"{HERE / 'classifier.py'}:build"
INPUTS = f"{HERE / 'classifier.py'}:inputs"


from tests.conftest import PROGRESS_LINE  # noqa: E402  (drifttui/cli_progress.py, stderr not a terminal)


@dataclass
class CliRun:
    code: int
    out: str
    err: str                # stderr without the progress lines
    files: dict[str, Path]
    progress: str = ""      # the progress lines


@contextlib.contextmanager
def github_actions(value: Optional[str]) -> Iterator[None]:
    old = os.environ.pop("GITHUB_ACTIONS", None)
    if value is not None:
        os.environ["GITHUB_ACTIONS"] = value
    try:
        yield
    finally:
        os.environ.pop("GITHUB_ACTIONS", None)
        if old is not None:
            os.environ["GITHUB_ACTIONS"] = old


def run_cli(argv: list[str], files: Optional[dict[str, Path]] = None, actions: Optional[str] = None) -> CliRun:
    from drifttui.cli import main

    out, err = io.StringIO(), io.StringIO()
    with github_actions(actions), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    rest, progress = split_progress(err.getvalue())
    return CliRun(code, out.getvalue(), rest, files or {}, progress)


def split_progress(err: str) -> tuple[str, str]:
    """stderr as (what is not progress, the progress lines) -- the order ``CliRun`` takes them in."""
    lines = err.splitlines(keepends=True)
    progress = [line for line in lines if PROGRESS_LINE.match(line)]
    return "".join(line for line in lines if not PROGRESS_LINE.match(line)), "".join(progress)


@pytest.fixture(scope="session")
def variants(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    import onnx
    from onnx import numpy_helper

    from drifttui.core.model.export import export_model
    from tests.ci import classifier

    folder = tmp_path_factory.mktemp("ci-onnx")
    model = classifier.build()
    clean = export_model(model, (classifier.inputs(),), {}, "dynamo", folder)
    rng = np.random.default_rng(3)
    shift = rng.normal(0, 1.0, 10).astype(np.float32)
    edits: dict[str, tuple[str, Callable[[np.ndarray], np.ndarray]]] = {
        "stale": ("fc2.bias", lambda b: b + np.float32(2e-5)),
        "flip": ("fc2.bias", lambda b: b + shift),
        "worse": ("fc2.bias", lambda b: b + 3 * shift),
        "other": ("fc1.bias", lambda b: b + rng.normal(0, 0.5, b.shape).astype(np.float32)),
    }
    paths = {"clean": str(clean)}
    for name, (init, edit) in edits.items():
        proto = onnx.load(str(clean))
        t = next(t for t in proto.graph.initializer if t.name == init)
        t.CopyFrom(numpy_helper.from_array(edit(numpy_helper.to_array(t)).astype(np.float32), init))
        path = folder / f"{name}.onnx"
        onnx.save(proto, str(path))
        paths[name] = str(path)
    return paths


def classifier_args(variants: dict[str, str], name: str, *extra: str, command: str = "check") -> list[str]:
    return [command, MODEL, "--onnx", variants[name], "--inputs", INPUTS, "--samples", "3", *extra]


def _example_run(tmp_path_factory: pytest.TempPathFactory, example: str) -> CliRun:
    folder = tmp_path_factory.mktemp(example)
    files = {k: folder / f"report.{k}" for k in ("json", "xml", "md", "gitlab")}
    return run_cli(["check", "--example", example, "--samples", "2", "--json", str(files["json"]),
                    "--junit", str(files["xml"]), "--markdown", str(files["md"]), "--gitlab", str(files["gitlab"])],
                   files)


@pytest.fixture(scope="session")
def unet_drift(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    return _example_run(tmp_path_factory, "unet-resize")


@pytest.fixture(scope="session")
def unet_clean(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    return _example_run(tmp_path_factory, "unet")
