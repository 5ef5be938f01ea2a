"""Results recorded from the real engine, and a fake engine that replays them.

``scripts/record_fixtures.py`` runs the real engine (torch + ONNX Runtime) on built-in
examples and writes JSON reports into ``tests/tui/fixtures/``.  The TUI tests, snapshots and
benchmarks read them with :func:`load_fixture`; :class:`ReplayEngine` hands them back to
the app with controllable timing (a gate, a delay) and injected failures, so that the UI's
timing and failure paths are tested on data the engine really produces.  No torch here.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import Optional

from drifttui.core.base.progress import CancelToken, Progress, ProgressFn, no_progress
from drifttui.core.result import Channels, Config, Layer, Result, Step, Tolerance
from drifttui.core.result.codec import from_json

FIXTURES = Path(__file__).resolve().parent / "fixtures"
DEMO = "resnet18-bf16"      # the demo's result: drift at layer3.1.bn1, six steps, findings


#: the engine's fingerprint when the fixtures were recorded (scripts/record_fixtures.py writes it)
ENGINE_STAMP = FIXTURES / "ENGINE"
_ROOT = FIXTURES.parents[2]
#: what a recorded result depends on: the engine, the examples it ran, the report format
ENGINE_SOURCES = ("drifttui/core", "drifttui/report/json_report.py")      # core/ holds the examples too


def engine_fingerprint(root: Path = _ROOT) -> str:
    """sha256 over the engine's source files (path and content): a change to any of them may change
    what the engine records, so the fixtures must be recorded again."""
    digest = hashlib.sha256()
    files: list[Path] = []
    for rel in ENGINE_SOURCES:
        p = root / rel
        files.extend(sorted(p.rglob("*.py")) if p.is_dir() else [p])
    for f in files:
        digest.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return digest.hexdigest()


@lru_cache(maxsize=None)
def _read(path: str) -> Result:
    with open(path, encoding="utf-8") as fh:
        return Result.from_dict(json.load(fh))


def load_fixture(name: str = DEMO, partial: bool = False, folder: Optional[Path] = None) -> Result:
    """The recorded result ``name`` (``partial``: the one reported after the first sample)."""
    path = (folder or FIXTURES) / f"{name}{'.partial' if partial else ''}.json"
    if not path.is_file():
        raise FileNotFoundError(f"no recorded fixture {path}: run scripts/record_fixtures.py")
    return _read(str(path))


def load_every_sample(name: str = DEMO) -> Optional[tuple[int, Channels]]:
    """(layer, Channels) of ``name``'s origin over every sample, when recorded."""
    path = FIXTURES / f"{name}.every-sample.json"
    if not path.is_file():
        return None
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    return data["layer"], from_json(Channels, data["channels"])


def tiled(result: Result, copies: int) -> Result:
    """``result`` with its root's subtree repeated ``copies`` times (a big model for perf tests).

    Layer indices, parents and the origin are renumbered; the copies sit under the first root."""
    body = [l for l in result.layers if l.parent is not None]
    root = [l for l in result.layers if l.parent is None]
    old_to_new = {l.index: i for i, l in enumerate(root)}
    layers: list[Layer] = list(root)
    origin_index = None
    for copy in range(copies):
        mapping = dict(old_to_new)
        for layer in body:
            mapping[layer.index] = len(layers)
            module = layer.module if copy == 0 else f"{layer.module}_{copy}"
            layers.append(dataclasses.replace(layer, index=mapping[layer.index], module=module,
                                              parent=mapping.get(layer.parent, 0)))
            if copy == 0 and result.drift_origin is not None and layer.index == result.drift_origin.layer:
                origin_index = mapping[layer.index]
    origin = result.drift_origin
    if origin is not None and origin_index is not None:
        origin = dataclasses.replace(origin, layer=origin_index)
    return result.with_(layers=layers, drift_origin=origin, steps=[], findings=[])


