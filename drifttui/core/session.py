"""Compatibility: ``Session(config).run()`` is one uncached run of the staged pipeline.

New code calls ``drifttui.core.pipeline.run_once`` (or ``Pipeline().run`` for cached reruns)
directly; this wrapper keeps the older call sites and tests working.  After ``run()`` the
stages are available as ``prepared`` and ``capture`` (what ``steps.diagnose`` needs).
"""
from __future__ import annotations

from typing import Optional

from drifttui.core.capture import Capture
from drifttui.core.pipeline import run_once
from drifttui.core.prepare import Prepared
from drifttui.core.progress import CancelToken, ProgressFn, no_progress
from drifttui.core.result import Config, Result


class Session:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.prepared: Optional[Prepared] = None
        self.capture: Optional[Capture] = None

    def run(self, progress: ProgressFn = no_progress, cancel: Optional[CancelToken] = None) -> Result:
        run = run_once(self.config, progress, cancel)
        self.prepared, self.capture = run.prepared, run.capture
        return run.result
