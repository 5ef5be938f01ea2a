"""Sample 0's values, asked by the mapping while it pairs values by content (plan/absorbed*, the input pairing):
torch's outputs or inputs of given calls (a hooked forward) and ONNX Runtime's values of given ONNX values
(optimisations off)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from drifttui.core.onnx.graph import GraphIndex
from drifttui.core.runtime import sessions
from drifttui.core.runtime.guards import safe_forward
from drifttui.core.runtime.torch_hooks import Hooks, TensorStore


def torch_outputs(hooks: Hooks, model: Any, sample0: Any) -> Callable[[list[int]], dict[int, Any]]:
    """Torch's first output of the given calls on sample 0 (a hooked forward), by call."""
    def run(wanted: list[int]) -> dict[int, Any]:
        store = TensorStore({ci: [0] for ci in wanted}, {})
        with hooks.installed():
            hooks.begin(store)
            safe_forward(model, sample0)
            hooks.begin(None)
        return {ci: store.out[(ci, 0)].float().numpy() for ci in wanted if (ci, 0) in store.out}
    return run


def torch_inputs(hooks: Hooks, model: Any, sample0: Any) -> Callable[[list[tuple[int, int]]], dict]:
    """Torch's given call inputs on sample 0 (a hooked forward, once per set asked), by (call, position)."""
    seen: dict[tuple, dict[tuple[int, int], Any]] = {}

    def run(wanted: list[tuple[int, int]]) -> dict[tuple[int, int], Any]:
        if tuple(wanted) in seen:
            return seen[tuple(wanted)]
        want: dict[int, list[int]] = {}
        for ci, pos in wanted:
            want.setdefault(ci, []).append(pos)
        store = TensorStore({}, want)
        with hooks.installed():
            hooks.begin(store)
            safe_forward(model, sample0)
            hooks.begin(None)
        seen[tuple(wanted)] = {k: store.inp[k].float().numpy() for k in wanted if k in store.inp}
        return seen[tuple(wanted)]
    return run


def onnx_values(provider: str, feeds0: dict, workdir: Path) -> Callable[[GraphIndex, list[str]], dict]:
    """ONNX Runtime's values of the given values on sample 0 (optimisations off)."""
    def resolve(ix: GraphIndex, values: list[str]) -> dict:
        sess = sessions.make_session(ix.model, "disable", False, provider, workdir, "pairing.onnx",
                                     extra_outputs=values, data_dir=ix.data_dir, prepack=False, types=ix.elem_types)
        with sessions.on_sample("sample 0"):
            return sessions.run(sess, dict(zip(ix.graph_inputs, feeds0.values())), values)
    return resolve
