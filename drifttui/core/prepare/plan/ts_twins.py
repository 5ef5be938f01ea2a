"""Modules that TorchScript names alike: read as the calls of one module.

TorchScript names a scope by the module's own name below the scope that called it.  When the container that
tells two modules apart is never called (transformers' SqueezeBERT runs its layers as ``layer.forward(x)``: the
layer has no scope), the children of every layer are named from the one scope above: ``encoder/attention`` and
``encoder/attention_1``, and, as for a shared layer called twice (ts_callers.py), ``encoder/attention/query``
and ``encoder/attention/query_1``: a suffix on the last segment only.  Resolved as one module's scope (the
first module of that name), every layer's nodes went to one module and the others had none: "fused", "not
exported", a dropped output (a false DRIFT on a clean file).  Such modules are twins: each twin and each module
below it is read as the first twin's module, so the scopes' call suffixes tell their calls apart in call order
and the callers in torch's call tree tell the outer keys, exactly as for one module called several times.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from drifttui.core.prepare.plan.scopes import alike
from drifttui.core.runtime.torch_hooks import Call


def twins(resolved: dict[tuple[str, str], Optional[str]], children: dict[str, list[str]],
          known: set[str], aliases: Optional[dict[str, str]] = None) -> dict[str, str]:
    """Module -> the module the file's scopes name it as (the first of its twins), for every module that has
    twins below a scope the file resolved (``resolved``: scopes.resolve_torchscript's cache)."""
    out: dict[str, str] = {}
    for (cur, seg), found in resolved.items():
        if found is None:
            continue
        for other in alike(cur, seg, children, aliases):
            if other == found:
                continue
            for name in known:
                if name == other or name.startswith(other + "."):
                    first = found + name[len(other):]
                    if first in known:
                        out.setdefault(name, first)
    return out


def as_one(calls: list[Call], names: dict[str, str]) -> list[Call]:
    """``calls`` with each twin's module named as its first twin (the calls themselves unchanged)."""
    if not names:
        return calls
    return [dataclasses.replace(c, module=names[c.module]) if c.module in names else c for c in calls]
