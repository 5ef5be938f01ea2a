"""Guards around the per-sample runs: a failing forward as a one-line error, NaN/Inf refused."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch

from drifttui.core.runtime import cores
from drifttui.core.runtime.torch_hooks import run_model
from drifttui.core.model.inputs import flatten
from drifttui.errors import Cancelled, InputError, ModelError, first_line


def safe_forward(model: Any, sample: Any, versioned: bool = True, index: Optional[int] = None) -> list[torch.Tensor]:
    """One forward; ``versioned`` (the hooked passes): under no_grad so tensors keep version counters.
    ``index``: the sample's number, named in the error (a model may fail on one sample only)."""
    try:
        with cores.foreground():
            return run_model(model, sample[0], sample[1], versioned=versioned)
    except (Cancelled, InputError, ModelError):
        raise
    except Exception as exc:
        msg = first_line(exc)
        shapes = ", ".join("x".join(map(str, t.shape)) for t in flatten(sample))
        which = f"sample {index} (inputs of shape {shapes})" if index is not None else f"inputs of shape {shapes}"
        raise InputError(f"the PyTorch model failed on {which}: {type(exc).__name__}: {msg[:300]}",
                         "give inputs the model accepts (--inputs)") from exc


def check_finite_outputs(outs: list[torch.Tensor], i: int) -> None:
    for k, t in enumerate(outs):
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise ModelError(f"the PyTorch model's output {k} holds NaN/Inf for sample {i}, so there is "
                             "nothing sound to compare",
                             "check the inputs (--inputs) and the weights; drifttui compares finite outputs")


def check_finite_feeds(feeds: dict[str, np.ndarray]) -> None:
    for name, a in feeds.items():
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            raise InputError(f"input {name!r} holds NaN/Inf", "give finite inputs")
