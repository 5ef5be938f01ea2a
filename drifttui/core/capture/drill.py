"""One per-layer pass on one sample, for one layer: its per-channel errors when no capture holds
them (a report opened with its model, a ``--batch`` capture).  Tolerance-free, cancellable.

The layer's own output values are the only marked outputs (a window of one call, no local run),
so the pass costs one ORT run and one hooked forward."""
from __future__ import annotations

from typing import Optional

from drifttui.core.capture.passes import Accum
from drifttui.core.capture.stage import _WindowPass
from drifttui.core.base.metrics import Aggregate
from drifttui.core.prepare.stage import Prepared
from drifttui.core.prepare.windows import Window
from drifttui.core.base.progress import CancelToken
from drifttui.core.result import Config


def drill_pass(pr: Prepared, cfg: Config, call: int, sample: int, cancel: CancelToken) -> Optional[Aggregate]:
    """The comparison of call ``call``'s output on sample ``sample`` (None: it has no ONNX value)."""
    cm = pr.plan.calls[call]
    values = [cm.outputs[p] for p in sorted(cm.outputs)]
    if not values:
        return None
    window = Window(first=call, last=call, calls={call}, values=values)
    source = pr.source(cfg.seed, cfg.zero_input)
    acc = Accum()
    with _WindowPass(pr, cfg, window, {"sessions": 0.0}) as wp:
        wp.run(acc, [(sample, source.sample(sample))], cancel)
    return acc.glob.get(call)
