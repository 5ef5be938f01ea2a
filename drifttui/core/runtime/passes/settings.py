"""The setting that avoids an ONNX Runtime pass, in the forms a deployment takes it."""
from __future__ import annotations

from typing import Sequence

ORT_ENUM = {"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
            "all": "ORT_ENABLE_ALL"}
# Triton's onnxruntime backend: optimization { graph { level: N } }, -1 basic, 1 basic + extended,
# 2 every optimization disabled; no level given: all (its README, "Model Config Options")
TRITON_LEVEL = {"disable": 2, "basic": -1, "extended": 1}


def session_level(level: str) -> str:
    return f"sess_options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.{ORT_ENUM[level]}"


def session_disabled(level: str, disabled: Sequence[str]) -> str:
    names = ", ".join(f'"{n}"' for n in disabled)
    return (f"{session_level(level)}\nonnxruntime.InferenceSession(path, sess_options, "
            f"disabled_optimizers=[{names}])")


def triton_level(level: str) -> str:
    if level not in TRITON_LEVEL:
        return "# Triton: leave optimization { graph { ... } } out (its default is every optimization)"
    return f"optimization {{ graph {{ level: {TRITON_LEVEL[level]} }} }}"


def triton_disabled(disabled: Sequence[str]) -> str:
    """Triton's config cannot switch off one transformer: serve a file optimised offline without it."""
    names = ", ".join(f'"{n}"' for n in disabled)
    return ("# Triton cannot disable one transformer: save the file optimised offline without it\n"
            "#   so.optimized_model_filepath = 'model.opt.onnx'; "
            f"onnxruntime.InferenceSession(path, so, disabled_optimizers=[{names}])\n"
            f"# and serve model.opt.onnx with {triton_level('disable')}")


def advice(safe_level: str, level: str, disabled: Sequence[str]) -> dict[str, str]:
    """Every form: the level that agrees with torch, and the level the user runs with the pass off."""
    out = {}
    if safe_level:
        out["session_level"] = session_level(safe_level)
        out["triton_level"] = triton_level(safe_level)
    if disabled:
        out["session_disabled"] = session_disabled(level, disabled)
        out["triton_disabled"] = triton_disabled(disabled)
    return out


def sentence(safe_level: str, level: str, disabled: Sequence[str]) -> str:
    """The same settings as one line (a step's suggestion is one line, as every string a front end shows):
    ONNX Runtime's first, then Triton's."""
    names = ", ".join(f'"{n}"' for n in disabled)
    ort, triton = [], []
    if safe_level:
        ort.append(f"{session_level(safe_level)} (the level that agrees with torch)")
        triton.append(triton_level(safe_level).lstrip("# "))
    if disabled:
        ort.append(f"keep GraphOptimizationLevel.{ORT_ENUM[level]} and pass disabled_optimizers=[{names}] to "
                   "onnxruntime.InferenceSession")
        triton.append(f"serve a copy ONNX Runtime optimised offline without it (SessionOptions."
                      f"optimized_model_filepath with disabled_optimizers=[{names}]) with {triton_level('disable')}")
    return "; ".join(x for x in (f"ONNX Runtime: {' or '.join(ort)}" if ort else "",
                                  f"Triton: {' or '.join(triton)}" if triton else "") if x)
