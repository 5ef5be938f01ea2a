"""The engine interface the front ends use. Imports neither torch nor onnxruntime.

The TUI talks only to an :class:`Engine`; tests hand it a fake one with frozen
results.  :class:`LocalEngine` is the real one: it imports the torch/ORT engine
lazily, on the first run, inside the worker thread.
"""
from __future__ import annotations

from typing import Any, Optional, Protocol, Sequence

from drifttui.core.result import Channels, Config, Result, Step
from drifttui.core.base.progress import CancelToken, Progress, ProgressFn, no_progress

__all__ = ["CancelToken", "Config", "Engine", "LocalEngine", "Progress", "ProgressFn", "no_progress"]


class Engine(Protocol):
    def run(self, config: Config, progress: ProgressFn = no_progress,
            cancel: Optional[CancelToken] = None) -> Result: ...

    def step(self, number: int, result: Result, progress: ProgressFn = no_progress,
             cancel: Optional[CancelToken] = None) -> Step: ...

    def drill(self, layer: int, result: Result, progress: ProgressFn = no_progress,
              cancel: Optional[CancelToken] = None, every_sample: bool = False) -> Channels: ...

    # optional (the TUI says "this engine cannot …" without them): the compositions, as plain dicts
    # (the JSON that `drifttui bisect --json` / `drifttui tolerance --json` write)
    # def bisect(self, config, stages, progress, cancel) -> dict
    # def tolerance(self, config, progress, cancel) -> dict


class LocalEngine:
    """Runs torch and ONNX Runtime in this process, reusing every stage a rerun does not change.

    A tolerance change re-decides the last capture (no capture, no export); a determinism,
    zero-input, ORT-level, samples or seed change captures again on the same export; only a new
    model, ONNX file, exporter, inputs, provider, --batch or --max-memory prepares again
    (``drifttui.core.pipeline``).  A config that names a served model (``--triton-repo``,
    ``--triton-url``) or a batch sweep runs the served comparison (``core/compose/served.py``) on the
    same Pipeline.  Not thread-safe: one run at a time (the TUI's exclusive worker).
    """

    def __init__(self) -> None:
        self._pipeline: Optional[Any] = None

    def run(self, config: Config, progress: ProgressFn = no_progress,
            cancel: Optional[CancelToken] = None) -> Result:
        from drifttui.core.compose import served     # lazy: torch, in the worker thread

        if served.wanted(config):
            return served.run(self._engine(), config, progress, cancel)
        return self._engine().run(config, progress=progress, cancel=cancel).result

    def step(self, number: int, result: Result, progress: ProgressFn = no_progress,
             cancel: Optional[CancelToken] = None) -> Step:
        """Step ``number`` on the run's own Prepared (a loaded report prepares from its config once)."""
        return self._engine().step(number, result, progress=progress, cancel=cancel)

    def drill(self, layer: int, result: Result, progress: ProgressFn = no_progress,
              cancel: Optional[CancelToken] = None, every_sample: bool = False) -> Channels:
        """Layer ``layer``'s per-channel errors: from the capture this engine holds, else one
        per-layer pass on its worst sample (the TUI's drill-down, Enter on a layer);
        ``every_sample``: over every sample of the run (the drill-down's ``a``)."""
        return self._engine().drill(layer, result, progress=progress, cancel=cancel, every_sample=every_sample)

    def bisect(self, config: Config, stages: Sequence[str], progress: ProgressFn = no_progress,
               cancel: Optional[CancelToken] = None) -> dict[str, Any]:
        """The stage bisect (``core/compose/stage_bisect.py``) as ``drifttui bisect --json`` writes it."""
        import dataclasses

        from drifttui.core.compose.stage_bisect import bisect_stages

        cfg = dataclasses.replace(config, onnx=None, reference_onnx=None, triton_repo=None, triton_url=None,
                                  triton_model=None, triton_version=None, batch_sweep=())
        return bisect_stages(cfg, list(stages), progress, cancel).to_dict()

    def tolerance(self, config: Config, progress: ProgressFn = no_progress,
                  cancel: Optional[CancelToken] = None) -> dict[str, Any]:
        """The noise floor and the advised tolerance (``core/compose/noise_floor.py``,
        ``tolerance_advice.py``) as ``drifttui tolerance --json`` writes it.  On a Pipeline of its own
        (one prepare more): the TUI runs it in the background while reruns and steps use this
        engine's, and a Pipeline is not thread-safe."""
        import dataclasses

        from drifttui.core.compose.noise_floor import measure
        from drifttui.core.compose.tolerance_advice import advise, report

        cfg = dataclasses.replace(config, triton_repo=None, triton_url=None, triton_model=None, triton_version=None,
                                  batch_sweep=())      # the file's floor, at the served settings it ran with
        nf = measure(cfg, progress, cancel)
        return report(nf, advise(nf))

    def _engine(self) -> Any:
        # imported here, in the worker thread: `import drifttui.api` (the TUI) stays free of torch
        from drifttui.core.pipeline import Pipeline

        if self._pipeline is None:
            self._pipeline = Pipeline()
        return self._pipeline
