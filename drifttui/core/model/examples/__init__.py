"""Built-in examples: clean models and drifted variants, each with the origin it should produce.

``drifttui examples`` lists them (from ``catalogue``, without importing torch);
``drifttui check --example NAME`` runs one.  A drifted variant injects one real-world cause: an
initializer stored at the wrong precision, a normalisation epsilon changed in the graph, a
Resize coordinate mode that differs from the PyTorch call, or a tensor attribute lost in a
state_dict round trip.  ``EXAMPLES``, ``Example`` and ``get_example`` (the runnable models,
``builtin``) import torch on first use.
"""
from __future__ import annotations

from typing import Any

from drifttui.core.model.examples.catalogue import CATALOGUE, ExampleInfo

_RUNNABLE = ("EXAMPLES", "Example", "get_example", "BN_CHANNEL", "export_bn_channel_drift")


def __getattr__(name: str) -> Any:
    if name in _RUNNABLE:
        from drifttui.core.model.examples import builtin   # lazy: `drifttui examples` lists them without importing torch

        return getattr(builtin, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CATALOGUE", "ExampleInfo", *_RUNNABLE]
