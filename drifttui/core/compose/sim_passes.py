"""Pass bisect for the simplifiers, where their APIs let a pass be skipped.

onnxsim: ``simplify(model, skipped_optimizers=[...], skip_constant_folding=...)``, its passes
listed by its own C++ core (``onnxsim --list-default-optimizers``) plus constant folding.
onnxslim: ``slim(model, skip_fusion_patterns=[...], skip_optimizations=[...])``, its fusion
patterns (``DEFAULT_FUSION_PATTERNS``) and optimizations (``OptimizationSettings``).
``reproduce`` runs a tool on the stage before the drifting one and, when the tool's file drifts
from torch while the input file does not, bisects its passes: each run simplifies the file again
with some passes skipped and runs the result (the cost is the tool's, not ORT's).  A drift that no
skippable pass removes is said as such: the tool's own core (shape inference, its checker) did it.
"""
from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import Any, Callable, Optional

from drifttui.core.runtime.passes.bisect_core import bisect
from drifttui.core.runtime.passes.pass_bisect import Probe

CONSTANT_FOLDING = "constant_folding"


def _onnxsim_passes(tool: Any) -> list[str]:
    core = importlib.import_module("onnxsim.onnx_simplifier").C
    return [CONSTANT_FOLDING] + [p for p in core._list_optimizers() if p != "nop"]


def _onnxsim_run(tool: Any, src: str, skipped: frozenset, dst: Path) -> Path:
    import onnx

    model, _ = tool.simplify(src, skipped_optimizers=sorted(skipped - {CONSTANT_FOLDING}),
                             skip_constant_folding=CONSTANT_FOLDING in skipped)
    onnx.save(model, str(dst))
    return dst


def _onnxslim_passes(tool: Any) -> list[str]:
    from onnxslim.argparser import OptimizationSettings
    from onnxslim.core.pattern.registry import DEFAULT_FUSION_PATTERNS

    return [f"pattern:{p}" for p in DEFAULT_FUSION_PATTERNS] + [f"optimization:{o}" for o in OptimizationSettings.keys()]


def _onnxslim_run(tool: Any, src: str, skipped: frozenset, dst: Path) -> Path:
    import onnx

    patterns = sorted(s.split(":", 1)[1] for s in skipped if s.startswith("pattern:"))
    opts = sorted(s.split(":", 1)[1] for s in skipped if s.startswith("optimization:"))
    kwargs: dict[str, Any] = {}
    if patterns:
        kwargs["skip_fusion_patterns"] = patterns
    if opts:
        kwargs["skip_optimizations"] = opts
    onnx.save(tool.slim(onnx.load(src), **kwargs), str(dst))
    return dst


TOOLS: dict[str, tuple[Callable[[Any], list[str]], Callable[..., Path]]] = {
    "onnxsim": (_onnxsim_passes, _onnxsim_run),
    "onnxslim": (_onnxslim_passes, _onnxslim_run),
}


def reproduce(src: str, probe: Probe, work: Path, only: str = "") -> Optional[dict[str, Any]]:
    """The first installed simplifier (or ``only``) whose output from ``src`` drifts, and the pass
    that does it."""
    for name in ([only] if only else TOOLS):
        try:
            tool = importlib.import_module(name)
        except ImportError:
            continue
        out = bisect_tool(name, tool, src, probe, work)
        if out is not None:
            return out
    return None


def bisect_tool(name: str, tool: Any, src: str, probe: Probe, work: Path) -> Optional[dict[str, Any]]:
    """Bisect ``name``'s passes on ``src`` (None when its file does not drift)."""
    list_passes, run_tool = TOOLS[name]
    runs = [0]
    broke: list[str] = []

    def fails(skipped: frozenset) -> bool:
        runs[0] += 1
        try:
            path = run_tool(tool, src, frozenset(skipped), work / f"{name}_{runs[0]}.onnx")
        except Exception as exc:        # the tool breaks with these passes skipped: no answer, so
            broke.append(f"{type(exc).__name__}")   # the drift counts as still there
            if not skipped:
                raise
            return True
        sub = dataclasses.replace(probe, payload=str(path), seen={}, runs=0)
        return sub.measure("disable")[0]

    try:
        if not fails(frozenset()):
            return None
        candidates = list_passes(tool)
        found = bisect(fails, candidates)
    except Exception as exc:            # the tool itself failing on the file is an answer too
        return {"tool": name, "culprit": None, "verified": False, "runs": runs[0],
                "why": f"{name} failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"}
    culprit = " + ".join(found.culprits) if found.verified else None
    why = "" if culprit else (f"skipping any of {name}'s {len(candidates)} skippable passes does not remove the drift: "
                              "its core (shape inference, constant handling) does it and cannot be isolated"
                              + (f"; {name} itself failed on {len(broke)} of the skip sets tried" if broke else ""))
    return {"tool": name, "culprit": culprit, "verified": found.verified, "runs": runs[0], "candidates": len(candidates),
            "setting": _setting(name, found.culprits) if culprit else "", "why": why}


def _setting(name: str, culprits: list[str]) -> str:
    if name == "onnxsim":
        skipped = [c for c in culprits if c != CONSTANT_FOLDING]
        args = [f"skipped_optimizers={skipped!r}"] if skipped else []
        if CONSTANT_FOLDING in culprits:
            args.append("skip_constant_folding=True")
        return f"onnxsim.simplify(model, {', '.join(args)})"
    pats = [c.split(':', 1)[1] for c in culprits if c.startswith("pattern:")]
    opts = [c.split(':', 1)[1] for c in culprits if c.startswith("optimization:")]
    args = ([f"skip_fusion_patterns={pats!r}"] if pats else []) + ([f"skip_optimizations={opts!r}"] if opts else [])
    return f"onnxslim.slim(model, {', '.join(args)})"
