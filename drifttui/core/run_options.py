"""A run's options checked before any stage runs: each wrong one named as its CLI flag, with the fix
(the Python API takes any object, the TUI's prompts any text)."""
from __future__ import annotations

import math
import numbers
from typing import Any

from drifttui.core.capture.stage import valid_layer_samples
from drifttui.core.result import OPT_LEVELS, Config
from drifttui.errors import InputError

KIND_FIX = "give a number (samples, seed and batch: whole numbers)"


def kind_problem(samples: Any, seed: Any, batch: Any, atol: Any, rtol: Any) -> str:
    """A run option of the wrong type (the Python API takes any object): named, as its CLI flag."""
    whole, real = numbers.Integral, numbers.Real
    for flag, value, kind in (("--samples", samples, whole), ("--seed", seed, whole),
                              ("--batch", batch, whole), ("--atol", atol, real), ("--rtol", rtol, real)):
        if isinstance(value, bool) or not isinstance(value, kind):
            return f"{flag} {value!r:.40} is a {type(value).__name__}, not a {'whole ' if kind is whole else ''}number"
    return ""


def validate(cfg: Config) -> None:
    problem = kind_problem(cfg.samples, cfg.seed, cfg.batch, cfg.atol, cfg.rtol)
    if problem:
        raise InputError(problem, KIND_FIX)
    if cfg.samples < 1:
        raise InputError(f"--samples {cfg.samples} is not a positive number", "use --samples 1 or more")
    if not (math.isfinite(cfg.atol) and math.isfinite(cfg.rtol)) or cfg.atol < 0 or cfg.rtol < 0:
        raise InputError("tolerances must be finite numbers >= 0", "use e.g. --atol 1e-4 --rtol 1e-4")
    if cfg.batch < 1:
        raise InputError(f"--batch {cfg.batch} is not a positive number", "use --batch 1 or more")
    for flag, level in (("--opt-level", cfg.opt_level), ("--output-opt-level", cfg.output_opt_level)):
        if level not in OPT_LEVELS:
            raise InputError(f"unknown {flag} {level!r}", f"use one of {', '.join(OPT_LEVELS)}")
    if not valid_layer_samples(str(cfg.layer_samples)):
        raise InputError(f"--layer-samples {cfg.layer_samples!r} is not known", "use auto, all or a number >= 1")
