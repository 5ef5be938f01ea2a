"""Shared state for the debugging steps and the drift checks.

A :class:`Context` wraps a finished :class:`~drifttui.core.session.Session` (model, graph
index, module calls, mapping plan, input source) and the :class:`Result` it produced.  It
caches what steps share (the exported ONNX file, reruns, torch outputs, the ORT
optimisation-level sweep) so that running a step twice, or the checks after the steps, is
cheap.  ``context_for(result)`` rebuilds a session from ``result.config`` when the caller
(the TUI) has only the result.
"""
from __future__ import annotations

import atexit
import dataclasses
import shutil
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch

from drifttui.core.progress import CancelToken, Progress, ProgressFn, no_progress
from drifttui.core import capture_ort
from drifttui.core.capture_torch import Sink, run_model, to_numpy
from drifttui.core.inputs import onnx_feeds
from drifttui.core.result import Config, Layer, Result

_CONTEXTS: "OrderedDict[Config, Context]" = OrderedDict()
_MAX_CONTEXTS = 3


def clean(obj: Any) -> Any:
    """Make evidence JSON-friendly: numpy scalars to Python, tuples to lists, round floats."""
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [clean(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return float(f"{f:.4g}") if f == f and f not in (float("inf"), float("-inf")) else f
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return clean(obj.tolist())
    return obj


class _CloneSink(Sink):
    """Clones the outputs of the wanted calls at hook time."""

    def __init__(self, wanted: set[int]) -> None:
        self.wanted = wanted
        self.out: dict[int, list[torch.Tensor]] = {}

    def on_output(self, call: int, tensors: list[torch.Tensor]) -> None:
        if call in self.wanted:
            self.out[call] = [t.detach().clone() for t in tensors]


class Context:
    def __init__(self, session: Any, result: Result, progress: ProgressFn = no_progress,
                 cancel: Optional[CancelToken] = None) -> None:
        self.session = session
        self.result = result
        self.cfg: Config = result.config
        self.model = session.model
        self.index = session.index
        self.calls = session.calls
        self.plan = session.plan
        self.source = session.source
        self.progress = progress
        self.cancel = cancel or CancelToken()
        self.cache: dict[str, Any] = {}
        self._reruns: dict[tuple, Result] = {}
        self._torch_out: dict[int, list[np.ndarray]] = {}
        self._dir: Optional[Path] = None
        self._onnx: Optional[Path] = None

    # -- basics ------------------------------------------------------------------------
    @property
    def origin_layer(self) -> Optional[Layer]:
        o = self.result.drift_origin
        if o is None or o.layer >= len(self.result.layers):
            return None
        return self.result.layers[o.layer]

    @property
    def workdir(self) -> Path:
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="drifttui-steps-"))
            atexit.register(shutil.rmtree, str(self._dir), True)
        return self._dir

    def onnx_path(self) -> str:
        """The graph under test as a file, so reruns skip the export."""
        if self.cfg.onnx:
            return self.cfg.onnx
        if self._onnx is None:
            import onnx

            path = self.workdir / "model.onnx"
            if self.index.model.ByteSize() < 1_800_000_000:
                onnx.save(self.index.model, str(path))
            else:
                onnx.save(self.index.model, str(path), save_as_external_data=True, location="model.onnx.data")
            self._onnx = path
        return str(self._onnx)

    def modules(self) -> dict[str, torch.nn.Module]:
        if not isinstance(self.model, torch.nn.Module):
            return {}
        return dict(self.model.named_modules())

    def module_calls(self) -> "list[tuple[Any, torch.nn.Module]]":
        """(call, module) for every recorded call whose module can be looked up."""
        mods = self.modules()
        return [(c, mods[c.module]) for c in self.calls if c.module in mods]

    def say(self, message: str, done: int = 0, total: int = 0) -> None:
        self.cancel.check()
        self.progress(Progress("step", done, total, message))

    def calls_of(self, module: str) -> list[int]:
        return [c.index for c in self.calls if c.module == module]

    def node_module(self, ni: int) -> Optional[str]:
        ci = self.plan.node_call[ni] if self.plan and ni < len(self.plan.node_call) else None
        return self.calls[ci].module if ci is not None else None

    def node_by_name(self, name: str) -> Optional[int]:
        for n in self.index.nodes:
            if n.name == name:
                return n.index
        return None

    # -- reruns ------------------------------------------------------------------------
    def rerun(self, **changes: Any) -> Result:
        """Run the session again with ``changes`` to the config (reusing the exported file)."""
        from drifttui.core.session import Session

        key = tuple(sorted(changes.items()))
        if key not in self._reruns:
            self.cancel.check()
            cfg = dataclasses.replace(self.cfg, onnx=self.onnx_path(), **changes)
            self._reruns[key] = Session(cfg).run(cancel=self.cancel)
        return self._reruns[key]

    # -- samples, torch and ORT ----------------------------------------------------------
    def n_samples(self, cap: int = 3) -> int:
        return 1 if self.source.fixed else max(1, min(cap, self.cfg.samples))

    def sample(self, i: int) -> Any:
        return self.source.sample(0 if self.source.fixed else i)

    def feeds(self, sample: Any) -> dict[str, np.ndarray]:
        dtypes = {}
        for vi in self.index.model.graph.input:
            if vi.name in self.index.graph_inputs:
                from drifttui.core.graph import elem_type_name

                dtypes[vi.name] = elem_type_name(vi.type.tensor_type.elem_type)
        return onnx_feeds(sample, self.index.graph_inputs, dtypes)

    def torch_outputs(self, i: int) -> list[np.ndarray]:
        if i not in self._torch_out:
            self._torch_out[i] = [to_numpy(t) for t in run_model(self.model, *self.sample(i))]
        return self._torch_out[i]

    def torch_call_outputs(self, i: int, calls: set[int]) -> dict[int, list[np.ndarray]]:
        """Hook-time clones of the outputs of ``calls`` on sample ``i``."""
        from drifttui.core.capture_torch import Hooks, hookable

        ok, _ = hookable(self.model)
        if not ok:
            return {}
        hooks = Hooks(self.model)
        hooks.calls = self.calls
        sink = _CloneSink(calls)
        args, kwargs = self.sample(i)
        with hooks.installed():
            hooks.begin(sink)
            run_model(self.model, args, kwargs)
        return {c: [to_numpy(t) for t in ts] for c, ts in sink.out.items()}

    def ort_session(self, opt_level: str = "disable", extra: tuple[str, ...] = (),
                    deterministic: Optional[bool] = None, optimized: Optional[Path] = None) -> Any:
        det = self.cfg.deterministic if deterministic is None else deterministic
        return capture_ort.make_session(self.index.model, opt_level, det, self.cfg.provider, self.workdir,
                                        f"s_{opt_level}.onnx", optimized, extra_outputs=extra)


def context_for(result: Result, session: Any = None, progress: ProgressFn = no_progress,
                cancel: Optional[CancelToken] = None) -> Context:
    """The cached context for ``result.config``; builds a one-sample session when needed."""
    cfg = result.config
    ctx = _CONTEXTS.get(cfg)
    if ctx is not None and (session is None or ctx.session is session):
        if ctx.result is not result and ctx.result.drift_origin != result.drift_origin:
            ctx.cache.clear()          # origin-dependent analyses (sweep, findings) are stale
        ctx.result = result
        ctx.progress = progress
        ctx.cancel = cancel or CancelToken()
        _CONTEXTS.move_to_end(cfg)
        return ctx
    if session is None or getattr(session, "index", None) is None:
        from drifttui.core.session import Session

        progress(Progress("step", message="rebuilding the session (export, trace, map)"))
        session = Session(dataclasses.replace(cfg, samples=1))
        session.run(cancel=cancel)
    ctx = Context(session, result, progress, cancel)
    _CONTEXTS[cfg] = ctx
    while len(_CONTEXTS) > _MAX_CONTEXTS:
        _CONTEXTS.popitem(last=False)
    return ctx


def forget_contexts() -> None:
    _CONTEXTS.clear()
