"""Values the file's readers cannot tell apart: torch's "minus infinity" against a converter's stand-in for it.

torch writes an additive attention mask as float32's extreme (``(1 - mask) * finfo(float32).min``, -3.40e38);
onnxconverter-common clamps every float16 constant to +-1e4, so the file holds -1e4 there.  Neither is the other's
extreme (core/base/metrics.py makes two saturated values agree), yet to the Softmax that reads them both are minus
infinity: exp underflows to 0 at either, and every value after it agrees.  The module that builds the mask (a
BERT's root) read "own error 3.40e+38".

The rule judges by the readers, not by the value's size.  In the local run (each module's own nodes fed from torch:
``prepare/local.py``) a value ``v`` computed by one module is read by the next through its feed ``feed::v``, which
holds torch's value.  When ``v`` differs from torch only where torch's value is saturated (at its dtype's largest
magnitude, or infinite) and the file's is finite, the local graph is run once more with the file's ``v`` in that
feed.  If every mapped value of the graph comes out the same, bit for bit (NaN where NaN), no reader can tell the two
values apart on this sample: those elements agree.  Anything else, and the error stands as measured.

Why it cannot hide a real error: an overflow is a torch value short of its extreme that the file holds as inf (torch
is not saturated there: never excused); a file value that a reader does see (a fully masked row, where the Softmax
reads only masked positions, or a stand-in not small enough for exp to vanish) changes that reader's output, so the
second run differs and the error stays; and only the elements where torch saturates are excused, never the others.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np
import torch


def saturated_only(t: torch.Tensor, o: np.ndarray) -> Optional[np.ndarray]:
    """The elements (a flat mask) where torch's value is saturated (its dtype's largest magnitude, or infinite) and
    the file's is finite and another number; None when there are none, or when another element is non-finite on
    either side (that error is measured as it is).  Finite differences elsewhere stay measured too."""
    if not t.dtype.is_floating_point or t.numel() != o.size or not np.issubdtype(o.dtype, np.floating):
        return None
    tt = t.detach().to(torch.float32).cpu().numpy().reshape(-1)
    oo = o.astype(np.float32, copy=False).reshape(-1)
    largest = float(torch.finfo(t.dtype).max)
    with np.errstate(invalid="ignore"):
        saturated = (np.abs(tt) >= largest) & np.isfinite(oo) & (tt != oo)
    if not saturated.any():
        return None
    rest = ~saturated
    finite = np.isfinite(tt[rest]) & np.isfinite(oo[rest])
    if not finite.all():        # another non-finite mismatch: the measured error stands
        return None
    return saturated


def readers_agree(run: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]], feeds: dict[str, np.ndarray],
                  first: dict[str, np.ndarray], swaps: dict[str, np.ndarray]) -> bool:
    """Whether the local graph (``run``: feeds -> every mapped value) computes the same values, bit for bit, with
    each feed of ``swaps`` holding the file's value instead of torch's (``first``: the run with torch's)."""
    again = run({**feeds, **{name: arr.astype(feeds[name].dtype, copy=False).reshape(feeds[name].shape)
                             for name, arr in swaps.items()}})
    for name, was in first.items():
        now = again.get(name)
        if now is None or now.shape != was.shape:
            return False
        if not np.array_equal(now, was, equal_nan=np.issubdtype(was.dtype, np.floating)):
            return False
    return True


def with_file_values(t: torch.Tensor, o: np.ndarray, mask: np.ndarray) -> Any:
    """torch's value with the excused elements (``mask``) set to the file's: they then agree."""
    out = t.detach().to(torch.float32).cpu().numpy().reshape(-1).copy()
    out[mask] = o.astype(np.float32, copy=False).reshape(-1)[mask]
    return out.reshape(tuple(t.shape))
