"""The per-layer pass of one capture window: the ORT sessions of the window (the main graph with the
window's values as extra outputs, and the local graph of each module's own nodes), held open for the
layer samples, and the loop that runs them (batched where the batch probe allowed it)."""
from __future__ import annotations

import time
from typing import Any, Optional

from drifttui.core.capture import batch
from drifttui.core.capture.passes import Accum, Pass, run_sample
from drifttui.core.model.inputs import cat_samples
from drifttui.core.prepare import batch_probe
from drifttui.core.prepare.stage import Prepared
from drifttui.core.prepare.windows import Window
from drifttui.core.base.progress import CancelToken
from drifttui.core.result import Config
from drifttui.core.runtime import sessions
from drifttui.core.runtime.guards import safe_forward


class WindowPass:
    """The sessions of one capture window, open for the per-layer passes of the layer samples."""

    def __init__(self, pr: Prepared, cfg: Config, window: Optional[Window], timings: dict[str, float],
                 main: Any = None, values0: Optional[dict] = None) -> None:
        self.pr, self.cfg, self.window, self.timings, self.main = pr, cfg, window, timings, main
        self.values0 = values0          # ``main``'s fetched values on sample 0 (observer.check ran it)
        self.p: Optional[Pass] = None

    def __enter__(self) -> "WindowPass":
        pr, cfg, w = self.pr, self.cfg, self.window
        if w is None:
            return self
        t = time.perf_counter()
        main = self.main if self.main is not None else sessions.make_session(
            pr.proto, cfg.opt_level, cfg.deterministic, cfg.provider, pr.workdir, "main.onnx", extra_outputs=w.values,
            data_dir=pr.index.data_dir, prepack=False, types=pr.index.elem_types)
        local_sess = None
        if w.local is not None:
            local_sess = sessions.make_session(w.local.model, cfg.opt_level, cfg.deterministic, cfg.provider,
                                               pr.workdir, "local.onnx", data_dir=pr.index.data_dir, prepack=False)
        self.timings["sessions"] += time.perf_counter() - t
        fetch = list(dict.fromkeys(pr.index.graph_outputs + w.values))
        self.p = Pass(pr.plan, w, main, fetch, local_sess, pr.hooks, pr.model, safe_forward,
                      pr.index.graph_inputs, pr.input_dtypes, [c.cls for c in pr.calls])
        return self

    def __exit__(self, *exc: Any) -> None:
        self.p = None

    def probe_batch(self, sample0: Any) -> Optional[str]:
        assert self.p is not None
        feeds2 = self.pr.feeds(cat_samples([sample0, sample0]))
        return batch.probe_ort(self.p.main, feeds2, self.p.fetch, self.pr.plan.table,
                               batch_probe.base_dims(self.pr.plan, self.pr.calls))

    def run(self, acc: Accum, chunk: list[tuple[int, Any]], cancel: CancelToken, keep: bool = False) -> Optional[list]:
        """Per-layer passes of ``chunk`` ((sample id, sample), batched when longer than one);
        ``keep``: torch's outputs of a one-sample chunk are returned."""
        p = self.p
        if p is None or not chunk:
            return None
        known = None
        if len(chunk) == 1 and chunk[0][0] == 0 and self.values0 is not None:
            known, self.values0 = self.values0, None
        if p.hooks is None:
            if len(chunk) == 1:
                return run_sample(p, acc, chunk[0][0], chunk[0][1], None, cancel, keep, known)
            for i, s in chunk:
                run_sample(p, acc, i, s, None, cancel)
            return None
        # hooks only for these passes: the output pass runs the bare model
        with p.hooks.installed():
            if len(chunk) == 1:
                return run_sample(p, acc, chunk[0][0], chunk[0][1], None, cancel, keep, known)
            batch.run_chunk(p, acc, [i for i, _ in chunk], [s for _, s in chunk], cancel)
        return None


def per_layer(wp: "WindowPass", acc: Accum, source: Any, ids: list[int], batch: int, cancel: CancelToken) -> None:
    """The per-layer passes of the samples ``ids`` in one window, ``batch`` at a time."""
    for start in range(0, len(ids), batch):
        cancel.check()
        chunk = ids[start:start + batch]
        with sessions.on_sample(f"sample {chunk[0]}" if len(chunk) == 1 else f"samples {chunk[0]} to {chunk[-1]}"):
            wp.run(acc, [(i, source.sample(i)) for i in chunk], cancel)
