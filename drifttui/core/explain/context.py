"""What the debugging steps, the drift checks and the causes share: the context of one finished run.

A :class:`Context` wraps the run's :class:`~drifttui.core.prepare.stage.Prepared` (model, graph
index, module calls, mapping plan), the input source of its config and the :class:`Result`.
It caches what they share (the exported ONNX file, reruns, torch outputs, the ORT
optimisation-level sweep, the verified findings) so that running a step twice, or the checks
after the steps, is cheap.  Reruns capture through ``recapture`` -- the engine's own capture
cache (``pipeline.Pipeline``), never one of their own -- on the same Prepared (no export), then
re-decide.  The engine owns the contexts (``Pipeline.context``); nothing here is module-global.
"""
from __future__ import annotations

import dataclasses
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import torch

from drifttui.core.capture.stage import Capture
from drifttui.core.result.codec import clean  # noqa: F401  (the findings' evidence, JSON-friendly)
from drifttui.core.decide.stage import decide
from drifttui.core.onnx.io import save_model
from drifttui.core.prepare.stage import PREPARE_FIELDS, Prepared
from drifttui.core.base.progress import CancelToken, Progress, ProgressFn, no_progress
from drifttui.core.result import Config, Layer, Result
from drifttui.core.runtime import sessions
from drifttui.core.runtime.torch_hooks import Hooks, Sink, hookable, run_model, to_numpy



class _CloneSink(Sink):
    """Clones the outputs of the wanted calls at hook time."""

    def __init__(self, wanted: set[int]) -> None:
        self.wanted = wanted
        self.out: dict[int, list[torch.Tensor]] = {}

    def on_output(self, call: int, tensors: list[torch.Tensor]) -> None:
        if call in self.wanted:
            self.out[call] = [t.detach().clone() for t in tensors]


Recapture = Callable[[Config, CancelToken], Capture]   # the engine's cached capture
Recheck = Callable[[Any, CancelToken], Result]          # a patched copy of the file, checked end to end
WORST_REACH = 16        # a step's reruns reach the origin's worst sample up to this index (the first samples)


class Context:
    def __init__(self, prepared: Prepared, result: Result, recapture: Recapture, progress: ProgressFn = no_progress,
                 cancel: Optional[CancelToken] = None, recheck: Optional[Recheck] = None) -> None:
        self.prepared = prepared
        self.result = result
        self.cfg: Config = result.config
        self.model = prepared.model
        self.index = prepared.index
        self.calls = prepared.calls
        self.plan = prepared.plan
        self.source = prepared.source(self.cfg.seed, self.cfg.zero_input)
        self.progress = progress
        self.cancel = cancel or CancelToken()
        self.cache: dict[str, Any] = {}
        self._recapture = recapture
        self._recheck = recheck
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
            weakref.finalize(self, shutil.rmtree, str(self._dir), True)   # removed with the context
        return self._dir

    def onnx_path(self) -> str:
        """The graph under test as a file, so reruns skip the export."""
        if self.cfg.onnx:
            return self.cfg.onnx
        if self.index.path is not None:      # the export (its weights are external: never saved again)
            return str(self.index.path)
        if self._onnx is None:
            self._onnx = save_model(self.index.model, self.workdir / "model.onnx")
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
        """The result with ``changes`` to the config's capture or tolerance fields: captured (or
        found in the engine's capture cache) on the same Prepared, then decided."""
        moved = [f for f in changes if f in PREPARE_FIELDS]
        if moved:
            raise ValueError(f"a rerun keeps the prepared model: {', '.join(moved)} cannot change")
        key = tuple(sorted(changes.items()))
        if key not in self._reruns:
            self.cancel.check()
            cfg = dataclasses.replace(self.cfg, **changes)
            self._reruns[key] = decide(self.prepared, self._recapture(cfg, self.cancel), cfg)
        return self._reruns[key]

    def recheck(self, model: Any) -> Result:
        """``model`` (a patched copy of the file under test) checked end to end with this config."""
        if self._recheck is None:
            raise ValueError("this context cannot check a patched copy (no engine to run it)")
        self.cancel.check()
        return self._recheck(model, self.cancel)

    # -- samples, torch and ORT ----------------------------------------------------------
    def n_samples(self, cap: int = 3) -> int:
        """The samples a step's reruns capture (the first ones): ``cap``, or up to the origin's worst sample
        when it lies past them and within WORST_REACH, so that a drift one sample shows is not rerun on
        samples that miss it (a rerun "without drift" would contradict the run)."""
        if self.source.fixed:
            return 1
        n = max(1, min(cap, self.cfg.samples))
        worst = getattr(self.result.drift_origin, "worst_sample", None)
        if worst is not None and n <= worst < WORST_REACH:
            n = min(self.cfg.samples, worst + 1)
        return n

    def sample(self, i: int) -> Any:
        return self.source.sample(0 if self.source.fixed else i)

    def feeds(self, sample: Any) -> dict[str, np.ndarray]:
        return self.prepared.feeds(sample)

    def torch_outputs(self, i: int) -> list[np.ndarray]:
        if i not in self._torch_out:
            self._torch_out[i] = [to_numpy(t) for t in run_model(self.model, *self.sample(i))]
        return self._torch_out[i]

    def new_hooks(self) -> Hooks:
        """Hooks on the model as the run's own (routed globally where prepare found that the model computes
        otherwise under per-module hooks), with the traced calls."""
        routed = self.prepared.hooks is not None and self.prepared.hooks.routed
        hooks = Hooks(self.model, routed=routed)
        hooks.calls = self.calls
        return hooks

    def torch_call_outputs(self, i: int, calls: set[int]) -> dict[int, list[np.ndarray]]:
        """Hook-time clones of the outputs of ``calls`` on sample ``i``."""
        ok, _ = hookable(self.model)
        if not ok:
            return {}
        hooks = self.new_hooks()
        sink = _CloneSink(calls)
        args, kwargs = self.sample(i)
        with hooks.installed():
            hooks.begin(sink)
            run_model(self.model, args, kwargs)
        return {c: [to_numpy(t) for t in ts] for c, ts in sink.out.items()}

    def ort_session(self, opt_level: str = "disable", extra: tuple[str, ...] = (),
                    deterministic: Optional[bool] = None, optimized: Optional[Path] = None) -> Any:
        det = self.cfg.deterministic if deterministic is None else deterministic
        return sessions.make_session(self.index.model, opt_level, det, self.cfg.provider, self.workdir,
                                     f"s_{opt_level}.onnx", optimized, extra_outputs=extra,
                                     data_dir=self.index.data_dir, types=self.index.elem_types)