class ReplayEngine:
    """Replays recorded results.  ``block=True``: runs wait on ``gate`` (honouring cancel);
    ``delay``: seconds each run takes (checked for cancel); ``fail``/``step_fail``: raised;
    ``step_gate``: steps wait on it."""

    def __init__(self, name: str = DEMO, block: bool = False, delay: float = 0.0,
                 fail: Optional[BaseException] = None, step_fail: Optional[BaseException] = None, step_block: bool = False) -> None:
        self.name = name
        self.recorded = load_fixture(name)
        try:
            self.partial: Optional[Result] = load_fixture(name, partial=True)
        except FileNotFoundError:
            self.partial = None
        self.gate, self.step_gate = threading.Event(), threading.Event()
        if not block:
            self.gate.set()
        if not step_block:
            self.step_gate.set()
        self.delay = delay
        self.fail, self.step_fail = fail, step_fail
        self.configs: list[Config] = []
        self.tokens: list[Optional[CancelToken]] = []
        self.steps_run: list[int] = []
        self.started = threading.Event()
        self.drill_gate = threading.Event()       # drills wait on it (set: at once)
        self.drill_gate.set()
        self.drills: list[tuple[int, Optional[CancelToken]]] = []

    def result_for(self, config: Config) -> Result:
        """The recorded result as the engine would label it for ``config`` (no steps: the app
        runs those).  Numbers are the recorded ones: this engine replays, it does not compute."""
        return self.recorded.with_(config=config, tolerance=Tolerance(config.atol, config.rtol),
                                   samples=config.samples, steps=[])

    def _wait(self, gate: threading.Event, cancel: Optional[CancelToken]) -> None:
        deadline = time.monotonic() + 20
        end = time.monotonic() + self.delay
        while not gate.wait(0.005) or time.monotonic() < end:
            if cancel is not None:
                cancel.check()
            if time.monotonic() > deadline:
                raise TimeoutError("replay engine gate never opened")

    def run(self, config: Config, progress: ProgressFn = no_progress,
            cancel: Optional[CancelToken] = None) -> Result:
        self.configs.append(config)
        self.tokens.append(cancel)
        self.started.set()
        progress(Progress("samples", 0, config.samples, "starting"))
        if self.partial is not None:
            progress(Progress("samples", 1, config.samples, partial=self.partial.with_(config=config)))
        self._wait(self.gate, cancel)
        if cancel is not None:
            cancel.check()
        if self.fail is not None:
            raise self.fail
        result = self.result_for(config)
        progress(Progress("samples", config.samples, config.samples, partial=result))
        return result

    def step(self, number: int, result: Result, progress: ProgressFn = no_progress,
             cancel: Optional[CancelToken] = None) -> Step:
        self.steps_run.append(number)
        progress(Progress("step", 1, 3, f"step {number}: replaying"))
        self._wait(self.step_gate, cancel)
        if self.step_fail is not None:
            raise self.step_fail
        for step in self.recorded.steps:
            if step.step == number:
                return step
        raise LookupError(f"step {number} was not recorded")

    def drill(self, layer: int, result: Result, progress: ProgressFn = no_progress,
              cancel: Optional[CancelToken] = None, every_sample: bool = False) -> Channels:
        """The recorded per-channel errors of ``layer`` (as the capture an engine holds);
        ``every_sample``: the recorded every-sample pass (``<name>.every-sample.json``)."""
        self.drills.append((layer, cancel))
        if every_sample:
            recorded = load_every_sample(self.name)
            if recorded is None or recorded[0] != layer:
                raise LookupError(f"no recorded every-sample pass for layer #{layer}")
            channels = recorded[1]
            for n in range(len(channels.samples)):
                progress(Progress("drill", n, len(channels.samples), eta=0.1 * (len(channels.samples) - n)))
            self._wait(self.drill_gate, cancel)
            return channels
        self._wait(self.drill_gate, cancel)
        channels = self.recorded.layers[layer].channels if 0 <= layer < len(self.recorded.layers) else None
        if channels is None:
            raise LookupError(f"no recorded per-channel errors for layer #{layer}")
        return channels


def load_compose(name: str, folder: Optional[Path] = None) -> dict:
    """A recorded composition (``compose-bisect``, ``compose-tolerance``): the dict the real engine's
    ``bisect`` / ``tolerance`` returned (scripts/record_served_fixtures.py)."""
    path = (folder or FIXTURES) / f"{name}.json"
    if not path.is_file():
        raise FileNotFoundError(f"no recorded fixture {path}: run scripts/record_fixtures.py")
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


class ComposeReplay(ReplayEngine):
    """ReplayEngine with the compositions: ``bisect`` and ``tolerance`` replay the recorded dicts;
    ``compose_gate`` holds them (cancel honoured), ``compose_fail`` is raised."""

    def __init__(self, name: str = DEMO, **kw) -> None:
        super().__init__(name, **kw)
        self.compose_gate = threading.Event()
        self.compose_gate.set()
        self.compose_fail: Optional[BaseException] = None
        self.compose_calls: list[tuple[str, Config, Optional[CancelToken]]] = []

    def _compose(self, kind: str, config: Config, progress: ProgressFn, cancel: Optional[CancelToken]) -> dict:
        self.compose_calls.append((kind, config, cancel))
        progress(Progress("stage" if kind == "bisect" else "noise", 0, 2, f"{kind}: replaying"))
        progress(Progress("samples", 3, 8, "sample 3/8"))      # the check inside it, as the engine says it
        self._wait(self.compose_gate, cancel)
        if self.compose_fail is not None:
            raise self.compose_fail
        return load_compose(f"compose-{kind}")

    def bisect(self, config: Config, stages, progress: ProgressFn = no_progress,
               cancel: Optional[CancelToken] = None) -> dict:
        return self._compose("bisect", config, progress, cancel)

    def tolerance(self, config: Config, progress: ProgressFn = no_progress,
                  cancel: Optional[CancelToken] = None) -> dict:
        return self._compose("tolerance", config, progress, cancel)
