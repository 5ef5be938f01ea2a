"""The TorchScript exporter with its ONNX peephole pass left out.

After the symbolic functions lower each call, the TorchScript exporter runs one more pass over the ONNX
graph, ``torch._C._jit_pass_onnx_peephole``: fusions and clean-ups no symbolic function decides, such as
``LogSoftmax -> NegativeLogLikelihoodLoss`` fused into one ``SoftmaxCrossEntropyLoss`` over axis 1 whatever
the LogSoftmax's axis (pytorch/pytorch#34830), transposes fused into a Gemm, broadcasts folded.  torch has
no switch for it, so ``without_onnx_peephole`` puts a no-op in its place for the export made in this thread
(another thread's export still runs the real pass) and puts the pass back afterwards.  A graph the pass
was needed for (a list it erases) fails to export or to load, and the variant that asked for it is not
verified.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

_LEFT_OUT = threading.local()
_LOCK = threading.Lock()
_users = 0


@contextlib.contextmanager
def without_onnx_peephole() -> Iterator[None]:
    """Inside the block, TorchScript exports made by this thread skip the ONNX peephole pass."""
    import torch

    global _users
    with _LOCK:
        if _users == 0:
            real = torch._C._jit_pass_onnx_peephole
            torch._C._jit_pass_onnx_peephole = _gated(real)
        _users += 1
    _LEFT_OUT.on = True
    try:
        yield
    finally:
        _LEFT_OUT.on = False
        with _LOCK:
            _users -= 1
            if _users == 0:
                torch._C._jit_pass_onnx_peephole = torch._C._jit_pass_onnx_peephole.real


def _gated(real: Any) -> Any:
    def peephole(*args: Any, **kwargs: Any) -> Any:
        if getattr(_LEFT_OUT, "on", False):
            return None
        return real(*args, **kwargs)
    peephole.real = real        # type: ignore[attr-defined]
    return peephole
