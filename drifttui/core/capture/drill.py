"""Per-layer passes for one layer: its per-channel and per-sample errors when no capture holds
them (a report opened with its model, a ``--batch`` capture), or on every sample when the
capture compared it on the layer samples only.  Tolerance-free, cancellable.

The layer's own output values are the only marked outputs (a window of one call, no local run),
so each sample costs one ORT run and one hooked forward."""
from __future__ import annotations

import time
from typing import Iterable, Optional

from drifttui.core.capture.passes import Accum
from drifttui.core.capture.window_pass import WindowPass
from drifttui.core.base.aggregate import Aggregate
from drifttui.core.prepare.stage import Prepared
from drifttui.core.prepare.windows import Window
from drifttui.core.base.progress import CancelToken, Progress, ProgressFn, no_progress
from drifttui.core.result import Config


def drill_pass(pr: Prepared, cfg: Config, call: int, samples: Iterable[int], cancel: CancelToken,
               progress: ProgressFn = no_progress) -> Optional[Aggregate]:
    """The comparison of call ``call``'s output on each of ``samples``, one sample per pass (no
    batch needed), in their order (None: it has no ONNX value).  ``progress`` hears after each
    sample, with the time left once one has run."""
    cm = pr.plan.calls[call]
    values = [cm.outputs[p] for p in sorted(cm.outputs)]
    if not values:
        return None
    ids = list(samples)
    window = Window(first=call, last=call, calls={call}, values=values)
    source = pr.source(cfg.seed, cfg.zero_input)
    acc = Accum()
    with WindowPass(pr, cfg, window, {"sessions": 0.0}) as wp:
        start = time.perf_counter()
        for n, sample in enumerate(ids):
            cancel.check()
            wp.run(acc, [(sample, source.sample(sample))], cancel)
            per = (time.perf_counter() - start) / (n + 1)
            progress(Progress("drill", n + 1, len(ids), f"sample {n + 1}/{len(ids)}", eta=per * (len(ids) - n - 1)))
    return acc.glob.get(call)
