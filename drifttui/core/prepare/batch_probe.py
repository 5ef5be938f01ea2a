"""Can samples be batched (``--batch N``)?  N samples concatenated along dim 0 in one ORT run and
one forward is possible when every ONNX graph input has a symbolic dim 0 and every compared value
splits per sample: at batch N its dim 0 is N times its dim 0 at batch 1 (the trace).  ``probe_torch``
checks this on a two-sample forward before any sample is compared (the ORT side is probed by
``capture/batch.py`` with the first window's session); the batched run itself is capture's.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import torch

from drifttui.core.model.inputs import Sample, cat_samples, flatten
from drifttui.core.prepare.plan.plan import Plan
from drifttui.core.runtime.torch_hooks import Call, Sink
from drifttui.errors import first_line


def static_inputs(graph_inputs: list[tuple[str, list[Any], str]]) -> list[str]:
    """Names of the ONNX graph inputs whose dim 0 is not symbolic (batching needs none)."""
    return [name for name, dims, _ in graph_inputs if not dims or isinstance(dims[0], int)]


def base_dims(plan: Plan, calls: list[Call]) -> dict[tuple[int, int], tuple[int, ...]]:
    """Batch-1 shape of every compared torch value, (call, position) -> shape, from the trace."""
    out: dict[tuple[int, int], tuple[int, ...]] = {}
    for ci, cm in enumerate(plan.calls):
        for pos in cm.outputs:
            if pos < len(calls[ci].outputs):
                out[(ci, pos)] = tuple(calls[ci].outputs[pos].shape)
    if calls:
        for pos, ref in enumerate(calls[0].outputs):
            out[(0, pos)] = tuple(ref.shape)
    return out


def splits(shape1: tuple[int, ...], shape_n: tuple[int, ...], n: int) -> bool:
    return len(shape1) >= 1 and len(shape1) == len(shape_n) and shape_n[0] == n * shape1[0] \
        and tuple(shape_n[1:]) == tuple(shape1[1:])


class _Shapes(Sink):
    wants_inputs = False

    def __init__(self) -> None:
        self.shapes: dict[tuple[int, int], tuple[int, ...]] = {}

    def on_input(self, call: int, tensors: list[torch.Tensor]) -> None:
        pass

    def on_output(self, call: int, tensors: list[torch.Tensor]) -> None:
        for pos, t in enumerate(tensors):
            self.shapes[(call, pos)] = tuple(t.shape)


def _other_sample(sample: Sample) -> Sample:
    """A second, different sample of the same shapes (to see whether dim 0 mixes samples)."""
    def other(t: torch.Tensor) -> torch.Tensor:
        if t.is_floating_point():
            return t.flip(-1) * 0.5 + 0.25 if t.ndim else t
        return t.flip(-1) if t.ndim else t
    args, kwargs = sample
    return tuple(other(a) for a in args), {k: other(v) for k, v in kwargs.items()}


def _mixes_samples(single: list[list[torch.Tensor]], both: list[torch.Tensor]) -> Optional[str]:
    """Why batching would change what the model computes (dim 0 is not a batch axis), or None."""
    for k, b in enumerate(both):
        parts = [s[k] for s in single if k < len(s)]
        if len(parts) != 2 or b.ndim == 0 or b.shape[0] != parts[0].shape[0] + parts[1].shape[0]:
            return f"output {k} does not split per sample along dim 0"
        halves = torch.split(b, [parts[0].shape[0], parts[1].shape[0]])
        for h, p in zip(halves, parts):
            if h.shape != p.shape:
                return f"output {k} does not split per sample along dim 0"
            if p.is_floating_point():
                scale = float(p.detach().abs().max()) if p.numel() else 0.0
                if float((h.detach() - p.detach()).abs().max()) > 1e-4 + 1e-3 * scale:
                    return (f"output {k} of a sample changes when another sample shares the batch: dim 0 "
                            "is not an independent batch axis (e.g. a softmax or mean over dim 0)")
            elif not torch.equal(h, p):
                return f"output {k} of a sample changes when another sample shares the batch"
    return None


def probe_torch(hooks: Any, model: Any, forward: Callable[[Any, Any], list[torch.Tensor]], sample0: Sample,
                base: dict[tuple[int, int], tuple[int, ...]]) -> Optional[str]:
    """None when a two-sample forward splits into per-sample values, else why not."""
    if any(t.ndim == 0 for t in flatten(sample0)):
        return "an input is a scalar (no dim 0 to batch along)"
    other = _other_sample(sample0)
    sink = _Shapes()
    hooks.begin(None)
    try:
        single = [forward(model, sample0), forward(model, other)]
        hooks.begin(sink)
        both = forward(model, cat_samples([sample0, other]))
    except Exception as exc:     # the model does not take two samples at once
        first = first_line(exc)
        return f"the PyTorch model fails on two samples concatenated along dim 0 ({first[:200]})"
    finally:
        hooks.begin(None)
    mixed = _mixes_samples(single, both)
    if mixed:
        return mixed
    for key, shape1 in base.items():
        got = sink.shapes.get(key)
        if got is None or not splits(shape1, got, 2):
            return (f"a compared value of shape {list(shape1)} at batch 1 is {list(got) if got else 'missing'} at "
                    "batch 2: it does not split per sample along dim 0")
    return None
