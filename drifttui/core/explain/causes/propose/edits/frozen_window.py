"""A pooling window the export took from the example's size of a dim the file declares dynamic.

An ONNX ``MaxPool`` / ``AveragePool`` holds its window in attributes (``kernel_shape``, ``strides``): no runtime size
can reach them.  A window torch computes from a size (``F.max_pool1d(h, h.size(2))``, a TorchScript trace;
``adaptive_avg_pool1d(h, n)``, which torch's decomposition lowers for the dynamo exporter to ``avg_pool(kernel=T // n)``
on the example's ``T``) is then the example's at every length, and the file pools the first ``n * kernel`` steps
of a longer input in windows of the example's width, where torch's ``n`` windows cover the runtime length.

The sign in the graph: a pool without padding whose windows tile the input (``strides == kernel_shape``) on a dim
the file declares dynamic, and which, on this sample, leaves steps of that dim out or windows them otherwise than
``n`` equal parts would.  The patch computes torch's adaptive windows from the runtime size (``rewrite:
adaptive_window``, ``onnx/edit/lowerings/adaptive_window.py``) with ``n`` the pool's own window count on this sample;
it verifies only where torch's windows are adaptive ones (a global pool, ``adaptive_*_pool``), on this sample and on
fresh samples of other sizes (``holds.py``).  Class ``dynamic-axes``: a size baked in at export time.
"""
from __future__ import annotations

from typing import Any, Iterator, Optional

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import run_ort
from drifttui.core.onnx.edit.patches import Patch

POOLS = ("MaxPool", "AveragePool")


def _ints(node: Any, name: str, default: list[int]) -> list[int]:
    from onnx import helper

    a = next((a for a in node.attribute if a.name == name), None)
    return list(helper.get_attribute_value(a)) if a is not None else default


def _tiling(node: Any) -> Optional[list[int]]:
    """The kernel of a pool whose windows tile its input (no padding, no dilation, strides equal to the
    kernel), else None."""
    from onnx import helper

    kernel = _ints(node, "kernel_shape", [])
    pads = _ints(node, "pads", [0] * 2 * len(kernel))
    auto = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "auto_pad"), b"NOTSET")
    if not kernel or any(pads) or auto not in (b"NOTSET", b"VALID", "NOTSET", "VALID"):
        return None
    ones = [1] * len(kernel)
    if _ints(node, "dilations", ones) != ones or _ints(node, "strides", ones) != kernel:
        return None
    if len(node.output) > 1 and any(node.output[1:]):      # MaxPool's indices read: not a plain pool
        return None
    return kernel


def frozen_window_patches(case: Case, shapes: dict[str, list[Any]]) -> Iterator[Patch]:
    """``adaptive_window`` for each tiling pool of the case on a dim the file declares dynamic (``shapes``: the file's
    value shapes, a symbolic dim) whose windows, on this sample, are not ``n`` equal parts of the runtime size."""
    pools = [(n, k) for n in case.model.graph.node if n.op_type in POOLS for k in [_tiling(n)] if k is not None]
    pools = [(n, k) for n, k in pools if any(not isinstance(d, int) for d in (shapes.get(n.input[0]) or [])[2:])]
    if not pools:
        return
    try:
        got = run_ort(case.model, case.feeds, [v for n, _ in pools for v in (n.input[0], n.output[0])])
    except Exception:  # noqa: BLE001 - the cut-out does not run here: no evidence, no patch
        return
    for node, kernel in pools:
        declared = (shapes.get(node.input[0]) or [])[2:]
        sizes, counts = got[node.input[0]].shape[2:], got[node.output[0]].shape[2:]
        if len(declared) != len(kernel) or len(sizes) != len(kernel):
            continue
        windows, frozen = [], []
        for j, (k, size, n, dim) in enumerate(zip(kernel, sizes, counts, declared)):
            dynamic = not isinstance(dim, int)
            if k == 1:
                windows.append(0)        # a window of one step: every step is its own window at any size
            elif dynamic or size == n * k:
                windows.append(int(n))
                if dynamic and size != n * k:
                    frozen.append((j, k, int(size), int(n)))
            else:
                break
        else:
            if frozen:
                yield _patch(case, node, kernel, windows, frozen)


def _patch(case: Case, node: Any, kernel: list[int], windows: list[int], frozen: list[tuple]) -> Patch:
    j, k, size, n = frozen[0]
    what = "max" if node.op_type == "MaxPool" else "average"
    return Patch({"op": "rewrite", "node": node.name, "rewrite": "adaptive_window", "windows": windows,
                  "baked": kernel, "runtime": [f[2] for f in frozen]},
                 "dynamic-axes",
                 f"{node.op_type} {node.name} pools windows of {k} (kernel_shape = strides) along its input's dim "
                 f"{j + 2}, which the file declares dynamic: a window taken from the example's size at export time "
                 f"(an ONNX pool holds its window as an attribute, no runtime size reaches it); at run time that dim "
                 f"is {size}, and torch's {n} window(s) cover all of it, where the file's {what} covers the first "
                 f"{n * k} step(s) in windows of the example's width",
                 "pool with the size kept a tensor: F.adaptive_max_pool1d(h, 1) / h.amax(-1) / h.mean(-1) (exported "
                 "as a global pool at any size) instead of a kernel_size taken from h.size(); an adaptive pool to n > 1 "
                 "windows on a dynamic size is lowered by the dynamo exporter with the example's window (TorchScript "
                 "refuses it): export one file per size (static shapes); `drifttui repair` computes torch's windows "
                 "from the runtime size in the file", "export", module=case.module, nodes=[node.name])
