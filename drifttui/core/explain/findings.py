"""The findings of a run, with one meaning everywhere: every drift check's findings, verified at the
drift origin (``causes``: a patch that removes the origin's own error makes a finding verified) and
ranked, verified first; alike ones (one sentence of many names: a float16 file's "stored as float16" per
weight) said once, every member in its evidence (alike.py).  The CLI's gate, ``diagnose``, ``repro``,
``repair``, the Python API and the TUI's step 3 all read this one list.
"""
from __future__ import annotations

import dataclasses

from drifttui.core.explain.alike import collapse
from drifttui.core.explain.causes import Explanation, verify_at_origin
from drifttui.core.explain.checks import run_checks
from drifttui.core.explain.context import Context


def findings(ctx: Context) -> Explanation:
    """The checks' findings verified at the origin (cached in the context: computed once per result)."""
    if "findings" not in ctx.cache:
        explained = verify_at_origin(ctx, run_checks(ctx))
        ctx.cache["findings"] = dataclasses.replace(explained, findings=collapse(ctx, explained.findings))
    return ctx.cache["findings"]
