"""The initializers' figures are computed in a background thread while capture runs: a result
always carries them, however late the thread finishes, and a failure there is not swallowed."""
from __future__ import annotations

import threading

import pytest

from drifttui.core.prepare import details
from drifttui.core.pipeline import run_once
from drifttui.core.result import Config
from tests.conftest import model_spec

CFG = dict(model=model_spec("scaled"), inputs="shape:float32:2x8", samples=2)


def test_result_waits_for_figures_that_finish_after_capture(monkeypatch):
    real = details._initializer_infos
    release = threading.Event()
    started = threading.Event()

    def late(*args):
        started.set()
        # held until capture is done: the final decide must wait for them, and capture's partial
        # results (after sample 0) must not (a wait here would time out and fail the run)
        if not release.wait(30):
            raise TimeoutError("capture waited for the figures")
        return real(*args)

    monkeypatch.setattr(details, "_initializer_infos", late)
    from drifttui.core import pipeline

    capture = pipeline.capture

    def capture_then_release(*args, **kwargs):
        out = capture(*args, **kwargs)
        assert started.is_set()                 # the figures were started before capture
        release.set()
        return out

    monkeypatch.setattr(pipeline, "capture", capture_then_release)
    result = run_once(Config(**CFG)).result
    inits = [i for L in result.layers for i in L.initializers]
    assert inits and any(i.torch_param for i in inits)
    assert all(i.torch_max_abs_diff == 0.0 for i in inits if i.torch_param and "weight" in i.name)
    assert result.timings["details"] > 0


def test_a_failure_computing_the_figures_reaches_the_caller(monkeypatch):
    def broken(*args):
        raise MemoryError("no room for the figures")

    monkeypatch.setattr(details, "_initializer_infos", broken)
    with pytest.raises(MemoryError, match="no room"):
        run_once(Config(**CFG))
