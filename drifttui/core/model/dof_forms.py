"""The degrees-of-freedom reductions by torch's own definition (issue 30 point 2, the re-trace route of
``retrace.py``): ``aten.var.correction`` and ``aten.var_mean.correction``, and through torch's own
decompositions of them every ``std``, ``std_mean``, ``var(unbiased=...)`` and ``Tensor.var``/``.std``.

torch divides the sum of squared deviations by ``max(0, N - correction)`` (the CPU and CUDA kernels'
``WelfordOps``: ``divisor = N > correction ? N - correction : 0``; pytorch/pytorch#109186 documents it,
NVIDIA/Fuser#873 fixed the same difference in nvFuser): ``inf`` where the deviations are not all 0,
``NaN`` (0/0) where they are, once ``correction >= N``.  Both exporters lower the reduction as
``Mul(ReduceMean(d^2), N) / Sub(N, correction)`` (TorchScript's ``_var_mean_helper``, torchlib's
``prims_var`` after torch's decomposition into ``prims.var``): a *negative* variance once ``correction > N``
(``N == correction`` agrees: ``x / 0``), and a square root of it NaN.  The TorchScript exporter also reads
the correction as an int (``parse_args("i")``): a fractional correction is truncated (0.5 divides by N).

The definition here: the mean, the squared deviations summed, divided by ``max(0, N - correction)``,
which the trace knows as a number (``make_fx`` traces real tensors: N is the reduced dims' size), so the
exported graph divides by a constant: ``x / 0.0`` is torch's inf or NaN in every runtime.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Union

from drifttui.core.model.op_definition import RETRACE, OpDefinition, aten_op, torch_name

Dims = Optional[Union[int, Sequence[int]]]


def _dims(x: Any, dim: Dims) -> list[int]:
    """The reduced dims, non-negative: None or [] reduce every dim (torch's rule)."""
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return list(range(x.dim()))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted({d % max(1, x.dim()) for d in dims})


def _moments(x: Any, dim: Dims, correction: Optional[float], keepdim: bool) -> tuple[Any, Any]:
    """(variance, mean) of ``x`` over ``dim`` as torch computes them: the sum of squared deviations
    divided by max(0, N - correction) (correction None is 1); half types accumulate in float32."""
    import torch

    dtype = x.dtype
    if dtype in (torch.float16, torch.bfloat16):
        x = x.to(torch.float32)
    dims = _dims(x, dim)
    n = 1
    for d in dims:
        n *= x.shape[d]
    c = 1.0 if correction is None else float(correction)
    if x.dim() == 0:
        mean = x
        m2 = (x - x) * (x - x)
    else:
        dev = x - x.mean(dims, keepdim=True)
        m2 = (dev * dev).sum(dims, keepdim=keepdim)
        mean = x.mean(dims, keepdim=keepdim)
    var = m2 / float(max(0.0, n - c))          # 0.0: inf, or NaN where every deviation is 0, as torch
    return var.to(dtype), mean.to(dtype)


def var(x: Any, dim: Dims = None, *, correction: Optional[float] = None, keepdim: bool = False) -> Any:
    """torch.var (aten.var.correction) by its definition."""
    return _moments(x, dim, correction, keepdim)[0]


def var_mean(x: Any, dim: Dims = None, *, correction: Optional[float] = None, keepdim: bool = False) -> Any:
    """torch.var_mean (aten.var_mean.correction) by its definition."""
    return _moments(x, dim, correction, keepdim)


def dof_table() -> dict[Any, Callable[..., Any]]:
    """The ATen ops defined here (std and std_mean need none of their own: torch's decomposition writes
    them as the square root of these)."""
    import torch

    aten = torch.ops.aten
    return {aten.var.correction: var, aten.var_mean.correction: var_mean}


_LOWERED = ("Mul(ReduceMean(d^2), N) / (N - correction): a negative variance where correction > N "
            "(torch divides by max(0, N - correction): inf, or NaN where every deviation is 0)")
# the torch calls that reach these definitions (as FX targets print them, and as ``original_aten`` names
# the call a decomposed node came from) -> the lowering each replaces (the message names it)
WRONG = {f"aten.{op}.{overload}": _LOWERED for op in ("var", "std", "var_mean", "std_mean")
         for overload in ("correction", "dim", "default")}


# torch's divisor is documented in pytorch/pytorch#109186; nvFuser and TVM fixed the same lowering
_REF = ("torch's max(0, N - correction): pytorch/pytorch#109186; the same divisor fixed in NVIDIA/Fuser#873 "
        "and apache/tvm#19512; not reported to torch.onnx / onnxscript yet: file it with `drifttui repro`")


def _fix(key: str) -> str:
    op = aten_op(key)
    return (f"keep the correction below the reduced size N (where torch's value is finite), or write "
            f"{torch_name(op)}(..., correction=...) by its definition (the squared deviations summed, divided by "
            f"`max(0, N - correction)`: `drifttui.core.model.dof_forms.{'var_mean' if '_mean' in op else 'var'}`), "
            f"or {RETRACE} ({_REF})")


DEFINITION = OpDefinition(
    "lowering", WRONG, dof_table,
    "the {exporter} exporter lowers torch's {target} as {lowered}; torch's definition (divided by "
    "max(0, N - correction)) computes what torch computes: ", _fix)
