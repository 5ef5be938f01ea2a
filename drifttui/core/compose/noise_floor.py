"""What the numbers do when nothing is wrong: the model's noise floor.

``measure(config)`` captures the same samples under the settings a deployment may vary -- ORT level
disable and all (each for the per-layer pass and the output pass), one thread (deterministic torch,
ORT single-threaded) and many -- on one Prepared (one export: every variant is a capture, cached by
the Pipeline), and runs the output session twice on sample 0 (is ORT repeatable?).  Per layer and
per output the floor is the worst, over the variants, of max |d|, max |d| / scale and 1 - cosine.

A drift is not noise: a layer the run decides is a drift (its own error fails the tolerance) or
inherits one, and the outputs of a run with a drift origin, are left out of the floor and named
(``NoiseFloor.drifts``).  Before, the floor of a drifting file was its drift, and the advice (4x)
hid it: ``check --example resnet18-bf16 --tolerance auto`` passed (fourth pass).  The statuses are
``core.decide``'s at the tolerance of ``config``; the figures kept are the capture's.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from drifttui.core.pipeline import Pipeline
from drifttui.core.base.progress import CancelToken, Progress, ProgressFn, no_progress
from drifttui.core.result import DRIFT, INHERITED, Config, Result, display_name
from drifttui.core.runtime.passes import ort_passes

# (name, per-layer level, output level, deterministic)
VARIANTS = (("disable, 1 thread", "disable", "disable", True),
            ("all, 1 thread", "all", "all", True),
            ("disable, many threads", "disable", "all", False),
            ("all, many threads", "all", "all", False))


@dataclass
class Floor:
    name: str                    # a layer's module or an output's name
    kind: str                    # "layer" | "output"
    max_abs: float = 0.0
    max_rel: float = 0.0
    one_minus_cos: float = 0.0
    scale: float = 0.0           # max |torch| of the value
    worst_variant: str = ""

    def add(self, variant: str, max_abs: float, max_rel: float, cos: float) -> None:
        if max_abs > self.max_abs or not self.worst_variant:
            self.worst_variant = variant
        self.max_abs = max(self.max_abs, max_abs)
        self.max_rel = max(self.max_rel, max_rel)
        self.one_minus_cos = max(self.one_minus_cos, 1.0 - cos if np.isfinite(cos) else 0.0)
        if max_rel > 0:
            self.scale = max(self.scale, max_abs / max_rel)


@dataclass
class NoiseFloor:
    config: Config
    layers: list[Floor] = field(default_factory=list)
    outputs: list[Floor] = field(default_factory=list)
    repeat_max_abs: float = 0.0  # ORT run twice on sample 0, many threads
    variants: list[str] = field(default_factory=list)
    results: dict[str, Result] = field(default_factory=dict)
    # left out as drift, not noise: each drifting layer's module and worst relative error, in order
    drifts: dict[str, float] = field(default_factory=dict)
    inherited: set[str] = field(default_factory=set)     # layers downstream of a drift, left out too
    outputs_left_out: bool = False                       # a run had a drift origin: its outputs inherit it


def measure(config: Config, progress: ProgressFn = no_progress, cancel: Optional[CancelToken] = None,
            pipeline: Optional[Pipeline] = None) -> NoiseFloor:
    pipe = pipeline or Pipeline()
    nf = NoiseFloor(config)
    layers: dict[str, Floor] = {}
    outputs: dict[str, Floor] = {}
    run = None
    for k, (name, level, out_level, det) in enumerate(VARIANTS):
        progress(Progress("noise", k, len(VARIANTS), f"noise floor: {name}"))
        cfg = dataclasses.replace(config, opt_level=level, output_opt_level=out_level, deterministic=det)
        run = pipe.run(cfg, progress, cancel)
        nf.variants.append(name)
        nf.results[name] = run.result
        _add_layers(nf, layers, run.result, name)
        if run.result.drift_origin is not None:
            nf.outputs_left_out = True
            continue
        for o in run.result.outputs:
            m = o.metrics
            outputs.setdefault(o.name, Floor(o.name, "output")).add(name, m.max_abs.worst, m.max_rel.worst,
                                                                   m.cosine.worst)
    nf.layers = [f for key, f in layers.items() if key not in nf.drifts and key not in nf.inherited]
    nf.outputs = [] if nf.outputs_left_out else list(outputs.values())
    if run is not None:
        nf.repeat_max_abs = _repeat(run, config)
    return nf


def _add_layers(nf: NoiseFloor, layers: dict[str, Floor], result: Result, variant: str) -> None:
    """The variant's layer figures into the floor; a drifting layer, or one that inherits a drift, is
    named as such instead (at any variant: a drift is left out of every variant's floor)."""
    for L in result.layers:
        if L.metrics is None:
            continue
        m = L.metrics
        if L.status == DRIFT:
            nf.drifts[L.module] = max(nf.drifts.get(L.module, 0.0), m.max_rel.worst)
            continue
        if L.status == INHERITED:
            nf.inherited.add(L.module)
        layers.setdefault(L.module, Floor(display_name(L.module), "layer")).add(
            variant, m.max_abs.worst, m.max_rel.worst, m.cosine.worst)


def _repeat(run: Any, config: Config) -> float:
    """max |d| between two ORT runs of the output session on sample 0 (many threads, level all)."""
    pr = run.prepared
    path = config.onnx or (str(pr.index.path) if pr.index.path is not None else None)
    if path is None:
        return 0.0
    sess = ort_passes.session(path, "all", deterministic=False)
    names = {i.name for i in sess.get_inputs()}
    feeds = {k: v for k, v in pr.feeds(pr.source(config.seed, False).sample(0)).items() if k in names}
    a, b = sess.run(None, feeds), sess.run(None, feeds)
    return max((float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64)))) if np.size(x) else 0.0
                for x, y in zip(a, b)), default=0.0)
