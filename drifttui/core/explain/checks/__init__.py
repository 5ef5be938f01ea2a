"""Silent-drift checks: one module per drift class, each ``check(ctx) -> list[Finding]``.

``Finding.check`` carries the drift class: interpolation, padding, normalization,
dynamic-axes, dtype, fusion, custom-module (and weights), op-compat, versions.
Static checks read only the graph, the model and the result; ``fusion`` reruns ONNX Runtime.
"""
from __future__ import annotations

from typing import Callable

from drifttui.core.explain.checks import (custom_module, dtype, dynamic_axes, fusion, interpolation, normalization,
                                  opcompat, padding, randomness, versions)
from drifttui.core.result import SEVERITY_ORDER, Finding
from drifttui.core.explain.context import Context
from drifttui.errors import Cancelled

CHECKS: list[tuple[str, Callable[[Context], list[Finding]], bool]] = [
    ("interpolation", interpolation.check, True),
    ("padding", padding.check, True),
    ("normalization", normalization.check, True),
    ("dynamic-axes", dynamic_axes.check, True),
    ("dtype", dtype.check, True),
    ("custom-module", custom_module.check, True),
    ("custom-module", randomness.check, True),
    ("op-compat", opcompat.check, True),
    ("versions", versions.check, True),
    ("fusion", fusion.check, False),
]


def run_checks(ctx: Context, static_only: bool = False, only: tuple[str, ...] = ()) -> list[Finding]:
    """All findings, errors first; a check that crashes becomes an info finding, never an abort."""
    key = f"findings:{static_only}:{','.join(only)}"
    if key in ctx.cache:
        return ctx.cache[key]
    findings: list[Finding] = []
    for name, fn, static in CHECKS:
        if (static_only and not static) or (only and name not in only):
            continue
        ctx.cancel.check()
        try:
            findings.extend(fn(ctx))
        except Cancelled:
            raise
        except Exception as exc:  # noqa: BLE001 - one broken check must not hide the others
            findings.append(Finding(name, "info", None, [], f"the {name} check could not run: "
                                    f"{type(exc).__name__}: {str(exc)[:200]}", {}, "rerun with --debug"))
    origin = ctx.result.drift_origin
    at_origin = origin.module if origin else None
    findings.sort(key=lambda f: (SEVERITY_ORDER.get(f.severity, 3), f.module != at_origin))
    ctx.cache[key] = findings
    return findings
