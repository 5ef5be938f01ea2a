"""Which ONNX Runtime level the layers are compared at, when the one asked for cannot name the origin.

The per-layer pass runs at ``Config.opt_level`` (``disable`` by default: every node as the file writes it), the
output pass at ``output_opt_level`` (``all``: what a deployment runs).  When the outputs fail at the deployed level
while every layer agrees at the per-layer level, the drift is made by ONNX Runtime's graph optimisations (a pass
that drops a float16 rounding Cast pair, a fusion that computes otherwise): comparing the layers again at the
deployed level names the module whose nodes the optimiser changed.  An int8 file is left as it is: its deployed
level runs ONNX Runtime's fused integer kernels, whose results depend on the processor (the precision story and
its note say so)."""
from __future__ import annotations

import dataclasses
from typing import Optional

from drifttui.core.result import DRIFT, UNATTRIBUTED, Config, Result


def relocalised(result: Result, cfg: Config) -> Optional[Config]:
    """The config that compares the layers at the deployed level, or None when the result needs no second pass."""
    if cfg.opt_level == cfg.output_opt_level or result.drift_origin is not None:
        return None
    if not any(o.fails for o in result.outputs) or not result.layers:
        return None
    if any(layer.status in (DRIFT, UNATTRIBUTED) for layer in result.layers):
        return None         # a layer's error at the per-layer level: the drift is not the optimiser's alone
    if result.precision is not None and result.precision.kernels:
        return None         # the int8 kernels' line: set by decide/precision.py for a file that computes int8
    return dataclasses.replace(cfg, opt_level=cfg.output_opt_level)


def note(asked: Config) -> str:
    return (f"every layer agrees at ONNX Runtime level {asked.opt_level} while the outputs drift at level "
            f"{asked.output_opt_level}: the layers were compared again at level {asked.output_opt_level}, where "
            "ONNX Runtime's graph optimisations run (step 3 of `drifttui diagnose` names the pass)")
