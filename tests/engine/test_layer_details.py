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


def test_the_figures_wait_while_the_run_holds_the_cores():
    """While an ONNX Runtime run or a torch forward is marked foreground, the background scan
    does not go on; it goes on once they are done, or at once when someone waits for it."""
    from drifttui.core.runtime import cores

    urgent = threading.Event()
    passed = threading.Event()

    def background():
        cores.wait_idle(urgent)
        passed.set()

    with cores.foreground():
        t = threading.Thread(target=background, daemon=True)
        t.start()
        assert not passed.wait(0.3)          # the run holds the cores: the scan waits
    assert passed.wait(5)                     # the run is done: the scan goes on
    passed.clear()
    with cores.foreground():
        t = threading.Thread(target=background, daemon=True)
        t.start()
        assert not passed.wait(0.2)
        urgent.set()                          # decide waits for the figures: they no longer give way
        assert passed.wait(5)


def test_a_result_is_not_held_up_by_a_run_that_never_ends(monkeypatch):
    """The final decide sets the figures urgent: even with a foreground computation still marked
    (another run in the same process), the result comes."""
    from drifttui.core.runtime import cores

    with cores.foreground():
        result = run_once(Config(**CFG)).result
    assert any(i.torch_param for L in result.layers for i in L.initializers)


def _rss_kb() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/status"), reason="reads /proc")
def test_a_scanned_weight_gives_its_mapped_pages_back(tmp_path):
    """The figures read every weight from the mapped external data: once read, its pages leave the
    process's resident memory (they would add the whole file to the run's peak)."""
    import numpy as np

    from drifttui.core.onnx.weights import release_view

    path = tmp_path / "w.bin"
    np.arange(16 << 20, dtype=np.float32).tofile(path)          # 64 MB
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    view = mm[4096 * 3 + 8:].view(np.float32)[: (8 << 20)]      # 32 MB, not page-aligned
    before = _rss_kb()
    assert float(view.max()) > 0                                 # read: its pages are resident
    touched = _rss_kb()
    assert touched - before > 24_000
    release_view(view)
    assert _rss_kb() - before < 4_000
    assert float(view[-1]) == float(view.max())                 # still readable (mapped again)
    release_view(np.ones(10))                                    # not a mapping: left alone
