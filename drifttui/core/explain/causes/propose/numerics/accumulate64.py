"""The accumulation counterfactual: the origin's long float32 sums computed in float64 (issue 30 point 2).

A reduction over many float32 elements (a global average pool of a large map, the mean of a long sequence,
a logsumexp or a norm of a long vector) is computed by ONNX Runtime's CPU kernels as a running float32 sum,
and by torch as a cascade of partial sums (its reduction kernels, numpy's pairwise sum too).  Over tens of
thousands of elements the running sum loses ~1e-5 of the total, torch about 1e-7: where the sum holds a
common level that is taken off after (a centred statistic), that difference passes any tolerance.  No export
route changes a kernel, but a graph counterfactual can: the same nodes computed in float64 and cast back
(``onnx/edit/numerics/accumulate64.py``), whose sums then round as torch's do.  A scan is a sum too: ONNX Runtime's
``CumSum`` adds a float32 running sum along its axis, where torch's CPU ``cumsum`` accumulates float32 in double
(pytorch/pytorch#180153); it counts the axis's length as the elements summed.  Proposed once per origin, for
its float32 sums over at least ``MIN_REDUCED`` elements per output, scans of at least ``MIN_SCANNED`` and
transforms of at least ``MIN_TRANSFORMED`` (none otherwise), and verified like any patch.

Its class is ``stability`` (the kernel's running sum is the unstable way to compute the same function; the
fix is the stable one), kind ``runtime`` (the bug is ONNX Runtime's kernel).  ``repair`` applies it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import picked_values
from drifttui.core.onnx.edit.numerics.accumulate64 import SCANS, SUMS, TRANSFORMS
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.onnx.edit.rewriting import static_value

MIN_REDUCED = 4096          # elements summed per output: below it a running float32 sum loses no more than torch
MIN_SCANNED = 32            # a scan's length: torch rounds each output once (a double accumulator), ONNX Runtime at
                            # every step at the partial sums' level, so a short scan of a large level cancelled after
                            # loses as much as a long one (batch I's 128-step running mean; 4096 proposed it nowhere)
MIN_TRANSFORMED = 64        # a transform's length: ONNX Runtime's float32 twiddles lose ~1e-4 at 400 (onnxruntime#32457)
UPSTREAM = "microsoft/onnxruntime#28450"
SCAN_UPSTREAM = "pytorch/pytorch#180153"
TRANSFORM_UPSTREAM = "microsoft/onnxruntime#16163"


def long_sums(case: Case) -> list[tuple[Any, int, int]]:
    """(node, elements summed per output, input rank) of each float32 sum of the origin over at least
    ``MIN_REDUCED`` elements, on the case's inputs."""
    sums, known = picked_values(case, lambda n: n.op_type in SUMS and n.input and n.output)
    if not sums:
        return []
    out = []
    for n in sums:
        x, y = known.get(n.input[0]), known.get(n.output[0])
        if x is None or y is None or np.asarray(x).dtype != np.float32 or np.size(y) == 0:
            continue
        if n.op_type in TRANSFORMS:
            per = _transform_length(case, n, known, np.shape(x))
        elif n.op_type in SCANS:
            per = _scan_length(case, n, known, np.shape(x))
        else:
            per = int(np.size(x) // max(1, np.size(y)))
        if per >= (MIN_TRANSFORMED if n.op_type in TRANSFORMS else MIN_SCANNED if n.op_type in SCANS else MIN_REDUCED):
            out.append((n, per, np.ndim(x)))
    return out


def _scan_length(case: Case, node: Any, known: dict[str, Any], shape: tuple[int, ...]) -> int:
    """The length of a scan's axis (the elements its last output adds up); 0 when the axis is unknown."""
    axis = known.get(node.input[1]) if len(node.input) > 1 else None
    if axis is None and len(node.input) > 1:
        axis = static_value(case.model, node.input[1])
    if axis is None or not shape:
        return 0
    return int(shape[int(np.asarray(axis).reshape(-1)[0]) % len(shape)])


def _transform_length(case: Case, node: Any, known: dict[str, Any], shape: tuple[int, ...]) -> int:
    """A DFT's length (its ``dft_length`` input, else its axis's: an input from opset 20, an attribute before) or
    an STFT's frame length; 0 when it cannot be read."""
    def value(k: int) -> Any:
        if len(node.input) <= k or not node.input[k]:
            return None
        v = known.get(node.input[k])
        return v if v is not None else static_value(case.model, node.input[k])
    if node.op_type == "STFT":
        length = value(3)
        return int(np.asarray(length).reshape(-1)[0]) if length is not None else 0
    length = value(1)
    if length is not None:
        return int(np.asarray(length).reshape(-1)[0])
    axis = value(2)
    if axis is None:
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
    ax = int(np.asarray(axis).reshape(-1)[0])
    ax = ax + len(shape) if ax < 0 else ax          # [-r, -2] or [0, r-2]: the last axis is re/im
    return int(shape[ax]) if 0 <= ax < len(shape) - 1 else 0


def _story(ops: list[str], which: str, most: int) -> tuple[str, str]:
    """why and the upstream issue, for reductions (a cascade in torch) or scans (double in torch)."""
    if all(op in TRANSFORMS for op in ops):
        return (f"ONNX Runtime's {'/'.join(ops)} kernel ({which}: transform length up to {most}) computes its "
                "twiddle factors and sums in float32, and loses ~1e-4 on a length that is not a power of two, where "
                "torch's pocketfft stays within float32's rounding; with the same transform computed in float64 and "
                "cast back to float32 the file computes what torch computes", TRANSFORM_UPSTREAM)
    if all(op in SCANS for op in ops):
        return (f"ONNX Runtime's {'/'.join(ops)} kernel adds a long scan's float32 elements ({which}: up to {most} "
                "along its axis) in a running float32 sum, where torch's CPU cumsum accumulates float32 in double; "
                "with the same scan computed in float64 and cast back to float32 the file computes what torch "
                "computes", SCAN_UPSTREAM)
    return (f"ONNX Runtime's {'/'.join(ops)} kernel adds the float32 elements of a long reduction ({which}: up to "
            f"{most} elements per output) in a running float32 sum, where torch adds them in a cascade of partial "
            "sums and loses far less; with the same reduction computed in float64 and cast back to float32 the file "
            "computes what torch computes", UPSTREAM)


def accumulate64_patches(case: Case) -> list[Patch]:
    """One patch: every long float32 sum of the origin computed in float64; none when there is none."""
    found = long_sums(case)
    if not found:
        return []
    nodes = [n.name for n, _, _ in found]
    ops = sorted({n.op_type for n, _, _ in found})
    most = max(per for _, per, _ in found)
    which = ", ".join(f"{n.op_type} {n.name}" for n, _, _ in found[:4]) + (" ..." if len(found) > 4 else "")
    why, upstream = _story(ops, which, most)
    fix = (f"deploy the file with those sums in float64 (`drifttui repair` applies it: Cast, the sum in "
           f"double, Cast back), or take the common level off before summing; report the kernel's float32 "
           f"accumulation to onnxruntime with `drifttui repro` (upstream: {upstream})")
    spec = {"op": "rewrite", "rewrite": "accumulate_float64", "node": nodes[0], "nodes": nodes,
            "ranks": {n.name: r for n, _, r in found if n.op_type == "GlobalAveragePool"}}
    return [Patch(spec, "stability", why, fix, "runtime", module=case.module, nodes=nodes)]
