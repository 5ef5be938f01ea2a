"""The served model's pass/fail (docs/triton.md), decided here as every other verdict is (core/decide):
``over`` says whether a served or batched value differs from the file's own at the tolerance (the
served comparison, compose/served_live.py, and the batch sweep, compose/batch_sweep.py, measure the
figures; they decide nothing), ``sweep_invariant`` whether a batch sweep passes, and ``decide_served``
the served verdict from the figures the comparison measured: the served model computes what the
file computes (its drift, if any, is the file's), or it differs from the file's own local run, and
then why, each reason with its figures:

* a batch dependence: one request at a time matches the local run, requests joined by the dynamic
  batcher do not (the batch sweep names the first layer that depends on the batch);
* a dtype or reshape at the boundary: the server casts an input or output the file types otherwise;
* an accelerator: the config puts the file under TensorRT / CUDA / OpenVINO, which this machine does
  not run;
* a different file or version: even one request at a time differs, and nothing above explains it.
"""
from __future__ import annotations

from typing import Iterable, Optional

from drifttui.core.base.tolerance import bound
from drifttui.core.result.served import BatchSweep, ServedRun

SAME, DIFFERS = "same", "differs"
BATCH, BOUNDARY, ACCELERATOR, OTHER_FILE = ("batch dependence", "dtype or reshape at the boundary", "accelerator",
                                            "different file or version")


def over(devs: Iterable[float], atol: float, rtol: float, scale: float) -> bool:
    """Whether any of ``devs`` (max |served - file| or |alone - batched| of one value at scale
    ``scale``) fails the tolerance rule."""
    limit = bound(atol, rtol, scale)
    return any(d > limit for d in devs)    # the served side maps NaN to inf (served_live._devs) before this


def sweep_invariant(outputs_over: bool, depending_layers: int) -> bool:
    """A batch sweep passes when no model output and no layer depends on the batch."""
    return not outputs_over and depending_layers == 0


def _worst(runs: list[ServedRun], mode: str) -> float:
    return next((r.max_abs_vs_local for r in runs if r.mode == mode), 0.0)


def decide_served(fails: dict[str, bool], runs: list[ServedRun], casts: list[str], unreproducible: list[str],
                  sweep: Optional[BatchSweep]) -> tuple[str, str, str]:
    """(verdict, reason, detail)."""
    seq, conc = _worst(runs, "sequential"), _worst(runs, "concurrent")
    if not fails["sequential"] and not fails["concurrent"]:
        return SAME, "", (f"the server's answers match the file's local run, one request at a time (max |d| "
                          f"{seq:.3g}) and batched by the server (max |d| {conc:.3g}): the served model drifts "
                          "where the file drifts")
    if not fails["sequential"]:
        where = ""
        if sweep is not None and sweep.first_layer is not None:
            lay = next((L for L in sweep.layers if L.layer == sweep.first_layer), None)
            cls = f" ({lay.cls})" if lay and lay.cls else ""
            where = (f"; the batch sweep {sweep.sizes} names layer #{sweep.first_layer} "
                     f"{sweep.first_module or '(root)'}{cls}")
        elif sweep is not None and not sweep.invariant:
            where = f"; the batch sweep {sweep.sizes} sees it in the model outputs"
        elif sweep is not None:
            where = " (the sweep through ONNX Runtime here sees no batch dependence: the server's own batching does)"
        return DIFFERS, BATCH, (f"one request at a time matches the file (max |d| {seq:.3g}), requests the dynamic "
                                f"batcher joined do not (max |d| {conc:.3g}): the file's outputs depend on the "
                                f"batch{where}")
    if casts:
        return DIFFERS, BOUNDARY, (f"one request at a time differs from the file (max |d| {seq:.3g}) and the "
                                   f"server casts at its boundary: {'; '.join(casts)}")
    if unreproducible:
        return DIFFERS, ACCELERATOR, (f"one request at a time differs from the file (max |d| {seq:.3g}) and the "
                                      f"config runs it under {'; '.join(unreproducible)}")
    return DIFFERS, OTHER_FILE, (f"one request at a time differs from the file's local run (max |d| {seq:.3g}) "
                                 "with the same settings and inputs: the server serves another file or version "
                                 "than the one compared")
